/*
 * devices.c: the process-wide device registry (galloc_device.h): one
 * allocator per device index, created on first use, as PyTorch's
 * CUDACachingAllocator keeps one DeviceCachingAllocator per device.
 *
 * Invariants and locking:
 *   - slots[d] is NULL or device d's allocator. It goes from NULL to an
 *     allocator once, under reg_lock, with a release store after the
 *     allocator is fully built; readers load it with acquire and need no lock,
 *     so the hot path (galloc_device_malloc & co.) takes only the allocator's
 *     own lock. Only galloc_devices_shutdown sets it back to NULL.
 *   - reg_lock guards creation, `conf`, `created` and the error message. It
 *     is never held while an existing allocator's lock is taken, so it
 *     cannot deadlock against allocator calls.
 *   - `created` is true from the first successful creation to shutdown;
 *     galloc_device_configure refuses to change `conf` while it is true.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <galloc/galloc_device.h>
#include "conf/conf.h"

static _Atomic(galloc_allocator_t *) slots[GALLOC_DEVICE_MAX]; /* see the invariants above */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;   /* creation, conf, created, the error */
static char *conf;                                             /* galloc_device_configure's copy, or NULL */
static bool created;                                           /* an allocator was created since start/shutdown */
static galloc_status_t err_status;                             /* last registry failure */
static char err_msg[GALLOC_ERROR_MAX];                         /* its message */

