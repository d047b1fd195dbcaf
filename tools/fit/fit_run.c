/*
 * fit_run.c: one configuration of the search over every unit of the job, and
 * the bisection of the smallest memory it fits (fit.h). Every replay goes
 * through the engine (ga_replay_column, the call galloc replay makes for a
 * column), so a row and a column of the same configuration are the same
 * replay; the bisection's replays stop at their first OOM (only fits or not
 * matters there).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"

void ga_fit_job_init(ga_fit_job_t *job)
{
    const ga_job_t *j = job->job;
    job->events = j->events;
    job->max_alloc = 0;
    job->sets_fraction = false;
    job->sleep_events = 0;
    job->capped_units = 0;
    job->recorded = job->recorded_text = NULL;
    job->ref = 0;
    for (size_t u = j->n_units; u-- > 0;)
        if (j->units[u].recorded_source == GA_JOB_MEM_OOM_ENTRIES)
            job->ref = u;
    for (size_t u = 0; u < j->n_units; u++) {
        const ga_job_unit_t *un = &j->units[u];
        if (un->max_alloc > job->max_alloc)
            job->max_alloc = un->max_alloc;
        job->sets_fraction |= un->sets_fraction;
        job->sleep_events += un->sleep_events;
        job->capped_units += un->cap.inferred;
        if (job->recorded == NULL && ga_job_recorded(un) != NULL) {
            job->recorded = ga_job_recorded(un); /* the first snapshot with settings speaks for the job */
            job->recorded_text = un->file->recorded_text;
        }
    }
}

static ga_replay_opts_t replay_opts(const ga_fit_job_t *job)
{
    return (ga_replay_opts_t){
        .backend = job->backend, .env = job->env[0] != '\0', .no_sleep = job->no_sleep, .watch_peak = true};
}

/* A unit's column into the run's figures. false when it failed. */
static bool add_column(ga_fit_run_t *out, size_t u, const ga_replay_column_t *c)
{
    if (c->create_status != GALLOC_OK) {
        snprintf(out->error, sizeof(out->error), "%.250s", c->create_error);
        out->refused = c->create_status;
        return false;
    }
    if (c->errors) {
        snprintf(out->error, sizeof(out->error), "unit %zu: %.200s", u, c->first_error);
        return false;
    }
    const galloc_stats_t *s = &c->stats;
    bool fits = ga_replay_fits(c);
    if (!fits && out->fits) { /* the first unit that does not fit: its first OOM */
        out->fits = false;
        out->fail_unit = u;
        if (c->n_ooms > 0) {
            out->fail_event = c->ooms[0].event;
            out->oom = c->ooms[0].facts;
        } else { /* it fits at the figures' cap, not under all of the range */
            for (size_t p = 0; p < c->n_parts; p++)
                if (c->parts[p].ooms > 0) {
                    out->fail_event = c->parts[p].first_oom_event;
                    break;
                }
        }
    }
    out->depends |= ga_replay_depends(c);
    int64_t res = s->reserved_bytes[GALLOC_STAT_ALL].peak;
    if (res > out->peak_reserved) {
        out->peak_reserved = res;
        out->allocated_at_peak = c->at_peak.allocated;
        out->asleep_at_peak = c->at_peak.asleep;
        out->largest_free_at_peak = c->at_peak.largest_free;
        out->external_frag_at_peak = c->at_peak.external_frag;
    }
    if (s->allocated_bytes[GALLOC_STAT_ALL].peak > out->peak_allocated)
        out->peak_allocated = s->allocated_bytes[GALLOC_STAT_ALL].peak;
    if (s->requested_bytes[GALLOC_STAT_ALL].peak > out->peak_requested)
        out->peak_requested = s->requested_bytes[GALLOC_STAT_ALL].peak;
    out->ooms += c->ooms_total;
    out->device_allocs += (uint64_t)s->num_device_alloc;
    out->device_frees += (uint64_t)s->num_device_free;
    out->retries += (uint64_t)s->num_alloc_retries;
    out->expected_ooms += c->expected_ooms;
    out->expected_avoided += c->expected_avoided;
    return true;
}

int ga_fit_replay(const ga_fit_job_t *job, const char *conf, bool recorded, ga_fit_run_t *out)
{
    memset(out, 0, sizeof(*out));
    out->fits = true;
    ga_replay_opts_t o = replay_opts(job);
    ga_replay_spec_t spec = {.conf = conf, .recorded = recorded};
    for (size_t u = 0; u < job->job->n_units; u++) {
        ga_replay_column_t c;
        memset(&c, 0, sizeof(c));
        int rc = ga_replay_column(&job->job->units[u], &o, &spec, NULL, &c);
        bool ok = rc == 0 && add_column(out, u, &c);
        if (rc != 0)
            snprintf(out->error, sizeof(out->error), "out of host memory");
        ga_replay_column_release(&c);
        if (!ok) {
            out->failed = true;
            out->fits = false;
            return -1;
        }
    }
    return 0;
}

