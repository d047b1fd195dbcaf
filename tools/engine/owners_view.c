/*
 * owners_view.c: a column's owners seen by site and phase (owners.h), for
 * every report that shows them (text, JSON, plot, compare, fit's advice), and
 * the invariant every moment must keep.
 */
#include "tools/engine/owners.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ga_owner_cell_add(ga_owner_cell_t *a, const ga_owner_cell_t *b)
{
    a->blocks += b->blocks;
    a->bytes += b->bytes;
    a->requested += b->requested;
    a->kept_blocks += b->kept_blocks;
    a->kept_bytes += b->kept_bytes;
    a->before += b->before;
    a->ev_sum += b->ev_sum;
    a->timed += b->timed;
    a->us_sum += b->us_sum;
}

static int by_bytes(const void *a, const void *b)
{
    const ga_owner_site_row_t *x = a, *y = b;
    if (x->cell.bytes != y->cell.bytes)
        return x->cell.bytes > y->cell.bytes ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

int ga_owners_sites(const ga_owners_moment_t *m, const ga_owners_index_t *x, ga_owner_site_row_t **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    if (m->n_entries == 0)
        return 0;
    /* site -> row, through a table as long as the sites (small: one per distinct site) */
    uint32_t *at = malloc(x->n_sites * sizeof(*at));
    ga_owner_site_row_t *r = calloc(m->n_entries, sizeof(*r));
    if (at == NULL || r == NULL) {
        free(at);
        free(r);
        return -1;
    }
    for (size_t i = 0; i < x->n_sites; i++)
        at[i] = UINT32_MAX;
    size_t k = 0;
    for (size_t i = 0; i < m->n_entries; i++) {
        const ga_owner_class_t *c = &x->classes[m->entries[i].cls];
        if (at[c->site] == UINT32_MAX) {
            at[c->site] = (uint32_t)k;
            r[k++].site = c->site;
        }
        ga_owner_site_row_t *row = &r[at[c->site]];
        ga_owner_cell_add(&row->cell, &m->entries[i].cell);
        row->phase_bytes[c->phase < GA_PHASES ? c->phase : GA_PHASE_OTHER] += m->entries[i].cell.bytes;
    }
    free(at);
    qsort(r, k, sizeof(*r), by_bytes);
    *rows = r;
    *n = k;
    return 0;
}

void ga_owners_phases(const ga_owners_moment_t *m, const ga_owners_index_t *x, ga_owner_cell_t out[GA_PHASES])
{
    memset(out, 0, GA_PHASES * sizeof(*out));
    for (size_t i = 0; i < m->n_entries; i++) {
        uint8_t p = x->classes[m->entries[i].cls].phase;
        ga_owner_cell_add(&out[p < GA_PHASES ? p : GA_PHASE_OTHER], &m->entries[i].cell);
    }
}

bool ga_owner_mean_age(const ga_owner_cell_t *c, const ga_owners_moment_t *m, int64_t t0, double *events, double *us)
{
    int64_t n = c->blocks - c->before;
    *events = *us = -1;
    if (n <= 0 || m->event == GA_OWNERS_BEFORE_EVENTS)
        return false;
    *events = (double)m->event - (double)c->ev_sum / (double)n;
    if (c->timed > 0 && m->time_us != 0 && t0 != 0)
        *us = (double)(m->time_us - t0) - (double)c->us_sum / (double)c->timed;
    return true;
}

bool ga_owners_moment_check(const ga_owners_moment_t *m, char *why, size_t len)
{
    int64_t sum = 0;
    for (size_t i = 0; i < m->n_entries; i++)
        sum += m->entries[i].cell.bytes;
    if (sum != m->allocated) {
        snprintf(why, len, "%s at event %" PRIu64 ": the owners hold %" PRId64 " bytes, allocated is %" PRId64,
                 ga_owners_moment_name(m->kind), m->event, sum, m->allocated);
        return false;
    }
    if (!m->has_segments)
        return true;
    int64_t res = 0, live = 0, pend = 0;
    for (size_t i = 0; i < m->n_segments; i++) {
        res += (int64_t)m->segments[i].size;
        live += (int64_t)m->segments[i].allocated_bytes;
        pend += (int64_t)m->segments[i].pending_bytes;
    }
    if (res != m->reserved) {
        snprintf(why, len, "%s at event %" PRIu64 ": the segments hold %" PRId64 " bytes, reserved is %" PRId64,
                 ga_owners_moment_name(m->kind), m->event, res, m->reserved);
        return false;
    }
    if (m->active >= 0 && live + pend > m->active) {
        snprintf(why, len,
                 "%s at event %" PRIu64 ": the segments' live and pending bytes (%" PRId64 ") exceed active (%" PRId64
                 ")",
                 ga_owners_moment_name(m->kind), m->event, live + pend, m->active);
        return false;
    }
    return true;
}
