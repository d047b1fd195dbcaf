/*
 * ipc.c: the public calls of galloc_ipc.h. Each takes the allocator's lock
 * and dispatches to the allocator's ipc members; an allocator without them
 * (cudaMallocAsync, user) says so in the last-error message, as PyTorch's
 * "cudaMallocAsync does not yet support shareIpcHandle" does.
 */
#include <galloc/galloc_ipc.h>

#include "front/allocator_int.h"

/* The member call, or GALLOC_E_UNSUPPORTED with the allocator named. */
#define IPC_CALL(a, member, ...)                                                                                       \
    do {                                                                                                               \
        GA_LIVE_OR_RETURN(a);                                                                                          \
        galloc_status_t st_;                                                                                           \
        if ((a)->ops->member == NULL) {                                                                                \
            LOCKED(a, st_ = ga_fail(&(a)->err, GALLOC_E_UNSUPPORTED,                                                   \
                                    "%s: the %s allocator cannot share memory between processes", #member,             \
                                    (a)->ops->name));                                                                  \
            return st_;                                                                                                \
        }                                                                                                              \
        LOCKED(a, st_ = (a)->ops->member((a)->impl, __VA_ARGS__));                                                     \
        return st_;                                                                                                    \
    } while (0)

galloc_status_t galloc_ipc_export(galloc_allocator_t *a, const void *ptr, galloc_ipc_handle_t *handle)
{
    if (handle == NULL)
        return GALLOC_E_INVAL;
    IPC_CALL(a, ipc_export, ptr, handle);
}

galloc_status_t galloc_ipc_send(galloc_allocator_t *a, int sock, const galloc_ipc_handle_t *handle)
{
    if (handle == NULL || sock < 0)
        return GALLOC_E_INVAL;
    IPC_CALL(a, ipc_send, sock, handle);
}

galloc_status_t galloc_ipc_recv(galloc_allocator_t *a, int sock, galloc_ipc_handle_t *handle, void **ptr)
{
    if (ptr == NULL || sock < 0)
        return GALLOC_E_INVAL;
    IPC_CALL(a, ipc_recv, sock, handle, ptr);
}

galloc_status_t galloc_ipc_open(galloc_allocator_t *a, const galloc_ipc_handle_t *handle, void **ptr)
{
    if (handle == NULL || ptr == NULL)
        return GALLOC_E_INVAL;
    IPC_CALL(a, ipc_open, handle, ptr);
}

galloc_status_t galloc_ipc_close(galloc_allocator_t *a, void *ptr)
{
    IPC_CALL(a, ipc_close, ptr);
}

galloc_status_t galloc_ipc_revoke(galloc_allocator_t *a, const galloc_ipc_handle_t *handle)
{
    if (handle == NULL)
        return GALLOC_E_INVAL;
    IPC_CALL(a, ipc_revoke, handle);
}

galloc_status_t galloc_ipc_collect(galloc_allocator_t *a, size_t *blocks_freed)
{
    IPC_CALL(a, ipc_collect, blocks_freed);
}

galloc_status_t galloc_ipc_stats(galloc_allocator_t *a, galloc_ipc_stats_t *out)
{
    if (out == NULL)
        return GALLOC_E_INVAL;
    IPC_CALL(a, ipc_stats, out);
}
