/*
 * summary.c: torch.cuda.memory_summary's table (torch/cuda/memory.py,
 * memory_summary; matched against pytorch/pytorch main at
 * 00b65a04a2d30e498eedcb1e3476abd547f428f1, the 2.x layout with
 * "Requested memory" and 6-wide size cells with 3-letter units; releases
 * before 2.0 printed 7-wide cells with "KB"/"MB" units and no requested row).
 *
 * The table is 75 columns; every line is printed as "|" line "|" and a
 * newline. Sizes: _format_size(value, reference): divide value (floor, as
 * Python's //) and reference by 1024 while the reference is at least 768 KiB,
 * at most five times, then "%6d <unit>" with units "B  ", "KiB", "MiB", "GiB",
 * "TiB", "PiB". Counts: _format_count: divide by 1000 while the reference is
 * at least 750,000, at most twice, then "%7d <unit> " with units " ", "K",
 * "M". The reference is the "all" row's value in the same column (so the pool
 * rows share its unit) and, for the oversize rows, the value itself.
 */
#include "trace/summary.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct out {
    char *buf;  /* the caller's buffer (NULL: only measure) */
    size_t len; /* its size */
    size_t pos; /* bytes the full text needs so far */
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = o->pos < o->len ? o->buf + o->pos : NULL;
    size_t room = o->pos < o->len ? o->len - o->pos : 0;
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->pos += (size_t)n;
}

/* Python's a // b for b > 0 (floor, not C's truncation). */
static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static void format_size(char *cell, size_t n, int64_t sz, int64_t pref)
{
    static const char *const units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double p = (double)pref; /* Python turns pref_sz into a float at the first /= */
    size_t u = 0;
    while (u + 1 < sizeof(units) / sizeof(units[0]) && p >= 768.0 * 1024) {
        u++;
        sz = floordiv(sz, 1024);
        p /= 1024;
    }
    snprintf(cell, n, "%6" PRId64 " %s", sz, units[u]);
}

static void format_count(char *cell, size_t n, int64_t cnt, int64_t pref)
{
    static const char *const units[] = {" ", "K", "M"};
    double p = (double)pref;
    size_t u = 0;
    while (u + 1 < sizeof(units) / sizeof(units[0]) && p >= 750.0 * 1000) {
        u++;
        cnt = floordiv(cnt, 1000);
        p /= 1000;
    }
    snprintf(cell, n, "%7" PRId64 " %s ", cnt, units[u]);
}

typedef void (*format_fn)(char *cell, size_t n, int64_t v, int64_t pref);

static void row(out_t *o, const char *label, const galloc_stat_t *st, const galloc_stat_t *ref, format_fn fmt)
{
    char c[4][48];
    fmt(c[0], sizeof(c[0]), st->current, ref->current);
    fmt(c[1], sizeof(c[1]), st->peak, ref->peak);
    fmt(c[2], sizeof(c[2]), st->allocated, ref->allocated);
    fmt(c[3], sizeof(c[3]), st->freed, ref->freed);
    put(o, "| %-21s | %s | %s | %s | %s |\n", label, c[0], c[1], c[2], c[3]);
}

static void rule(out_t *o, char c)
{
    char line[76];
    for (int i = 0; i < 75; i++)
        line[i] = c;
    line[75] = '\0';
    put(o, "|%s|\n", line);
}

