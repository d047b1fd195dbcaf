/*
 * seed.c: reconstruct the allocator state at a snapshot trace's first entry
 * and seed a galloc allocator with it (see seed.h for the rules).
 *
 * Invariant of the backward walk: `blocks` holds exactly the blocks live at
 * the point reached (addresses unique, looked up through `bmap`), `segs` the
 * segments existing then (through `smap`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pickle_read.h"
#include "tools/seed.h"
#include "tools/snapfile.h"

#define MIN_LARGE_SPLIT ((uint64_t)1 << 20) /* PyTorch kMinLargeAlloc: a large remainder is split above this */
#define MIN_BLOCK 512                       /* PyTorch kMinBlockSize */
#define SMALL_SEGMENT ((uint64_t)2 << 20)   /* PyTorch kSmallBuffer */

typedef struct item {
    uint64_t addr, size, stream;
    bool small, valid;
    bool completing; /* made live by undoing a free_completed whose free_requested is not (yet) seen */
} item_t;

typedef struct set {
    item_t *v;
    size_t n, cap;
    ga_idmap_t map; /* addr -> index (in val.stream) of a valid item */
} set_t;

static bool get_int(const ga_pk_value_t *d, const char *key, uint64_t *out)
{
    const ga_pk_value_t *v = ga_pk_dict_get(d, key);
    *out = v != NULL && v->type == GA_PK_INT ? (uint64_t)v->u.i : 0;
    return v != NULL && v->type == GA_PK_INT;
}

static int set_add(set_t *s, item_t it)
{
    ga_idmap_val_t old;
    if (ga_idmap_get(&s->map, it.addr, &old) && s->v[old.stream].valid)
        return 0; /* already there: an inconsistent trace, keep the first */
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        item_t *nv = realloc(s->v, nc * sizeof(*nv));
        if (nv == NULL)
            return -1;
        s->v = nv;
        s->cap = nc;
    }
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
    if (s->n_pc == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        ga_seed_piece_t *np = realloc(s->pc, nc * sizeof(*np));
        if (np == NULL)
            return -1;
        s->pc = np;
        *cap = nc;
    }
    s->pc[s->n_pc++] = p;
    return 0;
}

