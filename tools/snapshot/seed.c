/*
 * seed.c: reconstruct the allocator state at a snapshot trace's first entry
 * from the records of torch_snapshot.c (see seed.h for the rules); the replay
 * engine seeds an allocator with it (seed_apply.c).
 *
 * Invariant of the backward walk: `blocks` holds exactly the blocks live at
 * the point reached (addresses unique, looked up through `bmap`), `segs` the
 * segments existing then (through `smap`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/idmap.h"
#include "tools/snapshot/seed.h"
#include "tools/snapshot/seed_resv.h"
#include "tools/snapshot/torch_snapshot.h"

#define MIN_BLOCK 512                     /* PyTorch kMinBlockSize */
#define SMALL_SEGMENT ((uint64_t)2 << 20) /* PyTorch kSmallBuffer */

typedef struct item {
    uint64_t addr, size, stream;
    uint64_t req; /* blocks: the bytes requested (the trace's size, requested_size), 0 if unknown */
    bool small, valid;
    bool expandable;     /* segments: a mapped run of an expandable reservation */
    uint64_t resv, page; /* ... its reservation's base and page size */
    bool completing;     /* made live by undoing a free_completed whose free_requested is not (yet) seen */
    size_t freed_at;     /* blocks made live by undoing a free: the entry of that free (live until it); else SIZE_MAX */
    bool pending;        /* blocks: active_pending_free in the final state (until a free_requested is undone) */
    int64_t pool[2];     /* segments: segment_pool_id */
    const void *frames;  /* blocks and segments from the final state: the stack that made them (NULL if none) */
} item_t;

/* An alloc entry's address and index: a clue to the real size of blocks
 * live around it (build). */
typedef struct clue {
    uint64_t addr;
    size_t at;
} clue_t;

typedef struct clues {
    clue_t *v;
    size_t n, cap;
} clues_t;

typedef struct set {
    item_t *v;
    size_t n, cap;
    ga_idmap_t map; /* addr -> index (in val.stream) of a valid item */
} set_t;

static int set_add(set_t *s, item_t it)
{
    ga_idmap_val_t old;
    if (ga_idmap_get(&s->map, it.addr, &old) && s->v[old.stream].valid)
        return 0; /* already there: an inconsistent trace, keep the first */
    item_t *nv = ga_grow(s->v, &s->cap, s->n, sizeof(*nv), 64);
    if (nv == NULL)
        return -1;
    s->v = nv;
    it.valid = true;
    s->v[s->n] = it;
    ga_idmap_val_t idx = {.ptr = NULL, .stream = s->n++};
    return ga_idmap_put(&s->map, it.addr, idx, NULL, NULL);
}

static void set_del(set_t *s, uint64_t addr)
{
    ga_idmap_val_t idx;
    if (ga_idmap_remove(&s->map, addr, &idx))
        s->v[idx.stream].valid = false;
}

/* Undo a free_requested: the block was live before it (and its
 * free_completed, if seen, now has its pair). */
static int request(set_t *s, item_t it)
{
    ga_idmap_val_t idx;
    if (ga_idmap_get(&s->map, it.addr, &idx) && s->v[idx.stream].valid) {
        s->v[idx.stream].completing = false;
        s->v[idx.stream].pending = false;        /* allocated until the user freed it here */
        s->v[idx.stream].freed_at = it.freed_at; /* the user's free: live until then */
        return 0;
    }
    return set_add(s, it);
}

