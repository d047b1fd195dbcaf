/*
 * snap_check.c: the sizes, addresses and counts a snapshot declares, checked
 * once when it is parsed (ga_torch_check, torch_snapshot.h), so the readers,
 * the seed and the verify view that walk it after never see a size no device
 * has, a negative one, or an address range that wraps.
 *
 * The bound is GA_TRACE_BYTES_MAX (tools/readers/limits.h says why): PyTorch
 * records every segment, block and mapping below its device's total. Only an
 * oom entry's request may be larger: a job can ask for more than any device
 * has, and PyTorch records that failure as it happened.
 */
#include <stdio.h>

#include "tools/readers/limits.h"
#include "tools/snapshot/torch_snapshot.h"

/* A size field: absent or not an int is left to the walkers' own checks. */
static int size_ok(ga_torch_int_t f, bool any_size, const char *path, const char *where, const char *name, char *err,
                   size_t errlen)
{
    if (f.kind != GA_TORCH_INT)
        return 0;
    if ((int64_t)f.v < 0) {
        snprintf(err, errlen, "%s: %s: '%s' is negative (%lld)", path, where, name, (long long)(int64_t)f.v);
        return -1;
    }
    if (!any_size && f.v > GA_TRACE_BYTES_MAX) {
        snprintf(err, errlen,
                 "%s: %s: '%s' of %llu bytes is larger than any device (at most %llu TiB): a garbled or hostile "
                 "snapshot",
                 path, where, name, (unsigned long long)f.v, (unsigned long long)(GA_TRACE_BYTES_MAX >> 40));
        return -1;
    }
    return 0;
}

/* An address with the size from it: neither negative nor past 2^63. */
static int range_ok(ga_torch_int_t addr, ga_torch_int_t size, const char *path, const char *where, char *err,
                    size_t errlen)
{
    if (addr.kind != GA_TORCH_INT)
        return 0;
    uint64_t n = size.kind == GA_TORCH_INT ? size.v : 0;
    if ((int64_t)addr.v < 0 || (int64_t)(addr.v + n) < 0) {
        snprintf(err, errlen, "%s: %s: address 0x%llx with %llu bytes is not a device address range", path, where,
                 (unsigned long long)addr.v, (unsigned long long)n);
        return -1;
    }
    return 0;
}

static int check_trace(const ga_torch_list_t *trace, size_t d, const char *path, char *err, size_t errlen)
{
    char where[64];
    for (size_t i = 0; i < trace->n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(trace, i, &e);
        if (!e.is_dict || e.action == GA_ACT_NONE || e.action == GA_ACT_OTHER || e.action == GA_ACT_ANNOTATE ||
            e.action == GA_ACT_SNAPSHOT)
            continue;
        snprintf(where, sizeof(where), "device_traces[%zu][%zu]", d, i);
        bool oom = e.action == GA_ACT_OOM;
        if (size_ok(e.size, oom, path, where, "size", err, errlen) != 0 ||
            size_ok(e.device_free, false, path, where, "device_free", err, errlen) != 0 ||
            (!oom && range_ok(e.addr, e.size, path, where, err, errlen) != 0))
            return -1;
    }
    return 0;
}

/* The final segments and their blocks; *budget: block visits left (shared
 * block lists must not make a small file cost quadratic time). */
static int check_segments(const ga_torch_snapshot_t *s, size_t budget, const char *path, char *err, size_t errlen)
{
    char where[64];
    for (size_t i = 0; i < s->segments.n; i++) {
        ga_torch_segment_t g;
        ga_torch_segment(s, i, &g);
        if (!g.is_dict)
            continue;
        snprintf(where, sizeof(where), "segments[%zu]", i);
        if (size_ok(g.total_size, false, path, where, "total_size", err, errlen) != 0 ||
            range_ok(g.address, g.total_size, path, where, err, errlen) != 0)
            return -1;
        if (!g.blocks.is_list)
            continue;
        if (g.blocks.n > budget) {
            snprintf(err, errlen, "%s: %s: more blocks than the file can hold (shared lists?)", path, where);
            return -1;
        }
        budget -= g.blocks.n;
        for (size_t b = 0; b < g.blocks.n; b++) {
            ga_torch_block_t blk;
            ga_torch_block(&g, b, &blk);
            snprintf(where, sizeof(where), "segments[%zu].blocks[%zu]", i, b);
            if (size_ok(blk.size, false, path, where, "size", err, errlen) != 0 ||
                size_ok(blk.requested_size, false, path, where, "requested_size", err, errlen) != 0 ||
                range_ok(blk.address, blk.size, path, where, err, errlen) != 0)
                return -1;
        }
    }
    return 0;
}

int ga_torch_check(const ga_torch_snapshot_t *s, size_t len, const char *path, char *err, size_t errlen)
{
    if (s->traces.is_list && s->traces.n > GA_TORCH_MAX_DEVICES) {
        snprintf(err, errlen, "%s: 'device_traces' lists %zu devices (at most %d)", path, s->traces.n,
                 GA_TORCH_MAX_DEVICES);
        return -1;
    }
    for (size_t d = 0; s->traces.is_list && d < s->traces.n; d++) {
        ga_torch_list_t tr = ga_torch_trace(s, d);
        if (tr.is_list && check_trace(&tr, d, path, err, errlen) != 0)
            return -1;
    }
    return s->segments.is_list ? check_segments(s, len, path, err, errlen) : 0;
}