size_t ga_trace_summary(char *buf, size_t len, const galloc_stats_t *s, int device, bool abbreviated)
{
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    if (s == NULL)
        return 0;
    out_t o = {.buf = buf, .len = buf != NULL ? len : 0, .pos = 0};

    /* memory_summary's metrics_to_display, in its order. */
    static const struct {
        size_t offset; /* of the galloc_stat_t[3] in galloc_stats_t */
        const char *label;
        bool bytes;
    } metrics[] = {
        {offsetof(galloc_stats_t, allocated_bytes), "Allocated memory", true},
        {offsetof(galloc_stats_t, active_bytes), "Active memory", true},
        {offsetof(galloc_stats_t, requested_bytes), "Requested memory", true},
        {offsetof(galloc_stats_t, reserved_bytes), "GPU reserved memory", true},
        {offsetof(galloc_stats_t, inactive_split_bytes), "Non-releasable memory", true},
        {offsetof(galloc_stats_t, allocation), "Allocations", false},
        {offsetof(galloc_stats_t, active), "Active allocs", false},
        {offsetof(galloc_stats_t, segment), "GPU reserved segments", false},
        {offsetof(galloc_stats_t, inactive_split), "Non-releasable allocs", false},
    };

    rule(&o, '=');
    put(&o, "| %16s PyTorch CUDA memory summary, device ID %-17d |\n", "", device);
    rule(&o, '-');
    put(&o, "|  %9s CUDA OOMs: %-12" PRId64 " | %6s cudaMalloc retries: %-8" PRId64 "  |\n", "", s->num_ooms, "",
        s->num_alloc_retries);
    rule(&o, '=');
    put(&o, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");
    for (size_t m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
        const galloc_stat_t *arr = (const galloc_stat_t *)((const char *)s + metrics[m].offset);
        format_fn fmt = metrics[m].bytes ? format_size : format_count;
        rule(&o, '-');
        row(&o, metrics[m].label, &arr[GALLOC_STAT_ALL], &arr[GALLOC_STAT_ALL], fmt);
        if (!abbreviated) {
            row(&o, "      from large pool", &arr[GALLOC_STAT_LARGE_POOL], &arr[GALLOC_STAT_ALL], fmt);
            row(&o, "      from small pool", &arr[GALLOC_STAT_SMALL_POOL], &arr[GALLOC_STAT_ALL], fmt);
        }
    }
    rule(&o, '-');
    row(&o, "Oversize allocations", &s->oversize_allocations, &s->oversize_allocations, format_count);
    rule(&o, '-');
    row(&o, "Oversize GPU segments", &s->oversize_segments, &s->oversize_segments, format_count);
    rule(&o, '=');
    return o.pos;
}

/* A size cell scaled by its own value, as memory_summary's oversize rows. */
static const char *size_cell(char *cell, size_t n, uint64_t v)
{
    format_size(cell, n, (int64_t)v, (int64_t)v);
    size_t end = strlen(cell);
    while (end > 0 && cell[end - 1] == ' ') /* "0 B  " */
        cell[--end] = '\0';
    const char *c = cell;
    while (*c == ' ')
        c++;
    return c;
}

size_t ga_trace_summary_sleep(char *buf, size_t len, const galloc_sleep_stats_t *s)
{
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    if (s == NULL)
        return 0;
    out_t o = {.buf = buf, .len = buf != NULL ? len : 0, .pos = 0};
    char c[4][48], cell[64];
    put(&o, "| %24s galloc sleep and wake %-26s |\n", "", "");
    rule(&o, '-');
    snprintf(cell, sizeof(cell), "%" PRIu64 " asleep of %" PRIu64, s->tags_asleep, s->tags);
    put(&o, "| %-21s | %-49s |\n", "Tags", cell);
    snprintf(cell, sizeof(cell), "%s (slept %s, woken %s)", size_cell(c[0], sizeof(c[0]), s->bytes_asleep),
             size_cell(c[1], sizeof(c[1]), s->bytes_slept), size_cell(c[2], sizeof(c[2]), s->bytes_woken));
    put(&o, "| %-21s | %-49s |\n", "Device memory asleep", cell);
    snprintf(cell, sizeof(cell), "%s (peak %s)", size_cell(c[0], sizeof(c[0]), s->bytes_offloaded),
             size_cell(c[3], sizeof(c[3]), s->peak_bytes_offloaded));
    put(&o, "| %-21s | %-49s |\n", "Offloaded to host", cell);
    snprintf(cell, sizeof(cell), "%" PRIu64 " sleeps, %" PRIu64 " wakes, %" PRIu64 " failed", s->num_sleep, s->num_wake,
             s->num_failed);
    put(&o, "| %-21s | %-49s |\n", "Calls", cell);
    rule(&o, '=');
    return o.pos;
}
