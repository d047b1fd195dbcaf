/*
 * transformer.c: the events of training a decoder-only transformer (GPT-2
 * layout, Adam), step by step, in the order PyTorch's autograd creates and
 * releases the tensors. The text of STEP_MODEL below is the model; it is
 * printed by `galloc gen --help` and heads every generated trace.
 *
 * Sizing rule. Saved activations are sized so that a step keeps exactly what
 * the budget formula of `galloc budget` counts (34 units per layer, 1 with
 * checkpointing; tools/gen/budget.c): the formula is the
 * reference the simulated peak is compared with, and a trace keeping a
 * different amount would make that comparison meaningless. The split of the
 * 34 follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in
 * Large Transformer Models", section 4.1), whose per-layer coefficients the
 * formula takes as element counts. Temporaries that no formula counts (the
 * attention scores, MLP and gradient buffers) have their natural shape; they
 * are what the simulated peak adds on top of the formula.
 *
 * Invariants: ids are handed out in increasing order from 1 and never reused;
 * every per-step block is freed before the step ends; once the consumer stops
 * the run nothing more is emitted.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/gen/model_int.h"

static const char STEP_MODEL[] = "Setup: every parameter tensor (embedding, 12 per block, final layer norm) in\n"
                                 "  fp16/bf16 (--mixed-precision, 2 bytes) or fp32 (4 bytes); with\n"
                                 "  --mixed-precision then an fp32 master copy of each.\n"
                                 "Each step, sequence length s (fixed, or drawn per step from --variable-seq-len\n"
                                 "  with --seed), one unit = s * batch * d_model elements:\n"
                                 "  forward: token ids and labels (int64); embedding output; per block, in\n"
                                 "    order, the tensors autograd saves: block input 1 unit, ln1 output 2,\n"
                                 "    q 2, k 2, v 2, attention context 1, merged heads 2, dropout mask 1,\n"
                                 "    residual 2, ln2 output 2, fc1 output 8, gelu output 8, dropout mask 1\n"
                                 "    (34 units, the budget formula's), two small layer-norm statistics;\n"
                                 "    temporaries: attention scores and probabilities (batch * heads * s * s\n"
                                 "    each), projection and fc2 outputs (1 unit each).\n"
                                 "    With --checkpointing only each block's input is kept: the block runs\n"
                                 "    without saving, each tensor freed once consumed.\n"
                                 "  backward, last block first: (with --checkpointing the block is first\n"
                                 "    recomputed, saving its 34 units again), then gradient buffers: 4 units\n"
                                 "    through fc2 and GELU (MLP intermediates, 4 * d_model wide), 1 unit per\n"
                                 "    residual/layer-norm step, 3 units for q/k/v, recomputed attention\n"
                                 "    probabilities and their gradient (batch * heads * s * s each); each saved\n"
                                 "    tensor is freed as soon as its gradient is computed. At the first step the\n"
                                 "    parameter gradients are created as backward reaches them (2 bytes per\n"
                                 "    parameter in mixed precision, else 4) and kept for the whole run.\n"
                                 "  optimizer (Adam, fused: no temporaries): at the first step its two fp32\n"
                                 "    moments per parameter (8 bytes per parameter), kept for the whole run.\n"
                                 "  Every per-step block is freed by the end of its step; weights, masters,\n"
                                 "  gradients and optimizer state stay live.\n"
                                 "Annotations: \"setup: ...\"; per step \"step K forward seq_len S\", then\n"
                                 "  \"forward embedding\", \"forward block L\", \"forward final layer norm and\n"
                                 "  loss\", \"backward final layer norm and loss\", \"backward block L\" (last\n"
                                 "  first), \"backward embedding\", \"optimizer\": an allocation's owner is the\n"
                                 "  annotation in force, and its first word the phase.\n";

const char *ga_gen_step_model_text(void)
{
    return STEP_MODEL;
}

void ga_gen_emit(gen_t *g, const ga_gen_event_t *ev)
{
    if (g->stop == 0)
        g->stop = g->emit(g->ctx, ev);
}

uint64_t ga_gen_tensor(gen_t *g, uint64_t bytes, const char *name)
{
    uint64_t id = g->next_id++;
    ga_gen_event_t ev = {.op = GA_GEN_ALLOC, .id = id, .size = bytes, .step = g->step, .text = name};
    ga_gen_emit(g, &ev);
    return id;
}

/* Free *id and forget it, so a slot cannot be freed twice. */
void ga_gen_release(gen_t *g, uint64_t *id)
{
    ga_gen_event_t ev = {.op = GA_GEN_FREE, .id = *id, .step = g->step};
    ga_gen_emit(g, &ev);
    *id = 0;
}

