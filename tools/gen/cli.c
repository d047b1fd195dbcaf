/*
 * cli.c: parse the flags of `galloc gen transformer` and `galloc budget`
 * (see cli.h). One table lists every flag with the commands that accept it, so
 * the two commands cannot drift apart on the model flags.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/gen/cli.h"
#include "util/errf.h"
#include "util/size.h"

/* galloc gen's dialects of util/size.h: counts in powers of 1000 that must
 * come out whole (a parameter count of 1.5 is a typo), sizes in powers of 1024
 * whether spelt GB or GiB, rounded down (a size of 0.1GiB is not a typo). */
static const ga_size_unit_t count_units[] = {
    {"K", 1000}, {"M", 1000000}, {"B", 1000000000}, {"G", 1000000000}, {"T", UINT64_C(1000000000000)}};

static const ga_size_unit_t size_units[] = {{"B", 1},
                                            {"K", 1 << 10},
                                            {"KB", 1 << 10},
                                            {"KiB", 1 << 10},
                                            {"M", 1 << 20},
                                            {"MB", 1 << 20},
                                            {"MiB", 1 << 20},
                                            {"G", 1 << 30},
                                            {"GB", 1 << 30},
                                            {"GiB", 1 << 30},
                                            {"T", UINT64_C(1) << 40},
                                            {"TB", UINT64_C(1) << 40},
                                            {"TiB", UINT64_C(1) << 40}};

static const ga_size_rules_t count_rules = {.units = count_units,
                                            .n_units = sizeof(count_units) / sizeof(count_units[0]),
                                            .round = GA_SIZE_EXACT,
                                            .frac_digits = 18};

static const ga_size_rules_t size_rules = {.units = size_units,
                                           .n_units = sizeof(size_units) / sizeof(size_units[0]),
                                           .round = GA_SIZE_ROUND_DOWN,
                                           .frac_digits = 18};

int ga_cli_parse_count(const char *s, uint64_t *out)
{
    return ga_size_parse(s, strlen(s), &count_rules, out) == GA_SIZE_OK ? 0 : -1;
}

int ga_cli_parse_size(const char *s, uint64_t *out)
{
    return ga_size_parse(s, strlen(s), &size_rules, out) == GA_SIZE_OK ? 0 : -1;
}

