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
 *
 * Pending blocks (active_pending_free) are freed last, each recorded on the
 * replay's side stream first, as the replay does a lone free_requested: they
 * stay active until an allocation polls their events and finds them
 * complete (seed.h). Freed earlier, a piece's malloc could poll them and
 * return one to the cache while pieces are still being placed. No trace id
 * maps to them: the user has freed them, and the trace's free_completed only
 * synchronizes the side stream (ga_replay_call), so nothing is freed twice.
 *
 * Private pools: every allocation for a segment of a private pool (its
 * pieces, its held-back requests) is routed to the galloc MemPool made with
 * its recorded pool id (pool_of, galloc_mempool_create_id: a snapshot of the
 * replay names it as the recording did), one begin/end around each call, so no
 * route is active between them or after the seeding. Best fit then searches
 * that pool only, which holds just the segment being tiled and those fully
 * tiled before it, as the default pools do for theirs. An allocator without
 * MemPools (GALLOC_E_UNSUPPORTED) keeps them in its default pools.
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
    size_t pool;  /* its segment's pool (pool_of) */
    bool pending; /* freed by the user, waiting on a stream */
    size_t piece; /* its piece (the seed's pc index) */
} late_t;

/* A private pool of the snapshot and the galloc MemPool standing for it. */
typedef struct pool {
    int64_t rec[2];         /* the recorded segment_pool_id */
    galloc_mempool_id_t id; /* galloc's */
} pool_t;

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
    ptrs_t pending; /* pending blocks: recorded on the side stream and freed last */
    pool_t *pools;  /* the private pools met so far; pool index k > 0 is pools[k - 1] */
    size_t n_pools, pools_cap;
    bool no_pools;  /* the allocator has no MemPools: everything goes to the default pools */
    size_t *taking; /* NULL, or set to 1 + the piece each allocation is made for (0 between them) */
    char *err;
    size_t errlen;
    ga_replay_oom_t *oom; /* where the first out-of-memory is described (NULL: not asked) */
    bool out_of_memory;   /* a request ran out of device memory (the first one is in oom) */
} tiler_t;

static int nomem(tiler_t *t)
{
    snprintf(t->err, t->errlen, "out of host memory");
    return -1;
}

static int call_failed(tiler_t *t, const char *call, galloc_status_t st)
{
    char msg[GALLOC_ERROR_MAX];
    galloc_last_error(t->a, msg, sizeof(msg));
    snprintf(t->err, t->errlen, "seeding the reconstructed state: %s: %s: %.300s", call, galloc_strerror(st), msg);
    return -1;
}

/* The pool index of segment g: 0 for the default pools, else k with
 * t->pools[k - 1] the MemPool made for its id (made now if it is new).
 * SIZE_MAX with err on failure. */
static size_t pool_of(tiler_t *t, const ga_seed_segment_t *g)
{
    if ((g->pool_id[0] == 0 && g->pool_id[1] == 0) || t->no_pools)
        return 0;
    for (size_t k = 0; k < t->n_pools; k++)
        if (t->pools[k].rec[0] == g->pool_id[0] && t->pools[k].rec[1] == g->pool_id[1])
            return k + 1;
    pool_t *nv = ga_grow(t->pools, &t->pools_cap, t->n_pools, sizeof(*nv), 4);
    if (nv == NULL) {
        nomem(t);
        return SIZE_MAX;
    }
    t->pools = nv;
    pool_t *p = &t->pools[t->n_pools];
    /* The recorded id, so that a snapshot of the replay names the pool as
     * the recording did; a recorded id galloc cannot take (negative, or in
     * use by a pool made earlier) gets a new one. */
    p->id = (galloc_mempool_id_t){(uint64_t)g->pool_id[0], (uint64_t)g->pool_id[1]};
    galloc_status_t st =
        g->pool_id[0] >= 0 && g->pool_id[1] >= 0 ? galloc_mempool_create_id(t->a, p->id) : GALLOC_E_INVAL;
    if (st == GALLOC_E_INVAL)
        st = galloc_mempool_create(t->a, &p->id);
    if (st == GALLOC_E_UNSUPPORTED) {
        t->no_pools = true;
        return 0;
    }
    if (st != GALLOC_OK) {
        call_failed(t, "galloc_mempool_create", st);
        return SIZE_MAX;
    }
    p->rec[0] = g->pool_id[0];
    p->rec[1] = g->pool_id[1];
    return ++t->n_pools;
}

/* Allocate size bytes on stream in pool (pool_of) for piece k of the seed;
 * -1 with err on failure. */
