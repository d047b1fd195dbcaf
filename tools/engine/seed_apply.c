/*
 * seed_apply.c: seed a fresh galloc allocator with the state a snapshot held
 * at its trace's first entry (ga_seed_t, reconstructed by seed.c), so the
 * replay of a mid-run trace starts where PyTorch's allocator stood. See seed.h
 * for why the tiling below reproduces the layout.
 *
 * Every piece is allocated while every earlier one is still held, so the only
 * free space of its pool and stream is the rest of the segment being tiled
 * (or, expandable, the free tail of its last mapped page and the unmapped
 * range after it): best fit and PyTorch's expandable search both put the
 * piece right after the previous one. What must end up free is released in
 * this order once everything is tiled: the held-back requests (fill_late,
 * split_late), the expandable holes (then empty_cache unmaps their pages and
 * nothing else, as every other piece is taken), the gaps. A configuration
 * without expandable segments cannot hold an expandable run: its live blocks
 * are allocated plainly at the end (note_plain), as --no-seed would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/engine/replay.h"
#include "tools/snapshot/seed.h"

/* A live block whose request is asked for once every segment is tiled. */
typedef struct late {
    void *placeholder; /* its block, taken at its size meanwhile (with the gap after it: split_late) */
    uint64_t req;      /* the request */
    uint64_t id;       /* its trace id */
    uint64_t stream;
} late_t;

typedef struct ptrs {
    void **v;
    size_t n, cap;
} ptrs_t;

typedef struct lates {
    late_t *v;
    size_t n, cap;
} lates_t;

/* The seeding under way. */
typedef struct tiler {
    galloc_allocator_t *a;
    ga_idmap_t *map;
    ptrs_t held;    /* gap placeholders: freed last */
    ptrs_t holes;   /* placeholders of expandable holes: freed, then unmapped by empty_cache */
    lates_t late;   /* requests that keep an unsplit tail (fill_late) */
    lates_t split;  /* expandable blocks followed by a gap of 1 MiB or less (split_late) */
    lates_t plain;  /* without expandable segments: the live blocks of expandable runs (take_plain) */
    char *err;
    size_t errlen;
} tiler_t;

static int nomem(tiler_t *t)
{
    snprintf(t->err, t->errlen, "out of host memory");
    return -1;
}

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

static int push_ptr(tiler_t *t, ptrs_t *l, void *p)
{
    void **nv = ga_grow(l->v, &l->cap, l->n, sizeof(*nv), 64);
    if (nv == NULL) {
        galloc_free(t->a, p);
        return nomem(t);
    }
    l->v = nv;
    l->v[l->n++] = p;
    return 0;
}

static int push_late(tiler_t *t, lates_t *l, late_t x)
{
    late_t *nv = ga_grow(l->v, &l->cap, l->n, sizeof(*nv), 16);
    if (nv == NULL) {
        galloc_free(t->a, x.placeholder);
        return nomem(t);
    }
    l->v = nv;
    l->v[l->n++] = x;
    return 0;
}

/* Block p stands for the live block of trace id id from now on. */
static int put_live(tiler_t *t, uint64_t id, void *p, uint64_t stream)
{
    ga_idmap_val_t v = {p, stream};
    return ga_idmap_put(t->map, id, v, NULL, NULL) == 0 ? 0 : nomem(t);
}

/* n bytes of placeholders onto l: in 1 MiB pieces in the small pool (its
 * largest), else one. */
static int take_free(tiler_t *t, ptrs_t *l, uint64_t n, bool small, uint64_t stream)
{
    while (n > 0) {
        uint64_t c = small && n > GA_SEED_SMALL_SIZE ? GA_SEED_SMALL_SIZE : n;
        void *p = NULL;
        if (take(t->a, c, stream, &p, t->err, t->errlen) != 0 || push_ptr(t, l, p) != 0)
            return -1;
        galloc_sim_place(t->a, 0); /* made: the reservation by its first piece */
        n -= c;
    }
    return 0;
}