/* Plain decimal integer in [lo, hi]. */
static int parse_int(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0')
        return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
            return -1;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

#define MAX_RL_DIM (UINT64_C(1) << 24) /* as model.c's dimensions: products stay far from 2^64 */

enum flag_id {
    F_PARAMS,
    F_LAYERS,
    F_D_MODEL,
    F_SEQ_LEN,
    F_BATCH,
    F_HEADS,
    F_MIXED,
    F_CKPT,
    F_STEPS,
    F_VARSEQ,
    F_SEED,
    F_OUTPUT,
    F_DEVICE_MEMORY,
    F_CONF,
    F_JSON,
    F_HELP,
    F_SHARDS,
    F_ROLLOUT_BATCH,
    F_PROMPT_LEN,
    F_RESPONSE_LEN,
    F_DECODE_STEPS /* gen rl's, last (set_rl_flag) */
};

#define FOR_GEN (1u << GA_CLI_GEN)
#define FOR_BUDGET (1u << GA_CLI_BUDGET)
#define FOR_RL (1u << GA_CLI_RL)
#define FOR_BOTH (FOR_GEN | FOR_BUDGET | FOR_RL) /* the model flags: every command */

typedef struct flag {
    const char *name;  /* long form */
    const char *alias; /* short form or NULL */
    enum flag_id id;   /* what it sets */
    bool has_value;    /* takes an argument */
    unsigned cmds;     /* FOR_* mask of commands accepting it */
} flag_t;

static const flag_t flags[] = {
    {"--params", NULL, F_PARAMS, true, FOR_BOTH},
    {"--layers", NULL, F_LAYERS, true, FOR_BOTH},
    {"--d-model", NULL, F_D_MODEL, true, FOR_BOTH},
    {"--seq-len", NULL, F_SEQ_LEN, true, FOR_BOTH},
    {"--batch", NULL, F_BATCH, true, FOR_BOTH},
    {"--heads", NULL, F_HEADS, true, FOR_BOTH},
    {"--mixed-precision", NULL, F_MIXED, false, FOR_BOTH},
    {"--checkpointing", NULL, F_CKPT, false, FOR_BOTH},
    {"--steps", NULL, F_STEPS, true, FOR_BOTH},
    {"--variable-seq-len", NULL, F_VARSEQ, true, FOR_BOTH},
    {"--seed", NULL, F_SEED, true, FOR_BOTH},
    {"--output", "-o", F_OUTPUT, true, FOR_GEN | FOR_RL},
    {"--device-memory", NULL, F_DEVICE_MEMORY, true, FOR_BOTH},
    {"--conf", NULL, F_CONF, true, FOR_BUDGET},
    {"--json", NULL, F_JSON, false, FOR_BUDGET},
    {"--help", "-h", F_HELP, false, FOR_BOTH},
    {"--shards", NULL, F_SHARDS, true, FOR_RL},
    {"--rollout-batch", NULL, F_ROLLOUT_BATCH, true, FOR_RL},
    {"--prompt-len", NULL, F_PROMPT_LEN, true, FOR_RL},
    {"--response-len", NULL, F_RESPONSE_LEN, true, FOR_RL},
    {"--decode-steps", NULL, F_DECODE_STEPS, true, FOR_RL},
};

/* The flag argv[i] names (value after '=' in *inline_value), or NULL. */
static const flag_t *find_flag(const char *arg, ga_cli_cmd_t cmd, const char **inline_value)
{
    size_t len = strcspn(arg, "=");
    *inline_value = arg[len] == '=' ? arg + len + 1 : NULL;
    for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
        const flag_t *f = &flags[k];
        if (!(f->cmds & (1u << cmd)))
            continue;
        if ((strlen(f->name) == len && strncmp(arg, f->name, len) == 0) ||
            (f->alias != NULL && strlen(f->alias) == len && strncmp(arg, f->alias, len) == 0))
            return f;
    }
    return NULL;
}

/* The RL loop's flags (gen rl). */
static int set_rl_flag(const flag_t *f, const char *v, ga_gen_rl_t *rl, char *err, size_t errlen)
{
    uint64_t x;
    if (f->id == F_SHARDS || f->id == F_DECODE_STEPS) {
        if (parse_int(v, 1, 1000000, &x) != 0)
            return ga_errf(err, errlen, "%s: '%s' is not an integer in 1..1000000", f->name, v);
        *(f->id == F_SHARDS ? &rl->shards : &rl->decode_steps) = (uint32_t)x;
        return 0;
    }
    if (parse_int(v, 1, MAX_RL_DIM, &x) != 0)
        return ga_errf(err, errlen, "%s: '%s' is not an integer in 1..16777216", f->name, v);
    *(f->id == F_ROLLOUT_BATCH ? &rl->rollout_batch : f->id == F_PROMPT_LEN ? &rl->prompt_len : &rl->response_len) = x;
    return 0;
}

