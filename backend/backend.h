/*
 * backend.h: the backend layer's interface to the pool: an opened device
 * (ops + state) and one inline wrapper per ops member.
 *
 * The pool never calls ops->x directly, so this file is the one place device
 * calls pass through. A wrapper of an optional member checks that the member
 * exists (struct_size covers it and it is non-NULL) and returns
 * GALLOC_E_UNSUPPORTED when it does not; a wrapper of a required member calls
 * it straight away, since registration checked it once. The wrappers count
 * nothing and inject no faults: fault injection is the sim backend's own
 * (sim_fail_* options, ga_sim_set_faults in sim.h), and the pool records its
 * own trace.
 *
 * Locking: the caller holds the owning allocator's lock for every call.
 */
#ifndef GA_BACKEND_H
#define GA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An opened device. */
typedef struct ga_backend {
    const galloc_backend_ops_t *ops; /* the backend's table (static lifetime) */
    void *state;                     /* what ops->open returned */
} ga_backend_t;

/* Whether a table of ops->struct_size bytes has member m at all. */
#define GA_BACKEND_COVERS(ops, m) (offsetof(galloc_backend_ops_t, m) + sizeof((ops)->m) <= (ops)->struct_size)
/* Whether function member m is there and set. */
#define GA_BACKEND_HAS(ops, m) (GA_BACKEND_COVERS(ops, m) && (ops)->m != NULL)

/* The runtime PyTorch names in its messages for this device, from the table's
 * vendor: "HIP" for GALLOC_BACKEND_VENDOR_HIP (PyTorch's ROCm build says "HIP
 * out of memory" and points at PYTORCH_HIP_ALLOC_CONF), "CUDA" for every other
 * table, sim included. */
static inline const char *ga_backend_vendor(const ga_backend_t *b)
{
    return GA_BACKEND_COVERS(b->ops, vendor) && b->ops->vendor == GALLOC_BACKEND_VENDOR_HIP ? "HIP" : "CUDA";
}

/*
 * ga_backend_open: find `name` in the registry and open it with args. On
 * failure b is untouched and err says why (unknown name, or the backend's own
 * message): GALLOC_E_UNAVAILABLE for an unknown backend. For GALLOC_E_CONFIG
 * (an option in args->options refused) err is the backend's message alone,
 * its offset counted in args->options, so that the caller can point it into
 * the string the user wrote (ga_conf_option_error).
 */
galloc_status_t ga_backend_open(ga_backend_t *b, const char *name, const galloc_backend_args_t *args, char *err,
                                size_t errlen);

/* ga_backend_close: close an opened backend (no-op if b->ops is NULL). */
void ga_backend_close(ga_backend_t *b);

static inline galloc_status_t ga_backend_segment_alloc(ga_backend_t *b, size_t n, galloc_stream_t s, uintptr_t *a)
{
    return b->ops->segment_alloc(b->state, n, s, a);
}

static inline galloc_status_t ga_backend_segment_free(ga_backend_t *b, uintptr_t a, size_t n, galloc_stream_t s)
{
    return b->ops->segment_free(b->state, a, n, s);
}

static inline galloc_status_t ga_backend_mem_info(ga_backend_t *b, size_t *free_bytes, size_t *total)
{
    return b->ops->mem_info(b->state, free_bytes, total);
}

static inline galloc_status_t ga_backend_granularity(ga_backend_t *b, size_t *n)
{
    if (!GA_BACKEND_HAS(b->ops, granularity))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->granularity(b->state, n);
}

static inline galloc_status_t ga_backend_va_reserve(ga_backend_t *b, size_t n, uintptr_t *a)
{
    if (!GA_BACKEND_HAS(b->ops, va_reserve))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->va_reserve(b->state, n, a);
}

static inline galloc_status_t ga_backend_va_release(ga_backend_t *b, uintptr_t a, size_t n)
{
    if (!GA_BACKEND_HAS(b->ops, va_release))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->va_release(b->state, a, n);
}

static inline galloc_status_t ga_backend_map(ga_backend_t *b, uintptr_t a, size_t n)
{
    if (!GA_BACKEND_HAS(b->ops, map))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->map(b->state, a, n);
}

