/*
 * budget_main.c: `galloc budget`: print the analytic budget of a training step
 * (mission-notes.md's formula, in GiB to 2 decimals, the same figures as its
 * reference table) and, beside it, the peak reserved memory of the generated
 * trace under each allocator configuration, replayed on the sim device, so the
 * user sees whether the job fits and what fragmentation costs over the
 * formula. A configuration the allocator refuses is reported in its row; the
 * other rows still run.
 *
 * Exit codes and the --json head are galloc replay's and galloc fit's: 0 every
 * configuration fits, 1 an OOM in some configuration, 2 bad usage or input (a
 * refused configuration, as replay's bad --conf) or a failed simulation;
 * {"tool": "galloc budget", "version": 1, ...}.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/gen/budget.h"
#include "tools/gen/cli.h"
#include "tools/gen/gen.h"

#define GIB 1073741824.0

static const char usage[] = "Usage: galloc budget --params N --layers L --d-model D --seq-len S --batch B\n"
                            "                     [--mixed-precision] [--checkpointing] [--steps K]\n"
                            "                     [--variable-seq-len MIN:MAX] [--seed X] [--heads H]\n"
                            "                     [--conf CONF]... [--device-memory SIZE] [--json]\n"
                            "The memory budget of a training step in GiB: the analytic formula (weights,\n"
                            "gradients, Adam state, activations; kv cache apart; +15 % allocator overhead) and\n"
                            "the peak reserved memory of the `galloc gen transformer` trace of the same flags\n"
                            "replayed on a simulated device under each allocator configuration.\n\n";

static const char usage_sim[] = "Simulation:\n"
                                "  --conf CONF             a PYTORCH_CUDA_ALLOC_CONF string to simulate (repeatable;\n"
                                "                          default: PyTorch's defaults and expandable_segments:True)\n"
                                "  --device-memory SIZE    the device it must fit on (default 80GiB)\n"
                                "  --json                  machine-readable output\n";

static void print_usage(FILE *f)
{
    fputs(usage, f);
    fputs(ga_cli_model_help, f);
    fputs(usage_sim, f);
}

/* Variables galloc_allocator_create applies under every --conf string (the
 * create string only overrides the keys it names), so a row labelled
 * "PyTorch defaults" is only that when they are unset: say so. */
static const char *const env_names[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "GALLOC_CONF"};
#define N_ENV (sizeof(env_names) / sizeof(env_names[0]))