void ga_gen_annotate(gen_t *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->text, sizeof(g->text), fmt, ap);
    va_end(ap);
    ga_gen_event_t ev = {.op = GA_GEN_ANNOTATE, .step = g->step, .text = g->text};
    ga_gen_emit(g, &ev);
}

/* At the first step, backward creates the gradient of each parameter it
 * reaches (one rank's shard); later steps accumulate into them (no
 * allocation), unless free_grads set them to None after the last optimizer
 * step: then every backward makes them again. */
static void param_grad(gen_t *g, size_t param)
{
    if (g->free_grads)
        g->grads[param] = ga_gen_tensor(g, ga_gen_shard_bytes(g, param, g->elem), "parameter gradient");
    else if (g->step == 0)
        (void)ga_gen_tensor(g, ga_gen_shard_bytes(g, param, g->elem), "parameter gradient");
}

uint64_t ga_gen_shard_bytes(const gen_t *g, size_t i, uint64_t elem)
{
    return (g->param_elems[i] + g->shards - 1) / g->shards * elem;
}

/* Sharded (FSDP): the full parameters of tensors [first, first + n) gathered
 * from the ranks for a computation, as one buffer; 0 (nothing) unsharded. */
static uint64_t gather(gen_t *g, size_t first, size_t n, const char *name)
{
    if (g->shards == 1)
        return 0;
    uint64_t elems = 0;
    for (size_t i = first; i < first + n; i++)
        elems += g->param_elems[i];
    return ga_gen_tensor(g, elems * g->elem, name);
}

static void drop(gen_t *g, uint64_t *id)
{
    if (*id != 0)
        ga_gen_release(g, id);
}

/* Block l's parameter tensors: from 1 + 12 l, GA_GEN_BLOCK_TENSORS of them. */
static size_t block_first(uint32_t l)
{
    return 1 + (size_t)GA_GEN_BLOCK_TENSORS * l;
}

static void block_grads(gen_t *g, uint32_t layer, unsigned w, unsigned b)
{
    size_t base = 1 + (size_t)GA_GEN_BLOCK_TENSORS * layer;
    param_grad(g, base + w);
    param_grad(g, base + b);
}

/* Forward of one block with autograd saving (also the checkpoint recompute):
 * sv[S_X] is the input; returns the block's output. */
static uint64_t forward_saved(gen_t *g, uint64_t *sv)
{
    uint64_t u = g->unit;
    sv[S_LN1_STATS] = ga_gen_tensor(g, g->stats, "ln1 statistics");
    sv[S_QKV_IN] = ga_gen_tensor(g, 2 * u, "ln1 output");
    sv[S_Q] = ga_gen_tensor(g, 2 * u, "queries");
    sv[S_K] = ga_gen_tensor(g, 2 * u, "keys");
    sv[S_V] = ga_gen_tensor(g, 2 * u, "values");
    uint64_t scores = ga_gen_tensor(g, g->scores, "attention scores");
    uint64_t probs = ga_gen_tensor(g, g->scores, "attention probabilities");
    ga_gen_release(g, &scores);
    sv[S_CTX] = ga_gen_tensor(g, u, "attention context");
    ga_gen_release(g, &probs); /* memory-efficient attention keeps no s x s matrix for backward */
    sv[S_PROJ_IN] = ga_gen_tensor(g, 2 * u, "merged heads");
    uint64_t proj = ga_gen_tensor(g, u, "attention projection");
    sv[S_ATTN_MASK] = ga_gen_tensor(g, u, "attention dropout mask");
    sv[S_LN2_IN] = ga_gen_tensor(g, 2 * u, "residual");
    ga_gen_release(g, &proj);
    sv[S_LN2_STATS] = ga_gen_tensor(g, g->stats, "ln2 statistics");
    sv[S_FC1_IN] = ga_gen_tensor(g, 2 * u, "ln2 output");
    sv[S_GELU_IN] = ga_gen_tensor(g, 8 * u, "fc1 output");
    sv[S_FC2_IN] = ga_gen_tensor(g, 8 * u, "gelu output");
    uint64_t fc2 = ga_gen_tensor(g, u, "fc2 output");
    sv[S_MLP_MASK] = ga_gen_tensor(g, u, "mlp dropout mask");
    uint64_t out = ga_gen_tensor(g, u, "block output");
    ga_gen_release(g, &fc2);
    return out;
}

