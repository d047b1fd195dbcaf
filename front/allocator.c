/*
 * allocator.c: the public allocator calls. Create picks the implementation's
 * ops table: the caching pool (ga_allocator_native, pool/), the stream-ordered
 * allocator for backend:cudaMallocAsync (ga_allocator_async,
 * allocators/async/) or, from galloc_allocator_create_user, the caller's
 * allocator (ga_allocator_user, allocators/user/). Every other call takes the
 * allocator's lock, dispatches to the ops and releases the lock; the
 * implementation records failures in a.err through ga_fail. malloc and free
 * first try the implementation's lock-free-of-the-allocator path
 * (stripe_malloc/stripe_free, the pool's per-stream stripes) where it has one.
 *
 * Configuration sources (lowest precedence first): PyTorch's variable
 * (PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF), then GALLOC_CONF, then the
 * string given to galloc_allocator_create; galloc_allocator_create_ex with
 * GALLOC_CREATE_NO_ENV skips the two variables (tools that must not depend
 * on their shell).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <galloc/galloc_inspect.h>
#include <galloc/galloc_user.h>
#include "allocators/async/async.h"
#include "allocators/user/user.h"
#include "front/allocator_int.h"
#include "pool/pool.h"

static void put_err(char *err, size_t errlen, const char *msg)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", msg);
}

/* Backend open arguments from the effective settings: the keys no allocator
 * key claimed are the backend's to read. */
static void backend_args(const ga_conf_t *c, int device, galloc_backend_args_t *args)
{
    memset(args, 0, sizeof(*args));
    args->struct_size = sizeof(*args);
    args->device = device;
    args->options = c->backend_options;
}

galloc_status_t galloc_allocator_create(const char *backend, int device, const char *conf, galloc_allocator_t **out,
                                        char *err, size_t errlen)
{
    return galloc_allocator_create_ex(backend, device, conf, 0, out, err, errlen);
}

galloc_status_t galloc_allocator_create_ex(const char *backend, int device, const char *conf, uint32_t flags,
                                           galloc_allocator_t **out, char *err, size_t errlen)
{
    char msg[GALLOC_ERROR_MAX];
    if (out == NULL || device < 0 || (flags & ~GALLOC_CREATE_NO_ENV) != 0) {
        put_err(err, errlen,
                out == NULL  ? "galloc_allocator_create: out is NULL"
                : device < 0 ? "device index must be >= 0"
                             : "galloc_allocator_create_ex: unknown flag bits");
        if (out != NULL)
            *out = NULL;
        return GALLOC_E_INVAL;
    }
    bool env = (flags & GALLOC_CREATE_NO_ENV) == 0;
    *out = NULL;
    galloc_allocator_t *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        put_err(err, errlen, "out of host memory creating the allocator");
        return GALLOC_E_NOMEM;
    }
    a->device = device;
    ga_conf_defaults(&a->conf);
    galloc_status_t st =
        ga_conf_load(&a->conf, conf, env ? getenv("GALLOC_CONF") : NULL, env ? getenv("PYTORCH_ALLOC_CONF") : NULL,
                     env ? getenv("PYTORCH_CUDA_ALLOC_CONF") : NULL, msg, sizeof(msg));
    if (st != GALLOC_OK)
        goto err_free;
    galloc_backend_args_t args;
    backend_args(&a->conf, device, &args);
    st = ga_backend_open(&a->backend, backend ? backend : a->conf.device_backend, &args, msg, sizeof(msg));
    if (st == GALLOC_E_CONFIG) { /* an option refused: point at the string the user wrote it in */
        char raw[sizeof(msg)];
        snprintf(raw, sizeof(raw), "%s", msg);
        ga_conf_option_error(&a->conf, raw, msg, sizeof(msg));
    }
    if (st != GALLOC_OK)
        goto err_free;
    a->ops = &ga_allocator_native;
    if (a->conf.backend == GA_CONF_BACKEND_ASYNC) {
        /* Its create checks that the backend has the stream-ordered members
         * and the driver the feature, and says which is missing. */
        a->ops = &ga_allocator_async;
    } else if (a->conf.expandable_segments && GA_BACKEND_HAS(a->backend.ops, granularity)) {
        /* A backend may have the VMM members but a driver without the feature:
         * say so now rather than as an out-of-memory at the first malloc. */
        size_t page = 0;
        if ((st = ga_backend_granularity(&a->backend, &page)) != GALLOC_OK) {
            char why[512];
            snprintf(msg, sizeof(msg), "expandable_segments:True needs virtual memory management: %s",
                     ga_backend_why(&a->backend, st, why, sizeof(why)));
            st = st == GALLOC_E_NOMEM ? st : GALLOC_E_UNSUPPORTED;
            goto err_close;
        }
    }
    st = a->ops->create(&a->conf, &a->backend, device, &a->err, &a->impl);
    if (st != GALLOC_OK) {
        snprintf(msg, sizeof(msg), "%s", a->err.msg);
        goto err_close;
    }
    if (ga_lock_init(&a->lock) != 0) {
        snprintf(msg, sizeof(msg), "could not create the allocator's lock");
        st = GALLOC_E_NOMEM;
        goto err_destroy;
    }
    if ((st = ga_front_host_attach(a)) != GALLOC_OK) {
        snprintf(msg, sizeof(msg), "out of host memory creating the allocator's host cache");
        goto err_destroy;
    }
    a->magic = GA_ALLOCATOR_LIVE;
    *out = a;
    return GALLOC_OK;