static int set_flag(const flag_t *f, const char *v, ga_cli_t *cli, char *err, size_t errlen)
{
    ga_gen_model_t *m = &cli->model;
    uint64_t x, y;
    switch (f->id) {
    case F_PARAMS:
        if (ga_cli_parse_count(v, &m->params) != 0 || m->params == 0)
            return ga_errf(err, errlen, "--params: '%s' is not a count such as 7B, 21.875B or 125M", v);
        return 0;
    case F_LAYERS:
        if (parse_int(v, 1, UINT32_MAX, &x) != 0)
            return ga_errf(err, errlen, "--layers: '%s' is not a positive integer", v);
        m->layers = (uint32_t)x;
        return 0;
    case F_D_MODEL:
        return parse_int(v, 1, UINT64_MAX, &m->d_model) == 0
                   ? 0
                   : ga_errf(err, errlen, "--d-model: '%s' is not a positive integer", v);
    case F_SEQ_LEN:
        return parse_int(v, 1, UINT64_MAX, &m->seq_len) == 0
                   ? 0
                   : ga_errf(err, errlen, "--seq-len: '%s' is not a positive integer", v);
    case F_BATCH:
        return parse_int(v, 1, UINT64_MAX, &m->batch) == 0
                   ? 0
                   : ga_errf(err, errlen, "--batch: '%s' is not a positive integer", v);
    case F_HEADS:
        if (parse_int(v, 1, UINT32_MAX, &x) != 0)
            return ga_errf(err, errlen, "--heads: '%s' is not a positive integer", v);
        m->heads = (uint32_t)x;
        return 0;
    case F_MIXED: m->mixed_precision = true; return 0;
    case F_CKPT: m->checkpointing = true; return 0;
    case F_STEPS:
        if (parse_int(v, 1, UINT32_MAX, &x) != 0)
            return ga_errf(err, errlen, "--steps: '%s' is not a positive integer", v);
        m->steps = (uint32_t)x;
        return 0;
    case F_VARSEQ: {
        const char *colon = strchr(v, ':');
        char lo[32];
        size_t n = colon != NULL ? (size_t)(colon - v) : 0;
        if (colon == NULL || n == 0 || n >= sizeof(lo))
            return ga_errf(err, errlen, "--variable-seq-len: '%s' is not MIN:MAX", v);
        memcpy(lo, v, n);
        lo[n] = '\0';
        if (parse_int(lo, 1, UINT64_MAX, &x) != 0 || parse_int(colon + 1, 1, UINT64_MAX, &y) != 0 || x > y)
            return ga_errf(err, errlen, "--variable-seq-len: '%s' is not MIN:MAX with 1 <= MIN <= MAX", v);
        m->seq_min = x;
        m->seq_max = y;
        return 0;
    }
    case F_SEED:
        return parse_int(v, 0, UINT64_MAX, &m->seed) == 0
                   ? 0
                   : ga_errf(err, errlen, "--seed: '%s' is not a non-negative integer", v);
    case F_OUTPUT: cli->output = v; return 0;
    case F_DEVICE_MEMORY:
        if (ga_cli_parse_size(v, &cli->device_memory) != 0 || cli->device_memory == 0 ||
            cli->device_memory > (uint64_t)INT64_MAX)
            return ga_errf(err, errlen, "--device-memory: '%s' is not a size such as 80GiB", v);
        return 0;
    case F_CONF:
        if (cli->n_confs == GA_CLI_MAX_CONFS)
            return ga_errf(err, errlen, "--conf: at most %d configurations", GA_CLI_MAX_CONFS);
        cli->confs[cli->n_confs++] = v;
        return 0;
    case F_JSON: cli->json = true; return 0;
    case F_HELP: cli->help = true; return 0;
    default: /* F_SHARDS and after: the RL loop's */ return set_rl_flag(f, v, &cli->rl, err, errlen);
    }
}

int ga_cli_parse(int argc, char **argv, int first, ga_cli_cmd_t cmd, ga_cli_t *cli, char *err, size_t errlen)
{
    *cli = (ga_cli_t){0};
    ga_gen_model_init(&cli->model);
    for (int i = first; i < argc; i++) {
        const char *v;
        const flag_t *f = find_flag(argv[i], cmd, &v);
        if (f == NULL)
            return ga_errf(err, errlen, "unknown argument '%s' (see --help)", argv[i]);
        if (f->has_value && v == NULL) {
            if (i + 1 >= argc)
                return ga_errf(err, errlen, "%s needs a value", f->name);
            v = argv[++i];
        } else if (!f->has_value && v != NULL) {
            return ga_errf(err, errlen, "%s takes no value", f->name);
        }
        if (set_flag(f, v, cli, err, errlen) != 0)
            return -1;
    }
    if (cli->help)
        return 0;
    const ga_gen_model_t *m = &cli->model;
    const char *missing = m->params == 0    ? "--params"
                          : m->layers == 0  ? "--layers"
                          : m->d_model == 0 ? "--d-model"
                          : m->batch == 0   ? "--batch"
                                            : NULL;
    if (missing != NULL)
        return ga_errf(err, errlen, "%s is required (see --help)", missing);
    if (ga_gen_model_check(m, err, errlen) != 0)
        return -1;
    ga_gen_rl_t resolved;
    return cmd == GA_CLI_RL ? ga_gen_rl_resolve(m, &cli->rl, &resolved, err, errlen) : 0;
}