/* Forward of one block under checkpointing (no autograd saving): the same
 * tensors, each freed as soon as the next one is computed. x stays live. */
static uint64_t forward_unsaved(gen_t *g)
{
    uint64_t u = g->unit;
    uint64_t stats = ga_gen_tensor(g, g->stats, "ln1 statistics");
    uint64_t ln1 = ga_gen_tensor(g, 2 * u, "ln1 output");
    ga_gen_release(g, &stats);
    uint64_t q = ga_gen_tensor(g, 2 * u, "queries");
    uint64_t k = ga_gen_tensor(g, 2 * u, "keys");
    uint64_t v = ga_gen_tensor(g, 2 * u, "values");
    ga_gen_release(g, &ln1);
    uint64_t scores = ga_gen_tensor(g, g->scores, "attention scores");
    uint64_t probs = ga_gen_tensor(g, g->scores, "attention probabilities");
    ga_gen_release(g, &scores);
    uint64_t ctx = ga_gen_tensor(g, u, "attention context");
    ga_gen_release(g, &probs);
    ga_gen_release(g, &q);
    ga_gen_release(g, &k);
    ga_gen_release(g, &v);
    uint64_t merged = ga_gen_tensor(g, 2 * u, "merged heads");
    ga_gen_release(g, &ctx);
    uint64_t proj = ga_gen_tensor(g, u, "attention projection");
    ga_gen_release(g, &merged);
    uint64_t res = ga_gen_tensor(g, 2 * u, "residual");
    ga_gen_release(g, &proj);
    stats = ga_gen_tensor(g, g->stats, "ln2 statistics");
    uint64_t ln2 = ga_gen_tensor(g, 2 * u, "ln2 output");
    ga_gen_release(g, &stats);
    uint64_t fc1 = ga_gen_tensor(g, 8 * u, "fc1 output");
    ga_gen_release(g, &ln2);
    uint64_t gelu = ga_gen_tensor(g, 8 * u, "gelu output");
    ga_gen_release(g, &fc1);
    uint64_t fc2 = ga_gen_tensor(g, u, "fc2 output");
    ga_gen_release(g, &gelu);
    uint64_t out = ga_gen_tensor(g, u, "block output");
    ga_gen_release(g, &fc2);
    ga_gen_release(g, &res);
    return out;
}

/* Backward of block `layer`: consumes the gradient of its output (*grad) and
 * every saved tensor, leaves the gradient of its input in *grad. */
