/*
 * budget.c: the analytic budget formula and the simulated peak of the
 * generated trace (see budget.h).
 *
 * The simulation feeds ga_gen_transformer's events straight into galloc's
 * public API, so no trace file is written. Ids from the generator are dense
 * and start at 1 (transformer.h), so the id -> pointer map is a plain array
 * grown by doubling.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/gen/budget.h"
#include "tools/gen/cli.h"

void ga_budget_analytic(const ga_gen_model_t *m, ga_budget_t *out)
{
    double n = (double)m->params, elem = (double)ga_gen_elem_bytes(m);
    /* One "unit" of activations: s x d x b elements, for all layers. */
    double units = (double)m->layers * (double)ga_gen_seq_len(m) * (double)m->d_model * (double)m->batch * elem;
    out->weights = n * (m->mixed_precision ? 6 : 4);
    out->grads = n * (m->mixed_precision ? 2 : 4);
    out->optimizer = n * 8;
    out->activations = units * (m->checkpointing ? 1 : 34);
    out->kv_cache = units * 4;
    out->total = out->weights + out->grads + out->optimizer + out->activations;
    out->total_overhead = out->total * 1.15;
}

bool ga_budget_of_trace(const char *path, ga_gen_model_t *m, ga_budget_t *out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    /* gen writes the header line right after galloc-trace 1 and an optional
     * device_memory line. */
    char line[512];
    bool found = false;
    for (int i = 0; i < 3 && !found && fgets(line, sizeof(line), f) != NULL; i++) {
        line[strcspn(line, "\r\n")] = '\0';
        found = ga_cli_parse_header(line, m) == 0;
    }
    fclose(f);
    if (found)
        ga_budget_analytic(m, out);
    return found;
}

/* The replay of one run. */
typedef struct replay {
    galloc_allocator_t *a; /* the allocator under test */
    void **ptrs;           /* [cap] block of each live id, NULL otherwise */
    size_t cap;            /* entries in ptrs */
    uint64_t events;       /* events seen so far */
    galloc_status_t st;    /* why the run stopped (GALLOC_E_OOM: the device was full) */
    uint32_t fail_step;    /* the step of the failing event */
    uint64_t fail_event;   /* its 1-based index */
    uint64_t fail_size;    /* the bytes it asked for */
} replay_t;

/* Return values of on_event that stop the generation. */
enum { STOP_OOM = 1, STOP_ERROR = 2 };

/* Record why the run stops at ev and tell the generator to stop. */
static int stop(replay_t *r, const ga_gen_event_t *ev, galloc_status_t st)
{
    r->st = st;
    r->fail_step = ev->step;
    r->fail_event = r->events;
    r->fail_size = ev->op == GA_GEN_ALLOC ? ev->size : 0;
    return st == GALLOC_E_OOM ? STOP_OOM : STOP_ERROR;
}

static int grow(replay_t *r, uint64_t id)
{
    size_t cap = r->cap == 0 ? 4096 : r->cap;
    while (cap <= id)
        cap *= 2;
    void **p = realloc(r->ptrs, cap * sizeof(*p));
    if (p == NULL)
        return -1;
    memset(p + r->cap, 0, (cap - r->cap) * sizeof(*p));
    r->ptrs = p;
    r->cap = cap;
    return 0;
}

static int on_event(void *ctx, const ga_gen_event_t *ev)
{
    replay_t *r = ctx;
    r->events++;
    if (ev->op == GA_GEN_ANNOTATE)
        return 0;
    if (ev->id >= r->cap) {
        if (ev->op == GA_GEN_FREE) /* the generator never frees an id it did not allocate */
            return stop(r, ev, GALLOC_E_CORRUPT);
        if (grow(r, ev->id) != 0)
            return stop(r, ev, GALLOC_E_NOMEM);
    }
    galloc_status_t st;
    if (ev->op == GA_GEN_FREE) {
        st = galloc_free(r->a, r->ptrs[ev->id]);
        r->ptrs[ev->id] = NULL;
    } else {
        st = galloc_malloc(r->a, ev->size, 0, &r->ptrs[ev->id]);
    }
    return st == GALLOC_OK ? 0 : stop(r, ev, st);
}

/* Replay m on a new allocator; fills r (the allocator is destroyed before
 * return) and the peaks. Returns the status of the run: OK, E_OOM when it did
 * not fit, or the failure (with err filled). */
