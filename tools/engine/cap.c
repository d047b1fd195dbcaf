/*
 * cap.c: the memory-fraction cap a unit's trace shows, inferred once as a
 * range (replay.h, ga_replay_infer_cap).
 *
 * A snapshot's oom entry with room on the device (device_free >= its
 * request) means set_per_process_memory_fraction refused the allocation;
 * snapshots do not record the fraction. The cap is taken to hold from the
 * first event (a job sets its fraction at start) and is the set of caps
 * under which the replay of the unit's own run (its recorded settings and
 * segment addresses, the replay that agrees with the record event for event)
 * does what the traced run did:
 *   - every event before the first capped OOM goes as without a cap: no
 *     allocation fails, and the device allocations and frees are the same
 *     (a cap that set off garbage collection would add frees): the cap is at
 *     least `low`;
 *   - that OOM fails: the cap is below `high`, the smallest cap under which
 *     its allocation succeeds (after the OOM path's release of cached
 *     segments).
 * Both are found by bisection over caps in steps of GA_ENGINE_CAP_STEP, with
 * the replay stopped at that OOM. More memory is assumed never to hurt, so
 * each test is monotone in the cap. Later capped OOMs are replayed under the
 * range but do not narrow it.
 */
#include "tools/engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/readers/units.h"

typedef struct infer {
    ga_job_unit_t *u;
    ga_replay_opts_t o;
    ga_replay_spec_t spec;
    uint64_t first;              /* index of the first capped OOM event */
    int64_t ref_alloc, ref_free; /* device allocations and frees before it, without a binding cap */
    int64_t ref_peak;            /* reserved peak before it */
} infer_t;

/* Replay the unit's own run at cap (0: the whole device) up to event last. */
static int run(infer_t *x, uint64_t cap, uint64_t last, ga_replay_column_t *c)
{
    memset(c, 0, sizeof(*c));
    ga_engine_out_t out = {.first_oom = UINT64_MAX};
    ga_replay_opts_t o = x->o;
    o.stop_after_events = last + 1; /* events 0 .. last */
    ga_engine_cfg_t g = {.o = &o, .spec = &x->spec, .capacity = x->u->memory, .cap = cap, .out = &out};
    return ga_engine_run(x->u, &g, c);
}

/* Whether everything before the first capped OOM goes as without a cap. */
static int before_ok(infer_t *x, uint64_t cap)
{
    ga_replay_column_t c;
    if (x->first == 0)
        return 1; /* nothing before it */
    int rc = run(x, cap, x->first - 1, &c);
    bool ok = rc == 0 && c.create_status == GALLOC_OK && c.ooms_total == 0 && c.errors == 0 &&
              c.stats.num_device_alloc == x->ref_alloc && c.stats.num_device_free == x->ref_free;
    ga_replay_column_release(&c);
    return rc != 0 ? -1 : ok;
}

/* Whether the first capped OOM's allocation succeeds under cap. */
static int oom_avoided(infer_t *x, uint64_t cap)
{
    ga_replay_column_t c;
    int rc = run(x, cap, x->first, &c);
    bool avoided = rc == 0 && c.create_status == GALLOC_OK && c.expected_avoided > 0 &&
                   (c.n_ooms == 0 || c.ooms[c.n_ooms - 1].event != x->first);
    ga_replay_column_release(&c);
    return rc != 0 ? -1 : avoided;
}

/* The smallest multiple of the step in [a, b] for which test holds, given
 * that it holds at b; 0 with *failed on host memory. */
static uint64_t smallest(infer_t *x, int (*test)(infer_t *, uint64_t), uint64_t a, uint64_t b, bool *failed)
{
    uint64_t lo = a / GA_ENGINE_CAP_STEP, hi = b / GA_ENGINE_CAP_STEP; /* test(hi) holds */
    if (lo == 0)
        lo = 1;
    int t = test(x, lo * GA_ENGINE_CAP_STEP);
    if (t < 0)
        *failed = true;
    if (t != 0)
        return lo * GA_ENGINE_CAP_STEP;
    while (hi - lo > 1) { /* test(lo) fails, test(hi) holds */
        uint64_t mid = lo + (hi - lo) / 2;
        t = test(x, mid * GA_ENGINE_CAP_STEP);
        if (t < 0) {
            *failed = true;
            return 0;
        }
        if (t)
            hi = mid;
        else
            lo = mid;
    }
    return hi * GA_ENGINE_CAP_STEP;
}

