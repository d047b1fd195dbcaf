/*
 * model_int.h: tools/gen's private view of a model (the parameter tensor
 * table), shared by model.c and transformer.c. Not for other packages.
 * Thread-safety: pure functions of their arguments.
 */
#ifndef GA_TOOLS_GEN_MODEL_INT_H
#define GA_TOOLS_GEN_MODEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tools/gen/transformer.h"

/* Parameter tensors per transformer block (GPT-2's layout, see model.c). */
#define GA_GEN_BLOCK_TENSORS 12

/* ga_gen_param_count: how many parameter tensors m has (embedding, blocks,
 * final layer norm). */
size_t ga_gen_param_count(const ga_gen_model_t *m);

/* ga_gen_param_elems: fill elems[ga_gen_param_count(m)] with each tensor's
 * element count; they sum to exactly m->params. m must pass ga_gen_model_check. */
void ga_gen_param_elems(const ga_gen_model_t *m, uint64_t *elems);

#endif /* GA_TOOLS_GEN_MODEL_INT_H */
