/*
 * verify_cmp.c: the comparison of `galloc replay --verify` (verify.h says
 * what is compared and why, verify_int.h declares it): device events aligned
 * in order, each kind of event alone, and the final segments matched by the
 * segment_alloc that made them.
 *
 * Pool ids are compared by correspondence, not by value: galloc numbers its
 * MemPools {0, 1}, {0, 2}, ... while PyTorch's CUDA-graph pools are (1, 0),
 * (2, 0), ... So each recorded private pool is paired with galloc's pool of
 * the first segment matched with one of its segments (in the record's
 * segment order: its first private pool with galloc's first, and so on), and
 * every later segment must keep the pairing both ways; (0, 0), the default
 * pools, pairs only with (0, 0).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/replay/verify_int.h"

static bool same_event(const ga_dev_event_t *a, const ga_dev_event_t *b)
{
    if (a->action != b->action || a->size != b->size)
        return false;
    return a->action != GA_DEV_SEGMENT_FREE || a->segment == b->segment;
}

/* The galloc segment matching recorded segment s: the same segment_alloc
 * ordinal, or for a segment without one (made before the trace and seeded in
 * address order, or expandable) the same rank among such segments. NULL if
 * none. */
static const ga_snap_segment_t *match_segment(const ga_snap_view_t *rec, size_t s, const ga_snap_view_t *rep)
{
    const ga_snap_segment_t *g = &rec->seg[s];
    size_t rank = 0;
    for (size_t i = 0; g->segment < 0 && i < s; i++)
        rank += rec->seg[i].segment < 0;
    for (size_t j = 0; j < rep->n_seg; j++) {
        if (g->segment >= 0 && rep->seg[j].segment == g->segment)
            return &rep->seg[j];
        if (g->segment < 0 && rep->seg[j].segment < 0 && rank-- == 0)
            return &rep->seg[j];
    }
    return NULL;
}

static const char *state_name(ga_block_state_t s)
{
    return s == GA_BLOCK_ALLOCATED      ? "active_allocated"
           : s == GA_BLOCK_PENDING_FREE ? "active_pending_free"
                                        : "inactive";
}

#define MAX_POOL_PAIRS 256 /* private pools paired; more (never seen) are compared by value */

/* The pairing of recorded private pools with galloc's. */
typedef struct pool_pairs {
    struct {
        int64_t rec[2], rep[2];
    } v[MAX_POOL_PAIRS];
    size_t n;
} pool_pairs_t;

static bool same_pool(const int64_t *x, const int64_t *y)
{
    return x[0] == y[0] && x[1] == y[1];
}

/* Whether recorded pool a corresponds to galloc's pool b (pairing them when
 * neither is paired yet); the difference into out (named by name) if not. */
static void diff_pool(pool_pairs_t *pp, const int64_t *a, const int64_t *b, const char *name, char *out, size_t len)
{
    static const int64_t dflt[2] = {0, 0};
    char ids[128];
    snprintf(ids, sizeof(ids),
             "segment_pool_id (%" PRId64 ", %" PRId64 ") in the snapshot, (%" PRId64 ", %" PRId64 ") in galloc", a[0],
             a[1], b[0], b[1]);
    if (same_pool(a, dflt) || same_pool(b, dflt)) {
        if (!same_pool(a, b))
            snprintf(out, len, "%s: %s", name, ids);
        return;
    }
    for (size_t k = 0; k < pp->n; k++) {
        bool r = same_pool(pp->v[k].rec, a), g = same_pool(pp->v[k].rep, b);
        if (r && g)
            return;
        if (r)
            snprintf(out, len,
                     "%s: %s; the snapshot's pool (%" PRId64 ", %" PRId64 ") is galloc's (%" PRId64 ", %" PRId64 ")",
                     name, ids, a[0], a[1], pp->v[k].rep[0], pp->v[k].rep[1]);
        else if (g)
            snprintf(out, len,
                     "%s: %s; galloc's pool (%" PRId64 ", %" PRId64 ") is the snapshot's (%" PRId64 ", %" PRId64 ")",
                     name, ids, b[0], b[1], pp->v[k].rec[0], pp->v[k].rec[1]);
        if (r || g)
            return;
    }
    if (pp->n == MAX_POOL_PAIRS) {
        if (!same_pool(a, b))
            snprintf(out, len, "%s: %s", name, ids);
        return;
    }
    memcpy(pp->v[pp->n].rec, a, sizeof(pp->v[0].rec));
    memcpy(pp->v[pp->n].rep, b, sizeof(pp->v[0].rep));
    pp->n++;
}

