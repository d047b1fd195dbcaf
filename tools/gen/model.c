/*
 * model.c: what the model flags imply before any event is generated: the
 * defaults, the validity check, element size, head count, per-step sequence
 * lengths and the size of every parameter tensor.
 *
 * Parameter tensors (ga_gen_param_elems), in creation order:
 *   0                    token embedding (tied with the output head): gets what
 *                        --params leaves after the blocks, so the total is
 *                        exactly --params whatever the shape flags say
 *   1 + 12 l + j         block l's twelve tensors, GPT-2's layout:
 *                        ln1 w, ln1 b (d each), qkv w (3 d^2), qkv b (3 d),
 *                        proj w (d^2), proj b (d), ln2 w, ln2 b (d each),
 *                        fc1 w (4 d^2), fc1 b (4 d), fc2 w (4 d^2), fc2 b (d)
 *   1 + 12 L, 2 + 12 L   final layer norm w, b (d each)
 * If --params is smaller than the blocks alone (12 L d^2 + 13 L d + 2 d), every
 * non-embedding tensor shrinks in proportion (at least one element each) and
 * the embedding still takes the remainder: the budget formula only knows
 * --params, so the trace must hold exactly that many.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "tools/gen/model_int.h"
#include "util/errf.h"

/* Limits that keep every product below 2^62 with room for the multipliers used
 * in transformer.c (largest: 8 units of s*b*d elements, or b*h*s^2 elements, at
 * 4 bytes). Far above any real model; they exist so arithmetic cannot wrap. */
#define MAX_TENSOR_BYTES (UINT64_C(1) << 60)
#define MAX_LAYERS 100000u
#define MAX_DIM (UINT64_C(1) << 24)
#define MAX_STEPS 100000000u

void ga_gen_model_init(ga_gen_model_t *m)
{
    *m = (ga_gen_model_t){.steps = 3};
}

uint64_t ga_gen_elem_bytes(const ga_gen_model_t *m)
{
    return m->mixed_precision ? 2 : 4;
}

uint32_t ga_gen_heads(const ga_gen_model_t *m)
{
    if (m->heads != 0)
        return m->heads;
    /* GPT-2 / GPT-3-small use 64-dim heads, LLaMA and GPT-3 175B 128-dim ones. */
    uint64_t h = m->d_model < 4096 ? m->d_model / 64 : m->d_model / 128;
    return h == 0 ? 1 : (uint32_t)h;
}

uint64_t ga_gen_seq_len(const ga_gen_model_t *m)
{
    return m->seq_len != 0 ? m->seq_len : m->seq_max;
}

/* splitmix64 (Steele, Lea, Flood 2014): a bijective mixer, so (seed, step)
 * pairs give independent-looking draws with no state to carry between steps. */
static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint64_t ga_gen_step_seq_len(const ga_gen_model_t *m, uint32_t step)
{
    if (m->seq_max == 0)
        return m->seq_len;
    uint64_t span = m->seq_max - m->seq_min + 1;
    /* The modulo bias is below span / 2^64: irrelevant for sequence lengths. */
    return m->seq_min + mix64(mix64(m->seed) ^ step) % span;
}

size_t ga_gen_param_count(const ga_gen_model_t *m)
{
    return 1 + (size_t)GA_GEN_BLOCK_TENSORS * m->layers + 2;
}

/* Natural element count of block tensor j (see the table above). */
static uint64_t block_tensor(uint64_t d, unsigned j)
{
    static const unsigned d2[GA_GEN_BLOCK_TENSORS] = {0, 0, 3, 0, 1, 0, 0, 0, 4, 0, 4, 0};
    static const unsigned d1[GA_GEN_BLOCK_TENSORS] = {1, 1, 0, 3, 0, 1, 1, 1, 0, 4, 0, 1};
    return d2[j] * d * d + d1[j] * d;
}

