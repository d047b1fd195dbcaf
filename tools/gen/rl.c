/*
 * rl.c: the events of a colocated RL loop (rl.h). The training step is
 * transformer.c's (through model_int.h's step interface), with the state
 * sharded over --shards ranks and the gradients set to None after each
 * optimizer step; the rollout is an inference engine's weights and a KV
 * cache that grows with the generated tokens. The text of LOOP_MODEL below
 * is the model.
 *
 * Invariants: every tag scope is ended before a sleep; only tags that hold
 * memory are put to sleep or woken; ids come from the training generator's
 * counter, so they stay unique over the whole stream.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/gen/model_int.h"
#include "tools/gen/rl.h"
#include "util/errf.h"

#define DEFAULT_DECODE_STEPS 8
#define MAX_BYTES (UINT64_C(1) << 60)

static const char LOOP_MODEL[] = "Each iteration (--steps of them), one rank of a colocated RL job, training and\n"
                                 "  rollout on the same GPU (verl / OpenRLHF with vLLM's sleep mode):\n"
                                 "  tag_begin train: (first iteration) the weights and fp32 masters; then one\n"
                                 "    training step of galloc gen transformer's model on --batch sequences of\n"
                                 "    --seq-len tokens, with weights, masters, gradients and Adam state\n"
                                 "    sharded over --shards ranks (FSDP / ZeRO-3: 1/N of each tensor, rounded\n"
                                 "    up; each block's full parameters gathered for its forward, recompute and\n"
                                 "    backward, and its full gradient held until reduce-scattered; the\n"
                                 "    embedding and final layer norm gathered for the whole step) and the\n"
                                 "    gradients freed after the optimizer (zero_grad(set_to_none=True)).\n"
                                 "    tag_end train.\n"
                                 "  sleep train offload train: weights, masters and Adam state go to pinned\n"
                                 "    host memory; the cached activation segments are released.\n"
                                 "  (later iterations) wake infer: the inference weights come back.\n"
                                 "  tag_begin infer: (first iteration) the inference engine's own full copy\n"
                                 "    of the weights (element bytes per parameter, not sharded; refreshed in\n"
                                 "    place from the trainer after each step, no allocation); prefill of\n"
                                 "    --rollout-batch prompts of --prompt-len tokens: their KV cache (layers\n"
                                 "    x 2 x d_model x element bytes per token) and a 4-unit MLP temporary;\n"
                                 "    then --decode-steps steps, each adding the KV cache of its share of\n"
                                 "    --response-len tokens for every sequence and a small temporary; then\n"
                                 "    the sequences are done and their KV cache freed. tag_end infer.\n"
                                 "  sleep infer offload infer: the inference weights go to the host and the\n"
                                 "    freed KV cache's memory is released, its contents discarded (vLLM's\n"
                                 "    sleep level 1).\n"
                                 "  wake train: the training state comes back for the next iteration.\n";

const char *ga_gen_rl_model_text(void)
{
    return LOOP_MODEL;
}

uint64_t ga_gen_rl_kv_token_bytes(const ga_gen_model_t *m)
{
    return (uint64_t)m->layers * 2 * m->d_model * ga_gen_elem_bytes(m);
}

int ga_gen_rl_resolve(const ga_gen_model_t *m, const ga_gen_rl_t *rl, ga_gen_rl_t *out, char *err, size_t errlen)
{
    uint64_t s = ga_gen_seq_len(m);
    *out = *rl;
    out->shards = rl->shards ? rl->shards : 1;
    out->rollout_batch = rl->rollout_batch ? rl->rollout_batch : m->batch;
    out->prompt_len = rl->prompt_len ? rl->prompt_len : (s / 4 ? s / 4 : 1);
    out->response_len = rl->response_len ? rl->response_len : (s > out->prompt_len ? s - out->prompt_len : 1);
    out->decode_steps = rl->decode_steps ? rl->decode_steps : DEFAULT_DECODE_STEPS;
    if (out->decode_steps > out->response_len) {
        if (rl->decode_steps != 0)
            return ga_errf(err, errlen, "--decode-steps %" PRIu32 " exceeds --response-len %" PRIu64, out->decode_steps,
                           out->response_len);
        out->decode_steps = (uint32_t)out->response_len; /* a short default response: a token a step */
    }
    uint64_t tokens, kv;
    if (__builtin_add_overflow(out->prompt_len, out->response_len, &tokens) ||
        __builtin_mul_overflow(tokens, out->rollout_batch, &tokens) ||
        __builtin_mul_overflow(tokens, ga_gen_rl_kv_token_bytes(m), &kv) || kv >= MAX_BYTES ||
        __builtin_mul_overflow(out->rollout_batch * 4, out->prompt_len * m->d_model * 4, &kv) || kv >= MAX_BYTES)
        return ga_errf(err, errlen, "the rollout's KV cache would exceed 2^60 bytes");
    return 0;
}

