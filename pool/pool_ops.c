/*
 * pool_ops.c: the caching pool's allocator ops table, ga_allocator_native,
 * the pool's only external symbol outside its own files. Every member is the
 * pool's function of the same name (ops.h), which takes the ga_pool_t as the
 * member's impl; the optional stripe_malloc, stripe_free and
 * stripe_usable_size, the members tried without the allocator's lock, are the
 * pool's stripe path. Locking: the front end's lock is held, except around
 * the stripe path.
 */
#include "allocators/allocator_ops.h"
#include "pool/hooks.h"
#include "pool/ipc.h"
#include "pool/ops.h"
#include "pool/pinned.h"
#include "pool/pool.h"
#include "pool/reject.h"
#include "pool/reserve.h"

const ga_allocator_ops_t ga_allocator_native = {
    .name = "native",
    .create = ga_pool_create,
    .destroy = ga_pool_destroy,
    .malloc = ga_pool_malloc,
    .free = ga_pool_free,
    .empty_cache = ga_pool_empty_cache,
    .record_stream = ga_pool_record_stream,
    .stream_synchronize = ga_pool_stream_synchronize,
    .set_fraction = ga_pool_set_fraction,
    .memory_info = ga_pool_memory_info,
    .stats = ga_pool_stats,
    .reset_peak = ga_pool_reset_peak,
    .reset_accumulated = ga_pool_reset_accumulated,
    .check = ga_pool_check,
    .fragmentation = ga_pool_fragmentation,
    .record_history = ga_pool_record_history,
    .snapshot = ga_pool_snapshot,
    .annotate = ga_pool_annotate,
    .snapshot_entry = ga_pool_snapshot_entry,
    .set_frames = ga_pool_set_frames,
    .set_trace_source = ga_pool_set_trace_source,
    .mempool_create = ga_pool_mempool_create,
    .mempool_create_id = ga_pool_mempool_create_id,
    .mempool_begin = ga_pool_mempool_begin,
    .mempool_end = ga_pool_mempool_end,
    .mempool_release = ga_pool_mempool_release,
    .mempool_set_flags = ga_pool_mempool_set_flags,
    .tag_begin = ga_pool_tag_begin,
    .tag_end = ga_pool_tag_end,
    .mempool_set_tag = ga_pool_mempool_set_tag,
    .sleep = ga_pool_sleep,
    .wake = ga_pool_wake,
    .sleep_prepare = ga_pool_sleep_prepare,
    .sleep_stats = ga_pool_sleep_stats,
    .tag_asleep = ga_pool_tag_asleep,
    .enable_peer_access = ga_pool_enable_peer_access,
    .ipc_export = ga_pool_ipc_export,
    .ipc_send = ga_pool_ipc_send,
    .ipc_recv = ga_pool_ipc_recv,
    .ipc_open = ga_pool_ipc_open,
    .ipc_close = ga_pool_ipc_close,
    .ipc_revoke = ga_pool_ipc_revoke,
    .ipc_collect = ga_pool_ipc_collect,
    .ipc_stats = ga_pool_ipc_stats,
    .stripe_malloc = ga_pool_stripe_malloc,
    .stripe_free = ga_pool_stripe_free,
    .quiesce = ga_pool_quiesce,
    .resume = ga_pool_resume,
    .usable_size = ga_pool_usable_size,
    .stripe_usable_size = ga_pool_stripe_usable_size,
    .segments_visit = ga_pool_segments_visit,
    .memory_reserved = ga_pool_memory_reserved,
    .hook_add = ga_pool_hook_add,
    .hook_remove = ga_pool_hook_remove,
    .hook_stats = ga_pool_hook_stats,
    .take_rejection = ga_pool_take_rejection,
    .set_reserve_class = ga_pool_set_reserve_class,
    .attach_host = ga_pool_attach_host,
};
