/*
 * verify.h: `galloc replay --verify SNAPSHOT`: replay a PyTorch snapshot's
 * trace through galloc under the snapshot's own settings and compare what
 * galloc's allocator did with what the traced allocator recorded.
 *
 * Both sides, the recorded snapshot and the one galloc writes of its replay,
 * are read by one reader (snap_view.h); verify.c replays, compares and
 * reports.
 *
 * What is compared, and why addresses are not: two devices (or PyTorch and
 * the sim device) hand out different virtual addresses, so an address says
 * nothing about the policy. The device events (segment_alloc, segment_free,
 * segment_map, segment_unmap, oom) are compared in order by action and size;
 * a segment_free must also release the same segment on both sides, named by
 * the ordinal of the segment_alloc that created it (its identity relative to
 * the run, not its address). After a difference both sequences are
 * re-aligned (the smallest skip on either side, within a small window, after
 * which a few events agree again), so an early tie-break that adds or drops
 * one event costs that event only. Each kind of event (alloc,
 * free_requested, free_completed and the device events) is also aligned and
 * counted alone, by size (and segment for segment_free). The final segments
 * are matched the same way and compared by total size, by pool and by their
 * blocks' sizes and states in order. Pools are compared by correspondence,
 * since galloc's MemPool ids are not PyTorch's: the first private pool of the
 * record (in its segment order) is paired with galloc's pool of the segment
 * matched with it, and so on, and every segment must keep the pairing;
 * (0, 0), the default pools, pairs only with itself (verify_cmp.c).
 *
 * Orphan entries (snap_view.h: a free of an address the trace never
 * allocated and no segment held, a segment freed or pages unmapped twice) are
 * named in the report and left out of the comparison: no replay reproduces
 * them. A record with nothing the replay reproduces (no trace entries, no
 * trace at all, only snapshot, annotate or orphan entries) is "nothing to
 * verify", with the reason: its final segments are the replay's own starting
 * state, and comparing them with themselves would prove nothing.
 *
 * Not thread-safe (one verification at a time per thread); no global state.
 */
#ifndef GA_TOOLS_REPLAY_VERIFY_H
#define GA_TOOLS_REPLAY_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/job/job.h"
#include "tools/readers/trace_reader.h"
#include "tools/snapshot/snap_view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of a verification (from galloc replay's command line). */
typedef struct ga_verify_opts {
    const char *backend; /* NULL = sim */
    const char *conf;    /* --conf, NULL = the snapshot's recorded settings (or the defaults) */
    bool json;           /* write JSON entries (the caller writes the document's head and end) */
} ga_verify_opts_t;

/* Exit statuses of a verification (galloc replay --verify, ga_verify_unit). */
#define GA_VERIFY_AGREES 0   /* every compared figure agrees */
#define GA_VERIFY_DIVERGES 1 /* some device event or final segment differs */
#define GA_VERIFY_CANNOT                                                                                               \
    2                       /* cannot verify: bad input or usage, a replay that failed, or a trace
                                starting mid-run whose state at its first entry cannot be rebuilt */
#define GA_VERIFY_NOTHING 3 /* nothing to verify: the record holds nothing the replay reproduces */

/*
 * ga_verify_unit: verify the loaded snapshot unit u (on its device's size,
 * from its rebuilt start state), printing the report (text, or one JSON entry
 * of "traces" preceded by a comma unless first). Returns one of the exit
 * statuses above (GA_VERIFY_CANNOT's reason also goes to stderr).
 */
int ga_verify_unit(const ga_job_unit_t *u, const ga_verify_opts_t *o, bool first, FILE *out);

/* ga_verify_worst: the status of several units (or files) together: cannot
 * verify, then diverges, then agrees; nothing to verify only when every unit
 * had nothing. GA_VERIFY_NOTHING is the identity to start from. */
int ga_verify_worst(int a, int b);

/* ga_verify_json_begin / _end: the document around the entries. */
void ga_verify_json_begin(FILE *out);
void ga_verify_json_end(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_REPLAY_VERIFY_H */