static void why(ga_job_cap_t *cap, const char *text)
{
    snprintf(cap->why, sizeof(cap->why), "%s", text);
}

void ga_replay_infer_cap(ga_job_unit_t *u, const char *backend, bool env)
{
    ga_job_cap_t *cap = &u->cap;
    cap->inferred = false;
    cap->why[0] = '\0';
    if (cap->capped_ooms == 0)
        return;
    infer_t x = {.u = u, .spec = ga_replay_default_spec(u), .o = {.backend = backend, .env = env, .no_cap = true}};
    bool found = false;
    for (size_t i = 0; i < u->n && !found; i++) {
        ga_event_t e;
        ga_job_event(u, i, &e);
        if (ga_replay_oom_capped(&e)) {
            x.first = i;
            found = true;
        }
    }
    if (!found)
        return;
    ga_replay_column_t c;
    uint64_t whole = u->memory / GA_ENGINE_CAP_STEP * GA_ENGINE_CAP_STEP;
    if (x.first > 0) {
        if (run(&x, 0, x.first - 1, &c) != 0) {
            ga_replay_column_release(&c);
            why(cap, "out of host memory inferring the cap");
            return;
        }
        x.ref_alloc = c.stats.num_device_alloc;
        x.ref_free = c.stats.num_device_free;
        x.ref_peak = c.stats.reserved_bytes[GALLOC_STAT_ALL].peak;
        bool clean = c.create_status == GALLOC_OK && c.ooms_total == 0 && c.errors == 0;
        ga_replay_column_release(&c);
        if (!clean) {
            why(cap, "the replay of the recorded settings runs out of memory or fails before the capped OOM "
                     "even without a cap, so the trace's cap cannot be placed");
            return;
        }
    }
    bool failed = false;
    uint64_t from = x.ref_peak > 0
                        ? ((uint64_t)x.ref_peak + GA_ENGINE_CAP_STEP - 1) / GA_ENGINE_CAP_STEP * GA_ENGINE_CAP_STEP
                        : GA_ENGINE_CAP_STEP;
    if (from > whole) {
        why(cap, "the job's reserved peak before the capped OOM is larger than the device");
        return;
    }
    int whole_ok = before_ok(&x, whole);
    if (whole_ok <= 0) {
        why(cap, whole_ok < 0 ? "out of host memory inferring the cap"
                              : "under a cap of the whole device the replay already differs from the record "
                                "before the capped OOM (garbage collection?)");
        return;
    }
    uint64_t low = smallest(&x, before_ok, from, whole, &failed);
    int avoided_whole = oom_avoided(&x, whole);
    if (failed || avoided_whole < 0) {
        why(cap, "out of host memory inferring the cap");
        return;
    }
    if (!avoided_whole) {
        why(cap, "the capped OOM's allocation fails in the replay even with the whole device: its oom entry's "
                 "device_free was not room enough for the segment it needed, so no cap is shown");
        return;
    }
    int at_low = oom_avoided(&x, low);
    if (at_low != 0) {
        why(cap, at_low < 0 ? "out of host memory inferring the cap"
                            : "the replay avoids the capped OOM under every cap that reproduces the run before "
                              "it: the record is not consistent with one cap");
        return;
    }
    uint64_t high = smallest(&x, oom_avoided, low + GA_ENGINE_CAP_STEP, whole, &failed);
    if (failed || high == 0) {
        why(cap, "out of host memory inferring the cap");
        return;
    }
    cap->low = low;
    cap->high = high;
    cap->inferred = true;
}

void ga_replay_infer_caps(ga_job_t *job, const char *backend, bool env)
{
    for (size_t i = 0; i < job->n_units; i++)
        ga_replay_infer_cap(&job->units[i], backend, env);
}
