/*
 * progress.c: see progress.h. "\r" + "\033[K" rewrite one line in place.
 */
#include "tools/replay/progress.h"

#include <stdio.h>
#include <time.h>

#include "tools/readers/units.h"
#include "tools/replay/replay_cli.h"

#define BAR 30 /* characters of the bar */

double ga_progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void (*observer)(void *ctx, double fraction, uint64_t events); /* ga_replay_progress_observe */
static void *observer_ctx;

void ga_replay_progress_observe(void (*fn)(void *ctx, double fraction, uint64_t events), void *ctx)
{
    observer = fn;
    observer_ctx = ctx;
}

void ga_progress_start(ga_progress_t *p, const char *label, bool enabled)
{
    p->enabled = enabled;
    p->drawn = false;
    p->start = p->last = ga_progress_now();
    p->label = label;
}

void ga_progress_update(void *ctx, double fraction, uint64_t events)
{
    ga_progress_t *p = ctx;
    if (observer != NULL)
        observer(observer_ctx, fraction, events);
    if (!p->enabled)
        return;
    double t = ga_progress_now();
    if (t - p->start < 0.5 || t - p->last < 0.1)
        return;
    p->last = t;
    char count[32];
    ga_units_format_count(events, count, sizeof(count));
    if (fraction >= 0) {
        char bar[BAR + 1];
        int full = (int)(fraction * BAR + 0.5);
        for (int i = 0; i < BAR; i++)
            bar[i] = i < full ? '#' : '.';
        bar[BAR] = '\0';
        fprintf(stderr, "\r\033[K[%s] %3.0f%%  %s events  %s", bar, fraction * 100, count, p->label);
    } else {
        fprintf(stderr, "\r\033[K%s events  %s", count, p->label);
    }
    fflush(stderr);
    p->drawn = true;
}

void ga_progress_done(ga_progress_t *p)
{
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->drawn = false;
}
