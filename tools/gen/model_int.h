/*
 * model_int.h: tools/gen's private view of a model (the parameter tensor
 * table) and of the training generator's steps, shared by model.c,
 * transformer.c and rl.c. Not for other packages.
 * Thread-safety: the functions work only on their arguments (a gen_t belongs
 * to one thread).
 */
#ifndef GA_TOOLS_GEN_MODEL_INT_H
#define GA_TOOLS_GEN_MODEL_INT_H

#include <stdbool.h>
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

/* The training generator as steps, for galloc gen transformer and rl (the
 * state of one run; not thread-safe, one per thread). */
/* What a block keeps for backward (without checkpointing), and its units. */
enum slot {
    S_X,         /* block input, the layer-norm-1 input */
    S_QKV_IN,    /* ln1 output, the qkv projection input */
    S_Q,         /* queries */
    S_K,         /* keys */
    S_V,         /* values */
    S_CTX,       /* softmax(qk^T) v, per head */
    S_PROJ_IN,   /* heads merged: the output projection's input */
    S_ATTN_MASK, /* attention dropout mask */
    S_LN2_IN,    /* residual sum, the layer-norm-2 input */
    S_FC1_IN,    /* ln2 output */
    S_GELU_IN,   /* fc1 output, 4 * d_model wide */
    S_FC2_IN,    /* GELU output, 4 * d_model wide */
    S_MLP_MASK,  /* MLP dropout mask */
    S_LN1_STATS, /* layer norm 1 mean and rstd (fp32 per token): small-pool blocks */
    S_LN2_STATS, /* layer norm 2 mean and rstd */
    N_SLOTS
};

/* Block parameter tensors (model.c's order) whose gradients backward makes. */
enum { P_LN1_W, P_LN1_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B, P_LN2_W, P_LN2_B, P_FC1_W, P_FC1_B, P_FC2_W, P_FC2_B };

typedef struct gen {
    const ga_gen_model_t *m;    /* the model */
    ga_gen_emit_fn emit;        /* the consumer */
    void *ctx;                  /* its argument */
    int stop;                   /* emit's non-zero return: once set nothing more is emitted */
    uint64_t next_id;           /* next block id (ids are never reused) */
    uint32_t step;              /* current step, GA_GEN_SETUP_STEP before the first */
    uint64_t elem;              /* bytes per weight / gradient / activation element */
    uint64_t unit;              /* bytes of s * batch * d_model elements this step */
    uint64_t scores;            /* bytes of batch * heads * s * s elements this step */
    uint64_t stats;             /* bytes of one layer norm's mean + rstd: s * batch * 2 fp32 */
    size_t n_params;            /* parameter tensors */
    uint64_t *param_elems;      /* [n_params] element counts, summing to --params */
    uint64_t (*saved)[N_SLOTS]; /* [layers] ids kept for backward, 0 = none */
    uint32_t shards;            /* the persistent state is sharded over this many ranks (FSDP / ZeRO-3);
                                1: a whole model, as galloc gen transformer */
    bool free_grads;            /* zero_grad(set_to_none=True) after each optimizer step: the gradients
                                are made by every backward and freed after the step (grads holds them) */
    uint64_t *grads;            /* [n_params] with free_grads: the live gradient ids, 0 = none */
    char text[128];             /* the current annotation */
} gen_t;

/* ga_gen_open: a run of m (checked: -1 with err when invalid or out of host
 * memory, nothing emitted) with shards ranks (>= 1) and free_grads; events
 * go to fn(ctx). ga_gen_close frees it. */
int ga_gen_open(gen_t *g, const ga_gen_model_t *m, uint32_t shards, bool free_grads, ga_gen_emit_fn fn, void *ctx,
                char *err, size_t errlen);
void ga_gen_close(gen_t *g);

/* ga_gen_setup: the weights (and fp32 masters); ga_gen_step: training step k
 * (forward, backward, Adam). */
void ga_gen_setup(gen_t *g);
void ga_gen_step(gen_t *g, uint32_t k);

/* The emitters: an event (nothing once the consumer stopped the run), an
 * allocation (its new id), a free of *id (then 0), an annotation. */
void ga_gen_emit(gen_t *g, const ga_gen_event_t *ev);
uint64_t ga_gen_tensor(gen_t *g, uint64_t bytes, const char *name);
void ga_gen_release(gen_t *g, uint64_t *id);
__attribute__((format(printf, 2, 3))) void ga_gen_annotate(gen_t *g, const char *fmt, ...);

/* ga_gen_shard_bytes: one rank's bytes of parameter tensor i at elem bytes
 * per element: its elements / shards, rounded up. */
uint64_t ga_gen_shard_bytes(const gen_t *g, size_t i, uint64_t elem);

#endif /* GA_TOOLS_GEN_MODEL_INT_H */