static inline galloc_status_t ga_backend_unmap(ga_backend_t *b, uintptr_t a, size_t n)
{
    if (!GA_BACKEND_HAS(b->ops, unmap))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->unmap(b->state, a, n);
}

static inline galloc_status_t ga_backend_event_create(ga_backend_t *b, uintptr_t *e)
{
    if (!GA_BACKEND_HAS(b->ops, event_create))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->event_create(b->state, e);
}

static inline galloc_status_t ga_backend_event_destroy(ga_backend_t *b, uintptr_t e)
{
    if (!GA_BACKEND_HAS(b->ops, event_destroy))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->event_destroy(b->state, e);
}

static inline galloc_status_t ga_backend_event_record(ga_backend_t *b, uintptr_t e, galloc_stream_t s)
{
    if (!GA_BACKEND_HAS(b->ops, event_record))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->event_record(b->state, e, s);
}

static inline galloc_status_t ga_backend_event_query(ga_backend_t *b, uintptr_t e)
{
    if (!GA_BACKEND_HAS(b->ops, event_query))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->event_query(b->state, e);
}

static inline galloc_status_t ga_backend_event_synchronize(ga_backend_t *b, uintptr_t e)
{
    if (!GA_BACKEND_HAS(b->ops, event_synchronize))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->event_synchronize(b->state, e);
}

static inline galloc_status_t ga_backend_stream_synchronize(ga_backend_t *b, galloc_stream_t s)
{
    if (!GA_BACKEND_HAS(b->ops, stream_synchronize))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->stream_synchronize(b->state, s);
}

static inline galloc_status_t ga_backend_malloc_async(ga_backend_t *b, size_t n, galloc_stream_t s, uintptr_t *a)
{
    if (!GA_BACKEND_HAS(b->ops, malloc_async))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->malloc_async(b->state, n, s, a);
}

static inline galloc_status_t ga_backend_free_async(ga_backend_t *b, uintptr_t a, galloc_stream_t s)
{
    if (!GA_BACKEND_HAS(b->ops, free_async))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->free_async(b->state, a, s);
}

static inline galloc_status_t ga_backend_pool_trim(ga_backend_t *b, size_t keep)
{
    if (!GA_BACKEND_HAS(b->ops, pool_trim))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->pool_trim(b->state, keep);
}

static inline galloc_status_t ga_backend_pool_usage(ga_backend_t *b, uint64_t *reserved_current,
                                                    uint64_t *reserved_high, uint64_t *used_current,
                                                    uint64_t *used_high)
{
    if (!GA_BACKEND_HAS(b->ops, pool_usage))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->pool_usage(b->state, reserved_current, reserved_high, used_current, used_high);
}

static inline galloc_status_t ga_backend_pool_reset_peak(ga_backend_t *b)
{
    if (!GA_BACKEND_HAS(b->ops, pool_reset_peak))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->pool_reset_peak(b->state);
}

static inline galloc_status_t ga_backend_device_synchronize(ga_backend_t *b)
{
    if (!GA_BACKEND_HAS(b->ops, device_synchronize))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->device_synchronize(b->state);
}

static inline galloc_status_t ga_backend_host_alloc(ga_backend_t *b, size_t n, void **ptr)
{
    if (!GA_BACKEND_HAS(b->ops, host_alloc))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->host_alloc(b->state, n, ptr);
}

static inline galloc_status_t ga_backend_host_free(ga_backend_t *b, void *ptr, size_t n)
{
    if (!GA_BACKEND_HAS(b->ops, host_free))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->host_free(b->state, ptr, n);
}

/* The host cache's register path (pinned_use_cuda_host_register) needs both. */
static inline int ga_backend_has_host_register(const ga_backend_t *b)
{
    return GA_BACKEND_HAS(b->ops, host_register) && GA_BACKEND_HAS(b->ops, host_unregister);
}

static inline galloc_status_t ga_backend_host_register(ga_backend_t *b, void *ptr, size_t n)
{
    if (!ga_backend_has_host_register(b))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->host_register(b->state, ptr, n);
}