static void backward(gen_t *g, uint32_t layer, uint64_t *grad)
{
    uint64_t u = g->unit, *sv = g->saved[layer];
    /* MLP. */
    uint64_t g_mid = ga_gen_tensor(g, 4 * u, "grad of gelu output");
    block_grads(g, layer, P_FC2_W, P_FC2_B);
    ga_gen_release(g, &sv[S_FC2_IN]);
    ga_gen_release(g, &sv[S_MLP_MASK]);
    uint64_t g_fc1 = ga_gen_tensor(g, 4 * u, "grad of fc1 output");
    ga_gen_release(g, &g_mid);
    ga_gen_release(g, &sv[S_GELU_IN]);
    uint64_t g_ln2 = ga_gen_tensor(g, u, "grad of ln2 output");
    block_grads(g, layer, P_FC1_W, P_FC1_B);
    ga_gen_release(g, &g_fc1);
    ga_gen_release(g, &sv[S_FC1_IN]);
    uint64_t g_res = ga_gen_tensor(g, u, "grad of residual");
    block_grads(g, layer, P_LN2_W, P_LN2_B);
    ga_gen_release(g, &g_ln2);
    ga_gen_release(g, &sv[S_LN2_IN]);
    ga_gen_release(g, &sv[S_LN2_STATS]);
    ga_gen_release(g, grad);
    /* Attention. */
    uint64_t g_merged = ga_gen_tensor(g, u, "grad of merged heads");
    block_grads(g, layer, P_PROJ_W, P_PROJ_B);
    ga_gen_release(g, &sv[S_PROJ_IN]);
    ga_gen_release(g, &sv[S_ATTN_MASK]);
    uint64_t probs = ga_gen_tensor(g, g->scores, "recomputed attention probabilities");
    uint64_t g_scores = ga_gen_tensor(g, g->scores, "grad of attention scores");
    uint64_t g_qkv = ga_gen_tensor(g, 3 * u, "grad of q, k, v");
    ga_gen_release(g, &g_scores);
    ga_gen_release(g, &probs);
    ga_gen_release(g, &g_merged);
    ga_gen_release(g, &sv[S_CTX]);
    ga_gen_release(g, &sv[S_Q]);
    ga_gen_release(g, &sv[S_K]);
    ga_gen_release(g, &sv[S_V]);
    uint64_t g_ln1 = ga_gen_tensor(g, u, "grad of ln1 output");
    block_grads(g, layer, P_QKV_W, P_QKV_B);
    ga_gen_release(g, &g_qkv);
    ga_gen_release(g, &sv[S_QKV_IN]);
    uint64_t g_x = ga_gen_tensor(g, u, "grad of block input");
    block_grads(g, layer, P_LN1_W, P_LN1_B);
    ga_gen_release(g, &g_ln1);
    ga_gen_release(g, &sv[S_LN1_STATS]);
    ga_gen_release(g, &sv[S_X]);
    ga_gen_release(g, &g_res);
    *grad = g_x;
}

void ga_gen_setup(gen_t *g)
{
    ga_gen_annotate(g, "setup: %zu parameter tensors, %" PRIu64 " parameters", g->n_params, g->m->params);
    for (size_t i = 0; i < g->n_params; i++)
        (void)ga_gen_tensor(g, ga_gen_shard_bytes(g, i, g->elem), "weight");
    if (g->m->mixed_precision)
        for (size_t i = 0; i < g->n_params; i++)
            (void)ga_gen_tensor(g, ga_gen_shard_bytes(g, i, 4), "fp32 master weight");
}

