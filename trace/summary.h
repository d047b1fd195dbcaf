/*
 * summary.h: PyTorch's torch.cuda.memory_summary() text table from a copy of
 * the stats, character for character (layout: torch/cuda/memory.py
 * memory_summary, pytorch/pytorch 00b65a04a2d30e498eedcb1e3476abd547f428f1;
 * see summary.c).
 *
 * Locking: none; reads only the caller's copy of the stats.
 */
#ifndef GA_TRACE_SUMMARY_H
#define GA_TRACE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include <galloc/galloc_sleep.h>
#include <galloc/galloc_stats.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes that always hold a summary whose figures fit their columns (47 lines
 * of 78 bytes); a figure wider than its column widens its line, so size a
 * buffer by the return value, not by this, when figures may be huge. */
#define GA_TRACE_SUMMARY_SIZE 4096

/*
 * ga_trace_summary: write memory_summary(device, abbreviated) for stats s into
 * buf (len bytes, NUL-terminated, cut if too small), snprintf-style.
 * Returns the summary's length in bytes without the NUL (a return >= len
 * means buf was too small); 0 if s is NULL.
 */
size_t ga_trace_summary(char *buf, size_t len, const galloc_stats_t *s, int device, bool abbreviated);

/*
 * ga_trace_summary_sleep: the section galloc_memory_summary appends after
 * the table when the allocator has sleep tags (galloc_sleep.h): tags asleep,
 * device memory asleep, host copies, calls; same width, snprintf-style as
 * ga_trace_summary. PyTorch has no such section: without tags nothing is
 * appended and the summary stays PyTorch's.
 */
size_t ga_trace_summary_sleep(char *buf, size_t len, const galloc_sleep_stats_t *s);

#ifdef __cplusplus
}
#endif
#endif /* GA_TRACE_SUMMARY_H */
