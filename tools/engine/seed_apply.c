/*
 * seed_apply.c: seed a fresh galloc allocator with the state a snapshot held
 * at its trace's first entry (ga_seed_t, reconstructed by seed.c), so the
 * replay of a mid-run trace starts where PyTorch's allocator stood. See seed.h
 * for why the tiling below reproduces the layout.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tools/engine/replay.h"
#include "tools/snapshot/seed.h"

/* Allocate size bytes on stream; -1 with err on failure. */
static int take(galloc_allocator_t *a, uint64_t size, uint64_t stream, void **p, char *err, size_t errlen)
{
    galloc_status_t st = galloc_malloc(a, (size_t)size, (galloc_stream_t)stream, p);
    if (st == GALLOC_OK)
        return 0;
    char msg[GALLOC_ERROR_MAX];
    galloc_last_error(a, msg, sizeof(msg));
    snprintf(err, errlen, "seeding the reconstructed state: galloc_malloc(%llu): %s: %.300s",
             (unsigned long long)size, galloc_strerror(st), msg);
    return -1;
}

/* A live block whose request is asked for once every segment is tiled. */
typedef struct late {
    void *placeholder; /* its block, taken at its size meanwhile */
    uint64_t req;      /* the request */
    uint64_t id;       /* its trace id */
    uint64_t stream;
} late_t;

/* The request to make for a piece of n bytes: the request as recorded, so
 * requested_bytes is not overstated, where it gives the same block: it rounds
 * (512 bytes) to the block, or the block's unsplit tail (a gap too small to
 * split, seed.h) stays with it as PyTorch left it: as the segment's last
 * piece, or asked for later in the exact hole (*tail: fill_late). */
static uint64_t piece_ask(const ga_seed_segment_t *g, const ga_seed_piece_t *pc, uint64_t n, bool last, bool *tail)
{
    bool exact = pc->live && pc->req != 0 && (pc->req + 511) / 512 * 512 == n;
    *tail = pc->live && pc->req != 0 && pc->req < n && !exact && !g->small && pc->req > GA_SEED_SMALL_SIZE &&
            n - (pc->req + 511) / 512 * 512 <= GA_SEED_SMALL_SIZE;
    return exact || (*tail && last) ? pc->req : n;
}

/* The held-back requests with an unsplit tail: each placeholder is freed and,
 * the only free block then, taken whole by its request. 0, or -1 with err. */
static int fill_late(galloc_allocator_t *a, ga_idmap_t *map, const late_t *late, size_t n_late, char *err,
                     size_t errlen)
{
    for (size_t k = 0; k < n_late; k++) {
        void *p = NULL;
        galloc_free(a, late[k].placeholder);
        if (take(a, late[k].req, late[k].stream, &p, err, errlen) != 0)
            return -1;
        ga_idmap_val_t v = {p, late[k].stream};
        if (ga_idmap_put(map, late[k].id, v, NULL, NULL) != 0) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
    }
    return 0;
}

int ga_seed_apply(galloc_allocator_t *a, ga_idmap_t *map, const ga_seed_t *s, char *err, size_t errlen)
{
    /* Gap pieces are held until every segment is tiled: a gap freed early
     * would be a free block best fit could place a later piece in. */
    size_t n_held = 0, cap = s->n_pc;
    for (size_t i = 0; i < s->n_seg; i++)
        if (s->seg[i].small)
            cap += s->seg[i].size / GA_SEED_SMALL_SIZE;
    void **held = calloc(cap ? cap : 1, sizeof(void *));
    size_t n_late = 0, cap_late = s->n_pc;
    late_t *late = calloc(cap_late ? cap_late : 1, sizeof(*late));
    if (held == NULL || late == NULL) {
        free(held);
        free(late);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int rc = -1;
    for (size_t i = 0; i < s->n_seg; i++) {
        const ga_seed_segment_t *g = &s->seg[i];
        void *whole = NULL;
        /* A large segment is made with its own size, then given back to the
         * cache so its pieces are split off its front in address order; a
         * small one is made by its first piece (every piece is at most 1 MiB).
         * Every earlier segment is fully tiled, so no other free block can
         * take a piece. */
        /* Under sim_placement:recorded the segment also gets its recorded
         * address (elsewhere galloc_sim_place is refused: no effect). */
        galloc_sim_place(a, g->addr);
        if (!g->small) {
            if (take(a, g->size, g->stream, &whole, err, errlen) != 0)
                goto out;
            galloc_free(a, whole);
        }
        for (size_t k = g->first; k < g->first + g->n; k++) {
            const ga_seed_piece_t *pc = &s->pc[k];
            for (uint64_t done = 0; done < pc->size;) {
                /* Small gaps above 1 MiB go in 1 MiB pieces (the small pool's largest). */
                uint64_t n = pc->size - done;
                if (g->small && !pc->live && n > GA_SEED_SMALL_SIZE)
                    n = GA_SEED_SMALL_SIZE;
                bool last = k + 1 == g->first + g->n, tail;
                uint64_t ask = piece_ask(g, pc, n, last, &tail);
                void *p = NULL;
                if (take(a, ask, g->stream, &p, err, errlen) != 0)
                    goto out;
                galloc_sim_place(a, 0); /* made: a small segment by its first piece */
                if (tail && !last) {
                    /* Every other free block is held now, so the request fills
                     * the hole the placeholder leaves and keeps the tail. */
                    if (n_late < cap_late) {
                        late[n_late++] = (late_t){p, pc->req, pc->addr, g->stream};
                        done += n;
                        continue;
                    }
                }
                if (pc->live) {
                    ga_idmap_val_t v = {p, g->stream};
                    if (ga_idmap_put(map, pc->addr, v, NULL, NULL) != 0) {
                        snprintf(err, errlen, "out of host memory");
                        goto out;
                    }
                } else if (n_held < cap) {
                    held[n_held++] = p;
                }
                done += n;
            }
        }
    }
    rc = fill_late(a, map, late, n_late, err, errlen);
out:
    for (size_t k = 0; k < n_held; k++) /* the gaps become free blocks and merge as they were */
        galloc_free(a, held[k]);
    free(held);
    free(late);
    galloc_stats_reset_peak(a); /* the tiling's own peaks (a whole segment taken at once) are not the run's */
    return rc;
}
