/*
 * gpu_table.h: a map from a non-zero key (a device address, an event handle)
 * to a 64-bit value, for the GPU layer's bookkeeping of what it holds.
 *
 * Open addressing with linear probing; the slot array doubles when a put would
 * fill more than half of it. Growth happens only in ga_gpu_table_reserve, which
 * callers run before the driver call that creates the entry, so a put after a
 * successful driver call never fails (a failed call changes nothing).
 * Locking: none (the backend state's caller holds the allocator's lock).
 */
#ifndef GA_BACKEND_GPU_TABLE_H
#define GA_BACKEND_GPU_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

typedef struct ga_gpu_slot {
    uintptr_t key;  /* 0 marks an empty slot */
    uint64_t value; /* the caller's: a size, a stream */
} ga_gpu_slot_t;

typedef struct ga_gpu_table {
    ga_gpu_slot_t *slots; /* cap slots or NULL */
    size_t cap;           /* 0 or a power of two */
    size_t count;         /* live entries, <= cap / 2 */
} ga_gpu_table_t;

/* Make room for one more entry (cold path, may allocate): GALLOC_E_NOMEM. */
galloc_status_t ga_gpu_table_reserve(ga_gpu_table_t *t);
/* Insert key (not present, room reserved). */
void ga_gpu_table_put(ga_gpu_table_t *t, uintptr_t key, uint64_t value);
/* The value of key into *value (may be NULL); false if absent. */
bool ga_gpu_table_get(const ga_gpu_table_t *t, uintptr_t key, uint64_t *value);
/* Remove key if present. */
void ga_gpu_table_del(ga_gpu_table_t *t, uintptr_t key);
/* Free the slots; the table is empty afterwards. */
void ga_gpu_table_free(ga_gpu_table_t *t);

#endif /* GA_BACKEND_GPU_TABLE_H */