static void tag_event(gen_t *g, ga_gen_op_t op, const char *tag, const char *offload)
{
    ga_gen_event_t ev = {.op = op, .step = g->step, .text = tag, .offload = offload};
    ga_gen_emit(g, &ev);
}

/* The rollout of iteration k, inside tag "infer". kv[] holds 1 + decode
 * steps ids. */
static void rollout(gen_t *g, const ga_gen_rl_t *rl, uint32_t k, uint64_t *kv)
{
    const ga_gen_model_t *m = g->m;
    uint64_t per_token = ga_gen_rl_kv_token_bytes(m), r = rl->rollout_batch;
    if (k == 0) {
        ga_gen_annotate(g, "inference weights"); /* not the optimizer's, whose annotation would be in force */
        for (size_t i = 0; i < g->n_params; i++)
            (void)ga_gen_tensor(g, g->param_elems[i] * g->elem, "inference weight");
    }
    ga_gen_annotate(g, "iteration %" PRIu32 " rollout prefill: %" PRIu64 " prompts of %" PRIu64 " tokens", k, r,
                    rl->prompt_len);
    kv[0] = ga_gen_tensor(g, r * rl->prompt_len * per_token, "kv cache: prompts");
    uint64_t mlp = ga_gen_tensor(g, 4 * r * rl->prompt_len * m->d_model * g->elem, "prefill mlp intermediate");
    ga_gen_release(g, &mlp);
    uint64_t share = rl->response_len / rl->decode_steps;
    for (uint32_t d = 0; d < rl->decode_steps && g->stop == 0; d++) {
        uint64_t n = share + (d + 1 == rl->decode_steps ? rl->response_len % rl->decode_steps : 0);
        ga_gen_annotate(g, "iteration %" PRIu32 " decode step %" PRIu32 ": %" PRIu64 " tokens", k, d, n);
        kv[1 + d] = ga_gen_tensor(g, r * n * per_token, "kv cache: generated tokens");
        uint64_t tmp = ga_gen_tensor(g, 4 * r * m->d_model * g->elem, "decode mlp intermediate");
        ga_gen_release(g, &tmp);
    }
    for (uint32_t d = 0; d <= rl->decode_steps; d++) /* the sequences are done */
        if (kv[d] != 0)
            ga_gen_release(g, &kv[d]);
}

int ga_gen_rl(const ga_gen_model_t *m, const ga_gen_rl_t *rl_flags, ga_gen_emit_fn fn, void *ctx, char *err,
              size_t errlen)
{
    ga_gen_rl_t rl;
    gen_t g;
    if (m == NULL || rl_flags == NULL || ga_gen_model_check(m, err, errlen) != 0 ||
        ga_gen_rl_resolve(m, rl_flags, &rl, err, errlen) != 0 ||
        ga_gen_open(&g, m, rl.shards, true, fn, ctx, err, errlen) != 0) {
        if (m == NULL || rl_flags == NULL)
            ga_errf(err, errlen, "ga_gen_rl: NULL model or flags");
        return -1;
    }
    uint64_t *kv = calloc((size_t)rl.decode_steps + 1, sizeof(*kv));
    if (kv == NULL) {
        ga_gen_close(&g);
        return ga_errf(err, errlen, "out of host memory for %" PRIu32 " decode steps", rl.decode_steps);
    }
    for (uint32_t k = 0; k < m->steps && g.stop == 0; k++) {
        ga_gen_annotate(&g, "iteration %" PRIu32 " train", k);
        tag_event(&g, GA_GEN_TAG_BEGIN, "train", NULL);
        if (k == 0)
            ga_gen_setup(&g);
        ga_gen_step(&g, k);
        tag_event(&g, GA_GEN_TAG_END, "train", NULL);
        tag_event(&g, GA_GEN_SLEEP, "train", "train");
        if (k > 0)
            tag_event(&g, GA_GEN_WAKE, "infer", NULL);
        tag_event(&g, GA_GEN_TAG_BEGIN, "infer", NULL);
        rollout(&g, &rl, k, kv);
        tag_event(&g, GA_GEN_TAG_END, "infer", NULL);
        tag_event(&g, GA_GEN_SLEEP, "infer", "infer");
        tag_event(&g, GA_GEN_WAKE, "train", NULL);
    }
    free(kv);
    ga_gen_close(&g);
    return g.stop;
}