const char ga_cli_model_help[] =
    "Model:\n"
    "  --params N              total parameters: 125M, 7B, 21.875B, or a plain count\n"
    "  --layers L              transformer blocks\n"
    "  --d-model D             hidden size\n"
    "  --seq-len S             tokens per sequence (default with --variable-seq-len: MAX)\n"
    "  --batch B               sequences per step\n"
    "  --heads H               attention heads (default d_model/64 below 4096, else d_model/128)\n"
    "  --mixed-precision       fp16/bf16 weights, gradients, activations + fp32 master weights\n"
    "  --checkpointing         keep only each block's input; recompute the rest in backward\n"
    "Run:\n"
    "  --steps K               training steps (default 3; Adam's state appears at the first)\n"
    "  --variable-seq-len MIN:MAX  each step draws its sequence length in [MIN, MAX]\n"
    "  --seed X                seed of those draws (default 0): same flags, same trace\n";

const char ga_cli_rl_help[] = "RL loop (galloc gen rl; --steps is the number of iterations):\n"
                              "  --shards N              ranks the training state is sharded over (FSDP; default 1)\n"
                              "  --rollout-batch R       sequences generated per iteration (default --batch)\n"
                              "  --prompt-len P          prompt tokens (default seq_len / 4)\n"
                              "  --response-len T        generated tokens (default seq_len - P)\n"
                              "  --decode-steps D        steps the KV cache grows in (default 8)\n";

void ga_cli_format_model(const ga_gen_model_t *m, char *buf, size_t len)
{
    int n =
        snprintf(buf, len,
                 "--params %" PRIu64 " --layers %" PRIu32 " --d-model %" PRIu64 " --seq-len %" PRIu64
                 " --batch %" PRIu64 " --heads %" PRIu32 "%s%s --steps %" PRIu32,
                 m->params, m->layers, m->d_model, ga_gen_seq_len(m), m->batch, ga_gen_heads(m),
                 m->mixed_precision ? " --mixed-precision" : "", m->checkpointing ? " --checkpointing" : "", m->steps);
    if (n >= 0 && (size_t)n < len && m->seq_max != 0)
        snprintf(buf + n, len - (size_t)n, " --variable-seq-len %" PRIu64 ":%" PRIu64 " --seed %" PRIu64, m->seq_min,
                 m->seq_max, m->seed);
}

int ga_cli_parse_header(const char *line, ga_gen_model_t *m)
{
    size_t pre = strlen(GA_CLI_HEADER);
    if (strncmp(line, GA_CLI_HEADER, pre) != 0)
        return -1;
    /* The flags as argv: words split at spaces (no value has one). */
    char buf[512], *argv[64], err[256];
    int argc = 0;
    snprintf(buf, sizeof(buf), "%s", line + pre);
    for (char *w = buf; *w != '\0' && argc < 64;) {
        size_t n = strcspn(w, " ");
        if (n > 0)
            argv[argc++] = w;
        w += n;
        if (*w == ' ')
            *w++ = '\0';
    }
    ga_cli_t cli;
    if (argc == 64 || ga_cli_parse(argc, argv, 0, GA_CLI_GEN, &cli, err, sizeof(err)) != 0 || cli.help)
        return -1;
    *m = cli.model;
    return 0;
}