void ga_gen_param_elems(const ga_gen_model_t *m, uint64_t *elems)
{
    size_t n = ga_gen_param_count(m);
    uint64_t d = m->d_model;
    /* Blocks plus final layer norm, before any scaling. */
    uint64_t natural = (uint64_t)m->layers * (12 * d * d + 13 * d) + 2 * d;
    bool scaled = m->params < natural + d; /* the embedding would get less than one row */
    /* Scaled: one element each, then the rest in proportion, rounded down in
     * exact 128-bit arithmetic so the sum can never pass --params. */
    uint64_t rest = scaled ? m->params - n : 0;
    uint64_t sum = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t nat = i <= (size_t)GA_GEN_BLOCK_TENSORS * m->layers
                           ? block_tensor(d, (unsigned)((i - 1) % GA_GEN_BLOCK_TENSORS))
                           : d;
        elems[i] = scaled ? 1 + (uint64_t)((unsigned __int128)nat * rest / (natural + d)) : nat;
        sum += elems[i];
    }
    elems[0] = m->params - sum; /* >= 1: ga_gen_model_check ensured params > n */
}

/* a * b, or MAX_TENSOR_BYTES when it would reach that bound (so callers test once). */
static uint64_t capped_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r >= MAX_TENSOR_BYTES)
        return MAX_TENSOR_BYTES;
    return r;
}

int ga_gen_model_check(const ga_gen_model_t *m, char *err, size_t errlen)
{
    if (m->layers == 0 || m->layers > MAX_LAYERS)
        return ga_errf(err, errlen, "--layers must be in 1..100000 (got %" PRIu64 ")", (uint64_t)m->layers);
    if (m->d_model == 0 || m->d_model > MAX_DIM)
        return ga_errf(err, errlen, "--d-model must be in 1..16777216 (got %" PRIu64 ")", m->d_model);
    if (m->batch == 0 || m->batch > MAX_DIM)
        return ga_errf(err, errlen, "--batch must be in 1..16777216 (got %" PRIu64 ")", m->batch);
    if (m->steps == 0 || m->steps > MAX_STEPS)
        return ga_errf(err, errlen, "--steps must be in 1..100000000 (got %" PRIu64 ")", (uint64_t)m->steps);
    if (m->heads > m->d_model)
        return ga_errf(err, errlen, "--heads must not exceed --d-model (got %" PRIu64 ")", (uint64_t)m->heads);
    if (m->seq_max != 0 || m->seq_min != 0) {
        if (m->seq_min == 0 || m->seq_min > m->seq_max)
            return ga_errf(err, errlen, "--variable-seq-len MIN:MAX needs 1 <= MIN <= MAX (MIN %" PRIu64 ")",
                           m->seq_min);
        if (m->seq_max > MAX_DIM)
            return ga_errf(err, errlen, "--variable-seq-len MAX must be at most 16777216 (got %" PRIu64 ")",
                           m->seq_max);
    } else if (m->seq_len == 0) {
        return ga_errf(err, errlen, "--seq-len is required (or --variable-seq-len MIN:MAX)");
    }
    uint64_t s = m->seq_max > ga_gen_seq_len(m) ? m->seq_max : ga_gen_seq_len(m);
    if (s > MAX_DIM)
        return ga_errf(err, errlen, "--seq-len must be at most 16777216 (got %" PRIu64 ")", s);
    /* The largest per-step tensors: 8 activation units, the attention scores. */
    uint64_t unit = capped_mul(capped_mul(capped_mul(s, m->batch), m->d_model), 4);
    uint64_t scores = capped_mul(capped_mul(capped_mul(capped_mul(s, s), m->batch), ga_gen_heads(m)), 4);
    if (capped_mul(unit, 8) >= MAX_TENSOR_BYTES || scores >= MAX_TENSOR_BYTES)
        return ga_errf(err, errlen, "the activations of one layer would exceed 2^60 bytes (seq_len %" PRIu64 ")", s);
    uint64_t block = 12 * m->d_model * m->d_model + 13 * m->d_model; /* < 2^53 by MAX_DIM */
    uint64_t natural = capped_mul(m->layers, block);
    if (natural >= MAX_TENSOR_BYTES || capped_mul(m->params, 16) >= MAX_TENSOR_BYTES)
        return ga_errf(err, errlen, "--params %" PRIu64 " (or the blocks' own size) exceeds 2^56 parameters",
                       m->params);
    /* Every tensor needs an element, the embedding included. */
    if (m->params <= (uint64_t)ga_gen_param_count(m))
        return ga_errf(err, errlen, "--params must exceed the number of parameter tensors (%" PRIu64 " here)",
                       (uint64_t)ga_gen_param_count(m));
    return 0;
}
