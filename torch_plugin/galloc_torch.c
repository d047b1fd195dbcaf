/*
 * galloc_torch.c: libgalloc_torch.so, galloc behind PyTorch's
 * CUDAPluggableAllocator (see galloc_torch.h). It is a thin layer over the
 * public device registry (galloc_device.h): PyTorch already passes the device
 * index to alloc_fn and free_fn, and keeps each pointer's size and stream
 * itself (allocation_metadata_ in torch/csrc/cuda/CUDAPluggableAllocator.cpp),
 * so this file holds no per-pointer state: only the device count PyTorch
 * reported at init, and which device backend serves PyTorch.
 *
 * The backend: PyTorch writes to what alloc_fn returns, so the shim must
 * never hand it simulated addresses by default (the registry's own default,
 * right for tests and replays, is "sim"). Before the first allocator is
 * created, resolve_backend looks at every configuration source: a
 * device_backend one of them names is used as named (sim with a one-time
 * warning); if none names one, the real device's is chosen, cuda if its
 * driver opens device 0, else hip, else every entry point fails with both
 * drivers' reasons, and nothing is simulated.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <galloc/galloc.h>
#include <galloc/galloc_torch.h>
#include "conf/conf.h"

/* Device indices accepted: GALLOC_DEVICE_MAX until PyTorch's init says how
 * many devices it sees. */
static atomic_int device_limit = GALLOC_DEVICE_MAX;

/*
 * Backend resolution state. backend_lock guards user_conf, shim_status and
 * shim_msg, and serializes resolve_backend; `resolved` is also read without
 * it (acquire) on the hot path, and set (release) only under it.
 */
static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool resolved;            /* the registry's configuration names the backend to use */
static char *user_conf;                 /* galloc_torch_configure's string, or NULL */
static galloc_status_t shim_status;     /* why resolution last failed (GALLOC_OK: it did not) */
static char shim_msg[GALLOC_ERROR_MAX]; /* its message */
static atomic_bool sim_warned;          /* the sim warning was printed (once per process) */

/* The real devices, in the order they are tried when no source names one. */
static const char *const real_backends[] = {"cuda", "hip"};

static void warn_sim_once(void)
{
    if (!atomic_exchange(&sim_warned, true))
        fprintf(stderr, "galloc: device_backend:sim: PyTorch is given simulated addresses, not device memory; "
                        "a kernel that touches a tensor will fault. Use it only to test the shim; without "
                        "device_backend galloc uses the GPU (cuda, else hip).\n");
}

/* Make the registry's configuration name a backend; backend_lock held. */
static galloc_status_t resolve_locked(void)
{
    ga_conf_t c;
    char msg[GALLOC_ERROR_MAX];
    const char *pytorch = getenv("PYTORCH_ALLOC_CONF");
    galloc_status_t st = ga_conf_load(&c, user_conf, getenv("GALLOC_CONF"), pytorch,
                                      pytorch != NULL ? NULL : getenv("PYTORCH_CUDA_ALLOC_CONF"), msg, sizeof(msg));
    if (st != GALLOC_OK) {
        /* The allocator's creation would fail the same way; say it now. */
        shim_status = st;
        snprintf(shim_msg, sizeof(shim_msg), "%s", msg);
        return st;
    }
    if (c.set & GA_CONF_SET_DEVICE_BACKEND) {
        if (strcmp(c.device_backend, "sim") == 0)
            warn_sim_once();
        return GALLOC_OK;
    }
    char why[sizeof(real_backends) / sizeof(real_backends[0])][GALLOC_ERROR_MAX];
    for (size_t i = 0; i < sizeof(real_backends) / sizeof(real_backends[0]); i++) {
        galloc_allocator_t *probe;
        st = galloc_allocator_create(real_backends[i], 0, user_conf, &probe, why[i], sizeof(why[i]));
        if (st == GALLOC_OK) {
            galloc_allocator_destroy(probe);
            char conf[GALLOC_ERROR_MAX];
            int n = snprintf(conf, sizeof(conf), "device_backend:%s%s%s", real_backends[i],
                             user_conf != NULL ? "," : "", user_conf != NULL ? user_conf : "");
            if (n < 0 || (size_t)n >= sizeof(conf)) {
                shim_status = GALLOC_E_CONFIG;
                snprintf(shim_msg, sizeof(shim_msg), "galloc_torch_configure's string is too long (%zu bytes)",
                         strlen(user_conf));
                return shim_status;
            }
            if ((st = galloc_device_configure(conf)) != GALLOC_OK) {
                shim_status = st;
                galloc_devices_last_error(shim_msg, sizeof(shim_msg));
            }
            return st;
        }
        if (st != GALLOC_E_UNAVAILABLE) { /* the driver is there and failed: not a reason to try another */
            shim_status = st;
            snprintf(shim_msg, sizeof(shim_msg), "device_backend:%s: %.990s", real_backends[i], why[i]);
            return st;
        }
    }
    shim_status = GALLOC_E_UNAVAILABLE;
    snprintf(shim_msg, sizeof(shim_msg),
             "no GPU driver for PyTorch's memory: device_backend:cuda: %.300s; device_backend:hip: %.300s "
             "(name the backend with device_backend:cuda or :hip and driver_path:PATH in GALLOC_CONF; "
             "device_backend:sim simulates a device and gives PyTorch addresses that are not memory)",
             why[0], why[1]);
    return shim_status;
}

