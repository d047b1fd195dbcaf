/*
 * format.c: ga_conf_format, the normalized config string.
 *
 * One canonical spelling per allocator setting, so two configs print the same
 * string exactly when they hold the same settings, and the string is one
 * PyTorch itself accepts for PyTorch's keys:
 * - keys in a fixed order: PyTorch's (backend first), then galloc's, then the
 *   device backend's options as given (ga_conf_options_normalized: only the
 *   backend knows its values, so they keep their spelling, whitespace aside);
 * - a key is printed when its `set` bit is on or its value is not the
 *   default (max_non_split_rounding_mb's default is large_segment_size);
 * - True/False; hip spellings print as their cuda names; *_mb values in MiB;
 *   decimals in the shortest form that reads back exactly;
 * - roundup_power2_divisions as one number when all 16 intervals agree, else
 *   as the shortest list of the form below that rebuilds the same 16 values
 *   under newest main's rules (the first entry also fills the intervals below
 *   it, ">" fills those after the last entry, gaps are 0).
 *
 * Round trip: ga_conf_parse(ga_conf_format(c)) onto defaults gives c back for
 * every config a parse or load can produce. Settings no string can express
 * (a max_split_size that is not whole MiB, a division count that is not a
 * power of two) print as close as the grammar allows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"

typedef struct out {
    char *buf;  /* may be NULL when len is 0 */
    size_t len; /* capacity including the NUL */
    size_t n;   /* length of the full string so far, even past len */
} out_t;

static void put(out_t *o, const char *s)
{
    for (; *s != '\0'; s++, o->n++)
        if (o->n + 1 < o->len)
            o->buf[o->n] = *s;
}

static void item(out_t *o, const char *key, const char *value)
{
    if (o->n > 0)
        put(o, ",");
    put(o, key);
    put(o, ":");
    put(o, value);
}

static const char *tf(bool v)
{
    return v ? "True" : "False";
}

static void mb(char *buf, size_t len, uint64_t bytes)
{
    snprintf(buf, len, "%" PRIu64, bytes / GA_CONF_MIB);
}

/* Appends "<2^i MiB>:<d[i]>" to the list in buf. */
static size_t entry(char *buf, size_t len, size_t n, const char *bound, uint32_t d)
{
    int k = snprintf(buf + n, len - n, "%s%s:%" PRIu32, n > 1 ? "," : "", bound, d);
    return k > 0 && (size_t)k < len - n ? n + (size_t)k : n;
}

static void divisions(const uint32_t *d, char *buf, size_t len)
{
    const unsigned last = GA_CONF_DIVISION_INTERVALS - 1;
    unsigned m = 0; /* the leading run d[0..m] is equal */
    while (m < last && d[m + 1] == d[0])
        m++;
    if (m == last) {
        if (d[0] == 0)
            snprintf(buf, len, "[]"); /* "0" alone is refused by PyTorch; an empty list gives all 0 */
        else
            snprintf(buf, len, "%" PRIu32, d[0]);
        return;
    }
    unsigned j = last; /* the trailing run d[j..15] is equal */
    while (j > 0 && d[j - 1] == d[last])
        j--;
    bool gt = d[last] != 0 && j < last; /* worth a ">" entry: nonzero and at least two intervals */
    unsigned end = gt ? j : GA_CONF_DIVISION_INTERVALS;
    char bound[24];
    size_t n = (size_t)snprintf(buf, len, "[");
    snprintf(bound, sizeof(bound), "%" PRIu64, (uint64_t)1 << m);
    n = entry(buf, len, n, bound, d[m]);
    for (unsigned i = m + 1; i < end; i++) {
        /* ">" starts after the last numeric entry, so the one before its run is written even if 0 */
        if (d[i] != 0 || (gt && i == j - 1)) {
            snprintf(bound, sizeof(bound), "%" PRIu64, (uint64_t)1 << i);
            n = entry(buf, len, n, bound, d[i]);
        }
    }
    if (gt)
        n = entry(buf, len, n, ">", d[last]);
    snprintf(buf + n, len - n, "]");
}

static bool all_zero(const uint32_t *d)
{
    for (unsigned i = 0; i < GA_CONF_DIVISION_INTERVALS; i++)
        if (d[i] != 0)
            return false;
    return true;
}

/* expandable_segments_reserve_by_class's list, in the order the classes were first named. */
static void class_list(const ga_conf_t *c, out_t *o)
{
    char v[64];
    put(o, "[");
    for (uint32_t i = 0; i < c->n_reserve_classes; i++) {
        ga_conf_write_reserve(&c->reserve_classes[i].reserve, v, sizeof(v));
        put(o, i > 0 ? "," : "");
        put(o, c->reserve_classes[i].name);
        put(o, ":");
        put(o, v);
    }
    put(o, "]");
}

