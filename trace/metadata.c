/*
 * metadata.c: user metadata on trace entries, PyTorch's
 * torch.cuda.memory._set_memory_metadata (PR #165490): one string per
 * thread (DeviceCachingAllocator's static thread_local user_metadata in
 * c10/cuda/CUDACachingAllocator.cpp), copied by record_trace into every
 * entry that thread records afterwards, on every device, until it is set
 * again; "" clears it.
 *
 * The thread's string lives in thread-local storage of a fixed size (no
 * allocation, nothing to free at thread exit). An entry holds the string's
 * id in the recording trace's string table; the id is looked up when a
 * thread first records with a new string in a trace, then cached (one trace
 * per thread: a thread alternating between devices looks the string up again
 * by its hash, which allocates nothing once interned).
 *
 * Invariants: ga_trace_metadata_users is the number of threads whose string
 * is not "" (threads that exit with one set leave it counted: recording then
 * only pays the thread-local read). The cache is keyed by the trace's
 * instance number, never its address, so a trace destroyed and another made
 * at the same address cannot see a stale id.
 *
 * Locking: the thread-local state is the thread's own; ga_trace_metadata_id
 * runs under the allocator lock of t, as every ga_trace_t call.
 */
#include "trace/trace.h"

#include <string.h>

unsigned ga_trace_metadata_users;

/* Static: a TLS symbol shared between files would be exported (pool/stripe_path.c). */
static _Thread_local struct {
    char text[GALLOC_MEMORY_METADATA_MAX + 1]; /* the thread's string, NUL-terminated */
    size_t len;                                /* its length; 0 = none */
    uint64_t serial;                           /* bumped by every set: the cache's other key */
    uint64_t cache_instance;                   /* the trace the cached id belongs to (0 = none) */
    uint64_t cache_serial;                     /* the serial it was looked up for */
    uint32_t cache_id;                         /* the id then */
} tls;

galloc_status_t ga_trace_metadata_set(const char *s, size_t len)
{
    if (s == NULL)
        len = 0;
    if (len > GALLOC_MEMORY_METADATA_MAX)
        return GALLOC_E_INVAL;
    if (len > 0 && tls.len == 0)
        __atomic_fetch_add(&ga_trace_metadata_users, 1, __ATOMIC_RELAXED);
    else if (len == 0 && tls.len > 0)
        __atomic_fetch_sub(&ga_trace_metadata_users, 1, __ATOMIC_RELAXED);
    if (len > 0)
        memcpy(tls.text, s, len);
    tls.text[len] = '\0';
    tls.len = len;
    tls.serial++;
    return GALLOC_OK;
}

const char *ga_trace_metadata_get(size_t *len)
{
    tls.text[tls.len] = '\0'; /* a thread that never set one: the zeroed buffer is already "" */
    if (len != NULL)
        *len = tls.len;
    return tls.text;
}

uint32_t ga_trace_metadata_id(ga_trace_t *t)
{
    if (tls.len == 0)
        return 0;
    if (tls.cache_instance == t->instance && tls.cache_serial == tls.serial)
        return tls.cache_id;
    uint32_t id;
    /* _all: the whole string, as PyTorch writes it, not cut like a frame's name. */
    if (ga_trace_strtab_intern_all(&t->strings, tls.text, tls.len, &id) != GALLOC_OK || id > GA_TRACE_METADATA_ID_MAX) {
        t->metadata_dropped++;
        return 0;
    }
    tls.cache_instance = t->instance;
    tls.cache_serial = tls.serial;
    tls.cache_id = id;
    return id;
}
