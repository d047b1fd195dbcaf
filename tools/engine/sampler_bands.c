/*
 * sampler_bands.c: a column's sampled sites as the bands of a stacked plot
 * (replay.h, ga_sampler_bands): the sites that matter are the ones holding
 * the memory when it ran out, or at the reserved peak (the owners' figures
 * of that moment, docs/owners.md), and the ones that held the most at any
 * point (the samples), so neither a site that fills the device early nor
 * the one holding it at the end hides in "other sites"; the samples give
 * each chosen site's bytes over the whole run.
 * Everything else is one "other sites" band, so the stack still sums to the
 * live bytes at every point.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/engine/owners.h"
#include "tools/engine/replay.h"

void ga_site_bands_free(ga_site_bands_t *b)
{
    free(b->bands);
    free(b->other);
    memset(b, 0, sizeof(*b));
}

/* The moment the top sites are chosen at: the first OOM, else the reserved peak. */
static const ga_owners_moment_t *choice_moment(const ga_owners_t *w)
{
    if (w->n_ooms > 0 && w->ooms[0].valid)
        return &w->ooms[0];
    return w->peak_reserved.valid ? &w->peak_reserved : NULL;
}

/* Site j's largest sampled value. */
static double most_of(const ga_sampler_t *s, size_t j)
{
    double m = 0;
    for (size_t p = 0; p < s->n; p++)
        if (s->site[j * GA_SAMPLER_CAP + p] > m)
            m = s->site[j * GA_SAMPLER_CAP + p];
    return m;
}

int ga_sampler_bands(const ga_sampler_t *s, const ga_owners_t *w, size_t top, ga_site_bands_t *out)
{
    memset(out, 0, sizeof(*out));
    const ga_owners_moment_t *m = w != NULL ? choice_moment(w) : NULL;
    if (s->n_sites == 0 || s->site == NULL || m == NULL || w->index->n_sites != s->n_sites)
        return 0;
    ga_owner_site_row_t *rows;
    size_t n_rows;
    if (ga_owners_sites(m, w->index, &rows, &n_rows) != 0)
        return -1;
    bool *named = calloc(s->n_sites, sizeof(*named));
    double *at = calloc(s->n_sites, sizeof(*at)), *most = calloc(s->n_sites, sizeof(*most));
    out->bands = malloc((top + 1) * sizeof(*out->bands));
    out->other = malloc((s->n ? s->n : 1) * sizeof(*out->other));
    if (named == NULL || at == NULL || most == NULL || out->bands == NULL || out->other == NULL) {
        free(named);
        free(at);
        free(most);
        free(rows);
        ga_site_bands_free(out);
        return -1;
    }
    /* Named: the largest holders at the moment (up to half the bands), then
     * the sites that held the most at any point, so a site that filled the
     * device earlier is not hidden in "other sites". */
    size_t k = 0;
    for (size_t i = 0; i < n_rows && k < (top + 1) / 2 && rows[i].cell.bytes > 0; i++, k++) {
        named[rows[i].site] = true;
        at[rows[i].site] = (double)rows[i].cell.bytes;
    }
    for (size_t i = 0; i < n_rows; i++)
        at[rows[i].site] = (double)rows[i].cell.bytes;
    for (size_t j = 0; j < s->n_sites; j++)
        most[j] = most_of(s, j);
    while (k < top) {
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < s->n_sites; j++)
            if (!named[j] && most[j] > 0 && (best == SIZE_MAX || most[j] > most[best]))
                best = j;
        if (best == SIZE_MAX)
            break;
        named[best] = true;
        k++;
    }
    double named_at = 0;
    size_t b = 0;
    /* bottom first: by bytes at the moment, then by most bytes at any point */
    for (size_t i = 0; i < n_rows; i++)
        if (named[rows[i].site]) {
            uint32_t site = rows[i].site;
            named_at += at[site];
            out->bands[b++] = (ga_series_band_t){.label = w->index->sites[site].key,
                                                 .bytes = s->site + (size_t)site * GA_SAMPLER_CAP,
                                                 .at_moment = at[site]};
        }
    while (b < k) {
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < s->n_sites; j++) {
            bool placed = at[j] > 0;
            for (size_t q = 0; q < b && !placed; q++)
                placed = out->bands[q].bytes == s->site + j * GA_SAMPLER_CAP;
            if (named[j] && !placed && (best == SIZE_MAX || most[j] > most[best]))
                best = j;
        }
        out->bands[b++] = (ga_series_band_t){
            .label = w->index->sites[best].key, .bytes = s->site + best * GA_SAMPLER_CAP, .at_moment = 0};
    }
    free(at);
    free(most);
    bool any_other = false;
    for (size_t p = 0; p < s->n; p++) {
        double v = 0;
        for (size_t j = 0; j < s->n_sites; j++)
            if (!named[j])
                v += s->site[j * GA_SAMPLER_CAP + p];
        out->other[p] = v;
        any_other = any_other || v != 0;
    }
    double all_at = 0;
    for (size_t i = 0; i < n_rows; i++)
        all_at += (double)rows[i].cell.bytes;
    any_other = any_other || all_at > named_at;
    out->n = k;
    if (any_other)
        out->bands[out->n++] = (ga_series_band_t){
            .label = "other sites", .bytes = out->other, .at_moment = all_at - named_at, .other = true};
    else {
        free(out->other);
        out->other = NULL;
    }
    out->by = m->kind;
    free(named);
    free(rows);
    return 0;
}