/* resolve_backend: call before anything that may create a device allocator.
 * GALLOC_OK, or why no backend can serve PyTorch (galloc_torch_last_error
 * has the message). One atomic load once resolved. */
static galloc_status_t resolve_backend(void)
{
    if (atomic_load_explicit(&resolved, memory_order_acquire))
        return GALLOC_OK;
    pthread_mutex_lock(&backend_lock);
    galloc_status_t st = GALLOC_OK;
    if (!atomic_load_explicit(&resolved, memory_order_relaxed)) {
        shim_status = GALLOC_OK;
        shim_msg[0] = '\0';
        if ((st = resolve_locked()) == GALLOC_OK)
            atomic_store_explicit(&resolved, true, memory_order_release);
    }
    pthread_mutex_unlock(&backend_lock);
    return st;
}

static bool usable(int device)
{
    return device >= 0 && device < atomic_load_explicit(&device_limit, memory_order_relaxed);
}

/* PyTorch's hooks return nothing: say what failed where a user will see it. */
static void report(int device, const char *what)
{
    char msg[GALLOC_ERROR_MAX] = "";
    galloc_torch_last_error(device, msg, sizeof(msg));
    fprintf(stderr, "galloc: %s on device %d: %s\n", what, device, msg);
}

void *galloc_torch_malloc(ssize_t size, int device, galloc_torch_stream_t stream)
{
    void *p = NULL;
    if (size <= 0)
        return NULL;
    if (!usable(device)) {
        fprintf(stderr, "galloc: malloc: device %d is not one of the %d devices\n", device,
                atomic_load_explicit(&device_limit, memory_order_relaxed));
        return NULL;
    }
    if (resolve_backend() != GALLOC_OK) {
        report(device, "malloc");
        return NULL;
    }
    galloc_status_t st = galloc_device_malloc(device, (size_t)size, (galloc_stream_t)stream, &p);
    if (st != GALLOC_OK)
        report(device, "malloc");
    return p;
}

void galloc_torch_free(void *ptr, ssize_t size, int device, galloc_torch_stream_t stream)
{
    (void)size;
    (void)stream;
    if (ptr == NULL)
        return;
    if (galloc_device_free(device, ptr) != GALLOC_OK)
        report(device, "free");
}

void galloc_torch_init(int device_count)
{
    if (device_count <= 0)
        return;
    atomic_store_explicit(&device_limit, device_count < GALLOC_DEVICE_MAX ? device_count : GALLOC_DEVICE_MAX,
                          memory_order_relaxed);
}

void galloc_torch_reset(void)
{
    for (int d = 0; d < GALLOC_DEVICE_MAX; d++)
        if (galloc_device_is_initialized(d) && galloc_device_empty_cache(d) != GALLOC_OK)
            report(d, "empty_cache");
}

void galloc_torch_set_memory_fraction(double fraction, int device)
{
    galloc_allocator_t *a;
    if (!usable(device)) {
        fprintf(stderr, "galloc: set_memory_fraction: device %d is not one of the %d devices\n", device,
                atomic_load_explicit(&device_limit, memory_order_relaxed));
        return;
    }
    if (resolve_backend() != GALLOC_OK || galloc_device_get(device, &a) != GALLOC_OK) {
        report(device, "set_memory_fraction");
        return;
    }
    if (galloc_set_memory_fraction(a, fraction) != GALLOC_OK)
        report(device, "set_memory_fraction");
}