void ga_gen_step(gen_t *g, uint32_t k)
{
    const ga_gen_model_t *m = g->m;
    uint64_t s = ga_gen_step_seq_len(m, k);
    g->step = k;
    g->unit = s * m->batch * m->d_model * g->elem;
    g->scores = m->batch * ga_gen_heads(m) * s * s * g->elem;
    g->stats = s * m->batch * 2 * 4;
    size_t last = g->n_params - 1; /* final layer norm: params last - 1, last */

    /* The step's marker, then one annotation per phase and block whose first
     * word is the phase (forward, backward, optimizer): a replay's owners
     * read it from the annotation in force (read_text.c). */
    ga_gen_annotate(g, "step %" PRIu32 " forward seq_len %" PRIu64, k, s);
    ga_gen_annotate(g, "forward embedding");
    /* Sharded: the root unit (embedding, final layer norm) stays gathered
     * through forward and backward; each block is gathered for its own. */
    uint64_t root = gather(g, 0, 1, "fsdp all-gather: embedding");
    uint64_t root_ln = gather(g, last - 1, 2, "fsdp all-gather: final ln");
    uint64_t ids = ga_gen_tensor(g, s * m->batch * 8, "input ids");
    uint64_t labels = ga_gen_tensor(g, s * m->batch * 8, "labels");
    uint64_t x = ga_gen_tensor(g, g->unit, "embedding output");
    for (uint32_t l = 0; l < m->layers && g->stop == 0; l++) {
        ga_gen_annotate(g, "forward block %" PRIu32, l);
        g->saved[l][S_X] = x;
        uint64_t full = gather(g, block_first(l), GA_GEN_BLOCK_TENSORS, "fsdp all-gather: block");
        x = m->checkpointing ? forward_unsaved(g) : forward_saved(g, g->saved[l]);
        drop(g, &full);
    }
    ga_gen_annotate(g, "forward final layer norm and loss");
    uint64_t lnf_stats = ga_gen_tensor(g, g->stats, "final ln statistics");
    uint64_t h = ga_gen_tensor(g, g->unit, "final ln output");
    uint64_t loss = ga_gen_tensor(g, 4, "loss");

    ga_gen_annotate(g, "backward final layer norm and loss");
    uint64_t g_h = ga_gen_tensor(g, g->unit, "grad of final ln output");
    ga_gen_release(g, &loss);
    param_grad(g, last - 1);
    param_grad(g, last);
    uint64_t grad = ga_gen_tensor(g, g->unit, "grad of last block output");
    ga_gen_release(g, &g_h);
    ga_gen_release(g, &h);
    ga_gen_release(g, &lnf_stats);
    ga_gen_release(g, &x);
    for (uint32_t l = m->layers; l-- > 0 && g->stop == 0;) {
        ga_gen_annotate(g, "backward block %" PRIu32, l);
        uint64_t recomputed = 0;
        uint64_t full = gather(g, block_first(l), GA_GEN_BLOCK_TENSORS, "fsdp all-gather: block");
        if (m->checkpointing)
            recomputed = forward_saved(g, g->saved[l]); /* reentrant checkpoint: output freed after backward */
        /* Sharded: the block's full gradient, reduce-scattered into the shards. */
        uint64_t full_grad = gather(g, block_first(l), GA_GEN_BLOCK_TENSORS, "fsdp unsharded block gradient");
        backward(g, l, &grad);
        drop(g, &full_grad);
        drop(g, &full);
        if (recomputed != 0)
            ga_gen_release(g, &recomputed);
    }
    ga_gen_annotate(g, "backward embedding");
    param_grad(g, 0); /* the embedding's gradient comes last */
    drop(g, &root_ln);
    drop(g, &root);
    ga_gen_release(g, &grad);
    ga_gen_release(g, &labels);
    ga_gen_release(g, &ids);

    ga_gen_annotate(g, "optimizer");
    if (k == 0) /* Adam creates its state lazily, at its first step */
        for (size_t i = 0; i < g->n_params; i++) {
            (void)ga_gen_tensor(g, ga_gen_shard_bytes(g, i, 4), "adam exp_avg");
            (void)ga_gen_tensor(g, ga_gen_shard_bytes(g, i, 4), "adam exp_avg_sq");
        }
    for (size_t i = 0; g->free_grads && i < g->n_params; i++) /* zero_grad(set_to_none=True) */
        drop(g, &g->grads[i]);
}

int ga_gen_open(gen_t *g, const ga_gen_model_t *m, uint32_t shards, bool free_grads, ga_gen_emit_fn fn, void *ctx,
                char *err, size_t errlen)
{
    if (m == NULL || fn == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "ga_gen_open: NULL model or callback");
        return -1;
    }
    if (ga_gen_model_check(m, err, errlen) != 0)
        return -1;
    *g = (gen_t){.m = m,
                 .emit = fn,
                 .ctx = ctx,
                 .next_id = 1,
                 .step = GA_GEN_SETUP_STEP,
                 .elem = ga_gen_elem_bytes(m),
                 .n_params = ga_gen_param_count(m),
                 .shards = shards ? shards : 1,
                 .free_grads = free_grads};
    g->param_elems = malloc(g->n_params * sizeof(*g->param_elems));
    g->saved = calloc(m->layers, sizeof(*g->saved));
    g->grads = free_grads ? calloc(g->n_params, sizeof(*g->grads)) : NULL;
    if (g->param_elems == NULL || g->saved == NULL || (free_grads && g->grads == NULL)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "out of host memory for a %" PRIu32 "-layer model", m->layers);
        ga_gen_close(g);
        return -1;
    }
    ga_gen_param_elems(m, g->param_elems);
    return 0;
}

void ga_gen_close(gen_t *g)
{
    free(g->grads);
    free(g->saved);
    free(g->param_elems);
    g->grads = NULL;
    g->saved = NULL;
    g->param_elems = NULL;
}

int ga_gen_transformer(const ga_gen_model_t *m, ga_gen_emit_fn fn, void *ctx, char *err, size_t errlen)
{
    gen_t g;
    if (ga_gen_open(&g, m, 1, false, fn, ctx, err, errlen) != 0)
        return -1;
    ga_gen_setup(&g);
    for (uint32_t k = 0; k < m->steps && g.stop == 0; k++)
        ga_gen_step(&g, k);
    ga_gen_close(&g);
    return g.stop;
}