/* What the allocator may use of unit u as the job ran: its device, or the
 * top of its cap range (the cap it ran under lay below). */
static uint64_t allowed_of(const ga_job_unit_t *u)
{
    return u->cap.inferred ? u->cap.high - GA_FIT_GRANULE : u->memory;
}

uint64_t ga_fit_allowed(const ga_fit_job_t *job)
{
    return job->job->n_units ? allowed_of(&job->job->units[job->ref]) : GA_JOB_DEFAULT_MEMORY;
}

bool ga_fit_fits_within(const ga_fit_job_t *job, const char *conf, bool recorded, uint64_t allowed)
{
    double scale = (double)allowed / (double)ga_fit_allowed(job);
    ga_replay_spec_t spec = {.conf = conf, .recorded = recorded};
    for (size_t i = 0; i < job->job->n_units; i++) {
        const ga_job_unit_t *u = &job->job->units[i];
        uint64_t mine = i == job->ref ? allowed : (uint64_t)((double)allowed_of(u) * scale);
        if (mine == 0)
            mine = 1;
        ga_replay_opts_t o = replay_opts(job);
        o.watch_peak = false;
        o.stop_at_oom = true;
        o.no_cap = true; /* the limit below replaces the unit's range */
        if (u->cap.inferred && mine < u->memory)
            o.cap = mine; /* the same device, a smaller or larger cap */
        else
            o.device_memory = mine;
        ga_replay_column_t c;
        memset(&c, 0, sizeof(c));
        int rc = ga_replay_column(u, &o, &spec, NULL, &c);
        bool fits = rc == 0 && c.create_status == GALLOC_OK && c.errors == 0 && c.ooms_total == 0;
        ga_replay_column_release(&c);
        if (!fits)
            return false;
    }
    return true;
}

static uint64_t floor_g(uint64_t v)
{
    return v / GA_FIT_GRANULE * GA_FIT_GRANULE;
}

static uint64_t ceil_g(uint64_t v)
{
    return floor_g(v + GA_FIT_GRANULE - 1);
}

static bool fits_at(const ga_fit_job_t *job, const char *conf, bool recorded, uint64_t size, uint32_t *replays)
{
    (*replays)++;
    return ga_fit_fits_within(job, conf, recorded, size);
}

uint64_t ga_fit_min_memory(const ga_fit_job_t *job, const char *conf, bool recorded, const ga_fit_run_t *at_d,
                           uint32_t *replays)
{
    uint64_t d = ga_fit_allowed(job), hi = 0, lo = 0;
    if (at_d->failed)
        return 0;
    /* d is the top of a capped unit's range: a run that fits part of the range may fit there */
    bool fits_d = at_d->fits || (at_d->depends && fits_at(job, conf, recorded, d, replays));
    if (fits_d) {
        /* Nothing fits below the requested peak: reserved >= allocated >=
         * requested at every moment. Not for a job that sleeps: requested
         * counts a sleeping tag's blocks, which hold no device memory. */
        bool sleeps = job->sleep_events > 0 && !job->no_sleep;
        lo = at_d->peak_requested > 0 && !sleeps ? floor_g((uint64_t)at_d->peak_requested - 1) : 0;
        if (d % GA_FIT_GRANULE == 0)
            hi = d;
        else if (fits_at(job, conf, recorded, ceil_g(d), replays))
            hi = ceil_g(d);
        else
            return d; /* an odd size that fits where the next granule does not */
        /* Most of the range is usually above the reserved peak: one replay
         * there (which nearly always fits) saves half the bisection steps. */
        uint64_t p = ceil_g((uint64_t)at_d->peak_reserved);
        if (p > lo && p < hi) {
            if (fits_at(job, conf, recorded, p, replays))
                hi = p;
            else
                lo = p;
        }
    } else {
        /* It fails as the job ran: more memory is assumed never to hurt. */
        lo = floor_g(d);
        if (d > UINT64_MAX / 256)
            return 0; /* no room to search above an absurd size */
        for (uint64_t c = ceil_g(d * 2); c <= d * 64 && hi == 0; c = ceil_g(c * 2)) {
            if (fits_at(job, conf, recorded, c, replays))
                hi = c;
            else
                lo = c;
        }
        if (hi == 0)
            return 0;
    }
    while (hi - lo > GA_FIT_GRANULE) {
        uint64_t mid = lo + floor_g((hi - lo) / 2);
        if (fits_at(job, conf, recorded, mid, replays))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}
