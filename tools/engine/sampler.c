/*
 * sampler.c: memory over time in at most GA_SERIES_MAX_POINTS points, however
 * long the trace. Points lie on a grid of `stride` events; when the buffer
 * fills, every other point is dropped and the stride doubles, so the kept
 * points stay evenly spaced and the cost is O(1) amortized per point (O(sites)
 * with per-site samples). The replay asks for a sample only when the event
 * index reaches `next`.
 *
 * Per-site samples (replay.h: owners and sampling both on) are kept for every
 * site of the unit, since which ones a plot names is known only at the end:
 * O(sites x GA_SAMPLER_CAP) doubles per column, allocated once here.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/engine/replay.h"

int ga_sampler_init(ga_sampler_t *s)
{
    memset(s, 0, sizeof(*s));
    s->stride = 1;
    size_t n = GA_SAMPLER_CAP; /* the grid's points + the final point */
    s->x = malloc(n * sizeof(double));
    s->req = malloc(n * sizeof(double));
    s->alloc = malloc(n * sizeof(double));
    s->res = malloc(n * sizeof(double));
    if (s->x == NULL || s->req == NULL || s->alloc == NULL || s->res == NULL) {
        ga_sampler_free(s);
        return -1;
    }
    return 0;
}

int ga_sampler_init_sites(ga_sampler_t *s, size_t n_sites)
{
    if (n_sites == 0)
        return 0;
    if (n_sites > SIZE_MAX / sizeof(double) / GA_SAMPLER_CAP)
        return -1;
    s->site = calloc(n_sites * GA_SAMPLER_CAP, sizeof(double));
    s->pending = calloc(n_sites, sizeof(double));
    if (s->site == NULL || s->pending == NULL) {
        free(s->site);
        free(s->pending);
        s->site = s->pending = NULL;
        return -1;
    }
    s->n_sites = n_sites;
    return 0;
}

void ga_sampler_free(ga_sampler_t *s)
{
    free(s->x);
    free(s->req);
    free(s->alloc);
    free(s->res);
    free(s->site);
    free(s->pending);
    memset(s, 0, sizeof(*s));
}

/* Keep points 0, 2, 4, ...: they lie on the grid of twice the stride. */
static void halve(ga_sampler_t *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i += 2, k++) {
        s->x[k] = s->x[i];
        s->req[k] = s->req[i];
        s->alloc[k] = s->alloc[i];
        s->res[k] = s->res[i];
    }
    for (size_t j = 0; j < s->n_sites; j++) {
        double *v = s->site + j * GA_SAMPLER_CAP;
        for (size_t i = 0, m = 0; i < s->n; i += 2, m++)
            v[m] = v[i];
    }
    s->n = k;
    s->stride *= 2;
    s->last = (uint64_t)s->x[k - 1];
}

void ga_sampler_add(ga_sampler_t *s, uint64_t x, double req, double alloc, double res)
{
    if (s->x == NULL || (s->n > 0 && x <= s->last))
        return;
    if (s->n == GA_SAMPLER_CAP)
        return; /* the final point is already in */
    s->x[s->n] = (double)x;
    s->req[s->n] = req;
    s->alloc[s->n] = alloc;
    s->res[s->n] = res;
    for (size_t j = 0; j < s->n_sites; j++)
        s->site[j * GA_SAMPLER_CAP + s->n] = s->pending[j];
    s->n++;
    s->last = x;
    if (x % s->stride != 0)
        return; /* an off-grid final point */
    if (s->n == GA_SERIES_MAX_POINTS)
        halve(s);
    s->next = s->last + s->stride;
}

void ga_sampler_add_stats(ga_sampler_t *s, uint64_t x, galloc_allocator_t *a)
{
    galloc_stats_t st = {.struct_size = sizeof(st)};
    if (galloc_memory_stats(a, &st) == GALLOC_OK)
        ga_sampler_add(s, x, (double)st.requested_bytes[GALLOC_STAT_ALL].current,
                       (double)st.allocated_bytes[GALLOC_STAT_ALL].current,
                       (double)st.reserved_bytes[GALLOC_STAT_ALL].current);
}

void ga_sampler_series(const ga_sampler_t *s, const char *label, ga_series_t *out)
{
    memset(out, 0, sizeof(*out));
    out->label = label;
    out->n = s->n;
    out->event_index = s->x;
    out->requested = s->req;
    out->allocated = s->alloc;
    out->reserved = s->res;
}
