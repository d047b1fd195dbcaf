/*
 * progress.h: a one-line progress bar on stderr for long replays, drawn only
 * when stderr is a terminal (never into logs or pipes) and only once a replay
 * has run for half a second, redrawn at most ten times a second.
 */
#ifndef GA_TOOLS_REPLAY_PROGRESS_H
#define GA_TOOLS_REPLAY_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ga_progress {
    bool enabled;      /* stderr is a terminal */
    bool drawn;        /* something is on the line (to clear at the end) */
    double start;      /* when the replay began (monotonic seconds) */
    double last;       /* last redraw */
    const char *label; /* shown after the bar (the trace file) */
} ga_progress_t;

/* ga_progress_start: begin a bar for label (enabled decides whether to draw). */
void ga_progress_start(ga_progress_t *p, const char *label, bool enabled);

/* ga_progress_update: fraction done in [0, 1] or -1 if unknown, events so far.
 * Matches ga_replay_opts_t.progress (ctx is the ga_progress_t). */
void ga_progress_update(void *ctx, double fraction, uint64_t events);

/* ga_progress_now: a monotonic clock in seconds. */
double ga_progress_now(void);

/* ga_progress_done: erase the bar. */
void ga_progress_done(ga_progress_t *p);

#endif /* GA_TOOLS_REPLAY_PROGRESS_H */
