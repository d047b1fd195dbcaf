/*
 * seed_resv.h (private to tools/snapshot): the mapped pages of every
 * expandable segment's reservation at a mid-run trace's first entry, for
 * seed.c.
 *
 * A snapshot shows an expandable segment as one entry per contiguous mapped
 * run (is_expandable, address = the run's start, total_size = its bytes) and
 * its trace as segment_map / segment_unmap entries; the reservation itself
 * (its base and its size) is never recorded. A reservation is known here by
 * (stream, pool) from the final runs, as PyTorch keeps one per stream and
 * pool, and its base is taken as the lowest address any run or map/unmap
 * entry of it shows: PyTorch maps a new reservation from its start and only
 * unmaps free pages, so a lower start would mean pages that stayed unmapped
 * through the whole window, which no decision in it could tell apart.
 * PyTorch makes a second reservation for a stream and pool only when the
 * first (1 1/8 of the device) has no room left for a request; the runs of
 * two such reservations are taken here for one, and seeding the range
 * between them fails (seed_apply.c says why).
 *
 * Use: ga_seed_resv_run for every final run, ga_seed_resv_see for every
 * map/unmap entry of the trace, ga_seed_resv_ready, then the trace backwards
 * through ga_seed_resv_undo, and ga_seed_resv_runs for the runs then.
 */
#ifndef GA_TOOLS_SNAPSHOT_SEED_RESV_H
#define GA_TOOLS_SNAPSHOT_SEED_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PyTorch's pages: kSmallBuffer for the small pool, kLargeBuffer for the large. */
#define GA_SEED_SMALL_PAGE ((uint64_t)2 << 20)
#define GA_SEED_LARGE_PAGE ((uint64_t)20 << 20)

/* One mapped run at the point reached. */
typedef struct ga_seed_run {
    uint64_t addr, size, stream;
    uint64_t resv, page; /* its reservation's base and page size */
    bool small;
} ga_seed_run_t;

typedef struct ga_seed_resv {
    uint64_t stream, base, end; /* [base, end): every address seen, page aligned */
    uint64_t page;
    bool small;
    uint8_t *mapped; /* (end - base) / page flags, after ga_seed_resv_ready */
} ga_seed_resv_t;

typedef struct ga_seed_resvs {
    ga_seed_resv_t *v;
    size_t n, cap;
    ga_seed_run_t *fin; /* the final runs, marked by ga_seed_resv_ready */
    size_t n_fin, cap_fin;
} ga_seed_resvs_t;

/* A final run (a segment with is_expandable). 0, or -1 with err. */
int ga_seed_resv_run(ga_seed_resvs_t *r, uint64_t stream, bool small, uint64_t addr, uint64_t size, char *err,
                     size_t errlen);
/* A segment_map / segment_unmap entry of the trace: widens its reservation's
 * known range. 0, or -1 with err (no reservation of its stream in the final
 * runs, not page aligned). */
int ga_seed_resv_see(ga_seed_resvs_t *r, uint64_t stream, uint64_t addr, uint64_t size, char *err, size_t errlen);
/* The page flags, with the final runs mapped. 0, or -1 (out of host memory). */
int ga_seed_resv_ready(ga_seed_resvs_t *r);
/* Undo one entry: a segment_map (the pages were unmapped before it) or a
 * segment_unmap (they were mapped). */
void ga_seed_resv_undo(ga_seed_resvs_t *r, uint64_t stream, uint64_t addr, uint64_t size, bool was_map);
/* The runs mapped at the point reached, in address order per reservation:
 * *out (malloc'd, the caller frees it) of *n. 0, or -1 (out of host memory). */
int ga_seed_resv_runs(const ga_seed_resvs_t *r, ga_seed_run_t **out, size_t *n);
void ga_seed_resv_free(ga_seed_resvs_t *r);

#endif /* GA_TOOLS_SNAPSHOT_SEED_RESV_H */
