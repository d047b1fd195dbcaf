/*
 * galloc_torch.c: libgalloc_torch.so, galloc behind PyTorch's
 * CUDAPluggableAllocator (see galloc_torch.h). It is a thin layer over the
 * public device registry (galloc_device.h): PyTorch already passes the device
 * index to alloc_fn and free_fn, and keeps each pointer's size and stream
 * itself (allocation_metadata_ in torch/csrc/cuda/CUDAPluggableAllocator.cpp),
 * so this file holds no per-pointer state: only the device count PyTorch
 * reported at init.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <galloc/galloc.h>
#include <galloc/galloc_torch.h>

/* Device indices accepted: GALLOC_DEVICE_MAX until PyTorch's init says how
 * many devices it sees. */
static atomic_int device_limit = GALLOC_DEVICE_MAX;

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
    if (!usable(device) || galloc_device_get(device, &a) != GALLOC_OK) {
        fprintf(stderr, "galloc: set_memory_fraction: no allocator for device %d\n", device);
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
    return galloc_device_configure(conf);
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
    galloc_status_t st = galloc_device_memory_stats(device, &s);
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
#define GET_OR_RETURN(device, a)                                                                   \
    galloc_allocator_t *a;                                                                         \
    do {                                                                                           \
        galloc_status_t st_ = galloc_device_get((device), &a);                                     \
        if (st_ != GALLOC_OK)                                                                      \
            return st_;                                                                            \
    } while (0)

galloc_status_t galloc_torch_record_memory_history(int device, int enabled, int context, int stacks,
                                                   size_t max_entries)
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
    return galloc_device_reset_peak_memory_stats(device);
}

galloc_status_t galloc_torch_reset_accumulated_memory_stats(int device)
{
    return galloc_device_reset_accumulated_memory_stats(device);
}

galloc_status_t galloc_torch_memory_summary(int device, char *buf, size_t len, size_t *needed)
{
    GET_OR_RETURN(device, a);
    return galloc_memory_summary(a, false, buf, len, needed);
}

galloc_status_t galloc_torch_last_error(int device, char *buf, size_t len)
{
    if (buf == NULL || len == 0 || device < 0 || device >= GALLOC_DEVICE_MAX)
        return GALLOC_E_INVAL;
    galloc_allocator_t *a;
    if (galloc_device_is_initialized(device) && galloc_device_get(device, &a) == GALLOC_OK)
        return galloc_last_error(a, buf, len);
    return galloc_devices_last_error(buf, len);
}

void galloc_torch_shutdown(void)
{
    galloc_devices_shutdown();
    atomic_store_explicit(&device_limit, GALLOC_DEVICE_MAX, memory_order_relaxed);
}
