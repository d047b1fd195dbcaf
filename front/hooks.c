/*
 * hooks.c: the public device-memory hook calls (galloc_hooks.h). Each takes
 * the allocator's lock and hands the registry to the implementation that
 * has one (the caching pool: pool/hooks.c); the hooks are called from the
 * implementation's member calls, with the same lock held.
 */
#include <galloc/galloc_hooks.h>
#include "front/allocator_int.h"

galloc_status_t galloc_hook_add(galloc_allocator_t *a, const galloc_hook_t *hook, galloc_hook_id_t *id)
{
    if (id != NULL)
        *id = 0;
    if (hook == NULL || id == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, hook_add, hook, id);
}

galloc_status_t galloc_hook_remove(galloc_allocator_t *a, galloc_hook_id_t id)
{
    MEMPOOL_CALL(a, hook_remove, id);
}

galloc_status_t galloc_hook_stats(galloc_allocator_t *a, galloc_hook_id_t id, galloc_hook_stats_t *out)
{
    if (out == NULL || out->struct_size < sizeof(uint32_t))
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, hook_stats, id, out);
}