static int by_addr(const void *a, const void *b)
{
    const item_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int push_piece(ga_seed_t *s, size_t *cap, ga_seed_piece_t p)
{
    ga_seed_piece_t *np = ga_grow(s->pc, cap, s->n_pc, sizeof(*np), 64);
    if (np == NULL)
        return -1;
    s->pc = np;
    s->pc[s->n_pc++] = p;
    return 0;
}

static int by_clue_addr(const void *a, const void *b)
{
    const clue_t *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The lowest address in (lo, hi) that the trace allocated before entry
 * `before`, or 0. */
static uint64_t first_alloc_in(const clues_t *c, uint64_t lo, uint64_t hi, size_t before)
{
    size_t a = 0, b = c->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (c->v[m].addr <= lo)
            a = m + 1;
        else
            b = m;
    }
    for (; a < c->n && c->v[a].addr < hi; a++)
        if (c->v[a].at < before)
            return c->v[a].addr;
    return 0;
}

/* Count seg[i] among the private pools' segments, and its pool id if no
 * earlier segment had it (few pools: a linear look back is enough). */
static void count_pool(ga_seed_t *s, size_t i)
{
    const int64_t *id = s->seg[i].pool_id;
    if (id[0] == 0 && id[1] == 0)
        return;
    s->private_segments++;
    for (size_t k = 0; k < i; k++)
        if (s->seg[k].pool_id[0] == id[0] && s->seg[k].pool_id[1] == id[1])
            return;
    s->private_pools++;
}

/* Tile every segment with its live blocks and the gaps between them. A block
 * known only from its free (size: the request rounded) ends where the trace
 * allocated another block while it was live, when that leaves too little to
 * have been split off (PyTorch kept the remainder in the block). */
static int build(ga_seed_t *s, set_t *segs, set_t *blocks, clues_t *clues)
{
    size_t ns = 0, nb = 0, pcap = 0;
    for (size_t i = 0; i < segs->n; i++)
        if (segs->v[i].valid)
            segs->v[ns++] = segs->v[i];
    /* A free_completed whose free_requested fell off the ring: the user had
     * freed the block before the trace began, and it was pending then. It is
     * still free space here: the replay's free_completed only synchronizes
     * the side stream, and a block waiting on it returns at the next
     * allocation, so a block seeded pending would outlive the entry that
     * records it freed whenever no allocation follows (the end of a trace,
     * before an empty_cache). Pending blocks are those the final state shows
     * pending and the trace never touches: no entry says when they return. */
    for (size_t i = 0; i < blocks->n; i++)
        if (blocks->v[i].valid && !blocks->v[i].completing)
            blocks->v[nb++] = blocks->v[i];
    /* qsort's array must not be NULL even for no elements (C11 7.1.4) */
    if (ns > 0)
        qsort(segs->v, ns, sizeof(item_t), by_addr);
    if (nb > 0)
        qsort(blocks->v, nb, sizeof(item_t), by_addr);
    if (clues->n > 0)
        qsort(clues->v, clues->n, sizeof(clue_t), by_clue_addr);
    s->seg = calloc(ns ? ns : 1, sizeof(*s->seg));
    if (s->seg == NULL)
        return -1;
    size_t b = 0;
    for (size_t i = 0; i < ns; i++) {
        const item_t *g = &segs->v[i];
        uint64_t end = g->addr + g->size, at = g->addr;
        /* expandable_segments:True splits every remainder of 512 bytes or more */
        uint64_t min_gap = g->small || g->expandable ? MIN_BLOCK : GA_SEED_SMALL_SIZE + 1;
        ga_seed_segment_t *sg = &s->seg[s->n_seg++];
        *sg = (ga_seed_segment_t){.addr = g->addr,
                                  .size = g->size,
                                  .stream = g->stream,
                                  .small = g->small,
                                  .expandable = g->expandable,
                                  .resv = g->resv,
                                  .page = g->page,
                                  .first = s->n_pc,
                                  .pool_id = {g->pool[0], g->pool[1]},
                                  .frames = g->frames};
        count_pool(s, s->n_seg - 1);
        while (b < nb && blocks->v[b].addr < g->addr)
            b++; /* a live block outside every segment: inconsistent, dropped */
        for (; b < nb && blocks->v[b].addr < end; b++) {
            const item_t *k = &blocks->v[b];
            if (k->addr < at)
                continue; /* overlaps the previous block: dropped */
            if (k->addr > at) {
                if (k->addr - at < min_gap && s->n_pc > sg->first && s->pc[s->n_pc - 1].live)
                    s->pc[s->n_pc - 1].size += k->addr - at; /* too small to have been split off */
                else if (push_piece(s, &pcap, (ga_seed_piece_t){.addr = at, .size = k->addr - at}) != 0)
                    return -1;
            }
            uint64_t size = k->size < end - k->addr ? k->size : end - k->addr;
            if (!g->small && !g->expandable && k->freed_at != SIZE_MAX) {
                uint64_t a = first_alloc_in(clues, k->addr + size, k->addr + size + min_gap, k->freed_at);
                uint64_t next = b + 1 < nb && blocks->v[b + 1].addr < end ? blocks->v[b + 1].addr : end;
                if (a != 0 && a <= next)
                    size = a - k->addr;
            }
            ga_seed_piece_t pc = {.addr = k->addr,
                                  .size = size,
                                  .live = true,
                                  .req = k->req <= size ? k->req : 0,
                                  .pending = k->pending,
                                  .frames = k->frames};
            if (push_piece(s, &pcap, pc) != 0)
                return -1;
            s->live_blocks++;
            s->pending_blocks += k->pending;
            at = k->addr + size;
        }
        if (at < end) {
            if (end - at < min_gap && s->n_pc > sg->first && s->pc[s->n_pc - 1].live)
                s->pc[s->n_pc - 1].size += end - at;
            else if (push_piece(s, &pcap, (ga_seed_piece_t){.addr = at, .size = end - at}) != 0)
                return -1;
        }
        sg->n = s->n_pc - sg->first;
    }
    return 0;
}

static uint64_t round_block(uint64_t n)
{
    return n < MIN_BLOCK ? MIN_BLOCK : (n + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

/* The backward walk over the trace (see the invariant above). */
static int walk_back(const ga_torch_list_t *trace, set_t *segs, set_t *blocks, clues_t *clues, ga_seed_resvs_t *resv,
                     char *err, size_t errlen)
{
    for (size_t i = trace->n; i-- > 0;) {
        ga_torch_entry_t e;
        ga_torch_entry(trace, i, &e);
        uint64_t addr = e.addr.v, size = e.size.v, stream = e.stream.v; /* 0 where not an int */
        int rc = 0;
        switch (e.action) {
        case GA_ACT_ALLOC:
            set_del(blocks, addr);
            clue_t *nv = ga_grow(clues->v, &clues->cap, clues->n, sizeof(*nv), 64);
            if (nv == NULL) {
                rc = -1;
                break;
            }
            clues->v = nv;
            clues->v[clues->n++] = (clue_t){addr, i};
            break;
        case GA_ACT_FREE_COMPLETED:
            rc = set_add(blocks, (item_t){.addr = addr,
                                          .size = round_block(size),
                                          .stream = stream,
                                          .req = size,
                                          .completing = true,
                                          .freed_at = i});
            break;
        case GA_ACT_FREE_REQUESTED:
            rc = request(
                blocks,
                (item_t){.addr = addr, .size = round_block(size), .stream = stream, .req = size, .freed_at = i});
            break;
        case GA_ACT_SEGMENT_ALLOC: set_del(segs, addr); break;
        case GA_ACT_SEGMENT_FREE:
            rc = set_add(segs, (item_t){.addr = addr,
                                        .size = size,
                                        .stream = stream,
                                        .small = size == SMALL_SEGMENT,
                                        .freed_at = SIZE_MAX});
            break;
        case GA_ACT_SEGMENT_MAP:
        case GA_ACT_SEGMENT_UNMAP: ga_seed_resv_undo(resv, stream, addr, size, e.action == GA_ACT_SEGMENT_MAP); break;
        default: break;
        }
        if (rc != 0) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
    }
    return 0;
}

/* The final segments of device (and their live blocks) into segs and blocks. */
static int final_state(const ga_torch_snapshot_t *snap, int device, set_t *segs, set_t *blocks, ga_seed_resvs_t *resv,
                       const char *path, char *err, size_t errlen)
{
    char rerr[200];
    for (size_t s = 0; s < snap->segments.n; s++) {
        ga_torch_segment_t g;
        ga_torch_segment(snap, s, &g);
        if ((int64_t)g.device.v != device)
            continue;
        if (g.expandable) {
            if (ga_seed_resv_run(resv, g.stream.v, g.small, g.address.v, g.total_size.v, rerr, sizeof(rerr)) != 0) {
                snprintf(err, errlen, "%s: segments[%zu]: %s", path, s, rerr);
                return -1;
            }
        } else if (set_add(segs, (item_t){.addr = g.address.v,
                                          .size = g.total_size.v,
                                          .stream = g.stream.v,
                                          .small = g.small,
                                          .freed_at = SIZE_MAX,
                                          .pool = {g.pool_id[0], g.pool_id[1]},
                                          .frames = g.frames}) != 0)
            goto nomem;
        for (size_t b = 0; b < g.blocks.n; b++) {
            ga_torch_block_t blk;
            ga_torch_block(&g, b, &blk);
            if (blk.state == GA_STATE_INACTIVE)
                continue;
            /* A block taken as live must have bytes: one without an int size (an
             * empty dict in the list, say) would become a live piece of 0 bytes,
             * which no allocation can stand for. */
            if (blk.size.kind != GA_TORCH_INT || blk.size.v == 0) {
                snprintf(err, errlen, "%s: segments[%zu].blocks[%zu]: a block that is not inactive has no size", path,
                         s, b);
                return -1;
            }
            uint64_t req = blk.requested_size.kind == GA_TORCH_INT ? blk.requested_size.v : 0;
            if (set_add(blocks, (item_t){.addr = blk.address.v,
                                         .size = blk.size.v,
                                         .stream = g.stream.v,
                                         .req = req,
                                         .freed_at = SIZE_MAX,
                                         .pending = blk.state == GA_STATE_PENDING_FREE,
                                         .frames = blk.frames}) != 0)
                goto nomem;
        }
    }
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of host memory", path);
    return -1;
}

/* Every segment_map/unmap entry widens its reservation's known range, then
 * the pages get their flags (seed_resv.h). */
static int see_maps(const ga_torch_list_t *trace, ga_seed_resvs_t *resv, char *err, size_t errlen)
{
    for (size_t i = 0; i < trace->n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(trace, i, &e);
        if ((e.action == GA_ACT_SEGMENT_MAP || e.action == GA_ACT_SEGMENT_UNMAP) &&
            ga_seed_resv_see(resv, e.stream.v, e.addr.v, e.size.v, err, errlen) != 0)
            return -1;
    }
    if (ga_seed_resv_ready(resv) != 0) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

/* The runs mapped at the first entry become segments of the walk. */
static int add_runs(const ga_seed_resvs_t *resv, set_t *segs)
{
    ga_seed_run_t *runs;
    size_t n;
    if (ga_seed_resv_runs(resv, &runs, &n) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = set_add(segs, (item_t){.addr = runs[i].addr,
                                    .size = runs[i].size,
                                    .stream = runs[i].stream,
                                    .small = runs[i].small,
                                    .expandable = true,
                                    .resv = runs[i].resv,
                                    .page = runs[i].page,
                                    .freed_at = SIZE_MAX});
    free(runs);
    return rc;
}

int ga_seed_from_snapshot(const ga_torch_snapshot_t *s, const char *path, int device, ga_seed_t *out, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const ga_torch_snapshot_t snap = *s;
    set_t segs = {0}, blocks = {0};
    clues_t clues = {0};
    ga_seed_resvs_t resv = {0};
    ga_idmap_init(&segs.map);
    ga_idmap_init(&blocks.map);
    char werr[256];
    int rc = -1;
    if (final_state(&snap, device, &segs, &blocks, &resv, path, err, errlen) != 0)
        goto out;
    ga_torch_list_t trace = ga_torch_trace(&snap, (size_t)device);
    if (see_maps(&trace, &resv, werr, sizeof(werr)) != 0 ||
        walk_back(&trace, &segs, &blocks, &clues, &resv, werr, sizeof(werr)) != 0) {
        snprintf(err, errlen, "%s: %s", path, werr);
        goto out;
    }
    if (add_runs(&resv, &segs) != 0 || build(out, &segs, &blocks, &clues) != 0) {
        snprintf(err, errlen, "%s: out of host memory", path);
        goto out;
    }
    for (size_t i = 0; i < out->n_seg; i++)
        out->reserved_bytes += out->seg[i].size;
    for (size_t i = 0; i < out->n_pc; i++)
        out->live_bytes += out->pc[i].live ? out->pc[i].size : 0;
    rc = 0;
out:
    free(segs.v);
    free(blocks.v);
    free(clues.v);
    ga_idmap_free(&segs.map);
    ga_idmap_free(&blocks.map);
    ga_seed_resv_free(&resv);
    if (rc != 0)
        ga_seed_free(out);
    return rc;
}

void ga_seed_free(ga_seed_t *s)
{
    free(s->seg);
    free(s->pc);
    memset(s, 0, sizeof(*s));
}