void galloc_torch_record_stream(void *ptr, galloc_torch_stream_t stream)
{
    for (int d = 0; d < GALLOC_DEVICE_MAX; d++) {
        galloc_allocator_t *a;
        if (!galloc_device_is_initialized(d) || galloc_device_get(d, &a) != GALLOC_OK)
            continue;
        galloc_status_t st = galloc_record_stream(a, ptr, (galloc_stream_t)stream);
        if (st == GALLOC_OK)
            return;
        if (st != GALLOC_E_NOT_OWNED) {
            report(d, "record_stream");
            return;
        }
    }
    fprintf(stderr, "galloc: record_stream: %p is not a live allocation of any device\n", ptr);
}

galloc_status_t galloc_torch_configure(const char *conf)
{
    pthread_mutex_lock(&backend_lock);
    galloc_status_t st = galloc_device_configure(conf);
    if (st == GALLOC_OK) {
        /* Keep it: resolve_backend layers it over the sources and may put a
         * device_backend in front of it. */
        char *copy = conf != NULL && conf[0] != '\0' ? strdup(conf) : NULL;
        if (conf != NULL && conf[0] != '\0' && copy == NULL) {
            st = GALLOC_E_NOMEM;
            galloc_device_configure(user_conf);
        } else {
            free(user_conf);
            user_conf = copy;
            atomic_store_explicit(&resolved, false, memory_order_release);
        }
    }
    pthread_mutex_unlock(&backend_lock);
    return st;
}

/* A bounded writer that keeps counting past the end, as snprintf does. */
typedef struct json_out {
    char *buf;  /* destination, len bytes */
    size_t len; /* its size */
    size_t n;   /* length of the whole text so far */
    bool first; /* no key written yet */
} json_out_t;

static void jput(json_out_t *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(j->n < j->len ? j->buf + j->n : NULL, j->n < j->len ? j->len - j->n : 0, fmt, ap);
    va_end(ap);
    if (w > 0)
        j->n += (size_t)w;
}

static int put_stat(void *ctx, const char *key, int64_t value)
{
    json_out_t *j = ctx;
    jput(j, "%s\"%s\": %lld", j->first ? "" : ", ", key, (long long)value);
    j->first = false;
    return 0;
}

galloc_status_t galloc_torch_memory_stats_json(int device, char *buf, size_t len, size_t *needed)
{
    if (buf == NULL && len > 0)
        return GALLOC_E_INVAL;
    galloc_stats_t s;
    s.struct_size = sizeof(s);
    galloc_status_t st = resolve_backend();
    if (st == GALLOC_OK)
        st = galloc_device_memory_stats(device, &s);
    if (st != GALLOC_OK)
        return st;
    json_out_t j = {buf, len, 0, true};
    jput(&j, "{");
    galloc_stats_foreach(&s, put_stat, &j);
    jput(&j, "}");
    if (needed != NULL)
        *needed = j.n;
    return GALLOC_OK;
}

/* Resolve device into `a` or return the failure. */
#define GET_OR_RETURN(device, a)                                                                                       \
    galloc_allocator_t *a;                                                                                             \
    do {                                                                                                               \
        galloc_status_t st_ = resolve_backend();                                                                       \
        if (st_ == GALLOC_OK)                                                                                          \
            st_ = galloc_device_get((device), &a);                                                                     \
        if (st_ != GALLOC_OK)                                                                                          \
            return st_;                                                                                                \
    } while (0)

galloc_status_t galloc_torch_record_memory_history(int device, int enabled, int context, int stacks, size_t max_entries)
{
    GET_OR_RETURN(device, a);
    galloc_history_options_t opt = {
        .struct_size = sizeof(opt),
        .enabled = (galloc_history_t)enabled,
        .context = (galloc_context_t)context,
        .stacks = (galloc_stacks_t)stacks,
        .max_entries = max_entries,
    };
    return galloc_record_memory_history(a, &opt);
}