static galloc_status_t run(const ga_gen_model_t *m, const char *conf, uint64_t capacity, replay_t *r,
                           galloc_stats_t *stats, char *err, size_t errlen)
{
    char cfg[2048];
    /* The user's string first, so offsets in a parse error point into what they typed. */
    bool has_conf = conf != NULL && conf[0] != '\0';
    int n =
        snprintf(cfg, sizeof(cfg), "%s%ssim_capacity:%" PRIu64, has_conf ? conf : "", has_conf ? "," : "", capacity);
    if (n < 0 || (size_t)n >= sizeof(cfg)) {
        snprintf(err, errlen, "configuration string longer than %zu bytes", sizeof(cfg) - 64);
        return GALLOC_E_CONFIG;
    }
    *r = (replay_t){.st = GALLOC_OK};
    galloc_status_t st = galloc_allocator_create("sim", 0, cfg, &r->a, err, errlen);
    if (st != GALLOC_OK)
        return st;
    char gen_err[256];
    int rc = ga_gen_transformer(m, on_event, r, gen_err, sizeof(gen_err));
    if (rc < 0) {
        snprintf(err, errlen, "%s", gen_err);
        st = GALLOC_E_INVAL;
    } else if (rc == STOP_ERROR) {
        char msg[GALLOC_ERROR_MAX];
        (void)galloc_last_error(r->a, msg, sizeof(msg));
        /* A long OOM message may be cut to errlen: the status and event come first. */
        if (snprintf(err, errlen, "event %" PRIu64 ": %s (%s)", r->fail_event, galloc_status_name(r->st),
                     msg[0] != '\0' ? msg : galloc_strerror(r->st)) >= (int)errlen)
            err[errlen - 1] = '\0';
        st = r->st;
    } else if (rc == STOP_OOM) {
        st = GALLOC_E_OOM;
    }
    *stats = (galloc_stats_t){.struct_size = sizeof(galloc_stats_t)};
    if (st == GALLOC_OK || st == GALLOC_E_OOM)
        (void)galloc_memory_stats(r->a, stats);
    galloc_allocator_destroy(r->a);
    r->a = NULL;
    free(r->ptrs);
    r->ptrs = NULL;
    return st;
}

galloc_status_t ga_budget_simulate(const ga_gen_model_t *m, const char *conf, uint64_t device_memory,
                                   ga_budget_sim_t *out)
{
    if (out == NULL)
        return GALLOC_E_INVAL;
    *out = (ga_budget_sim_t){.status = GALLOC_E_INVAL, .needed_reserved = -1, .needed_allocated = -1};
    if (m == NULL || device_memory == 0) {
        snprintf(out->error, sizeof(out->error), "budget: NULL model or zero device memory");
        return out->status;
    }
    if (ga_gen_model_check(m, out->error, sizeof(out->error)) != 0)
        return out->status;

    replay_t r;
    galloc_stats_t s;
    galloc_status_t st = run(m, conf, device_memory, &r, &s, out->error, sizeof(out->error));
    if (st != GALLOC_OK && st != GALLOC_E_OOM) {
        out->status = st;
        return st;
    }
    out->status = GALLOC_OK;
    out->fits = st == GALLOC_OK;
    out->peak_reserved = s.reserved_bytes[GALLOC_STAT_ALL].peak;
    out->peak_allocated = s.allocated_bytes[GALLOC_STAT_ALL].peak;
    out->peak_requested = s.requested_bytes[GALLOC_STAT_ALL].peak;
    out->num_alloc_retries = s.num_alloc_retries;
    if (out->fits) {
        out->needed_reserved = out->peak_reserved;
        out->needed_allocated = out->peak_allocated;
        return GALLOC_OK;
    }
    out->oom_step = r.fail_step;
    out->oom_event = r.fail_event;
    out->oom_size = r.fail_size;
    if (device_memory >= GA_BUDGET_UNBOUNDED_BYTES)
        return GALLOC_OK;
    /* What it needs: the same run where the device never runs out. A failure
     * here leaves needed_* at -1 (the figures above still stand). */
    char err2[GALLOC_ERROR_MAX];
    if (run(m, conf, GA_BUDGET_UNBOUNDED_BYTES, &r, &s, err2, sizeof(err2)) == GALLOC_OK) {
        out->needed_reserved = s.reserved_bytes[GALLOC_STAT_ALL].peak;
        out->needed_allocated = s.allocated_bytes[GALLOC_STAT_ALL].peak;
    }
    return GALLOC_OK;
}