static inline galloc_status_t ga_backend_host_unregister(ga_backend_t *b, void *ptr, size_t n)
{
    if (!ga_backend_has_host_register(b))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->host_unregister(b->state, ptr, n);
}

static inline galloc_status_t ga_backend_copy_d2h(ga_backend_t *b, void *dst, uintptr_t src, size_t n)
{
    if (!GA_BACKEND_HAS(b->ops, copy_d2h))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->copy_d2h(b->state, dst, src, n);
}

static inline galloc_status_t ga_backend_copy_h2d(ga_backend_t *b, uintptr_t dst, const void *src, size_t n)
{
    if (!GA_BACKEND_HAS(b->ops, copy_h2d))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->copy_h2d(b->state, dst, src, n);
}

static inline galloc_status_t ga_backend_place(ga_backend_t *b, uintptr_t a)
{
    if (!GA_BACKEND_HAS(b->ops, place))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->place(b->state, a);
}

static inline galloc_status_t ga_backend_enable_peer_access(ga_backend_t *b, int peer)
{
    if (!GA_BACKEND_HAS(b->ops, enable_peer_access))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->enable_peer_access(b->state, peer);
}

static inline galloc_status_t ga_backend_ipc_export(ga_backend_t *b, uintptr_t addr, void *handle)
{
    if (!GA_BACKEND_HAS(b->ops, ipc_export))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->ipc_export(b->state, addr, handle);
}

static inline galloc_status_t ga_backend_ipc_open(ga_backend_t *b, const void *handle, size_t bytes, uintptr_t *addr)
{
    if (!GA_BACKEND_HAS(b->ops, ipc_open))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->ipc_open(b->state, handle, bytes, addr);
}

static inline galloc_status_t ga_backend_ipc_close(ga_backend_t *b, uintptr_t addr)
{
    if (!GA_BACKEND_HAS(b->ops, ipc_close))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->ipc_close(b->state, addr);
}

static inline galloc_status_t ga_backend_export_page(ga_backend_t *b, uintptr_t addr, int *fd)
{
    if (!GA_BACKEND_HAS(b->ops, export_page))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->export_page(b->state, addr, fd);
}

static inline galloc_status_t ga_backend_import_pages(ga_backend_t *b, const int *fds, size_t n, size_t page,
                                                      uintptr_t *addr)
{
    if (!GA_BACKEND_HAS(b->ops, import_pages))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->import_pages(b->state, fds, n, page, addr);
}

static inline galloc_status_t ga_backend_capture_info(ga_backend_t *b, galloc_stream_t s, uint64_t *capture_id,
                                                      uintptr_t *nodes, size_t cap, size_t *n)
{
    if (!GA_BACKEND_HAS(b->ops, capture_info))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->capture_info(b->state, s, capture_id, nodes, cap, n);
}

static inline galloc_status_t ga_backend_node_deps(ga_backend_t *b, uintptr_t node, uintptr_t *deps, size_t cap,
                                                   size_t *n)
{
    if (!GA_BACKEND_HAS(b->ops, node_deps))
        return GALLOC_E_UNSUPPORTED;
    return b->ops->node_deps(b->state, node, deps, cap, n);
}

/* Whether the backend can offload contents (galloc_sleep's offload_tags). */
static inline int ga_backend_can_offload(const ga_backend_t *b)
{
    return GA_BACKEND_HAS(b->ops, host_alloc) && GA_BACKEND_HAS(b->ops, host_free) &&
           GA_BACKEND_HAS(b->ops, copy_d2h) && GA_BACKEND_HAS(b->ops, copy_h2d);
}

/* ga_backend_error_string: the backend's description of its last failure, or "". */
static inline void ga_backend_error_string(ga_backend_t *b, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    if (GA_BACKEND_HAS(b->ops, error_string))
        b->ops->error_string(b->state, buf, len);
}

/* ga_backend_why: why a call failed with st, for a message: the backend's
 * description of its last failure (into buf), else st's own text. */
static inline const char *ga_backend_why(ga_backend_t *b, galloc_status_t st, char *buf, size_t len)
{
    ga_backend_error_string(b, buf, len);
    return len > 0 && buf[0] ? buf : galloc_strerror(st);
}

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_H */