/* The request to make for a piece of n bytes: the request as recorded, so
 * requested_bytes is not overstated, where it gives the same block: it rounds
 * (512 bytes) to the block, or the block's unsplit tail (a gap too small to
 * split, seed.h) stays with it as PyTorch left it: as the segment's last
 * piece, or asked for later in the exact hole (*tail: fill_late). Expandable
 * blocks have no such tail (every remainder of 512 bytes splits). */
static uint64_t piece_ask(const ga_seed_segment_t *g, const ga_seed_piece_t *pc, uint64_t n, bool last, bool *tail)
{
    bool exact = pc->live && pc->req != 0 && (pc->req + 511) / 512 * 512 == n;
    *tail = pc->live && pc->req != 0 && pc->req < n && !exact && !g->small && !g->expandable &&
            pc->req > GA_SEED_SMALL_SIZE && n - (pc->req + 511) / 512 * 512 <= GA_SEED_SMALL_SIZE;
    return exact || (*tail && last) ? pc->req : n;
}

/* The held-back requests with an unsplit tail: each placeholder is freed and,
 * the only free block then, taken whole by its request. 0, or -1 with err. */
static int fill_late(tiler_t *t)
{
    for (size_t k = 0; k < t->late.n; k++) {
        const late_t *l = &t->late.v[k];
        void *p = NULL;
        galloc_free(t->a, l->placeholder);
        if (take(t->a, l->req, l->stream, &p, t->err, t->errlen) != 0 || put_live(t, l->id, p, l->stream) != 0)
            return -1;
    }
    return 0;
}

/* An expandable block and the gap after it (1 MiB or less: no large request
 * can be that small) were taken as one placeholder: freed, it is the best fit
 * for the block's request, which splits the gap off (512 bytes or more).
 * Last first: a gap already split off before the placeholder would merge with
 * it and take the block. 0, or -1 with err. */
static int split_late(tiler_t *t)
{
    for (size_t k = t->split.n; k-- > 0;) {
        const late_t *l = &t->split.v[k];
        void *p = NULL;
        galloc_free(t->a, l->placeholder);
        if (take(t->a, l->req, l->stream, &p, t->err, t->errlen) != 0 || put_live(t, l->id, p, l->stream) != 0)
            return -1;
        if (p != l->placeholder) {
            snprintf(t->err, t->errlen, "seeding the reconstructed state: the block of trace id 0x%llx did not "
                     "return to its place", (unsigned long long)l->id);
            return -1;
        }
    }
    return 0;
}

