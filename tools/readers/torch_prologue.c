/*
 * torch_prologue.c: a PyTorch snapshot's prologue (read_torch.c's head says
 * why): the blocks live before the trace's first entry, recreated before it.
 */
#include <stdio.h>

#include "util/grow.h"
#include "tools/readers/torch_int.h"

static int push_pro(ga_torch_rd_t *t, ga_torch_pro_block_t b)
{
    ga_torch_pro_block_t *np = ga_grow(t->pro, &t->pro_cap, t->n_pro, sizeof(*np), 64);
    if (np == NULL)
        return -1;
    t->pro = np;
    t->pro[t->n_pro++] = b;
    return 0;
}

/* Prologue step 1: frees of addresses the trace never allocated before. */
int ga_torch_rd_prologue_trace(ga_reader_t *r, ga_idmap_t *live, ga_idmap_t *seen, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    ga_idmap_val_t none = {0};
    for (size_t i = 0; i < t->trace.n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        uint64_t addr, size, stream;
        bool is_alloc = e.action == GA_ACT_ALLOC;
        bool is_free = e.action == (t->completed_only ? GA_ACT_FREE_COMPLETED : GA_ACT_FREE_REQUESTED);
        if (!is_alloc && !is_free)
            continue;
        if (!ga_torch_int_get(e.addr, true, 0, &addr) || !ga_torch_int_get(e.size, true, 0, &size) ||
            !ga_torch_int_get(e.stream, false, 0, &stream))
            return ga_torch_rd_entry_err(r, err, errlen, i,
                                         "'addr', 'size' and 'stream' must be ints ('addr' and 'size' present)");
        if (is_alloc) {
            if (ga_idmap_put(live, addr, none, NULL, NULL) != 0 || ga_idmap_put(seen, addr, none, NULL, NULL) != 0)
                return ga_torch_rd_entry_err(r, err, errlen, i, "out of host memory");
            continue;
        }
        if (ga_idmap_remove(live, addr, NULL) || ga_idmap_get(seen, addr, NULL))
            continue;
        if (ga_idmap_put(seen, addr, none, NULL, NULL) != 0 ||
            push_pro(t, (ga_torch_pro_block_t){addr, size, stream, NULL}) != 0)
            return ga_torch_rd_entry_err(r, err, errlen, i, "out of host memory");
    }
    return 0;
}

static const char *int_found(ga_torch_int_t f)
{
    return f.kind == GA_TORCH_INT ? "an int" : f.kind == GA_TORCH_MISSING ? "missing" : "not an int";
}

/* A live block the replay cannot recreate: what was expected, what was found. */
static int block_err(ga_reader_t *r, const ga_torch_segment_t *g, size_t s, size_t b, const ga_torch_block_t *blk,
                     char *err, size_t errlen)
{
    const char *why = "";
    if (blk->address.kind == GA_TORCH_MISSING)
        why = g->address.kind != GA_TORCH_INT ? ", and no int segment 'address'"
                                              : ", and a block before without int 'size'";
    else if (blk->requested_size.kind == GA_TORCH_WRONG)
        why = ", 'requested_size' not an int";
    snprintf(err, errlen,
             "%s: segments[%zu].blocks[%zu]: expected a live block with int 'size' and 'address' (PyTorch 2.1+) or "
             "a segment 'address' to count from (2.0); found 'size' %s, 'address' %s%s",
             r->in.path, s, b, int_found(blk->size), int_found(blk->address), why);
    return -1;
}

/* Prologue step 2, one segment: its live blocks the trace never mentions. */
static int segment_prologue(ga_reader_t *r, const ga_torch_segment_t *g, size_t s, uint64_t stream,
                            const ga_idmap_t *seen, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    for (size_t b = 0; b < g->blocks.n; b++) {
        ga_torch_block_t blk;
        ga_torch_block(g, b, &blk);
        uint64_t addr, size, req;
        if (blk.state != GA_STATE_ALLOCATED && blk.state != GA_STATE_PENDING_FREE)
            continue;
        if (!ga_torch_int_get(blk.address, true, 0, &addr) || !ga_torch_int_get(blk.size, true, 0, &size) ||
            !ga_torch_int_get(blk.requested_size, false, size, &req))
            return block_err(r, g, s, b, &blk, err, errlen);
        if (ga_idmap_get(seen, addr, NULL))
            continue;
        if (push_pro(t, (ga_torch_pro_block_t){addr, req, stream, blk.frames}) != 0) {
            snprintf(err, errlen, "%s: out of host memory", r->in.path);
            return -1;
        }
    }
    return 0;
}

/* Prologue step 2: blocks live at the end that the trace never mentions. */
int ga_torch_rd_prologue_segments(ga_reader_t *r, const ga_idmap_t *seen, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    int dev = t->devices[r->unit];
    /* Python writes every block dict once, so a real file holds fewer blocks
     * than bytes; more visits mean shared lists, a hostile file's way to make
     * a small input cost quadratic time. */
    size_t budget = t->len;
    for (size_t s = 0; s < t->snap.segments.n; s++) {
        ga_torch_segment_t g;
        ga_torch_segment(&t->snap, s, &g);
        uint64_t sdev, stream;
        if (!g.is_dict || !ga_torch_int_get(g.device, false, 0, &sdev) ||
            !ga_torch_int_get(g.stream, false, 0, &stream) || (g.blocks.present && !g.blocks.is_list)) {
            snprintf(err, errlen, "%s: segments[%zu]: not a segment dict (device, stream, blocks)", r->in.path, s);
            return -1;
        }
        if ((int64_t)sdev != dev || !g.blocks.present)
            continue;
        if (g.blocks.n > budget) {
            snprintf(err, errlen, "%s: segments[%zu]: more blocks than the file can hold (shared lists?)", r->in.path,
                     s);
            return -1;
        }
        budget -= g.blocks.n;
        if (segment_prologue(r, &g, s, stream, seen, err, errlen) != 0)
            return -1;
    }
    return 0;
}
