/*
 * reject.c: throw_on_cudamalloc_oom (PyTorch main, PRs #177356, #179057,
 * #179473), as DeviceCachingAllocator::alloc_block, ::malloc and
 * NativeCachingAllocator::malloc do it in c10/cuda/CUDACachingAllocator.cpp
 * (read in cyyever/pytorch at 78f3d0d6, a mirror of main).
 *
 * In alloc_block, after num_alloc_retries and after the memory fraction's own
 * check (allowed_memory_maximum: an ordinary failure that goes on to the
 * free-and-retry chain), PyTorch compares total_allocated_memory + the new
 * segment's size (alloc_size) with the CONFIGURED per_process_memory_fraction
 * x totalGlobalMem, truncated to bytes. Past it: num_oom_rejections += 1 and
 * the allocation fails without a device call. malloc then skips the retry
 * chain if the first alloc_block refused (a later one may refuse too: the
 * mark stays), returns no block, and dispatches the OOM-rejection observers
 * (device, alloc_size, total_allocated, device_total) on a detached thread;
 * NativeCachingAllocator::malloc throws OutOfMemoryError "CUDA out of
 * memory. Allocation was preemptively rejected because it would exceed
 * per_process_memory_fraction limit. Requested size: <caller's size>". No
 * OOM trace entry, no num_ooms, no OOM observers.
 *
 * A consequence of that order, reproduced: when the fraction also caps the
 * pool (galloc applies per_process_memory_fraction at create, as PyTorch's
 * DeviceCachingAllocator constructor does with the configured value), the
 * cap's check fails first and the request takes the ordinary OOM path; the
 * refusal is reached only when the pool's cap is above the configured
 * fraction (galloc_set_memory_fraction with a larger one) or unset, e.g.
 * throw_on_cudamalloc_oom alone refuses what would pass the device's total.
 *
 * galloc calls its one observer (galloc_set_oom_rejection_observer) on the
 * allocating thread after the allocator's lock is released, before
 * galloc_malloc returns, instead of on a new thread.
 */
#include "pool/reject.h"

bool ga_pool_reject_check(ga_pool_t *p, ga_alloc_params_t *ap)
{
    if (!p->conf.throw_on_cudamalloc_oom)
        return false;
    size_t max_allowed = (size_t)(p->conf.per_process_memory_fraction * (double)p->device_total);
    if (p->total_allocated_memory + ap->alloc_size <= max_allowed)
        return false;
    p->stats.num_oom_rejections++;
    p->rejection = (ga_oom_rejection_t){
        .alloc_size = ap->alloc_size, .total_allocated = p->total_allocated_memory, .device_total = p->device_total};
    p->rejection_pending = true;
    ap->rejected = true;
    return true;
}

galloc_status_t ga_pool_rejected(ga_pool_t *p, const ga_alloc_params_t *ap)
{
    char req[32];
    ga_format_size(ap->orig_size, req, sizeof(req));
    return ga_fail(p->err, GALLOC_E_OOM,
                   "%s out of memory. Allocation was preemptively rejected because it would exceed "
                   "per_process_memory_fraction limit. Requested size: %s",
                   ga_backend_vendor(p->backend), req);
}

bool ga_pool_take_rejection(void *impl, ga_oom_rejection_t *out)
{
    ga_pool_t *p = impl;
    if (!p->rejection_pending)
        return false;
    *out = p->rejection;
    p->rejection_pending = false;
    return true;
}