galloc_status_t galloc_torch_snapshot(int device, const char *path)
{
    if (path == NULL)
        return GALLOC_E_INVAL;
    GET_OR_RETURN(device, a);
    size_t n = strlen(path);
    bool json = n >= 5 && strcmp(path + n - 5, ".json") == 0;
    return galloc_snapshot_write(a, path, json ? GALLOC_SNAPSHOT_JSON : GALLOC_SNAPSHOT_PICKLE);
}

galloc_status_t galloc_torch_reset_peak_memory_stats(int device)
{
    galloc_status_t st = resolve_backend();
    return st != GALLOC_OK ? st : galloc_device_reset_peak_memory_stats(device);
}

galloc_status_t galloc_torch_reset_accumulated_memory_stats(int device)
{
    galloc_status_t st = resolve_backend();
    return st != GALLOC_OK ? st : galloc_device_reset_accumulated_memory_stats(device);
}

galloc_status_t galloc_torch_memory_summary(int device, char *buf, size_t len, size_t *needed)
{
    GET_OR_RETURN(device, a);
    return galloc_memory_summary(a, false, buf, len, needed);
}

galloc_status_t galloc_torch_set_expandable_reserve_class(int device, galloc_torch_stream_t stream, const char *name)
{
    GET_OR_RETURN(device, a);
    return galloc_set_expandable_reserve_class(a, (galloc_stream_t)stream, name);
}

galloc_status_t galloc_torch_set_oom_rejection_observer(int device, galloc_torch_oom_rejection_fn fn, void *ctx)
{
    GET_OR_RETURN(device, a);
    return galloc_set_oom_rejection_observer(a, fn, ctx);
}

galloc_status_t galloc_torch_tag_begin(int device, const char *tag)
{
    GET_OR_RETURN(device, a);
    return galloc_tag_begin(a, tag);
}

galloc_status_t galloc_torch_tag_end(int device, const char *tag)
{
    GET_OR_RETURN(device, a);
    return galloc_tag_end(a, tag);
}

galloc_status_t galloc_torch_sleep(int device, const char *tags, const char *offload_tags)
{
    GET_OR_RETURN(device, a);
    return galloc_sleep(a, tags, offload_tags);
}

galloc_status_t galloc_torch_sleep_prepare(int device, const char *tags, const char *offload_tags)
{
    GET_OR_RETURN(device, a);
    return galloc_sleep_prepare(a, tags, offload_tags);
}

galloc_status_t galloc_torch_wake(int device, const char *tags)
{
    GET_OR_RETURN(device, a);
    return galloc_wake(a, tags);
}

galloc_status_t galloc_torch_tag_asleep(int device, const char *tag, int *asleep)
{
    GET_OR_RETURN(device, a);
    return galloc_tag_asleep(a, tag, asleep);
}

galloc_status_t galloc_torch_sleep_stats(int device, galloc_sleep_stats_t *out)
{
    GET_OR_RETURN(device, a);
    return galloc_sleep_stats(a, out);
}

galloc_status_t galloc_torch_last_error(int device, char *buf, size_t len)
{
    if (buf == NULL || len == 0 || device < 0 || device >= GALLOC_DEVICE_MAX)
        return GALLOC_E_INVAL;
    galloc_allocator_t *a;
    if (galloc_device_is_initialized(device) && galloc_device_get(device, &a) == GALLOC_OK)
        return galloc_last_error(a, buf, len);
    /* No allocator: why no backend could serve PyTorch, else why the
     * registry could not create one. */
    pthread_mutex_lock(&backend_lock);
    galloc_status_t st = shim_status;
    if (st != GALLOC_OK)
        snprintf(buf, len, "%s", shim_msg);
    pthread_mutex_unlock(&backend_lock);
    return st != GALLOC_OK ? st : galloc_devices_last_error(buf, len);
}

void galloc_torch_shutdown(void)
{
    galloc_devices_shutdown();
    pthread_mutex_lock(&backend_lock);
    free(user_conf);
    user_conf = NULL;
    shim_status = GALLOC_OK;
    shim_msg[0] = '\0';
    atomic_store_explicit(&resolved, false, memory_order_release);
    pthread_mutex_unlock(&backend_lock);
    atomic_store_explicit(&device_limit, GALLOC_DEVICE_MAX, memory_order_relaxed);
}