static int take(tiler_t *t, size_t k, size_t pool, uint64_t size, uint64_t stream, void **p)
{
    galloc_status_t st;
    if (t->taking != NULL)
        *t->taking = k + 1;
    if (pool > 0) {
        st = galloc_mempool_begin_allocate(t->a, t->pools[pool - 1].id, GALLOC_ROUTE_STREAM, (galloc_stream_t)stream);
        if (st != GALLOC_OK)
            return call_failed(t, "galloc_mempool_begin_allocate", st);
    }
    st = galloc_malloc(t->a, (size_t)size, (galloc_stream_t)stream, p);
    if (st == GALLOC_E_OOM && !t->out_of_memory && t->oom != NULL) {
        /* PyTorch's message whole and the figures now, before anything is freed */
        memset(t->oom, 0, sizeof(*t->oom));
        t->oom->size = size;
        t->oom->prologue = true;
        galloc_last_error(t->a, t->oom->message, sizeof(t->oom->message));
        ga_replay_classify_oom(t->a, size, ga_replay_start_fraction(t->a), &t->oom->facts);
        galloc_stats_t s = {.struct_size = sizeof(s)};
        if (galloc_memory_stats(t->a, &s) == GALLOC_OK) {
            t->oom->allocated = s.allocated_bytes[GALLOC_STAT_ALL].current;
            t->oom->reserved = s.reserved_bytes[GALLOC_STAT_ALL].current;
        }
    }
    t->out_of_memory |= st == GALLOC_E_OOM;
    if (t->taking != NULL)
        *t->taking = 0;
    if (pool > 0)
        galloc_mempool_end_allocate(t->a, t->pools[pool - 1].id);
    if (st == GALLOC_OK)
        return 0;
    char call[48];
    snprintf(call, sizeof(call), "galloc_malloc(%llu)", (unsigned long long)size);
    return call_failed(t, call, st);
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

/* Block p stands for the live block of trace id id from now on, or, when
 * pending, is freed last (release). */
static int put_live(tiler_t *t, uint64_t id, void *p, uint64_t stream, bool pending)
{
    if (pending)
        return push_ptr(t, &t->pending, p);
    ga_idmap_val_t v = {p, stream};
    return ga_idmap_put(t->map, id, v, NULL, NULL) == 0 ? 0 : nomem(t);
}

/* n bytes of placeholders onto l, for piece k: in 1 MiB pieces in the
 * small pool (its largest), else one. */
static int take_free(tiler_t *t, size_t k, ptrs_t *l, uint64_t n, bool small, uint64_t stream)
{
    while (n > 0) {
        uint64_t c = small && n > GA_SEED_SMALL_SIZE ? GA_SEED_SMALL_SIZE : n;
        void *p = NULL;
        if (take(t, k, 0, c, stream, &p) != 0 || push_ptr(t, l, p) != 0)
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
        late_t *l = &t->late.v[k];
        void *p = NULL;
        galloc_free(t->a, l->placeholder);
        l->placeholder = NULL; /* freed: release leaves it alone */
        if (take(t, l->piece, l->pool, l->req, l->stream, &p) != 0 || put_live(t, l->id, p, l->stream, l->pending) != 0)
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
        late_t *l = &t->split.v[k];
        void *p = NULL, *place = l->placeholder;
        galloc_free(t->a, place);
        l->placeholder = NULL; /* freed: release leaves it alone */
        if (take(t, l->piece, l->pool, l->req, l->stream, &p) != 0 || put_live(t, l->id, p, l->stream, l->pending) != 0)
            return -1;
        if (p != place) {
            snprintf(t->err, t->errlen,
                     "seeding the reconstructed state: the block of trace id 0x%llx did not "
                     "return to its place",
                     (unsigned long long)l->id);
            return -1;
        }
    }
    return 0;
}

/* Tile one segment that is not expandable. */
static int tile_segment(tiler_t *t, const ga_seed_t *s, const ga_seed_segment_t *g)
{
    galloc_allocator_t *a = t->a;
    size_t pool = pool_of(t, g);
    if (pool == SIZE_MAX)
        return -1;
    /* A large segment is made with its own size, then given back to the
     * cache so its pieces are split off its front in address order; a
     * small one is made by its first piece (every piece is at most 1 MiB).
     * Every earlier segment is fully tiled, so no other free block can
     * take a piece. Under sim_placement:recorded the segment also gets its
     * recorded address (elsewhere galloc_sim_place is refused: no effect). */
    galloc_sim_place(a, g->addr);
    if (!g->small) {
        void *whole = NULL;
        if (take(t, g->first, pool, g->size, g->stream, &whole) != 0)
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
            if (take(t, k, pool, ask, g->stream, &p) != 0)
                return -1;
            galloc_sim_place(a, 0); /* made: a small segment by its first piece */
            done += n;
            /* Every other free block is held at the end, so the request fills
             * the hole the placeholder leaves and keeps the tail. */
            late_t l = {p, pc->req, pc->addr, g->stream, pool, pc->pending, k};
            int rc = tail && !last ? push_late(t, &t->late, l)
                     : pc->live    ? put_live(t, pc->addr, p, g->stream, pc->pending)
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
        bool gap_next =
            !g->small && pc->live && k + 1 < end && !s->pc[k + 1].live && s->pc[k + 1].size <= GA_SEED_SMALL_SIZE;
        if (!fits)
            return unseedable(t, g, pc);
        if (!pc->live) {
            if (take_free(t, k, &t->held, pc->size, g->small, g->stream) != 0)
                return -1;
            continue;
        }
        bool tail;
        uint64_t ask = piece_ask(g, pc, pc->size, false, &tail), n = pc->size + (gap_next ? s->pc[k + 1].size : 0);
        void *p = NULL;
        if (take(t, k, 0, gap_next ? n : ask, g->stream, &p) != 0)
            return -1;
        galloc_sim_place(t->a, 0);
        if ((gap_next ? push_late(t, &t->split, (late_t){p, ask, pc->addr, g->stream, 0, pc->pending, k})
                      : put_live(t, pc->addr, p, g->stream, pc->pending)) != 0)
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
            if (take_free(t, g->first, &t->holes, hole, g->small, g->stream) != 0)
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
            if (pc->live && push_late(t, &t->plain,
                                      (late_t){NULL, piece_ask(g, pc, pc->size, false, &tail), pc->addr, g->stream, 0,
                                               pc->pending, k}) != 0)
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
        if (take(t, l->piece, l->pool, l->req, l->stream, &p) != 0 || put_live(t, l->id, p, l->stream, l->pending) != 0)
            return -1;
    }
    return 0;
}

/* What the tiling left to free, in the order of the file's comment. After a
 * failure the held-back requests' placeholders are freed too (the blocks they
 * stand for were never made): the allocator then holds the pieces seeded so
 * far, every live one mapped, so a report of that state adds up. */
static int release(tiler_t *t, int rc)
{
    if (rc == 0)
        rc = fill_late(t);
    if (rc == 0)
        rc = split_late(t);
    for (size_t k = 0; rc != 0 && k < t->late.n; k++)
        if (t->late.v[k].placeholder != NULL)
            galloc_free(t->a, t->late.v[k].placeholder);
    for (size_t k = 0; rc != 0 && k < t->split.n; k++)
        if (t->split.v[k].placeholder != NULL)
            galloc_free(t->a, t->split.v[k].placeholder);
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
    for (size_t k = 0; k < t->pending.n; k++) { /* last: no malloc follows to poll their events */
        galloc_status_t st = galloc_record_stream(t->a, t->pending.v[k], GA_REPLAY_SIDE_STREAM);
        if (rc == 0 && st != GALLOC_OK && st != GALLOC_E_UNSUPPORTED) /* no streams: freed at once */
            rc = call_failed(t, "galloc_record_stream", st);
        galloc_free(t->a, t->pending.v[k]);
    }
    free(t->held.v);
    free(t->holes.v);
    free(t->late.v);
    free(t->split.v);
    free(t->plain.v);
    free(t->pending.v);
    free(t->pools);
    galloc_stats_reset_peak(t->a); /* the tiling's own peaks (a whole segment taken at once) are not the run's */
    return rc;
}

int ga_seed_apply(galloc_allocator_t *a, ga_idmap_t *map, const ga_seed_t *s, char *err, size_t errlen,
                  ga_replay_oom_t *oom)
{
    return ga_seed_apply_named(a, map, s, NULL, err, errlen, oom);
}

int ga_seed_apply_named(galloc_allocator_t *a, ga_idmap_t *map, const ga_seed_t *s, size_t *taking, char *err,
                        size_t errlen, ga_replay_oom_t *oom)
{
    /* Gap pieces are held until every segment is tiled: a gap freed early
     * would be a free block best fit could place a later piece in. */
    tiler_t t = {.a = a, .map = map, .taking = taking, .err = err, .errlen = errlen, .oom = oom};
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
    rc = release(&t, rc);
    return rc != 0 && t.out_of_memory ? GA_SEED_OOM : rc;
}
