/*
 * seed_resv.c: the mapped pages of expandable reservations, walked backwards
 * from the final runs (see seed_resv.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/snapshot/seed_resv.h"

static uint64_t dist(const ga_seed_resv_t *v, uint64_t addr)
{
    return addr < v->base ? v->base - addr : addr >= v->end ? addr - v->end + 1 : 0;
}

/* The reservation of stream nearest to addr (reservations are far apart:
 * each spans more than the device's memory), or NULL. */
static ga_seed_resv_t *nearest(const ga_seed_resvs_t *r, uint64_t stream, uint64_t addr)
{
    ga_seed_resv_t *best = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].stream == stream && (best == NULL || dist(&r->v[i], addr) < dist(best, addr)))
            best = &r->v[i];
    return best;
}

/* The most pages one reservation's flags may cover: 2^24 (32 TiB of small
 * pages), above any device; a garbled address cannot ask for more. */
#define MAX_PAGES ((uint64_t)1 << 24)

/* Whether [addr, addr + size) is whole pages of v, counted from its base,
 * and v stays within MAX_PAGES with it. */
static bool aligned(const ga_seed_resv_t *v, uint64_t addr, uint64_t size)
{
    uint64_t off = addr < v->base ? v->base - addr : addr - v->base;
    if (size == 0 || size > UINT64_MAX - addr || off % v->page != 0 || size % v->page != 0)
        return false;
    uint64_t lo = addr < v->base ? addr : v->base, hi = addr + size > v->end ? addr + size : v->end;
    return (hi - lo) / v->page <= MAX_PAGES;
}

static void widen(ga_seed_resv_t *v, uint64_t addr, uint64_t size)
{
    if (addr < v->base)
        v->base = addr;
    if (addr + size > v->end)
        v->end = addr + size;
}

int ga_seed_resv_run(ga_seed_resvs_t *r, uint64_t stream, bool small, uint64_t addr, uint64_t size, char *err,
                     size_t errlen)
{
    ga_seed_resv_t *v = NULL;
    for (size_t i = 0; i < r->n && v == NULL; i++)
        if (r->v[i].stream == stream && r->v[i].small == small)
            v = &r->v[i];
    if (v == NULL) {
        ga_seed_resv_t *nv = ga_grow(r->v, &r->cap, r->n, sizeof(*nv), 4);
        if (nv == NULL)
            goto nomem;
        r->v = nv;
        v = &r->v[r->n++];
        *v = (ga_seed_resv_t){.stream = stream,
                              .base = addr,
                              .end = addr,
                              .page = small ? GA_SEED_SMALL_PAGE : GA_SEED_LARGE_PAGE,
                              .small = small};
    }
    if (!aligned(v, addr, size)) {
        snprintf(err, errlen,
                 "expandable segment at 0x%llx (%llu bytes): not whole %llu-byte pages of its reservation (or too far "
                 "from its other runs)",
                 (unsigned long long)addr, (unsigned long long)size, (unsigned long long)v->page);
        return -1;
    }
    widen(v, addr, size);
    ga_seed_run_t *nf = ga_grow(r->fin, &r->cap_fin, r->n_fin, sizeof(*nf), 8);
    if (nf == NULL)
        goto nomem;
    r->fin = nf;
    r->fin[r->n_fin++] = (ga_seed_run_t){.addr = addr, .size = size, .stream = stream, .small = small};
    return 0;
nomem:
    snprintf(err, errlen, "out of host memory");
    return -1;
}

int ga_seed_resv_see(ga_seed_resvs_t *r, uint64_t stream, uint64_t addr, uint64_t size, char *err, size_t errlen)
{
    ga_seed_resv_t *v = nearest(r, stream, addr);
    if (v == NULL) {
        snprintf(err, errlen,
                 "segment_map/unmap at 0x%llx on stream %llu: no expandable segment of that stream is left at the "
                 "end, its reservation is not reconstructed",
                 (unsigned long long)addr, (unsigned long long)stream);
        return -1;
    }
    if (!aligned(v, addr, size)) {
        snprintf(err, errlen,
                 "segment_map/unmap at 0x%llx (%llu bytes): not whole %llu-byte pages of the reservation at 0x%llx (or "
                 "too far from it)",
                 (unsigned long long)addr, (unsigned long long)size, (unsigned long long)v->page,
                 (unsigned long long)v->base);
        return -1;
    }
    widen(v, addr, size);
    return 0;
}

static void mark(ga_seed_resv_t *v, uint64_t addr, uint64_t size, uint8_t on)
{
    if (addr < v->base || addr + size > v->end)
        return; /* outside what was seen: cannot happen after ga_seed_resv_see */
    memset(v->mapped + (addr - v->base) / v->page, on, size / v->page);
}

int ga_seed_resv_ready(ga_seed_resvs_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        ga_seed_resv_t *v = &r->v[i];
        size_t pages = (size_t)((v->end - v->base) / v->page);
        v->mapped = calloc(pages ? pages : 1, 1);
        if (v->mapped == NULL)
            return -1;
    }
    for (size_t k = 0; k < r->n_fin; k++) {
        const ga_seed_run_t *f = &r->fin[k];
        for (size_t i = 0; i < r->n; i++)
            if (r->v[i].stream == f->stream && r->v[i].small == f->small)
                mark(&r->v[i], f->addr, f->size, 1);
    }
    return 0;
}

void ga_seed_resv_undo(ga_seed_resvs_t *r, uint64_t stream, uint64_t addr, uint64_t size, bool was_map)
{
    ga_seed_resv_t *v = nearest(r, stream, addr);
    if (v != NULL && v->mapped != NULL)
        mark(v, addr, size, was_map ? 0 : 1);
}

int ga_seed_resv_runs(const ga_seed_resvs_t *r, ga_seed_run_t **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < r->n; i++) {
        const ga_seed_resv_t *v = &r->v[i];
        size_t pages = (size_t)((v->end - v->base) / v->page);
        for (size_t p = 0; p < pages;) {
            if (!v->mapped[p]) {
                p++;
                continue;
            }
            size_t q = p;
            while (q < pages && v->mapped[q])
                q++;
            ga_seed_run_t *nv = ga_grow(*out, &cap, *n, sizeof(*nv), 8);
            if (nv == NULL) {
                free(*out);
                *out = NULL;
                return -1;
            }
            *out = nv;
            (*out)[(*n)++] = (ga_seed_run_t){.addr = v->base + p * v->page,
                                             .size = (q - p) * v->page,
                                             .stream = v->stream,
                                             .resv = v->base,
                                             .page = v->page,
                                             .small = v->small};
            p = q;
        }
    }
    return 0;
}

void ga_seed_resv_free(ga_seed_resvs_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].mapped);
    free(r->v);
    free(r->fin);
    memset(r, 0, sizeof(*r));
}
