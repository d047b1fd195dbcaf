/*
 * fit_search.c: which configurations `galloc fit` replays, in what order, on
 * how many threads, and how they are ranked (fit.h).
 *
 * Stages: (1) a grid over expandable_segments x max_split_size_mb (unset and
 * powers of two up to the trace's largest allocation: a block at least that
 * large is never split, so larger values act as unset) x
 * roundup_power2_divisions x garbage_collection_threshold (only for a job
 * that sets a memory fraction: PyTorch runs the GC only when one is set, so
 * elsewhere a threshold changes nothing and would only cost replays); (2) up to two
 * rounds of refinement around the leader (neighbouring max_split values,
 * max_non_split_rounding_mb, neighbouring divisions and thresholds); (3)
 * bisection of the smallest device size for the leaders. The recorded
 * settings of a snapshot, if any, come first. per_process_memory_fraction is
 * not searched: a cap can only make a job fit less. With --conf the given
 * settings replace stages (1) and (2) and every one is bisected.
 *
 * Parallelism: a fixed set of worker threads takes tasks from an atomic
 * counter; every task writes only its own result, and each replay owns its
 * allocator and pointer map, so the only shared state is the read-only trace
 * and the progress line (under a mutex).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/fit/fit.h"

typedef ga_fit_axes_t axes_t;

#define ROUNDUP_LIST "[256:1,512:2,1024:4,>:8]" /* PyTorch's documented example */

static void format_axes(const axes_t *x, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
#define ADD(...) n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__)
    if (x->es)
        ADD("%sexpandable_segments:True", n ? "," : "");
    if (x->ms)
        ADD("%smax_split_size_mb:%" PRIu32, n ? "," : "", x->ms);
    if (x->nsr)
        ADD("%smax_non_split_rounding_mb:%" PRIu32, n ? "," : "", x->nsr);
    if (x->rd > 0)
        ADD("%sroundup_power2_divisions:%d", n ? "," : "", x->rd);
    else if (x->rd < 0)
        ADD("%sroundup_power2_divisions:%s", n ? "," : "", ROUNDUP_LIST);
    if (x->gc > 0)
        ADD("%sgarbage_collection_threshold:%.2g", n ? "," : "", x->gc);
#undef ADD
}

/* max_split_size_mb values worth trying: up to three powers of two from
 * 32 MiB to the largest allocation (values[] gets them largest first). */
static size_t split_values(const ga_fit_job_t *job, uint32_t values[3])
{
    uint64_t lmb = job->max_alloc >> 20;
    size_t n = 0;
    uint64_t p = 32;
    while (p * 2 <= lmb && p < ((uint64_t)1 << 30))
        p *= 2;
    for (; p >= 32 && p <= lmb && n < 3; p /= 2)
        values[n++] = (uint32_t)p;
    return n;
}

static size_t grid_axes(const ga_fit_job_t *job, axes_t *out, size_t cap)
{
    static const int rds[] = {0, 2, 4, 8, -1};
    static const double gcs[] = {0, 0.6, 0.8};
    /* Not paired with a fraction of our own: a cap can only make the job fit
     * less, and per_process_memory_fraction:1.0 is the default (no cap, no GC). */
    size_t ngc = job->sets_fraction ? sizeof(gcs) / sizeof(gcs[0]) : 1;
    uint32_t ms[4] = {0};
    size_t nms = 1 + split_values(job, ms + 1);
    size_t n = 0;
    /* Most decisive knobs innermost, so that a --max-configs prefix covers them. */
    for (size_t r = 0; r < sizeof(rds) / sizeof(rds[0]); r++)
        for (size_t g = 0; g < ngc; g++)
            for (int es = 0; es < 2; es++)
                for (size_t m = 0; m < nms; m++)
                    if (n < cap)
                        out[n++] = (axes_t){.es = es != 0, .ms = ms[m], .rd = rds[r], .gc = gcs[g]};
    return n;
}

size_t ga_fit_grid(const ga_fit_job_t *job, char (*confs)[GA_FIT_CONF_MAX], size_t cap)
{
    axes_t a[256];
    size_t n = grid_axes(job, a, cap < 256 ? cap : 256);
    for (size_t i = 0; i < n; i++)
        format_axes(&a[i], confs[i], GA_FIT_CONF_MAX);
    return n;
}

/* a and b within GA_FIT_TIE of each other: a tie. */
static bool tied(int64_t a, int64_t b)
{
    int64_t hi = a > b ? a : b, d = a > b ? a - b : b - a;
    return (double)d <= GA_FIT_TIE * (double)hi;
}

