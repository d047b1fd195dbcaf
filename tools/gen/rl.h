/*
 * rl.h: the allocation pattern of a colocated reinforcement-learning loop
 * (training and rollout in one process on one GPU, as verl or OpenRLHF run
 * them with vLLM's sleep mode), for `galloc gen rl`: each iteration one
 * training step under the tag "train", then a rollout under "infer", with
 * sleep and wake between them (galloc_sleep.h). The model is the text of
 * ga_gen_rl_model_text, printed by --help and at the head of the trace.
 *
 * Like transformer.h: a pure function of its arguments (same flags, same
 * events), ids from 1 never reused. Thread-safety: only its arguments.
 */
#ifndef GA_TOOLS_GEN_RL_H
#define GA_TOOLS_GEN_RL_H

#include <stddef.h>
#include <stdint.h>

#include "tools/gen/transformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loop's own flags; 0 means the default. */
typedef struct ga_gen_rl {
    uint32_t shards;        /* --shards: ranks the training state is sharded over (FSDP); default 1 */
    uint64_t rollout_batch; /* --rollout-batch: sequences generated per iteration; default --batch */
    uint64_t prompt_len;    /* --prompt-len: prompt tokens; default seq_len / 4 (at least 1) */
    uint64_t response_len;  /* --response-len: generated tokens; default seq_len - prompt_len (at least 1) */
    uint32_t decode_steps;  /* --decode-steps: steps the KV cache grows in; default 8 (at most
                               response_len) */
} ga_gen_rl_t;

/* ga_gen_rl_resolve: rl with its defaults filled in for model m (which
 * must pass ga_gen_model_check), into *out. Returns 0, or -1 with err set
 * (decode steps above the response length, a KV cache of 2^60 bytes). */
int ga_gen_rl_resolve(const ga_gen_model_t *m, const ga_gen_rl_t *rl, ga_gen_rl_t *out, char *err, size_t errlen);

/* ga_gen_rl_kv_token_bytes: the KV cache of one token: layers x 2 (K and V)
 * x d_model x element bytes. */
uint64_t ga_gen_rl_kv_token_bytes(const ga_gen_model_t *m);

/*
 * ga_gen_rl: call emit once per event of m->steps iterations of the loop
 * (tag, sleep and wake events included), in order. Returns as
 * ga_gen_transformer: 0, -1 with err (nothing emitted), or emit's non-zero
 * value. At the end the training state is awake and live, the inference
 * weights asleep (offloaded).
 */
int ga_gen_rl(const ga_gen_model_t *m, const ga_gen_rl_t *rl, ga_gen_emit_fn emit, void *ctx, char *err, size_t errlen);

/* ga_gen_rl_model_text: the multi-line description of an iteration, static. */
const char *ga_gen_rl_model_text(void);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_GEN_RL_H */