err_destroy:
    a->ops->destroy(a->impl);
err_close:
    ga_backend_close(&a->backend);
err_free:
    put_err(err, errlen, msg);
    free(a);
    return st;
}

/* The allocator front end always holds an opened backend (it names it and
 * closes it); a user allocator has no device layer, so it holds this one,
 * which is never registered and whose only member ever called is close. */
static galloc_status_t nodev_open(const galloc_backend_args_t *args, void **state, char *err, size_t errlen)
{
    (void)args;
    (void)err;
    (void)errlen;
    *state = NULL;
    return GALLOC_E_UNSUPPORTED;
}

static void nodev_close(void *state)
{
    (void)state;
}

static galloc_status_t nodev_segment_alloc(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr)
{
    (void)state;
    (void)bytes;
    (void)s;
    (void)addr;
    return GALLOC_E_UNSUPPORTED;
}

static galloc_status_t nodev_segment_free(void *state, uintptr_t addr, size_t bytes, galloc_stream_t s)
{
    (void)state;
    (void)addr;
    (void)bytes;
    (void)s;
    return GALLOC_E_UNSUPPORTED;
}

static galloc_status_t nodev_mem_info(void *state, size_t *free_bytes, size_t *total_bytes)
{
    (void)state;
    (void)free_bytes;
    (void)total_bytes;
    return GALLOC_E_UNSUPPORTED;
}

static const galloc_backend_ops_t no_device = {
    .struct_size = sizeof(galloc_backend_ops_t),
    .version = GALLOC_BACKEND_OPS_V1,
    .name = "user",
    .open = nodev_open,
    .close = nodev_close,
    .segment_alloc = nodev_segment_alloc,
    .segment_free = nodev_segment_free,
    .mem_info = nodev_mem_info,
};

galloc_status_t galloc_allocator_create_user(const galloc_user_allocator_t *user, int device, galloc_allocator_t **out,
                                             char *err, size_t errlen)
{
    if (out != NULL)
        *out = NULL;
    if (user == NULL || out == NULL || device < 0) {
        put_err(err, errlen,
                device < 0 ? "device index must be >= 0" : "galloc_allocator_create_user: NULL user or out");
        return GALLOC_E_INVAL;
    }
    galloc_allocator_t *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        put_err(err, errlen, "out of host memory creating the allocator");
        return GALLOC_E_NOMEM;
    }
    galloc_status_t st = ga_user_create(user, device, &a->err, &a->impl);
    if (st != GALLOC_OK) {
        put_err(err, errlen, a->err.msg);
        goto err_free;
    }
    if (ga_lock_init(&a->lock) != 0) {
        put_err(err, errlen, "out of host memory creating the allocator");
        st = GALLOC_E_NOMEM;
        goto err_destroy;
    }
    a->ops = &ga_allocator_user;
    a->backend.ops = &no_device;
    a->device = device;
    ga_conf_defaults(&a->conf);
    if ((st = ga_front_host_attach(a)) != GALLOC_OK) {
        put_err(err, errlen, "out of host memory creating the allocator's host cache");
        goto err_destroy;
    }
    a->magic = GA_ALLOCATOR_LIVE;
    *out = a;
    return GALLOC_OK;

err_destroy:
    ga_allocator_user.destroy(a->impl);
err_free:
    free(a);
    return st;
}

/*
 * Destroyed allocators are not freed at once: the header stays, marked dead,
 * so that a call through a stale handle returns GALLOC_E_DESTROYED instead of
 * reading freed memory (a use-after-free in a framework's teardown order is a
 * common bug, and a status names it). The newest GRAVEYARD_MAX headers are
 * kept, about 2 KiB each; the oldest is freed when a newer one comes, and a
 * call through that handle is undefined again, as free() twice is.
 */