bool ga_fit_better(const ga_fit_result_t *a, const ga_fit_result_t *b)
{
    if (a->run.failed != b->run.failed)
        return !a->run.failed;
    if (a->run.fits != b->run.fits)
        return a->run.fits;
    if (a->run.depends != b->run.depends) /* fits under part of a cap range: closer than never */
        return a->run.depends;
    if (!a->run.fits) { /* the one that gets further is closer to fitting */
        if (a->run.fail_unit != b->run.fail_unit)
            return a->run.fail_unit > b->run.fail_unit;
        if (a->run.fail_event != b->run.fail_event)
            return a->run.fail_event > b->run.fail_event;
    }
    if (!tied(a->run.peak_reserved, b->run.peak_reserved))
        return a->run.peak_reserved < b->run.peak_reserved;
    if (a->recorded != b->recorded) /* a tie with the job's own settings: keep them */
        return a->recorded;
    size_t la = strlen(a->conf), lb = strlen(b->conf); /* the simpler setting wins a tie */
    if (la != lb)
        return la < lb;
    if (a->run.peak_reserved != b->run.peak_reserved)
        return a->run.peak_reserved < b->run.peak_reserved;
    return strcmp(a->conf, b->conf) < 0;
}

static int cmp_results(const void *pa, const void *pb)
{
    const ga_fit_result_t *a = pa, *b = pb;
    return ga_fit_better(a, b) ? -1 : ga_fit_better(b, a) ? 1 : 0;
}

/* ---- the thread pool ---------------------------------------------------- */

typedef struct pool {
    const ga_fit_job_t *job;
    ga_fit_result_t *res; /* the tasks' results */
    size_t first, n;      /* tasks: res[first .. first + n) */
    bool bisect;          /* the task is the bisection, not the first replay */
    atomic_size_t next;   /* the next task to take */
    pthread_mutex_t lock; /* guards done and the progress line */
    size_t done;
    const char *stage;
    bool progress;
    double start, last_draw;
} pool_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_task(pool_t *p, ga_fit_result_t *r)
{
    double t0 = now();
    if (p->bisect) {
        r->min_memory = ga_fit_min_memory(p->job, r->conf, r->recorded, &r->run, &r->replays);
        r->min_searched = true;
    } else {
        ga_fit_replay(p->job, r->conf, r->recorded, &r->run);
        r->replays++;
    }
    r->seconds += now() - t0;
}

static void *worker(void *arg)
{
    pool_t *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            return NULL;
        run_task(p, &p->res[p->first + i]);
        pthread_mutex_lock(&p->lock);
        p->done++;
        double t = now();
        if (p->progress && t - p->start > 0.5 && (t - p->last_draw > 0.1 || p->done == p->n)) {
            fprintf(stderr, "\rgalloc fit: %s %zu/%zu, %.1f s   ", p->stage, p->done, p->n, t - p->start);
            p->last_draw = t;
        }
        pthread_mutex_unlock(&p->lock);
    }
}

/* Runs tasks res[first .. first + n) on jobs threads (the caller is one). */
static void run_pool(const ga_fit_job_t *job, const ga_fit_opts_t *o, unsigned jobs, ga_fit_result_t *res, size_t first,
                     size_t n, bool bisect, const char *stage, double start)
{
    pool_t p = {.job = job,
                .res = res,
                .first = first,
                .n = n,
                .bisect = bisect,
                .stage = stage,
                .progress = o->progress,
                .start = start};
    atomic_init(&p.next, 0);
    pthread_mutex_init(&p.lock, NULL);
    pthread_t th[256];
    unsigned started = 0;
    for (unsigned t = 1; t < jobs && t < 256 && t < n; t++)
        if (pthread_create(&th[started], NULL, worker, &p) == 0)
            started++; /* fewer threads only make it slower */
    worker(&p);
    for (unsigned t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&p.lock);
    if (p.progress && p.last_draw > 0)
        fprintf(stderr, "\r%*s\r", 60, "");
}

/* ---- the search ----------------------------------------------------------- */

typedef struct search {
    ga_fit_result_t *res;
    axes_t *ax;
    size_t n, cap;
} search_t;

/* Appends x unless already tried or over the cap; returns whether it did. */
static bool add(search_t *s, const axes_t *x, const char *stage, size_t max_configs)
{
    char conf[GA_FIT_CONF_MAX];
    format_axes(x, conf, sizeof(conf));
    if (s->n >= s->cap || (max_configs && s->n >= max_configs))
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (!s->res[i].recorded && strcmp(s->res[i].conf, conf) == 0)
            return false;
    ga_fit_result_t *r = &s->res[s->n];
    memset(r, 0, sizeof(*r));
    memcpy(r->conf, conf, sizeof(conf));
    r->stage = stage;
    r->has_axes = true;
    r->axes = *x;
    s->ax[s->n++] = *x;
    return true;
}

/* A --conf string (the caller checked its length), once: not on the axes, so
 * not refined around; recorded settings equal to it are still their own row. */
static void add_given(search_t *s, const char *conf)
{
    for (size_t i = 0; i < s->n; i++)
        if (!s->res[i].recorded && strcmp(s->res[i].conf, conf) == 0)
            return;
    if (s->n >= s->cap)
        return;
    ga_fit_result_t *r = &s->res[s->n];
    memset(r, 0, sizeof(*r));
    snprintf(r->conf, sizeof(r->conf), "%s", conf);
    r->stage = "given";
    s->ax[s->n++] = (axes_t){0};
}