/* Tile one segment that is not expandable. */
static int tile_segment(tiler_t *t, const ga_seed_t *s, const ga_seed_segment_t *g)
{
    galloc_allocator_t *a = t->a;
    /* A large segment is made with its own size, then given back to the
     * cache so its pieces are split off its front in address order; a
     * small one is made by its first piece (every piece is at most 1 MiB).
     * Every earlier segment is fully tiled, so no other free block can
     * take a piece. Under sim_placement:recorded the segment also gets its
     * recorded address (elsewhere galloc_sim_place is refused: no effect). */
    galloc_sim_place(a, g->addr);
    if (!g->small) {
        void *whole = NULL;
        if (take(a, g->size, g->stream, &whole, t->err, t->errlen) != 0)
            return -1;
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
            if (take(a, ask, g->stream, &p, t->err, t->errlen) != 0)
                return -1;
            galloc_sim_place(a, 0); /* made: a small segment by its first piece */
            done += n;
            /* Every other free block is held at the end, so the request fills
             * the hole the placeholder leaves and keeps the tail. */
            int rc = tail && !last ? push_late(t, &t->late, (late_t){p, pc->req, pc->addr, g->stream})
                     : pc->live    ? put_live(t, pc->addr, p, g->stream)
                                   : push_ptr(t, &t->held, p);
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

/* A piece this tiling cannot make: a free gap of 1 MiB or less opening a
 * large reservation, or a block of the wrong pool's size. */
static int unseedable(tiler_t *t, const ga_seed_segment_t *g, const ga_seed_piece_t *pc)
{
    snprintf(t->err, t->errlen,
             "seeding the reconstructed state: the %s %s of %llu bytes at 0x%llx in the expandable segment at 0x%llx "
             "cannot be made by %s requests",
             pc->live ? "block" : "free gap", g->small ? "(small pool)" : "(large pool)", (unsigned long long)pc->size,
             (unsigned long long)pc->addr, (unsigned long long)g->resv, g->small ? "small" : "large");
    return -1;
}

/* Tile one mapped run of an expandable reservation from piece k on. */
static int tile_run(tiler_t *t, const ga_seed_t *s, const ga_seed_segment_t *g, size_t k)
{
    for (size_t end = g->first + g->n; k < end; k++) {
        const ga_seed_piece_t *pc = &s->pc[k];
        /* small: blocks up to 1 MiB, gaps in 1 MiB pieces; large: above 1 MiB
         * (a smaller gap went with the block or the hole before it) */
        bool fits = g->small ? !pc->live || pc->size <= GA_SEED_SMALL_SIZE : pc->size > GA_SEED_SMALL_SIZE;
        bool gap_next = !g->small && pc->live && k + 1 < end && !s->pc[k + 1].live &&
                        s->pc[k + 1].size <= GA_SEED_SMALL_SIZE;
        if (!fits)
            return unseedable(t, g, pc);
        if (!pc->live) {
            if (take_free(t, &t->held, pc->size, g->small, g->stream) != 0)
                return -1;
            continue;
        }
        bool tail;
        uint64_t ask = piece_ask(g, pc, pc->size, false, &tail), n = pc->size + (gap_next ? s->pc[k + 1].size : 0);
        void *p = NULL;
        if (take(t->a, gap_next ? n : ask, g->stream, &p, t->err, t->errlen) != 0)
            return -1;
        galloc_sim_place(t->a, 0);
        if ((gap_next ? push_late(t, &t->split, (late_t){p, ask, pc->addr, g->stream})
                      : put_live(t, pc->addr, p, g->stream)) != 0)
            return -1;
        k += gap_next;
    }
    return 0;
}

/* A hole is mapped before it is unmapped: say so when the device cannot hold
 * it, and what may be behind a hole that large. Returns SIZE_MAX. */
static size_t hole_failed(tiler_t *t, uint64_t at, uint64_t hole, uint64_t resv)
{
    static const char prefix[] = "seeding the reconstructed state: "; /* take's, said once */
    char why[512];
    bool said = strncmp(t->err, prefix, sizeof(prefix) - 1) == 0;
    snprintf(why, sizeof(why), "%s", said ? t->err + sizeof(prefix) - 1 : t->err);
    snprintf(t->err, t->errlen,
             "seeding the reconstructed state: the unmapped %llu bytes at 0x%llx of the expandable segment at 0x%llx "
             "are mapped to be unmapped again, and that failed (runs of one stream and pool are taken for one "
             "reservation: two reservations are not told apart): %s",
             (unsigned long long)hole, (unsigned long long)at, (unsigned long long)resv, why);
    return SIZE_MAX;
}

/* Tile the runs seg[i] .. of one expandable reservation (they are
 * consecutive) from its base, the unmapped holes before and between them by
 * placeholders; returns the index after its last run, or SIZE_MAX with err. */
static size_t tile_reservation(tiler_t *t, const ga_seed_t *s, size_t i)
{
    const ga_seed_segment_t *g0 = &s->seg[i];
    uint64_t at = g0->resv;
    galloc_sim_place(t->a, g0->resv); /* the reservation, made by the first piece */
    for (; i < s->n_seg && s->seg[i].expandable && s->seg[i].resv == g0->resv; i++) {
        const ga_seed_segment_t *g = &s->seg[i];
        size_t k = g->first;
        if (g->addr > at) {
            /* A free gap that opens the run goes with the hole: empty_cache
             * unmaps the hole's whole pages and leaves it mapped, free. */
            uint64_t hole = g->addr - at;
            if (!g->small && g->n > 0 && !s->pc[k].live && s->pc[k].size <= GA_SEED_SMALL_SIZE)
                hole += s->pc[k++].size;
            if (take_free(t, &t->holes, hole, g->small, g->stream) != 0)
                return hole_failed(t, at, hole, g0->resv);
        }
        if (tile_run(t, s, g, k) != 0)
            return SIZE_MAX;
        at = g->addr + g->size;
    }
    galloc_sim_place(t->a, 0);
    return i;
}

/* Under a configuration without expandable segments (another column of a
 * replay, or --verify --conf) an expandable run cannot be made: its live
 * blocks are noted, to be allocated plainly once the rest is seeded, as
 * --no-seed's prologue allocates them. Returns the index after the
 * reservation's last run, or SIZE_MAX with err. */
static size_t note_plain(tiler_t *t, const ga_seed_t *s, size_t i)
{
    uint64_t resv = s->seg[i].resv;
    for (; i < s->n_seg && s->seg[i].expandable && s->seg[i].resv == resv; i++) {
        const ga_seed_segment_t *g = &s->seg[i];
        for (size_t k = g->first; k < g->first + g->n; k++) {
            const ga_seed_piece_t *pc = &s->pc[k];
            bool tail;
            if (pc->live && push_late(t, &t->plain, (late_t){NULL, piece_ask(g, pc, pc->size, false, &tail), pc->addr,
                                                             g->stream}) != 0)
                return SIZE_MAX;
        }
    }
    return i;
}

static int take_plain(tiler_t *t)
{
    for (size_t k = 0; k < t->plain.n; k++) {
        const late_t *l = &t->plain.v[k];
        void *p = NULL;
        if (take(t->a, l->req, l->stream, &p, t->err, t->errlen) != 0 || put_live(t, l->id, p, l->stream) != 0)
            return -1;
    }
    return 0;
}

/* What the tiling left to free, in the order of the file's comment. */
static int release(tiler_t *t, int rc)
{
    if (rc == 0)
        rc = fill_late(t);
    if (rc == 0)
        rc = split_late(t);
    for (size_t k = 0; k < t->holes.n; k++)
        galloc_free(t->a, t->holes.v[k]);
    if (rc == 0 && t->holes.n > 0 && galloc_empty_cache(t->a) != GALLOC_OK) {
        char msg[GALLOC_ERROR_MAX];
        galloc_last_error(t->a, msg, sizeof(msg));
        snprintf(t->err, t->errlen, "seeding the reconstructed state: empty_cache: %.300s", msg);
        rc = -1;
    }
    for (size_t k = 0; k < t->held.n; k++) /* the gaps become free blocks and merge as they were */
        galloc_free(t->a, t->held.v[k]);
    if (rc == 0)
        rc = take_plain(t);
    free(t->held.v);
    free(t->holes.v);
    free(t->late.v);
    free(t->split.v);
    free(t->plain.v);
    galloc_stats_reset_peak(t->a); /* the tiling's own peaks (a whole segment taken at once) are not the run's */
    return rc;
}

int ga_seed_apply(galloc_allocator_t *a, ga_idmap_t *map, const ga_seed_t *s, char *err, size_t errlen)
{
    /* Gap pieces are held until every segment is tiled: a gap freed early
     * would be a free block best fit could place a later piece in. */
    tiler_t t = {.a = a, .map = map, .err = err, .errlen = errlen};
    galloc_settings_t set = {.struct_size = sizeof(set)};
    bool expandable = galloc_settings_get(a, &set) == GALLOC_OK && set.expandable_segments;
    int rc = 0;
    for (size_t i = 0; i < s->n_seg && rc == 0;) {
        if (s->seg[i].expandable) {
            i = expandable ? tile_reservation(&t, s, i) : note_plain(&t, s, i);
            rc = i == SIZE_MAX ? -1 : 0;
        } else {
            rc = tile_segment(&t, s, &s->seg[i++]);
        }
    }
    return release(&t, rc);
}