#define GRAVEYARD_MAX 64
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static galloc_allocator_t *graveyard[GRAVEYARD_MAX];
static size_t graveyard_next;

static void bury(galloc_allocator_t *a)
{
    pthread_mutex_lock(&graveyard_lock);
    galloc_allocator_t *oldest = graveyard[graveyard_next];
    graveyard[graveyard_next] = a;
    graveyard_next = (graveyard_next + 1) % GRAVEYARD_MAX;
    pthread_mutex_unlock(&graveyard_lock);
    free(oldest);
}

void galloc_allocator_destroy(galloc_allocator_t *a)
{
    if (a == NULL || a->magic != GA_ALLOCATOR_LIVE)
        return; /* a second destroy of a kept handle changes nothing */
    a->magic = GA_ALLOCATOR_DEAD;
    a->ops->destroy(a->impl); /* first: the pool gives its sleep copies back to the host cache */
    a->impl = NULL;
    ga_host_destroy(a->host);
    a->host = NULL;
    ga_backend_close(&a->backend);
    ga_lock_destroy(&a->lock);
    bury(a);
}

galloc_status_t galloc_malloc(galloc_allocator_t *a, size_t size, galloc_stream_t stream, void **ptr)
{
    if (ptr != NULL)
        *ptr = NULL;
    GA_LIVE_OR_RETURN(a);
    if (ptr == NULL)
        return GALLOC_E_INVAL;
    /* A cache hit on the stream's stripe needs no allocator lock
     * (Note: per-stream locking, docs/architecture.md). */
    if (a->ops->stripe_malloc != NULL && a->ops->stripe_malloc(a->impl, size, stream, ptr))
        return GALLOC_OK;
    galloc_status_t st;
    ga_oom_rejection_t r;
    galloc_oom_rejection_fn fn = NULL;
    void *ctx = NULL;
    ga_front_lock_all(a);
    st = a->ops->malloc(a->impl, size, stream, ptr);
    /* A refusal is taken even with no observer, so that a later one is not told of it. */
    if (st == GALLOC_E_OOM && a->ops->take_rejection != NULL && a->ops->take_rejection(a->impl, &r)) {
        fn = a->rejection_fn;
        ctx = a->rejection_ctx;
    }
    ga_front_unlock_all(a);
    if (fn != NULL) /* outside the lock: the observer may call galloc */
        fn(ctx, a->device, r.alloc_size, r.total_allocated, r.device_total);
    return st;
}

galloc_status_t galloc_set_expandable_reserve_class(galloc_allocator_t *a, galloc_stream_t stream, const char *name)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    if (a->ops->set_reserve_class == NULL) {
        LOCKED(a,
               st = ga_fail(&a->err, GALLOC_E_UNSUPPORTED,
                            "the %s allocator has no expandable segments: no expandable reserve class", a->ops->name));
        return st;
    }
    LOCKED(a, st = a->ops->set_reserve_class(a->impl, stream, name));
    return st;
}

galloc_status_t galloc_set_oom_rejection_observer(galloc_allocator_t *a, galloc_oom_rejection_fn fn, void *ctx)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st = GALLOC_OK;
    LOCKED(a, {
        if (a->ops->take_rejection == NULL) {
            st = ga_fail(&a->err, GALLOC_E_UNSUPPORTED,
                         "the %s allocator does not refuse allocations ahead of the device "
                         "(throw_on_cudamalloc_oom): no OOM-rejection observer",
                         a->ops->name);
        } else {
            a->rejection_fn = fn;
            a->rejection_ctx = ctx;
        }
    });
    return st;
}

galloc_status_t galloc_free(galloc_allocator_t *a, void *ptr)
{
    GA_LIVE_OR_RETURN(a);
    if (a->ops->stripe_free != NULL && a->ops->stripe_free(a->impl, ptr))
        return GALLOC_OK;
    galloc_status_t st;
    LOCKED(a, st = a->ops->free(a->impl, ptr));
    return st;
}

/* As free: the implementation's stripe member first, which takes no more
 * than the lock a free of ptr would (Note: per-stream locking,
 * docs/architecture.md), then the locked member, which has the whole answer
 * (a sleeping tag's block, or why ptr is not owned). */
/* The locked answer, out of line: the stripe path's caller keeps no
 * registers for it (a replay asks after every malloc). */
