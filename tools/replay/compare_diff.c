/*
 * compare_diff.c: two records' moments side by side (compare.h,
 * ga_compare_moment). Each record has its own owners index, so a site is
 * matched by its name (the key docs/owners.md defines: a file and line, a
 * node, an op, an annotation), the one thing that means the same in both; a
 * site in one record only counts as 0 in the other. O(s log s) in the sites
 * live at the two moments.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/replay/compare.h"

void ga_compare_moment_free(ga_compare_moment_t *m)
{
    free(m->sites);
    memset(m, 0, sizeof(*m));
}

/* A moment's sites with their names, sorted by name for the merge. */
typedef struct named {
    const char *name;
    int64_t bytes, blocks;
} named_t;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_t *)a)->name, ((const named_t *)b)->name);
}

/* m's sites (of owners w) into *out, by name; n of them. 0 or -1 (host memory). */
static int named_sites(const ga_owners_t *w, const ga_owners_moment_t *m, int64_t phase[GA_PHASES], named_t **out,
                       size_t *n)
{
    *out = NULL;
    *n = 0;
    if (w == NULL || m == NULL || !m->valid)
        return 0;
    ga_owner_site_row_t *rows;
    size_t k;
    if (ga_owners_sites(m, w->index, &rows, &k) != 0)
        return -1;
    named_t *v = malloc((k ? k : 1) * sizeof(*v));
    if (v == NULL) {
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < k; i++) {
        v[i] = (named_t){w->index->sites[rows[i].site].key, rows[i].cell.bytes, rows[i].cell.blocks};
        for (int p = 0; p < GA_PHASES; p++)
            phase[p] += rows[i].phase_bytes[p];
    }
    free(rows);
    qsort(v, k, sizeof(*v), by_name);
    *out = v;
    *n = k;
    return 0;
}

static int64_t magnitude(int64_t v)
{
    return v < 0 ? -v : v;
}

/* Most change first; then the larger figure (a big unchanged site before a
 * small one); then by name, so the order is the same every run. */
static int by_change(const void *x, const void *y)
{
    const ga_compare_site_t *a = x, *b = y;
    int64_t ca = magnitude(a->b_bytes - a->a_bytes), cb = magnitude(b->b_bytes - b->a_bytes);
    if (ca != cb)
        return ca > cb ? -1 : 1;
    int64_t ma = a->a_bytes > a->b_bytes ? a->a_bytes : a->b_bytes;
    int64_t mb = b->a_bytes > b->b_bytes ? b->a_bytes : b->b_bytes;
    if (ma != mb)
        return ma > mb ? -1 : 1;
    return strcmp(a->name, b->name);
}

int ga_compare_moment(const ga_owners_t *wa, const ga_owners_moment_t *ma, const ga_owners_t *wb,
                      const ga_owners_moment_t *mb, ga_compare_moment_t *out)
{
    memset(out, 0, sizeof(*out));
    out->a_valid = wa != NULL && ma != NULL && ma->valid;
    out->b_valid = wb != NULL && mb != NULL && mb->valid;
    named_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (named_sites(wa, ma, out->a_phase, &a, &na) != 0 || named_sites(wb, mb, out->b_phase, &b, &nb) != 0) {
        free(a);
        return -1;
    }
    out->sites = malloc((na + nb ? na + nb : 1) * sizeof(*out->sites));
    if (out->sites == NULL) {
        free(a);
        free(b);
        return -1;
    }
    size_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) { /* merge the two name-sorted lists */
        int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i].name, b[j].name);
        ga_compare_site_t *s = &out->sites[k++];
        memset(s, 0, sizeof(*s));
        if (c <= 0) {
            s->name = a[i].name;
            s->a_bytes = a[i].bytes;
            s->a_blocks = a[i++].blocks;
        }
        if (c >= 0) {
            s->name = b[j].name;
            s->b_bytes = b[j].bytes;
            s->b_blocks = b[j++].blocks;
        }
        out->a_total += s->a_bytes;
        out->b_total += s->b_bytes;
    }
    out->n_sites = k;
    qsort(out->sites, k, sizeof(*out->sites), by_change);
    if (out->a_valid) {
        out->a_reserved = ma->reserved;
        out->a_event = ma->event;
    }
    if (out->b_valid) {
        out->b_reserved = mb->reserved;
        out->b_event = mb->event;
    }
    free(a);
    free(b);
    return 0;
}
