/*
 * transformer.h: the allocation pattern of training a decoder-only transformer,
 * as a stream of events generated in memory (no file), for `galloc gen`,
 * `galloc budget`, the replay tool and bench/.
 *
 * The model of a training step (also printed by `galloc gen --help` and at the
 * head of every generated trace) is described in transformer.c. Sizes come from
 * the model flags only; the output is a pure function of ga_gen_model_t, so the
 * same flags always give the same events.
 *
 * Event ids start at 1 and are never reused: an id is unique among live blocks
 * and, more strongly, over the whole stream, so a consumer may index a dense
 * array by id.
 *
 * Thread-safety: every function works only on its arguments.
 */
#ifndef GA_TOOLS_GEN_TRANSFORMER_H
#define GA_TOOLS_GEN_TRANSFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The model and run, as the command-line flags give them. */
typedef struct ga_gen_model {
    uint64_t params;      /* --params: total parameter count (embedding included) */
    uint32_t layers;      /* --layers: transformer blocks */
    uint64_t d_model;     /* --d-model: hidden size */
    uint64_t seq_len;     /* --seq-len: tokens per sequence (the analytic budget's; with variable lengths,
                             0 means MAX) */
    uint64_t batch;       /* --batch: sequences per step */
    uint32_t heads;       /* --heads: attention heads; 0 = one per 64 dims below d_model 4096, else per 128 */
    bool mixed_precision; /* --mixed-precision: fp16/bf16 weights, grads and activations + fp32 master weights */
    bool checkpointing;   /* --checkpointing: keep only each layer's input, recompute the rest in backward */
    uint32_t steps;       /* --steps: training steps, >= 1 (the optimizer state appears at the first) */
    uint64_t seq_min;     /* --variable-seq-len MIN:MAX; both 0 = every step uses seq_len */
    uint64_t seq_max;
    uint64_t seed; /* --seed: drives the per-step sequence lengths */
} ga_gen_model_t;

/* ga_gen_model_init: the defaults (3 steps, seed 0, fp32, no checkpointing);
 * params, layers, d_model, seq_len and batch are left 0 for the caller. */
void ga_gen_model_init(ga_gen_model_t *m);

/* ga_gen_model_check: 0 if m can be generated, else -1 with the problem in err
 * (a zero or absurd dimension, MIN > MAX, --params below one element per tensor,
 * a tensor of 2^60 bytes or more). */
int ga_gen_model_check(const ga_gen_model_t *m, char *err, size_t errlen);

/* Derived figures, for reports and tests (m must pass ga_gen_model_check). */
uint64_t ga_gen_elem_bytes(const ga_gen_model_t *m); /* 2 in mixed precision, else 4 */
uint32_t ga_gen_heads(const ga_gen_model_t *m);      /* the effective head count */
uint64_t ga_gen_seq_len(const ga_gen_model_t *m);    /* seq_len, or seq_max when it is 0 */
/* ga_gen_step_seq_len: the sequence length of step `step` (0-based): seq_len
 * when fixed, else a value in [seq_min, seq_max] drawn from (seed, step) alone,
 * so any step can be asked without generating the ones before it. */
uint64_t ga_gen_step_seq_len(const ga_gen_model_t *m, uint32_t step);

typedef enum ga_gen_op {
    GA_GEN_ALLOC,    /* id, size: a tensor is created */
    GA_GEN_FREE,     /* id: it is released */
    GA_GEN_ANNOTATE, /* text: a marker whose first word is the phase ("forward block 3", "backward block 3",
                        "optimizer"), or a step's ("step 3 forward seq_len 1536") */
    /* Sleep and wake (rl.h only; the text trace's events of the same names): */
    GA_GEN_TAG_BEGIN, /* text: the tag the allocations after it belong to */
    GA_GEN_TAG_END,   /* text: that tag's scope ends */
    GA_GEN_SLEEP,     /* text: the tags put to sleep; offload: those offloaded, NULL for none */
    GA_GEN_WAKE       /* text: the tags woken */
} ga_gen_op_t;

/* Setup events (weights before the first step) carry this step number. */
#define GA_GEN_SETUP_STEP UINT32_MAX

typedef struct ga_gen_event {
    ga_gen_op_t op;      /* what happens */
    uint64_t id;         /* ALLOC / FREE: block id, >= 1, never reused */
    uint64_t size;       /* ALLOC: bytes, >= 1 */
    uint32_t step;       /* 0-based training step, GA_GEN_SETUP_STEP before the first */
    const char *text;    /* ANNOTATE: the marker; ALLOC: the tensor's name ("layer 3 fc1 output"); the tag
                         events: the tag (list); valid during the callback only */
    const char *offload; /* SLEEP: the tags offloaded, NULL for none */
} ga_gen_event_t;

/* The consumer: return 0 to go on, a positive value to stop the generation
 * (ga_gen_transformer returns it; -1 is its own error value). */
typedef int (*ga_gen_emit_fn)(void *ctx, const ga_gen_event_t *ev);

/*
 * ga_gen_transformer: call emit once per event of m's training run, in order.
 * Returns 0 when every event was delivered; -1 with err set when m is invalid or
 * host memory ran out (nothing was emitted in either case: both are found
 * before the first event); otherwise the non-zero value emit returned, which
 * ended the run early. Frees everything it allocated on every path. Every
 * block allocated is freed by the end except the persistent state (weights,
 * master weights, gradients, optimizer state), which stays live as in a
 * training process between steps.
 */
int ga_gen_transformer(const ga_gen_model_t *m, ga_gen_emit_fn emit, void *ctx, char *err, size_t errlen);

/* ga_gen_step_model_text: the multi-line description of the step model (for
 * --help and the trace's head comment), static text. */
const char *ga_gen_step_model_text(void);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_GEN_TRANSFORMER_H */