static __attribute__((noinline, cold)) galloc_status_t usable_size_locked(galloc_allocator_t *a, const void *ptr,
                                                                          size_t *size)
{
    galloc_status_t st;
    LOCKED(a, st = a->ops->usable_size(a->impl, ptr, size));
    return st;
}

galloc_status_t galloc_usable_size(galloc_allocator_t *a, const void *ptr, size_t *size)
{
    if (size != NULL)
        *size = 0;
    GA_LIVE_OR_RETURN(a);
    if (ptr == NULL || size == NULL)
        return GALLOC_E_INVAL;
    if (a->ops->stripe_usable_size != NULL && a->ops->stripe_usable_size(a->impl, ptr, size))
        return GALLOC_OK;
    return usable_size_locked(a, ptr, size);
}

/* Every stat under the lock and the quiesce, for an implementation without
 * memory_reserved; out of line (see usable_size_locked). */
static __attribute__((noinline, cold)) galloc_status_t memory_reserved_locked(galloc_allocator_t *a, int64_t *bytes)
{
    galloc_stats_t s = {.struct_size = sizeof(s)};
    LOCKED(a, a->ops->stats(a->impl, &s));
    *bytes = s.reserved_bytes[GALLOC_STAT_ALL].current;
    return GALLOC_OK;
}

galloc_status_t galloc_memory_reserved(galloc_allocator_t *a, int64_t *bytes)
{
    if (bytes != NULL)
        *bytes = 0;
    GA_LIVE_OR_RETURN(a);
    if (bytes == NULL)
        return GALLOC_E_INVAL;
    if (a->ops->memory_reserved == NULL)
        return memory_reserved_locked(a, bytes);
    *bytes = a->ops->memory_reserved(a->impl); /* no lock: see allocator_ops.h */
    return GALLOC_OK;
}

galloc_status_t galloc_segments_visit(galloc_allocator_t *a, galloc_segment_visit_fn fn, void *ctx)
{
    GA_LIVE_OR_RETURN(a);
    if (fn == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, segments_visit, fn, ctx);
}

galloc_status_t galloc_record_stream(galloc_allocator_t *a, void *ptr, galloc_stream_t stream)
{
    GA_LIVE_OR_RETURN(a);
    if (ptr == NULL)
        return GALLOC_E_INVAL;
    galloc_status_t st;
    LOCKED(a, st = a->ops->record_stream(a->impl, ptr, stream));
    return st;
}

galloc_status_t galloc_stream_synchronize(galloc_allocator_t *a, galloc_stream_t stream)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = a->ops->stream_synchronize(a->impl, stream));
    return st;
}

galloc_status_t galloc_empty_cache(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = a->ops->empty_cache(a->impl));
    return st;
}

galloc_status_t galloc_set_memory_fraction(galloc_allocator_t *a, double fraction)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = a->ops->set_fraction(a->impl, fraction));
    return st;
}

galloc_status_t galloc_memory_info(galloc_allocator_t *a, size_t *free_bytes, size_t *total_bytes)
{
    GA_LIVE_OR_RETURN(a);
    if (free_bytes == NULL || total_bytes == NULL)
        return GALLOC_E_INVAL;
    galloc_status_t st;
    LOCKED(a, st = a->ops->memory_info(a->impl, free_bytes, total_bytes));
    return st;
}

galloc_status_t galloc_memory_stats(galloc_allocator_t *a, galloc_stats_t *out)
{
    GA_LIVE_OR_RETURN(a);
    if (out == NULL || out->struct_size < sizeof(uint32_t))
        return GALLOC_E_INVAL;
    LOCKED(a, a->ops->stats(a->impl, out));
    return GALLOC_OK;
}

galloc_status_t galloc_stats_reset_peak(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    LOCKED(a, a->ops->reset_peak(a->impl));
    return GALLOC_OK;
}

galloc_status_t galloc_stats_reset_accumulated(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    LOCKED(a, a->ops->reset_accumulated(a->impl));
    return GALLOC_OK;
}

galloc_status_t galloc_last_error(galloc_allocator_t *a, char *buf, size_t len)
{
    GA_LIVE_OR_RETURN(a);
    if (buf == NULL || len == 0)
        return GALLOC_E_INVAL;
    galloc_status_t st;
    LOCKED(a, {
        snprintf(buf, len, "%s", a->err.msg);
        st = a->err.status;
    });
    return st;
}

galloc_status_t galloc_check(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, {
        st = a->ops->check(a->impl);
        if (st == GALLOC_OK)
            st = ga_host_check(a->host);
    });
    return st;
}