/* Compare one recorded segment with its galloc counterpart (total size, pool,
 * blocks' sizes and states, in that order); "" when equal. */
static void diff_segment(const ga_snap_view_t *rec, const ga_snap_segment_t *a, const ga_snap_view_t *rep,
                         const ga_snap_segment_t *b, pool_pairs_t *pp, char *out, size_t len)
{
    out[0] = '\0';
    char name[64];
    if (a->segment >= 0)
        snprintf(name, sizeof(name), "the segment of segment_alloc #%" PRId64 " (0-based)", a->segment);
    else
        snprintf(name, sizeof(name), "the segment at 0x%" PRIx64 " (made before the trace)", a->addr);
    if (b == NULL) {
        snprintf(out, len, "%s of %" PRIu64 " bytes: not in galloc's final segments", name, a->total_size);
        return;
    }
    if (a->total_size != b->total_size) {
        snprintf(out, len, "%s: total_size %" PRIu64 " in the snapshot, %" PRIu64 " in galloc", name, a->total_size,
                 b->total_size);
        return;
    }
    diff_pool(pp, a->pool_id, b->pool_id, name, out, len);
    if (out[0] != '\0')
        return;
    for (size_t k = 0; k < a->n_blocks || k < b->n_blocks; k++) {
        const ga_snap_block_t *x = k < a->n_blocks ? &rec->blk[a->first_block + k] : NULL;
        const ga_snap_block_t *y = k < b->n_blocks ? &rep->blk[b->first_block + k] : NULL;
        if (x != NULL && y != NULL && x->size == y->size && x->state == y->state)
            continue;
        char xs[80] = "none", ys[80] = "none";
        if (x != NULL)
            snprintf(xs, sizeof(xs), "%" PRIu64 " bytes %s", x->size, state_name(x->state));
        if (y != NULL)
            snprintf(ys, sizeof(ys), "%" PRIu64 " bytes %s", y->size, state_name(y->state));
        snprintf(out, len, "%s: block %zu: snapshot %s, galloc %s", name, k, xs, ys);
        return;
    }
}

/* Whether a[i..] and b[j..] agree for GA_VERIFY_RUN events (or to the end of
 * the shorter one, at least one event). */
static bool run_agrees(const ga_dev_event_t *const *a, size_t na, size_t i, const ga_dev_event_t *const *b, size_t nb,
                       size_t j)
{
    size_t k = 0;
    for (; k < GA_VERIFY_RUN && i + k < na && j + k < nb; k++)
        if (!same_event(a[i + k], b[j + k]))
            return false;
    return k > 0;
}

/* Align a and b (events in order): agreeing pairs are counted; at a
 * difference the smaller resync skip wins (see GA_VERIFY_RESYNC), else the
 * pair counts as one difference. *fa, *fb: the first difference's positions
 * (na, nb-ish when one side only runs longer); false when there is none. */
