/*
 * compare.c: `galloc replay --compare A B` (compare.h): read both records,
 * pair their devices, replay each side of a pair under its own settings with
 * owners, match the two moments' sites (compare_diff.c) and report them
 * (compare_out.c).
 *
 * Devices are paired by their label ("device 1"), in order, so two
 * multi-device snapshots compare device by device; two single-device records
 * are paired whatever their labels (two ranks' snapshots each record their
 * own device). A device in one file only is named and skipped. Each side is
 * replayed as its own run (its recorded settings, else PyTorch's defaults),
 * or both under --conf, so a change of settings between the records shows
 * as what it is: part of the change.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/replay/compare.h"
#include "tools/report/report.h"

#define MAX_SKIPPED 64 /* devices in one file only that the report names */

/* One compared pair with what it owns. */
typedef struct slot {
    ga_compare_pair_t p;
    ga_replay_column_t ca, cb; /* the two replays (p.a.c, p.b.c point here) */
} slot_t;

typedef struct run {
    const ga_compare_opts_t *o;
    ga_job_t ja, jb;
    slot_t *slots;
    size_t n_slots;
    char *skipped[MAX_SKIPPED]; /* "b.pickle device 2: not in a.pickle" */
    size_t n_skipped;
    char error[1024]; /* why nothing was compared, "" when something was */
    int code;
} run_t;

static int load(run_t *r, const char *path, ga_job_t *job)
{
    char err[1024];
    ga_job_opts_t jo = r->o->job;
    if (ga_job_add(job, path, &jo, err, sizeof(err)) != 0) {
        fprintf(stderr, "galloc replay: %s\n", err);
        if (r->error[0] == '\0')
            snprintf(r->error, sizeof(r->error), "%s", err);
        return -1;
    }
    ga_replay_infer_caps(job, r->o->backend, r->o->env);
    return 0;
}

/* Replay u as the comparison asks into c (zeroed here). 0, or -1 with the
 * reason said (host memory, or a configuration that cannot be made). */
static int replay_side(const run_t *r, const ga_job_unit_t *u, ga_replay_column_t *c)
{
    const ga_compare_opts_t *o = r->o;
    ga_replay_opts_t ro = {
        .backend = o->backend, .env = o->env, .no_sleep = o->no_sleep, .no_seed = o->job.no_seed, .owners = true};
    ga_replay_spec_t spec = o->conf != NULL  ? (ga_replay_spec_t){.conf = o->conf}
                            : o->no_recorded ? (ga_replay_spec_t){.conf = ""}
                                             : ga_replay_default_spec(u);
    memset(c, 0, sizeof(*c));
    if (ga_replay_column(u, &ro, &spec, NULL, c) != 0) {
        fprintf(stderr, "galloc replay: %s: out of host memory replaying the trace\n", u->label);
        return -1;
    }
    if (c->create_status != GALLOC_OK) {
        fprintf(stderr, "galloc replay: %s: configuration \"%s\": %s\n", u->label, c->label, c->create_error);
        return -1;
    }
    if (c->owners != NULL && c->owners->error[0])
        fprintf(stderr, "galloc replay: %s: owners incomplete: %s\n", u->label, c->owners->error);
    return 0;
}

static void note_skipped(run_t *r, const ga_job_unit_t *u, const char *other)
{
    if (r->n_skipped == MAX_SKIPPED)
        return;
    size_t n = strlen(u->label) + strlen(other) + 32;
    char *s = malloc(n);
    if (s == NULL)
        return;
    snprintf(s, n, "%s: not in %s", u->label, other);
    r->skipped[r->n_skipped++] = s;
}

/* The pairs: B's unit for each of A's (SIZE_MAX: none) into pair_of. */
static void pair_units(run_t *r, const char *a, const char *b, size_t *pair_of, bool *used)
{
    const ga_job_t *ja = &r->ja, *jb = &r->jb;
    if (ja->n_units == 1 && jb->n_units == 1) {
        pair_of[0] = 0;
        used[0] = true;
        return;
    }
    for (size_t i = 0; i < ja->n_units; i++) {
        pair_of[i] = SIZE_MAX;
        for (size_t j = 0; j < jb->n_units && pair_of[i] == SIZE_MAX; j++)
            if (!used[j] && strcmp(ja->units[i].unit_label, jb->units[j].unit_label) == 0) {
                pair_of[i] = j;
                used[j] = true;
            }
        if (pair_of[i] == SIZE_MAX)
            note_skipped(r, &ja->units[i], b);
    }
    for (size_t j = 0; j < jb->n_units; j++)
        if (!used[j])
            note_skipped(r, &jb->units[j], a);
}