static const char *env_value(size_t i)
{
    const char *v = getenv(env_names[i]);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static const char *label(const char *conf)
{
    if (conf[0] != '\0')
        return conf;
    for (size_t i = 0; i < N_ENV; i++)
        if (env_value(i) != NULL)
            return "(environment only)";
    return "PyTorch defaults";
}

static void print_text(const ga_cli_t *cli, const ga_budget_t *b, const ga_budget_sim_t *sims)
{
    const ga_gen_model_t *m = &cli->model;
    printf("Model: %" PRIu64 " parameters, %" PRIu32 " layers, d_model %" PRIu64 ", %" PRIu32 " heads, seq_len %" PRIu64
           ", batch %" PRIu64 "%s%s\n",
           m->params, m->layers, m->d_model, ga_gen_heads(m), ga_gen_seq_len(m), m->batch,
           m->mixed_precision ? ", mixed precision" : ", fp32", m->checkpointing ? ", checkpointing" : "");
    printf("\nAnalytic budget (GiB; kv cache reported apart, not in total)\n");
    printf("  %9s %9s %9s %11s %9s %9s %9s\n", "weights", "grads", "optimizer", "activations", "kv cache", "total",
           "+15 %");
    printf("  %9.2f %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f\n", b->weights / GIB, b->grads / GIB, b->optimizer / GIB,
           b->activations / GIB, b->kv_cache / GIB, b->total / GIB, b->total_overhead / GIB);

    printf("\nSimulated: the generated trace, %" PRIu32 " step%s", m->steps, m->steps == 1 ? "" : "s");
    if (m->seq_max != 0)
        printf(" (seq_len %" PRIu64 "..%" PRIu64 ", seed %" PRIu64 ")", m->seq_min, m->seq_max, m->seed);
    printf(", on a sim device of %.2f GiB\n", (double)cli->device_memory / GIB);
    for (size_t i = 0; i < N_ENV; i++)
        if (env_value(i) != NULL)
            printf("  note: %s=%s from the environment applies under every configuration\n", env_names[i],
                   env_value(i));
    printf("  %-32s %14s %14s %8s %10s  %s\n", "configuration", "peak reserved", "peak allocated", "frag", "vs total",
           "fits");
    for (size_t i = 0; i < cli->n_confs; i++) {
        const ga_budget_sim_t *s = &sims[i];
        printf("  %-32s ", label(cli->confs[i]));
        if (s->status != GALLOC_OK) {
            printf("error (%s, said on stderr)\n", galloc_status_name(s->status));
            continue;
        }
        /* When it does not fit, show what it needs (the unbounded run). */
        bool known = s->needed_reserved >= 0;
        double res = (double)(known ? s->needed_reserved : s->peak_reserved);
        double alloc = (double)(known ? s->needed_allocated : s->peak_allocated);
        printf("%s%9.2f GiB %10.2f GiB %7.1f%% %+9.1f%%  ", known ? " " : ">", res / GIB, alloc / GIB,
               res > 0 ? 100.0 * (1.0 - alloc / res) : 0.0, 100.0 * (res / b->total - 1.0));
        if (s->fits && s->num_alloc_retries == 0)
            printf("yes\n");
        else if (s->fits)
            printf("yes, after %" PRId64 " cache flush%s (slow steps)\n", s->num_alloc_retries,
                   s->num_alloc_retries == 1 ? "" : "es");
        else if (s->oom_step == GA_GEN_SETUP_STEP)
            printf("no: OOM creating the weights (%.2f GiB request)\n", (double)s->oom_size / GIB);
        else
            printf("no: OOM in step %" PRIu32 " (%.2f GiB request)\n", s->oom_step, (double)s->oom_size / GIB);
    }
    printf("\nfrag = 1 - allocated/reserved at the peaks; vs total = peak reserved over the\n"
           "analytic total (the formula's guess is +15 %%). A run that does not fit shows the\n"
           "peaks of the same run on an unbounded device: what the job needs.\n");
}

/* A JSON string, escaped. */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void print_json(const ga_cli_t *cli, const ga_budget_t *b, const ga_budget_sim_t *sims)
{
    const ga_gen_model_t *m = &cli->model;
    printf("{\"tool\": \"galloc budget\", \"version\": 1,\n \"model\": {\"params\": %" PRIu64 ", \"layers\": %" PRIu32
           ", \"d_model\": %" PRIu64 ", \"heads\": %" PRIu32 ", \"seq_len\": %" PRIu64 ", \"batch\": %" PRIu64
           ", \"mixed_precision\": %s, \"checkpointing\": %s, \"steps\": %" PRIu32,
           m->params, m->layers, m->d_model, ga_gen_heads(m), ga_gen_seq_len(m), m->batch,
           m->mixed_precision ? "true" : "false", m->checkpointing ? "true" : "false", m->steps);
    if (m->seq_max != 0)
        printf(", \"variable_seq_len\": [%" PRIu64 ", %" PRIu64 "], \"seed\": %" PRIu64, m->seq_min, m->seq_max,
               m->seed);
    printf("},\n \"analytic_gib\": {\"weights\": %.2f, \"grads\": %.2f, \"optimizer\": %.2f, "
           "\"activations\": %.2f, \"kv_cache\": %.2f, \"total\": %.2f, \"total_plus_15pct\": %.2f},\n",
           b->weights / GIB, b->grads / GIB, b->optimizer / GIB, b->activations / GIB, b->kv_cache / GIB,
           b->total / GIB, b->total_overhead / GIB);
    printf(" \"analytic_bytes\": {\"weights\": %.0f, \"grads\": %.0f, \"optimizer\": %.0f, \"activations\": %.0f, "
           "\"kv_cache\": %.0f, \"total\": %.0f, \"total_plus_15pct\": %.0f},\n",
           b->weights, b->grads, b->optimizer, b->activations, b->kv_cache, b->total, b->total_overhead);
    printf(" \"environment\": {");
    for (size_t i = 0, shown = 0; i < N_ENV; i++) {
        if (env_value(i) == NULL)
            continue;
        printf("%s\"%s\": ", shown++ == 0 ? "" : ", ", env_names[i]);
        json_str(env_value(i));
    }
    printf("},\n \"device_memory\": %" PRIu64 ",\n \"simulated\": [", cli->device_memory);
    for (size_t i = 0; i < cli->n_confs; i++) {
        const ga_budget_sim_t *s = &sims[i];
        printf("%s\n  {\"conf\": ", i == 0 ? "" : ",");
        json_str(cli->confs[i]);
        printf(", \"status\": \"%s\"", galloc_status_name(s->status));
        if (s->status != GALLOC_OK) {
            printf(", \"error\": ");
            json_str(s->error);
            printf("}");
            continue;
        }
        printf(", \"fits\": %s, \"peak_reserved_bytes\": %" PRId64 ", \"peak_allocated_bytes\": %" PRId64
               ", \"peak_requested_bytes\": %" PRId64 ", \"num_alloc_retries\": %" PRId64,
               s->fits ? "true" : "false", s->peak_reserved, s->peak_allocated, s->peak_requested,
               s->num_alloc_retries);
        if (!s->fits)
            printf(", \"oom\": {\"step\": %" PRId64 ", \"event\": %" PRIu64 ", \"size\": %" PRIu64 "}",
                   s->oom_step == GA_GEN_SETUP_STEP ? (int64_t)-1 : (int64_t)s->oom_step, s->oom_event, s->oom_size);
        printf(", \"needed_reserved_bytes\": %" PRId64 ", \"needed_allocated_bytes\": %" PRId64 "}", s->needed_reserved,
               s->needed_allocated);
    }
    printf("\n ]}\n");
}

int ga_budget_main(int argc, char **argv)
{
    ga_cli_t cli;
    char err[256];
    /* "galloc budget transformer ..." reads like gen; the word is optional. */
    int first = argc > 1 && strcmp(argv[1], "transformer") == 0 ? 2 : 1;
    if (ga_cli_parse(argc, argv, first, GA_CLI_BUDGET, &cli, err, sizeof(err)) != 0) {
        fprintf(stderr, "galloc budget: %s\n", err);
        return 2;
    }
    if (cli.help) {
        print_usage(stdout);
        return 0;
    }
    if (cli.device_memory == 0)
        cli.device_memory = UINT64_C(80) << 30;
    if (cli.n_confs == 0) {
        cli.confs[cli.n_confs++] = "";
        cli.confs[cli.n_confs++] = "expandable_segments:True";
    }
    ga_budget_t b;
    ga_budget_analytic(&cli.model, &b);
    ga_budget_sim_t *sims = calloc(cli.n_confs, sizeof(*sims));
    if (sims == NULL) {
        fprintf(stderr, "galloc budget: out of host memory\n");
        return 2;
    }
    int rc = 0;
    for (size_t i = 0; i < cli.n_confs; i++) {
        galloc_status_t st = ga_budget_simulate(&cli.model, cli.confs[i], cli.device_memory, &sims[i]);
        /* The other rows still run; the row shows the refusal, stderr says it once. */
        if (st != GALLOC_OK) {
            fprintf(stderr, "galloc budget: configuration \"%s\": %s: %s\n", cli.confs[i], galloc_status_name(st),
                    sims[i].error);
            rc = 2;
        } else if (!sims[i].fits && rc == 0) {
            rc = 1;
        }
    }
    if (cli.json)
        print_json(&cli, &b, sims);
    else
        print_text(&cli, &b, sims);
    free(sims);
    return rc; /* a failed write: command.c makes it 2 */
}