/* Tile every segment with its live blocks and the gaps between them. */
static int build(ga_seed_t *s, set_t *segs, set_t *blocks)
{
    size_t ns = 0, nb = 0, pcap = 0;
    for (size_t i = 0; i < segs->n; i++)
        if (segs->v[i].valid)
            segs->v[ns++] = segs->v[i];
    /* A free_completed whose free_requested fell off the ring: the user had
     * freed the block before the trace began and the replay never frees it
     * again, so at the first entry it is free space for the replay. */
    for (size_t i = 0; i < blocks->n; i++)
        if (blocks->v[i].valid && !blocks->v[i].completing)
            blocks->v[nb++] = blocks->v[i];
    qsort(segs->v, ns, sizeof(item_t), by_addr);
    qsort(blocks->v, nb, sizeof(item_t), by_addr);
    s->seg = calloc(ns ? ns : 1, sizeof(*s->seg));
    if (s->seg == NULL)
        return -1;
    size_t b = 0;
    for (size_t i = 0; i < ns; i++) {
        const item_t *g = &segs->v[i];
        uint64_t end = g->addr + g->size, at = g->addr;
        uint64_t min_gap = g->small ? MIN_BLOCK : MIN_LARGE_SPLIT + 1;
        ga_seed_segment_t *sg = &s->seg[s->n_seg++];
        *sg = (ga_seed_segment_t){.addr = g->addr, .size = g->size, .stream = g->stream, .small = g->small,
                                  .first = s->n_pc};
        while (b < nb && blocks->v[b].addr < g->addr)
            b++; /* a live block outside every segment: inconsistent, dropped */
        for (; b < nb && blocks->v[b].addr < end; b++) {
            const item_t *k = &blocks->v[b];
            if (k->addr < at)
                continue; /* overlaps the previous block: dropped */
            if (k->addr > at) {
                if (k->addr - at < min_gap && s->n_pc > sg->first && s->pc[s->n_pc - 1].live)
                    s->pc[s->n_pc - 1].size += k->addr - at; /* too small to have been split off */
                else if (push_piece(s, &pcap, (ga_seed_piece_t){at, k->addr - at, false}) != 0)
                    return -1;
            }
            uint64_t size = k->size < end - k->addr ? k->size : end - k->addr;
            if (push_piece(s, &pcap, (ga_seed_piece_t){k->addr, size, true}) != 0)
                return -1;
            s->live_blocks++;
            at = k->addr + size;
        }
        if (at < end) {
            if (end - at < min_gap && s->n_pc > sg->first && s->pc[s->n_pc - 1].live)
                s->pc[s->n_pc - 1].size += end - at;
            else if (push_piece(s, &pcap, (ga_seed_piece_t){at, end - at, false}) != 0)
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
static int walk_back(const ga_pk_value_t *trace, set_t *segs, set_t *blocks, char *err, size_t errlen)
{
    for (size_t i = trace != NULL ? trace->u.seq.n : 0; i-- > 0;) {
        const ga_pk_value_t *e = trace->u.seq.items[i];
        const ga_pk_value_t *a = ga_pk_dict_get(e, "action");
        uint64_t addr, size, stream;
        get_int(e, "addr", &addr);
        get_int(e, "size", &size);
        get_int(e, "stream", &stream);
        int rc = 0;
        if (ga_pk_str_eq(a, "alloc"))
            set_del(blocks, addr);
        else if (ga_pk_str_eq(a, "free_completed"))
            rc = set_add(blocks, (item_t){.addr = addr, .size = round_block(size), .stream = stream,
                                          .completing = true});
        else if (ga_pk_str_eq(a, "free_requested"))
            rc = request(blocks, (item_t){.addr = addr, .size = round_block(size), .stream = stream});
        else if (ga_pk_str_eq(a, "segment_alloc"))
            set_del(segs, addr);
        else if (ga_pk_str_eq(a, "segment_free"))
            rc = set_add(segs, (item_t){.addr = addr, .size = size, .stream = stream, .small = size == SMALL_SEGMENT});
        else if (ga_pk_str_eq(a, "segment_map") || ga_pk_str_eq(a, "segment_unmap")) {
            snprintf(err, errlen, "expandable segments (segment_map/unmap) are not reconstructed");
            return -1;
        }
        if (rc != 0) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
    }
    return 0;
}

int ga_seed_from_snapshot(const char *path, int device, ga_seed_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const ga_pickle_t *pk = NULL;
    set_t segs = {0}, blocks = {0};
    ga_idmap_init(&segs.map);
    ga_idmap_init(&blocks.map);
    char werr[256];
    int rc = -1;
    if (ga_snapfile_get(path, &pk, NULL, err, errlen) != 0)
        goto out;
    const ga_pk_value_t *root = ga_pickle_root(pk);
    const ga_pk_value_t *traces = ga_pk_dict_get(root, "device_traces");
    const ga_pk_value_t *segments = ga_pk_dict_get(root, "segments");
    for (size_t s = 0; segments != NULL && segments->type == GA_PK_LIST && s < segments->u.seq.n; s++) {
        const ga_pk_value_t *sd = segments->u.seq.items[s];
        const ga_pk_value_t *bl = ga_pk_dict_get(sd, "blocks");
        const ga_pk_value_t *ex = ga_pk_dict_get(sd, "is_expandable");
        uint64_t dev, addr, total, stream;
        get_int(sd, "device", &dev);
        if ((int64_t)dev != device)
            continue;
        if (ex != NULL && ex->type == GA_PK_BOOL && ex->u.b) {
            snprintf(err, errlen, "%s: segments[%zu]: expandable segments are not reconstructed", path, s);
            goto out;
        }
        get_int(sd, "address", &addr);
        get_int(sd, "total_size", &total);
        get_int(sd, "stream", &stream);
        if (set_add(&segs, (item_t){.addr = addr, .size = total, .stream = stream,
                                    .small = ga_pk_str_eq(ga_pk_dict_get(sd, "segment_type"), "small")}) != 0)
            goto nomem;
        for (size_t b = 0; bl != NULL && bl->type == GA_PK_LIST && b < bl->u.seq.n; b++) {
            const ga_pk_value_t *bd = bl->u.seq.items[b];
            uint64_t baddr, bsize;
            if (ga_pk_str_eq(ga_pk_dict_get(bd, "state"), "inactive"))
                continue;
            get_int(bd, "address", &baddr);
            get_int(bd, "size", &bsize);
            if (set_add(&blocks, (item_t){.addr = baddr, .size = bsize, .stream = stream}) != 0)
                goto nomem;
        }
    }
    const ga_pk_value_t *trace = NULL;
    if (traces != NULL && traces->type == GA_PK_LIST && (size_t)device < traces->u.seq.n &&
        traces->u.seq.items[device]->type == GA_PK_LIST)
        trace = traces->u.seq.items[device];
    if (walk_back(trace, &segs, &blocks, werr, sizeof(werr)) != 0) {
        snprintf(err, errlen, "%s: %s", path, werr);
        goto out;
    }
    if (build(out, &segs, &blocks) != 0)
        goto nomem;
    rc = 0;
    goto out;
nomem:
    snprintf(err, errlen, "%s: out of host memory", path);
out:
    free(segs.v);
    free(blocks.v);
    ga_idmap_free(&segs.map);
    ga_idmap_free(&blocks.map);
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

int ga_seed_apply(galloc_allocator_t *a, ga_idmap_t *map, const ga_seed_t *s, char *err, size_t errlen)
{
    /* Gap pieces are held until every segment is tiled: a gap freed early
     * would be a free block best fit could place a later piece in. */
    size_t n_held = 0, cap = s->n_pc;
    for (size_t i = 0; i < s->n_seg; i++)
        if (s->seg[i].small)
            cap += s->seg[i].size / MIN_LARGE_SPLIT;
    void **held = calloc(cap ? cap : 1, sizeof(void *));
    if (held == NULL) {
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
                if (g->small && !pc->live && n > MIN_LARGE_SPLIT)
                    n = MIN_LARGE_SPLIT;
                void *p = NULL;
                if (take(a, n, g->stream, &p, err, errlen) != 0)
                    goto out;
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
    rc = 0;
out:
    for (size_t k = 0; k < n_held; k++) /* the gaps become free blocks and merge as they were */
        galloc_free(a, held[k]);
    free(held);
    return rc;
}