static bool align(const ga_dev_event_t *const *a, size_t na, const ga_dev_event_t *const *b, size_t nb,
                  ga_verify_kind_t *out, size_t *fa, size_t *fb)
{
    size_t i = 0, j = 0;
    bool diff = false;
    out->total = na > nb ? na : nb;
    out->agree = 0;
    while (i < na && j < nb) {
        if (same_event(a[i], b[j])) {
            out->agree++;
            i++, j++;
            continue;
        }
        if (!diff) {
            diff = true;
            *fa = i;
            *fb = j;
        }
        size_t d = 1;
        for (; d <= GA_VERIFY_RESYNC; d++) {
            if (i + d < na && run_agrees(a, na, i + d, b, nb, j)) {
                i += d;
                break;
            }
            if (j + d < nb && run_agrees(a, na, i, b, nb, j + d)) {
                j += d;
                break;
            }
        }
        if (d > GA_VERIFY_RESYNC)
            i++, j++;
    }
    if (!diff && na != nb) {
        diff = true;
        *fa = i;
        *fb = j;
    }
    return diff;
}

/* The events of v of kind k (all device events when k is GA_DEV_N_ACTIONS),
 * as pointers, in order, orphan entries left out (no replay can reproduce
 * them; the report names them). NULL when out of host memory (with n set to
 * 0). */
static const ga_dev_event_t **pick(const ga_snap_view_t *v, int k, size_t *n)
{
    const ga_dev_event_t *src = k < GA_DEV_ALLOC ? v->ev : v->bev;
    size_t ns = k < GA_DEV_ALLOC ? v->n_ev : v->n_bev;
    if (k == GA_DEV_N_ACTIONS) {
        src = v->ev;
        ns = v->n_ev;
    }
    const ga_dev_event_t **p = malloc((ns ? ns : 1) * sizeof(*p));
    *n = 0;
    if (p == NULL)
        return NULL;
    for (size_t x = 0; x < ns; x++)
        if (!src[x].orphan && (k == GA_DEV_N_ACTIONS || (int)src[x].action == k))
            p[(*n)++] = &src[x];
    return p;
}

void ga_verify_compare(const ga_snap_view_t *rec, const ga_snap_view_t *rep, ga_verify_cmp_t *c)
{
    memset(c, 0, sizeof(*c));
    for (int k = 0; k <= GA_DEV_N_ACTIONS; k++) {
        size_t na, nb, fa = 0, fb = 0;
        const ga_dev_event_t **a = pick(rec, k, &na), **b = pick(rep, k, &nb);
        ga_verify_kind_t kc = {0};
        bool diff = a != NULL && b != NULL && align(a, na, b, nb, &kc, &fa, &fb);
        if (k < GA_DEV_N_ACTIONS) {
            c->kind[k] = kc;
        } else {
            c->ev_total = kc.total;
            c->ev_agree = kc.agree;
            c->diverged = diff;
            /* as indices into ev (pick left orphans out); past the end: that side ran out */
            c->first = fa < na ? (size_t)(a[fa] - rec->ev) : rec->n_ev;
            c->first_rep = fb < nb ? (size_t)(b[fb] - rep->ev) : rep->n_ev;
        }
        free(a);
        free(b);
    }
    c->seg_total = rec->n_seg > rep->n_seg ? rec->n_seg : rep->n_seg;
    pool_pairs_t *pp = calloc(1, sizeof(*pp));
    if (pp == NULL) { /* cannot compare the segments: say so rather than agree */
        snprintf(c->seg_first, sizeof(c->seg_first), "out of host memory comparing the final segments");
        return;
    }
    for (size_t s = 0; s < rec->n_seg; s++) {
        char d[512];
        diff_segment(rec, &rec->seg[s], rep, match_segment(rec, s, rep), pp, d, sizeof(d));
        if (d[0] == '\0')
            c->seg_agree++;
        else if (c->seg_first[0] == '\0')
            snprintf(c->seg_first, sizeof(c->seg_first), "%s", d);
    }
    if (c->seg_first[0] == '\0' && rep->n_seg > rec->n_seg)
        snprintf(c->seg_first, sizeof(c->seg_first), "galloc holds %zu final segments, the snapshot %zu", rep->n_seg,
                 rec->n_seg);
    free(pp);
}

size_t ga_verify_compared(const ga_verify_cmp_t *c)
{
    size_t n = c->ev_total + c->seg_total;
    for (int k = 0; k < GA_DEV_N_ACTIONS; k++)
        n += c->kind[k].total;
    return n;
}