/* Record a registry failure; reg_lock held. Returns status. */
static galloc_status_t fail_locked(galloc_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static galloc_status_t fail_locked(galloc_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
    va_end(ap);
    err_status = status;
    return status;
}

static bool valid(int device)
{
    return device >= 0 && device < GALLOC_DEVICE_MAX;
}

galloc_status_t galloc_device_configure(const char *s)
{
    galloc_status_t st = GALLOC_OK;
    char msg[GALLOC_ERROR_MAX] = "";
    char *copy = NULL;
    ga_conf_t scratch;
    pthread_mutex_lock(&reg_lock);
    if (created) {
        st = fail_locked(GALLOC_E_INVAL, "galloc_device_configure: device allocators already exist; "
                                         "configure before first use (or after galloc_devices_shutdown)");
        goto out_unlock;
    }
    if (s != NULL && s[0] != '\0') {
        /* Check now, so that a typo surfaces here and not at some first malloc
         * (the backend's options only the backend can check, at creation). */
        ga_conf_defaults(&scratch);
        if ((st = ga_conf_parse(s, &scratch, msg, sizeof(msg))) != GALLOC_OK) {
            fail_locked(st, "galloc_device_configure: %s", msg);
            goto out_unlock;
        }
        if ((copy = strdup(s)) == NULL) {
            st = fail_locked(GALLOC_E_NOMEM, "galloc_device_configure: out of host memory");
            goto out_unlock;
        }
    }
    free(conf);
    conf = copy;
out_unlock:
    pthread_mutex_unlock(&reg_lock);
    return st;
}

/* The cold path: create device's allocator unless another thread just did. */
static galloc_status_t create_slot(int device, galloc_allocator_t **out)
{
    galloc_status_t st = GALLOC_OK;
    pthread_mutex_lock(&reg_lock);
    galloc_allocator_t *a = atomic_load_explicit(&slots[device], memory_order_acquire);
    if (a == NULL) {
        char msg[GALLOC_ERROR_MAX] = "";
        /* NULL backend: the effective configuration's device_backend decides. */
        st = galloc_allocator_create(NULL, device, conf, &a, msg, sizeof(msg));
        if (st != GALLOC_OK) {
            fail_locked(st, "device %d: %s", device, msg);
            goto out_unlock;
        }
        created = true;
        atomic_store_explicit(&slots[device], a, memory_order_release);
    }
out_unlock:
    pthread_mutex_unlock(&reg_lock);
    *out = a;
    return st;
}

galloc_status_t galloc_device_get(int device, galloc_allocator_t **out)
{
    if (out == NULL)
        return GALLOC_E_INVAL;
    *out = NULL;
    if (!valid(device)) {
        pthread_mutex_lock(&reg_lock);
        fail_locked(GALLOC_E_INVAL, "device index %d out of range [0, %d)", device, GALLOC_DEVICE_MAX);
        pthread_mutex_unlock(&reg_lock);
        return GALLOC_E_INVAL;
    }
    galloc_allocator_t *a = atomic_load_explicit(&slots[device], memory_order_acquire);
    if (a != NULL) {
        *out = a;
        return GALLOC_OK;
    }
    return create_slot(device, out);
}

bool galloc_device_is_initialized(int device)
{
    return valid(device) && atomic_load_explicit(&slots[device], memory_order_acquire) != NULL;
}

/* Resolve device into `a` or return the failure (a declaration plus a check,
 * so each call below stays one line of dispatch). */
#define GET_OR_RETURN(device, a)                                                                                       \
    galloc_allocator_t *a;                                                                                             \
    do {                                                                                                               \
        galloc_status_t st_ = galloc_device_get((device), &a);                                                         \
        if (st_ != GALLOC_OK)                                                                                          \
            return st_;                                                                                                \
    } while (0)

galloc_status_t galloc_device_malloc(int device, size_t size, galloc_stream_t stream, void **ptr)
{
    if (ptr == NULL)
        return GALLOC_E_INVAL;
    *ptr = NULL;
    GET_OR_RETURN(device, a);
    return galloc_malloc(a, size, stream, ptr);
}

galloc_status_t galloc_device_free(int device, void *ptr)
{
    GET_OR_RETURN(device, a);
    return galloc_free(a, ptr);
}

galloc_status_t galloc_device_memory_stats(int device, galloc_stats_t *out)
{
    if (out == NULL || out->struct_size == 0)
        return GALLOC_E_INVAL;
    GET_OR_RETURN(device, a);
    return galloc_memory_stats(a, out);
}

/* One figure of the "all" pool: current or peak of allocated or reserved bytes. */
static galloc_status_t figure(int device, bool reserved, bool peak, int64_t *bytes)
{
    if (bytes == NULL)
        return GALLOC_E_INVAL;
    galloc_stats_t s;
    s.struct_size = sizeof(s);
    galloc_status_t st = galloc_device_memory_stats(device, &s);
    if (st != GALLOC_OK)
        return st;
    const galloc_stat_t *v = reserved ? &s.reserved_bytes[GALLOC_STAT_ALL] : &s.allocated_bytes[GALLOC_STAT_ALL];
    *bytes = peak ? v->peak : v->current;
    return GALLOC_OK;
}

galloc_status_t galloc_device_memory_allocated(int device, int64_t *bytes)
{
    return figure(device, false, false, bytes);
}

galloc_status_t galloc_device_max_memory_allocated(int device, int64_t *bytes)
{
    return figure(device, false, true, bytes);
}

galloc_status_t galloc_device_memory_reserved(int device, int64_t *bytes)
{
    return figure(device, true, false, bytes);
}

galloc_status_t galloc_device_max_memory_reserved(int device, int64_t *bytes)
{
    return figure(device, true, true, bytes);
}

galloc_status_t galloc_device_reset_peak_memory_stats(int device)
{
    GET_OR_RETURN(device, a);
    return galloc_stats_reset_peak(a);
}

galloc_status_t galloc_device_reset_accumulated_memory_stats(int device)
{
    GET_OR_RETURN(device, a);
    return galloc_stats_reset_accumulated(a);
}

galloc_status_t galloc_device_empty_cache(int device)
{
    GET_OR_RETURN(device, a);
    return galloc_empty_cache(a);
}

galloc_status_t galloc_device_memory_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    if (free_bytes == NULL || total_bytes == NULL)
        return GALLOC_E_INVAL;
    GET_OR_RETURN(device, a);
    return galloc_memory_info(a, free_bytes, total_bytes);
}

galloc_status_t galloc_devices_last_error(char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return GALLOC_E_INVAL;
    pthread_mutex_lock(&reg_lock);
    snprintf(buf, len, "%s", err_msg);
    galloc_status_t st = err_status;
    pthread_mutex_unlock(&reg_lock);
    return st;
}

void galloc_devices_shutdown(void)
{
    pthread_mutex_lock(&reg_lock);
    for (int d = 0; d < GALLOC_DEVICE_MAX; d++)
        galloc_allocator_destroy(atomic_exchange_explicit(&slots[d], NULL, memory_order_acq_rel));
    free(conf);
    conf = NULL;
    created = false;
    err_status = GALLOC_OK;
    err_msg[0] = '\0';
    pthread_mutex_unlock(&reg_lock);
}
