/*
 * trace.c: the calls of galloc_trace.h: allocation history, snapshots,
 * annotations and the calling thread's metadata (trace/), the frames callback
 * and trace source the history records stacks from, and memory_summary. Each
 * takes the allocator's lock and dispatches to its implementation's ops, as
 * allocator.c's calls do; the metadata calls take neither (it is per thread).
 */
#include <string.h>

#include <galloc/galloc_trace.h>
#include "front/allocator_int.h"
#include "trace/summary.h"
#include "trace/trace.h"

galloc_status_t galloc_record_memory_history(galloc_allocator_t *a, const galloc_history_options_t *opt)
{
    MEMPOOL_CALL(a, record_history, opt);
}

galloc_status_t galloc_snapshot_write(galloc_allocator_t *a, const char *path, galloc_snapshot_format_t format)
{
    if (path == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, snapshot, path, format);
}

/* Written out rather than MEMPOOL_CALL: the member takes no argument. */
galloc_status_t galloc_record_snapshot_entry(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    if (a->ops->snapshot_entry == NULL)
        return GALLOC_E_UNSUPPORTED;
    galloc_status_t st;
    LOCKED(a, st = a->ops->snapshot_entry(a->impl));
    return st;
}

galloc_status_t galloc_record_annotation(galloc_allocator_t *a, const char *stage, const char *name)
{
    if (stage == NULL || name == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, annotate, stage, name);
}

/* No allocator and no lock: the metadata is the calling thread's (trace/metadata.c). */
galloc_status_t galloc_set_memory_metadata(const char *metadata)
{
    return ga_trace_metadata_set(metadata, metadata != NULL ? strlen(metadata) : 0);
}

galloc_status_t galloc_get_memory_metadata(char *buf, size_t len, size_t *needed)
{
    if (buf == NULL && len > 0)
        return GALLOC_E_INVAL;
    size_t n;
    const char *s = ga_trace_metadata_get(&n);
    if (needed != NULL)
        *needed = n;
    if (len > 0) {
        size_t k = n < len - 1 ? n : len - 1;
        memcpy(buf, s, k);
        buf[k] = '\0';
    }
    return GALLOC_OK;
}

galloc_status_t galloc_set_frames_callback(galloc_allocator_t *a, galloc_frames_fn fn, void *ctx)
{
    GA_LIVE_OR_RETURN(a);
    if (a->ops->set_frames == NULL)
        return GALLOC_E_UNSUPPORTED;
    LOCKED(a, a->ops->set_frames(a->impl, fn, ctx));
    return GALLOC_OK;
}

galloc_status_t galloc_set_trace_source(galloc_allocator_t *a, const galloc_trace_source_t *src)
{
    MEMPOOL_CALL(a, set_trace_source, src);
}

galloc_status_t galloc_memory_summary(galloc_allocator_t *a, bool abbreviated, char *buf, size_t len, size_t *needed)
{
    GA_LIVE_OR_RETURN(a);
    if (buf == NULL && len > 0)
        return GALLOC_E_INVAL;
    galloc_stats_t st;
    st.struct_size = sizeof(st);
    galloc_sleep_stats_t sl = {0};
    ga_front_lock_all(a); /* both read under one hold: the figures agree */
    a->ops->stats(a->impl, &st);
    if (a->ops->sleep_stats != NULL)
        (void)a->ops->sleep_stats(a->impl, &sl);
    ga_front_unlock_all(a);
    size_t n = ga_trace_summary(buf, len, &st, a->device, abbreviated);
    if (sl.tags > 0) /* galloc's sleep section; without tags the summary is PyTorch's */
        n += ga_trace_summary_sleep(n < len ? buf + n : NULL, n < len ? len - n : 0, &sl);
    if (needed != NULL)
        *needed = n;
    return GALLOC_OK;
}
