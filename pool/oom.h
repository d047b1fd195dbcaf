/*
 * oom.h: the out-of-memory failure (oom.c), PyTorch's message to the word.
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_OOM_H
#define GA_POOL_OOM_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Count the OOM (num_ooms), record it in the trace and fail with
 * GALLOC_E_OOM and PyTorch's message for ap. */
galloc_status_t ga_pool_oom(ga_pool_t *p, const ga_alloc_params_t *ap);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_OOM_H */