const char *galloc_allocator_backend(const galloc_allocator_t *a)
{
    return a != NULL && a->magic == GA_ALLOCATOR_LIVE ? a->backend.ops->name : NULL;
}

/* The backend's place op (sim's, under sim_placement:recorded): a backend
 * without one answers GALLOC_E_UNSUPPORTED through the wrapper. */
galloc_status_t galloc_sim_place(galloc_allocator_t *a, uint64_t addr)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = ga_backend_place(&a->backend, (uintptr_t)addr));
    return st;
}

/* Written out rather than MEMPOOL_CALL: an implementation without peer
 * access says so in the last-error message, which Python raises with. */
galloc_status_t galloc_enable_peer_access(galloc_allocator_t *a, int peer_device)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    if (a->ops->enable_peer_access == NULL) {
        LOCKED(a, st = ga_fail(&a->err, GALLOC_E_UNSUPPORTED,
                               "peer access: the %s allocator has no peer access (device %d, peer %d)", a->ops->name,
                               a->device, peer_device));
        return st;
    }
    LOCKED(a, st = a->ops->enable_peer_access(a->impl, peer_device));
    return st;
}

galloc_status_t galloc_settings_string(galloc_allocator_t *a, char *buf, size_t len, size_t *needed)
{
    GA_LIVE_OR_RETURN(a);
    if (buf == NULL && len > 0)
        return GALLOC_E_INVAL;
    /* conf is fixed at create: no lock needed to read it. */
    size_t n = ga_conf_format(&a->conf, buf, len);
    if (needed != NULL)
        *needed = n;
    return GALLOC_OK;
}

galloc_status_t galloc_fragmentation(galloc_allocator_t *a, galloc_fragmentation_t *out)
{
    GA_LIVE_OR_RETURN(a);
    if (out == NULL || out->struct_size < sizeof(uint32_t))
        return GALLOC_E_INVAL;
    if (a->ops->fragmentation == NULL)
        return GALLOC_E_UNSUPPORTED;
    LOCKED(a, a->ops->fragmentation(a->impl, out));
    return GALLOC_OK;
}

galloc_status_t galloc_settings_get(galloc_allocator_t *a, galloc_settings_t *out)
{
    GA_LIVE_OR_RETURN(a);
    if (out == NULL || out->struct_size < sizeof(uint32_t))
        return GALLOC_E_INVAL;
    const ga_conf_t *c = &a->conf;
    galloc_settings_t v = {
        .struct_size = out->struct_size,
        .backend = (int)c->backend,
        .max_split_size = c->max_split_size,
        .max_non_split_rounding_size = c->max_non_split_rounding_size,
        .large_segment_size = c->large_segment_size,
        .garbage_collection_threshold = c->garbage_collection_threshold,
        .per_process_memory_fraction = c->per_process_memory_fraction,
        .expandable_segments = c->expandable_segments,
        .release_lock_on_cudamalloc = c->release_lock_on_cudamalloc,
        .pinned_use_cuda_host_register = c->pinned_use_cuda_host_register,
        .pinned_use_background_threads = c->pinned_use_background_threads,
        .pinned_num_register_threads = c->pinned_num_register_threads,
        .retry_pool_after_sync = c->retry_pool_after_sync,
        .graph_capture_record_stream_reuse = c->graph_capture_record_stream_reuse,
        .throw_on_cudamalloc_oom = c->throw_on_cudamalloc_oom,
        .expandable_segments_reserve = c->es_reserve_set ? c->es_reserve.value : 0.0,
        .expandable_segments_reserve_gib = c->es_reserve_set && c->es_reserve.gib,
        .pinned_reserve_segment_size = c->pinned_reserve_segment_size,
        .pinned_max_round_threshold = c->pinned_max_round_threshold,
        .pinned_max_cached_size = c->pinned_max_cached_size,
    };
    _Static_assert(sizeof(v.roundup_power2_divisions) == sizeof(c->roundup_power2_divisions), "16 intervals");
    memcpy(v.roundup_power2_divisions, c->roundup_power2_divisions, sizeof(v.roundup_power2_divisions));
    snprintf(v.device_backend, sizeof(v.device_backend), "%s", c->device_backend);
    ga_conf_options_normalized(c, v.backend_options, sizeof(v.backend_options));
    ga_conf_format_reserve_classes(c, v.expandable_segments_reserve_by_class,
                                   sizeof(v.expandable_segments_reserve_by_class));
    size_t n = out->struct_size < sizeof(v) ? out->struct_size : sizeof(v);
    memcpy(out, &v, n);
    out->struct_size = v.struct_size;
    return GALLOC_OK;
}
