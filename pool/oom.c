/*
 * oom.c: the out-of-memory report, in PyTorch's words and figures
 * (DeviceCachingAllocator::malloc's failure branch in
 * c10/cuda/CUDACachingAllocator.cpp). Users grep their logs for this text and
 * compare the numbers, so it is reproduced exactly, including the double
 * spaces. "Tried to allocate" shows the segment size PyTorch asked the device
 * for, not the caller's request; the "oom" trace entry records the request
 * rounded to 512 bytes (params.size()), as PyTorch's record_trace does. galloc has no NVML, so the per-process part
 * is empty (as PyTorch prints it when NVML is unavailable). With expandable
 * segments and a reserve key the end is main's reserve hint (reserve.c).
 */
#include <stdio.h>

#include "pool/hooks.h"
#include "pool/oom.h"
#include "pool/private.h"
#include "pool/reserve.h"
#include "pool/tags.h"

/* The documentation link current PyTorch releases print (2.7 and later). */
#define OOM_DOC_URL                                                                                                    \
    "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"

galloc_status_t ga_pool_oom(ga_pool_t *p, const ga_alloc_params_t *ap)
{
    size_t device_free = 0, device_total = 0;
    (void)ga_backend_mem_info(p->backend, &device_free, &device_total);
    p->stats.num_ooms++;
    int64_t pid[2];
    ga_trace_record_oom(&p->trace, ap->size, ap->stream, device_free, ga_pool_id_of(ap->pool, pid), ap->stack_id);
    if (ga_pool_hooked(p))
        ga_pool_hook_oom(p, ap, device_free, device_total);

    const char *vendor = ga_backend_vendor(p->backend);
    char tried[32], total[32], free_s[32], allowed[64] = "", alloc_s[32], unalloc[32];
    ga_format_size(ap->alloc_size, tried, sizeof(tried));
    ga_format_size(device_total, total, sizeof(total));
    ga_format_size(device_free, free_s, sizeof(free_s));
    if (p->set_fraction) {
        char a[32];
        ga_format_size(p->allowed_memory_maximum, a, sizeof(a));
        snprintf(allowed, sizeof(allowed), "%s allowed; ", a);
    }
    int64_t allocated = p->stats.allocated_bytes[GALLOC_STAT_ALL].current;
    int64_t reserved = p->stats.reserved_bytes[GALLOC_STAT_ALL].current;
    /* A sleeping tag's blocks stay allocated but hold no device memory: the
     * figures are of the device, and the sleeping bytes are named apart. */
    int64_t asleep = (int64_t)ga_pool_asleep_allocated_bytes(p);
    allocated -= asleep;
    char asleep_msg[96] = "";
    if (asleep > 0) {
        char a[32];
        ga_format_size((uint64_t)asleep, a, sizeof(a));
        snprintf(asleep_msg, sizeof(asleep_msg), " %s more is allocated in sleeping tags (galloc_sleep).", a);
    }
    /* PyTorch adds the FREE cached bytes of private pools to "allocated"
     * (those on the device: a sleeping tag's are not). */
    int64_t priv = (int64_t)ga_pool_private_free_bytes(p);
    char priv_msg[96] = "", priv_s[32];
    if (priv > 0) {
        ga_format_size((uint64_t)priv, priv_s, sizeof(priv_s));
        snprintf(priv_msg, sizeof(priv_msg), "with %s allocated in private pools (e.g., CUDA Graphs), ", priv_s);
    }
    ga_format_size((uint64_t)(allocated + priv), alloc_s, sizeof(alloc_s));
    ga_format_size((uint64_t)(reserved - allocated - priv), unalloc, sizeof(unalloc));
    char hint[512];
    if (!ga_pool_reserve_oom_hint(p, ap, hint, sizeof(hint)))
        snprintf(hint, sizeof(hint),
                 " If reserved but unallocated memory is large try setting "
                 "PYTORCH_%s_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                 "Memory Management  (" OOM_DOC_URL ")",
                 vendor);
    return ga_fail(p->err, GALLOC_E_OOM,
                   "%s out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "
                   "%sOf the allocated memory %s is allocated by PyTorch, %sand %s is reserved by PyTorch but "
                   "unallocated.%s%s",
                   vendor, tried, p->device, total, free_s, allowed, alloc_s, priv_msg, unalloc, asleep_msg, hint);
}
