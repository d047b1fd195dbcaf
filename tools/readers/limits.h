/*
 * limits.h: what a trace file may claim and what a reader may hold for it,
 * the bounds every reader checks (docs/trace-format.md, "Memory bounds").
 * Hostile input (a gzip bomb, a size near 2^64, a count no file could hold)
 * is refused with a message naming the file and the bound, before memory is
 * spent on it.
 */
#ifndef GA_TOOLS_READERS_LIMITS_H
#define GA_TOOLS_READERS_LIMITS_H

#include <stdint.h>

/* The largest size a recorded run can have allocated or reserved on one
 * device, 16 TiB: sixteen times the largest device memory announced (1 TB,
 * NVIDIA's Rubin Ultra; shipping parts have at most 288 GB). PyTorch records
 * a segment or block below its device's total, because the driver allocated
 * it; larger is a garbled or hostile file. Requests that failed (an oom
 * entry, an RMM "allocate failure") may be any size: a buggy job can ask for
 * petabytes, and the replay reports that OOM too. galloc's own text format is
 * not checked: it is the way to ask "what if" of any size. */
#define GA_TRACE_BYTES_MAX ((uint64_t)16 << 40)

/* What a reader may hold of a gzip input whose every inflated byte it keeps
 * (a snapshot pickle, parsed whole) or whose events it keeps (a Chrome trace,
 * sorted by time): GA_HOLD_SLACK plus GA_HOLD_RATIO times the compressed
 * bytes read so far. Real snapshots inflate about 16-fold (the H200
 * recordings of tests/tools/data/h200: 16.4 to 16.9) and profiler traces 18
 * to 30-fold, keeping 40 bytes per memory event and 24 per enclosing range of
 * ~250 bytes of JSON each; deflate reaches
 * 1032-fold on a bomb of zeros, so a bomb is refused after inflating about
 * its slack. A plain file has no such bound: its size on disk is what it
 * holds (a snapshot is mapped, GA_SNAPFILE_MAX at most). */
#define GA_HOLD_RATIO 64
#define GA_HOLD_SLACK ((uint64_t)64 << 20)

#endif /* GA_TOOLS_READERS_LIMITS_H */