/* The leader's neighbours (see the file comment). */
static void neighbours(search_t *s, const axes_t *b, size_t max_configs)
{
    axes_t x;
    if (b->ms) {
        uint32_t cand[] = {b->ms * 3 / 4, b->ms * 3 / 2, b->ms / 2, b->ms * 2};
        for (size_t i = 0; i < 4; i++) {
            x = *b;
            x.ms = cand[i];
            if (x.ms >= 20) /* PyTorch's floor: large_segment_size_mb */
                add(s, &x, "refine", max_configs);
        }
        static const uint32_t nsr[] = {64, 256};
        for (size_t i = 0; i < 2; i++) {
            x = *b;
            x.nsr = nsr[i];
            add(s, &x, "refine", max_configs);
        }
    }
    if (b->rd > 0) { /* coarser and finer rounding than the leader's */
        int cand[] = {b->rd / 2, b->rd * 2};
        for (size_t i = 0; i < 2; i++) {
            x = *b;
            x.rd = cand[i];
            if (x.rd >= 2 && x.rd <= 16) /* PyTorch accepts powers of two; 1 means off */
                add(s, &x, "refine", max_configs);
        }
    }
    if (b->gc > 0) {
        double cand[] = {b->gc - 0.1, b->gc + 0.1};
        for (size_t i = 0; i < 2; i++) {
            x = *b;
            x.gc = round(cand[i] * 100) / 100;
            if (x.gc > 0 && x.gc < 1)
                add(s, &x, "refine", max_configs);
        }
    }
}

/* The best result on the axes (the recorded row is not refined around). */
static size_t leader(const search_t *s)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < s->n; i++)
        if (s->res[i].has_axes && (best == SIZE_MAX || ga_fit_better(&s->res[i], &s->res[best])))
            best = i;
    return best == SIZE_MAX ? 0 : best;
}

int ga_fit_search(const ga_fit_job_t *job, const ga_fit_opts_t *o, ga_fit_outcome_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    double start = now();
    unsigned jobs = o->jobs;
    if (jobs == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = c > 0 ? (unsigned)c : 1;
    }
    search_t s = {.cap = 512};
    s.res = calloc(s.cap, sizeof(*s.res));
    s.ax = calloc(s.cap, sizeof(*s.ax));
    axes_t *grid = calloc(256, sizeof(*grid));
    if (s.res == NULL || s.ax == NULL || grid == NULL) {
        free(s.res);
        free(s.ax);
        free(grid);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    size_t ng = grid_axes(job, grid, 256);
    if (!o->no_recorded && job->recorded != NULL && strlen(job->recorded) < GA_FIT_CONF_MAX) {
        /* The job's own run (its settings, its segment addresses), first:
         * replay's "recorded" column. Not refined around: its knobs are
         * not on the axes. A grid point with the same string is still
         * replayed: under the driver's placement it is a prediction. */
        ga_fit_result_t *r = &s.res[s.n++];
        snprintf(r->conf, sizeof(r->conf), "%s", job->recorded);
        r->stage = "recorded";
        r->recorded = true;
        s.ax[0] = (axes_t){0};
    }
    for (size_t i = 0; i < ng && o->n_confs == 0; i++)
        add(&s, &grid[i], "grid", o->max_configs);
    free(grid);
    for (size_t i = 0; i < o->n_confs; i++)
        add_given(&s, o->confs[i]);
    run_pool(job, o, jobs, s.res, 0, s.n, false, o->n_confs ? "given" : "grid", start);

    for (int round = 0; round < 2 && o->n_confs == 0; round++) {
        size_t before = s.n, b = leader(&s);
        axes_t bx = s.ax[b];
        neighbours(&s, &bx, o->max_configs);
        if (s.n == before)
            break;
        run_pool(job, o, jobs, s.res, before, s.n - before, false, "refine", start);
        if (leader(&s) == b)
            break; /* no neighbour beat it: stop */
    }

    qsort(s.res, s.n, sizeof(*s.res), cmp_results);
    size_t nb = 0;
    while (nb < s.n && nb < o->bisect && !s.res[nb].run.failed)
        nb++;
    /* The job's own run is bisected too, wherever it ranks: the answer
     * compares the smallest memory of what is advised with it. */
    for (size_t i = nb; o->bisect > 0 && i < s.n; i++)
        if (s.res[i].recorded && !s.res[i].run.failed) {
            ga_fit_result_t rec = s.res[i];
            memmove(&s.res[nb + 1], &s.res[nb], (i - nb) * sizeof(*s.res));
            s.res[nb++] = rec;
            break;
        }
    run_pool(job, o, jobs, s.res, 0, nb, true, "smallest memory", start);
    qsort(s.res, s.n, sizeof(*s.res), cmp_results);
    free(s.ax);
    out->results = s.res;
    out->n = s.n;
    out->seconds = now() - start;
    out->jobs = jobs;
    return 0;
}

void ga_fit_outcome_free(ga_fit_outcome_t *out)
{
    free(out->results);
    memset(out, 0, sizeof(*out));
}