/* Replay and match one pair into s. 0, or -1 (said on stderr). */
static int compare_pair(run_t *r, const char *a, const char *b, const ga_job_unit_t *ua, const ga_job_unit_t *ub,
                        slot_t *s)
{
    if (replay_side(r, ua, &s->ca) != 0 || replay_side(r, ub, &s->cb) != 0)
        return -1;
    s->p.a = (ga_compare_side_t){.path = a, .u = ua, .c = &s->ca};
    s->p.b = (ga_compare_side_t){.path = b, .u = ub, .c = &s->cb};
    const ga_owners_t *wa = s->ca.owners, *wb = s->cb.owners;
    if (ga_compare_moment(wa, wa ? &wa->peak_reserved : NULL, wb, wb ? &wb->peak_reserved : NULL, &s->p.reserved) !=
            0 ||
        ga_compare_moment(wa, wa ? &wa->peak_allocated : NULL, wb, wb ? &wb->peak_allocated : NULL, &s->p.allocated) !=
            0) {
        fprintf(stderr, "galloc replay: out of host memory comparing %s and %s\n", ua->label, ub->label);
        return -1;
    }
    return 0;
}

static void run_free(run_t *r)
{
    for (size_t i = 0; i < r->n_slots; i++) {
        ga_compare_moment_free(&r->slots[i].p.reserved);
        ga_compare_moment_free(&r->slots[i].p.allocated);
        ga_replay_column_release(&r->slots[i].ca);
        ga_replay_column_release(&r->slots[i].cb);
    }
    free(r->slots);
    for (size_t i = 0; i < r->n_skipped; i++)
        free(r->skipped[i]);
    ga_job_free(&r->ja);
    ga_job_free(&r->jb);
}

/* Every pair of a and b replayed and matched into r->slots. */
static void compare_files(run_t *r, const char *a, const char *b)
{
    size_t na = r->ja.n_units, nb = r->jb.n_units;
    size_t *pair_of = malloc((na ? na : 1) * sizeof(*pair_of));
    bool *used = calloc(nb ? nb : 1, sizeof(*used));
    r->slots = calloc(na ? na : 1, sizeof(*r->slots));
    if (pair_of == NULL || used == NULL || r->slots == NULL) {
        snprintf(r->error, sizeof(r->error), "out of host memory");
        r->code = GA_EXIT_USAGE;
    } else {
        pair_units(r, a, b, pair_of, used);
        for (size_t i = 0; i < na && r->code == GA_EXIT_OK; i++) {
            if (pair_of[i] == SIZE_MAX)
                continue;
            slot_t *s = &r->slots[r->n_slots++];
            if (compare_pair(r, a, b, &r->ja.units[i], &r->jb.units[pair_of[i]], s) != 0) {
                snprintf(r->error, sizeof(r->error), "%s and %s: not compared (see the messages above)",
                         r->ja.units[i].label, r->jb.units[pair_of[i]].label);
                r->code = GA_EXIT_USAGE;
            }
        }
        if (r->n_slots == 0 && r->code == GA_EXIT_OK) {
            snprintf(r->error, sizeof(r->error), "%s and %s have no device in common", a, b);
            fprintf(stderr, "galloc replay: --compare: %s\n", r->error);
            r->code = GA_EXIT_USAGE;
        }
    }
    free(pair_of);
    free(used);
}

int ga_compare_main(const ga_compare_opts_t *o, const char *a, const char *b, FILE *out)
{
    run_t r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.code = GA_EXIT_OK;
    if (load(&r, a, &r.ja) != 0 || load(&r, b, &r.jb) != 0)
        r.code = GA_EXIT_USAGE;
    else
        compare_files(&r, a, b);
    size_t ok = r.code == GA_EXIT_OK ? r.n_slots : 0; /* a failed pair leaves nothing to show */
    if (o->json) {
        const ga_compare_pair_t **pairs = calloc(ok ? ok : 1, sizeof(*pairs));
        for (size_t i = 0; pairs != NULL && i < ok; i++)
            pairs[i] = &r.slots[i].p;
        if (pairs == NULL) {
            ok = 0;
            snprintf(r.error, sizeof(r.error), "out of host memory");
            r.code = GA_EXIT_USAGE;
        }
        ga_compare_json(out, o->backend != NULL ? o->backend : "sim", pairs, ok, (const char *const *)r.skipped,
                        r.n_skipped, r.error[0] ? r.error : NULL);
        free(pairs);
    } else {
        for (size_t i = 0; i < ok; i++)
            ga_compare_text(out, &r.slots[i].p, o->top);
        for (size_t i = 0; ok > 0 && i < r.n_skipped; i++)
            fprintf(out, "skipped: %s\n", r.skipped[i]);
    }
    fflush(out);
    run_free(&r);
    return r.code;
}