/* pytorch: only the keys PyTorch's PYTORCH_CUDA_ALLOC_CONF accepts. */
static size_t format(const ga_conf_t *c, char *buf, size_t len, bool pytorch)
{
    out_t o = {.buf = buf, .len = buf != NULL ? len : 0, .n = 0};
    char v[400];
    uint32_t set = c->set;

    if ((set & GA_CONF_SET_BACKEND) || c->backend != GA_CONF_BACKEND_NATIVE)
        item(&o, "backend", c->backend == GA_CONF_BACKEND_ASYNC ? "cudaMallocAsync" : "native");
    if ((set & GA_CONF_SET_LARGE_SEGMENT) || c->large_segment_size != GA_CONF_LARGE_BUFFER) {
        mb(v, sizeof(v), c->large_segment_size);
        item(&o, "large_segment_size_mb", v);
    }
    /* UINT64_MAX (unlimited) has no spelling: PyTorch's own limit is (2^64 - 1) / 2^20 MiB. */
    if (c->max_split_size != UINT64_MAX) {
        mb(v, sizeof(v), c->max_split_size);
        item(&o, "max_split_size_mb", v);
    }
    if ((set & GA_CONF_SET_MAX_NON_SPLIT_ROUNDING) || c->max_non_split_rounding_size != c->large_segment_size) {
        mb(v, sizeof(v), c->max_non_split_rounding_size);
        item(&o, "max_non_split_rounding_mb", v);
    }
    if (c->garbage_collection_threshold != 0.0) { /* 0 (off) is the default and cannot be written */
        ga_conf_write_decimal(c->garbage_collection_threshold, v, sizeof(v));
        item(&o, "garbage_collection_threshold", v);
    }
    if ((set & GA_CONF_SET_ROUNDUP) || !all_zero(c->roundup_power2_divisions)) {
        divisions(c->roundup_power2_divisions, v, sizeof(v));
        item(&o, "roundup_power2_divisions", v);
    }
    if ((set & GA_CONF_SET_EXPANDABLE) || c->expandable_segments)
        item(&o, "expandable_segments", tf(c->expandable_segments));
    if ((set & GA_CONF_SET_RELEASE_LOCK) || c->release_lock_on_cudamalloc)
        item(&o, "release_lock_on_cudamalloc", tf(c->release_lock_on_cudamalloc));
    /* set_per_process_memory_fraction is a call in PyTorch, not a key */
    if (!pytorch && ((set & GA_CONF_SET_MEMORY_FRACTION) || c->per_process_memory_fraction != 1.0)) {
        ga_conf_write_decimal(c->per_process_memory_fraction, v, sizeof(v));
        item(&o, "per_process_memory_fraction", v);
    }
    if ((set & GA_CONF_SET_PINNED_REGISTER) || c->pinned_use_cuda_host_register)
        item(&o, "pinned_use_cuda_host_register", tf(c->pinned_use_cuda_host_register));
    if ((set & GA_CONF_SET_PINNED_THREADS) || c->pinned_num_register_threads != 1) {
        snprintf(v, sizeof(v), "%" PRIu32, c->pinned_num_register_threads);
        item(&o, "pinned_num_register_threads", v);
    }
    if ((set & GA_CONF_SET_PINNED_BACKGROUND) || c->pinned_use_background_threads)
        item(&o, "pinned_use_background_threads", tf(c->pinned_use_background_threads));
    if ((set & GA_CONF_SET_CAPTURE_REUSE) || c->graph_capture_record_stream_reuse)
        item(&o, "graph_capture_record_stream_reuse", tf(c->graph_capture_record_stream_reuse));
    if ((set & GA_CONF_SET_THROW_ON_OOM) || c->throw_on_cudamalloc_oom)
        item(&o, "throw_on_cudamalloc_oom", tf(c->throw_on_cudamalloc_oom));
    if (c->es_reserve_set) { /* unset has no spelling: PyTorch's default is "no override" */
        ga_conf_write_reserve(&c->es_reserve, v, sizeof(v));
        item(&o, "expandable_segments_reserve", v);
    }
    if ((set & GA_CONF_SET_ES_RESERVE_BY_CLASS) || c->n_reserve_classes > 0) {
        if (o.n > 0)
            put(&o, ",");
        put(&o, "expandable_segments_reserve_by_class:");
        class_list(c, &o);
    }
    if (c->pinned_reserve_segment_size != 0) { /* 0 (none) is the default and cannot be written */
        mb(v, sizeof(v), c->pinned_reserve_segment_size);
        item(&o, "pinned_reserve_segment_size_mb", v);
    }
    if (c->pinned_max_round_threshold != UINT64_MAX) { /* unlimited has no spelling */
        mb(v, sizeof(v), c->pinned_max_round_threshold);
        item(&o, "pinned_max_round_threshold_mb", v);
    }
    if (c->pinned_max_cached_size != UINT64_MAX) {
        mb(v, sizeof(v), c->pinned_max_cached_size);
        item(&o, "pinned_max_cached_size_mb", v);
    }

    if (pytorch)
        goto out; /* the rest are galloc's own and the device backend's */
    if ((set & GA_CONF_SET_RETRY_POOL) || c->retry_pool_after_sync)
        item(&o, "retry_pool_after_sync", tf(c->retry_pool_after_sync));

    if ((set & GA_CONF_SET_DEVICE_BACKEND) || strncmp(c->device_backend, "sim", sizeof(c->device_backend)) != 0) {
        snprintf(v, sizeof(v), "%.*s", (int)sizeof(c->device_backend), c->device_backend);
        item(&o, "device_backend", v);
    }
    if (c->n_options > 0) {
        char opts[GALLOC_BACKEND_OPTIONS_MAX];
        ga_conf_options_normalized(c, opts, sizeof(opts));
        if (o.n > 0)
            put(&o, ",");
        put(&o, opts);
    }
out:
    if (o.len > 0)
        o.buf[o.n < o.len ? o.n : o.len - 1] = '\0';
    return o.n;
}

size_t ga_conf_format(const ga_conf_t *c, char *buf, size_t len)
{
    return format(c, buf, len, false);
}

size_t ga_conf_format_pytorch(const ga_conf_t *c, char *buf, size_t len)
{
    return format(c, buf, len, true);
}

size_t ga_conf_format_reserve_classes(const ga_conf_t *c, char *buf, size_t len)
{
    out_t o = {.buf = buf, .len = buf != NULL ? len : 0, .n = 0};
    if ((c->set & GA_CONF_SET_ES_RESERVE_BY_CLASS) || c->n_reserve_classes > 0)
        class_list(c, &o);
    if (o.len > 0)
        o.buf[o.n < o.len ? o.n : o.len - 1] = '\0';
    return o.n;
}
