/*
 * soak.c: a long run of a training-like workload through the public API, to
 * show that galloc neither leaks device memory nor grows in host memory over
 * 10^8 operations (house style section 6: the hot path allocates nothing, so
 * after warm-up the process's resident set must stay flat).
 *
 * The workload, per step: a transformer's forward pass (per layer: kept
 * activations, short-lived temporaries, small-pool tensors), its backward pass
 * in reverse (gradient temporaries, then the activations go), an optimizer pass
 * (one temporary per weight). The sequence length varies every step, so
 * sizes vary as in the fragmentation example; some activations are also used
 * on a second stream (record_stream), whose work completes at the step's
 * stream_synchronize (sim_manual_events). Every 1,000 steps galloc_empty_cache
 * runs with the model live. Every 10^7 operations (a tenth of the run if that
 * is shorter) an "epoch" ends: everything is freed, galloc_empty_cache runs,
 * and reserved memory must then be 0; the model is then allocated again.
 *
 * Usage: soak [OPERATIONS [CONF [SEED]]]   OPERATIONS default 1e8 (may be
 * written 1e8); CONF a config string added to the defaults below.
 * Prints at each epoch's end: operations, steps, reserved and allocated bytes
 * before the epoch's frees, process RSS, rate. Exits 1 if reserved memory
 * after an epoch's empty_cache is not 0, if RSS grew by more than
 * RSS_TOLERANCE after warm-up (the first epoch), if galloc_check fails, or if
 * any call fails (an OOM included: the working set is a few GiB of 80).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <galloc/galloc.h>

#define MIB ((size_t)1 << 20)
#define REPORT_EVERY 10000000ull /* operations per epoch and report (at most) */
#define EMPTY_CACHE_EVERY 1000   /* steps */
#define RSS_TOLERANCE (8 * MIB)  /* growth allowed after warm-up: page-cache noise, stdio */
#define LAYERS 24
#define WEIGHTS (LAYERS * 4)
#define KEPT 3        /* activations per layer kept for backward */
#define SIDE_STREAM 1 /* the "communication" stream */

typedef struct soak {
    galloc_allocator_t *a;
    uint64_t ops;  /* API calls made */
    uint64_t ooms; /* mallocs refused as out of memory */
    uint64_t rng;  /* xorshift64* state */
    int failed;    /* a check failed: exit 1 at the end */
    void *weights[WEIGHTS];
    size_t weight_size[WEIGHTS];
    void *kept[LAYERS][KEPT];
} soak_t;

static uint64_t rnd(soak_t *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 0x2545F4914F6CDD1Dull;
}

static void fail(soak_t *s, const char *what, galloc_status_t st)
{
    char msg[GALLOC_ERROR_MAX];
    galloc_last_error(s->a, msg, sizeof(msg));
    fprintf(stderr, "soak: %s: %s (%s)\n", what, galloc_status_name(st), msg);
    s->failed = 1;
}

static void *alloc(soak_t *s, size_t n, galloc_stream_t stream)
{
    void *p = NULL;
    galloc_status_t st = galloc_malloc(s->a, n, stream, &p);
    s->ops++;
    if (st == GALLOC_E_OOM)
        s->ooms++;
    else if (st != GALLOC_OK)
        fail(s, "malloc", st);
    return p;
}

static void release(soak_t *s, void **p)
{
    if (*p == NULL)
        return;
    galloc_status_t st = galloc_free(s->a, *p);
    s->ops++;
    if (st != GALLOC_OK)
        fail(s, "free", st);
    *p = NULL;
}

static void call(soak_t *s, galloc_status_t st, const char *what)
{
    s->ops++;
    if (st != GALLOC_OK)
        fail(s, what, st);
}

static void model_alloc(soak_t *s)
{
    for (int i = 0; i < WEIGHTS; i++) {
        /* per layer: attention (h x 3h), projection (h x h), two MLP matrices (h x 4h), h = 1024, fp16 */
        static const size_t shape[4] = {6 * MIB, 2 * MIB, 8 * MIB, 8 * MIB};
        s->weight_size[i] = shape[i % 4];
        s->weights[i] = alloc(s, s->weight_size[i], 0);
    }
}

static void model_free(soak_t *s)
{
    for (int i = 0; i < WEIGHTS; i++)
        release(s, &s->weights[i]);
}

/* One training step with sequence length seq (tokens). */
static void step(soak_t *s, size_t seq, bool side)
{
    const size_t tok = 1024 * 2; /* bytes per token of one hidden state (fp16) */
    for (int l = 0; l < LAYERS; l++) {
        s->kept[l][0] = alloc(s, seq * tok, 0);              /* layer input, kept */
        void *qkv = alloc(s, 3 * seq * tok, 0);              /* temporary */
        s->kept[l][1] = alloc(s, seq * seq * 8 / 16 + 4, 0); /* attention probabilities (8 heads / 16) */
        void *stats = alloc(s, seq * 8, 0);                  /* small pool: layer norm statistics */
        s->kept[l][2] = alloc(s, 4 * seq * tok, 0);          /* MLP hidden, kept */
        if (side && l % 6 == 0)
            call(s, galloc_record_stream(s->a, s->kept[l][0], SIDE_STREAM), "record_stream");
        release(s, &qkv);
        release(s, &stats);
    }
    for (int l = LAYERS - 1; l >= 0; l--) {
        void *g1 = alloc(s, 4 * seq * tok, 0);
        void *g2 = alloc(s, seq * tok + 512 * (size_t)l, 0);
        release(s, &g1);
        for (int k = KEPT - 1; k >= 0; k--)
            release(s, &s->kept[l][k]);
        release(s, &g2);
    }
    for (int i = 0; i < WEIGHTS; i++) {
        void *tmp = alloc(s, s->weight_size[i], 0); /* optimizer update temporary */
        release(s, &tmp);
    }
    if (side)
        call(s, galloc_stream_synchronize(s->a, SIDE_STREAM), "stream_synchronize");
}

static size_t rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static galloc_stats_t stats(soak_t *s)
{
    galloc_stats_t st;
    st.struct_size = sizeof(st);
    galloc_memory_stats(s->a, &st);
    return st;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The command line. */
typedef struct args {
    uint64_t total;    /* OPERATIONS */
    const char *extra; /* CONF, added to the defaults */
    uint64_t seed;     /* SEED */
} args_t;

/* Where the run stands, for the epoch reports and the final checks. */
typedef struct progress {
    double t0, t_last;    /* start, last report */
    uint64_t every;       /* operations per epoch */
    uint64_t steps;       /* training steps so far */
    uint64_t ops_last;    /* operations at the last report */
    uint64_t next_report; /* operations at which the current epoch ends */
    size_t rss_base;      /* RSS after warm-up (the first epoch), 0 before */
    size_t rss_max;       /* largest RSS at a later epoch's end */
} progress_t;

/* 0, or 2 with the usage said. */
static int parse_args(int argc, char **argv, args_t *a)
{
    double want = argc > 1 ? strtod(argv[1], NULL) : 1e8;
    a->extra = argc > 2 ? argv[2] : "";
    a->seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x5eed;
    if (!(want >= 1) || want > 1e15) {
        fprintf(stderr, "usage: soak [OPERATIONS [CONF [SEED]]]  (OPERATIONS e.g. 1e8)\n");
        return 2;
    }
    a->total = (uint64_t)want;
    return 0;
}

/* The allocator under the defaults plus args' CONF, and the run's heading.
 * 0, or 2 with the reason said. */
static int open_allocator(soak_t *s, const args_t *a)
{
    char conf[1024];
    snprintf(conf, sizeof(conf), "sim_capacity:80GiB,sim_manual_events:True%s%s", a->extra[0] ? "," : "", a->extra);
    char err[GALLOC_ERROR_MAX];
    if (galloc_allocator_create("sim", 0, conf, &s->a, err, sizeof(err)) != GALLOC_OK) {
        fprintf(stderr, "soak: %s\n", err);
        return 2;
    }
    printf("soak: %" PRIu64 " operations, conf \"%s\", seed %#" PRIx64 ", RSS tolerance %zu MiB after the first "
           "epoch\n",
           a->total, conf, a->seed, RSS_TOLERANCE / MIB);
    printf("%12s %9s %14s %14s %10s %12s\n", "operations", "steps", "reserved", "allocated", "rss_kib", "ops_per_s");
    fflush(stdout);
    return 0;
}

/* With nothing live, empty_cache must have given back everything. */
static void check_empty(soak_t *s)
{
    galloc_stats_t st = stats(s);
    if (st.reserved_bytes[GALLOC_STAT_ALL].current != 0 || st.allocation[GALLOC_STAT_ALL].current != 0) {
        fprintf(stderr,
                "soak: after empty_cache with nothing live: reserved %" PRId64 " bytes, %" PRId64 " allocations\n",
                st.reserved_bytes[GALLOC_STAT_ALL].current, st.allocation[GALLOC_STAT_ALL].current);
        s->failed = 1;
    }
    galloc_status_t cst = galloc_check(s->a);
    if (cst != GALLOC_OK)
        fail(s, "galloc_check", cst);
}

/* The epoch's line (live: the stats before its frees), and the RSS it ends at. */
static void report_epoch(soak_t *s, progress_t *p, const galloc_stats_t *live)
{
    size_t rss = rss_bytes();
    double t = now();
    printf("%12" PRIu64 " %9" PRIu64 " %14" PRId64 " %14" PRId64 " %10zu %12.0f\n", s->ops, p->steps,
           live->reserved_bytes[GALLOC_STAT_ALL].current, live->allocated_bytes[GALLOC_STAT_ALL].current, rss / 1024,
           (double)(s->ops - p->ops_last) / (t - p->t_last));
    fflush(stdout);
    if (p->rss_base == 0)
        p->rss_base = rss; /* warm-up ends with the first epoch */
    else if (rss > p->rss_max)
        p->rss_max = rss;
    p->t_last = t;
    p->ops_last = s->ops;
}

/* End of an epoch: free everything, check that the cache empties, report,
 * and allocate the model again unless the run is over. */
static void end_epoch(soak_t *s, progress_t *p, uint64_t total)
{
    galloc_stats_t live = stats(s);
    model_free(s);
    call(s, galloc_empty_cache(s->a), "empty_cache");
    check_empty(s);
    report_epoch(s, p, &live);
    p->next_report += p->every;
    if (p->next_report > total)
        p->next_report = total;
    if (s->ops < total)
        model_alloc(s);
}

/* Training steps until total operations or a failure. */
static void run(soak_t *s, progress_t *p, uint64_t total)
{
    model_alloc(s);
    while (s->ops < total && !s->failed) {
        size_t seq = 128 + (size_t)(rnd(s) % 1921); /* 128..2048 tokens */
        step(s, seq, p->steps % 4 == 0);
        p->steps++;
        if (p->steps % EMPTY_CACHE_EVERY == 0)
            call(s, galloc_empty_cache(s->a), "empty_cache");
        if (s->ops >= p->next_report)
            end_epoch(s, p, total);
    }
}

/* The closing line and the checks over the whole run. */
static void summarize(soak_t *s, const progress_t *p)
{
    galloc_stats_t st = stats(s);
    double secs = now() - p->t0;
    printf("soak: %" PRIu64 " operations, %" PRIu64 " steps in %.1f s (%.0f ops/s); peak reserved %" PRId64
           " bytes; %" PRId64 " device allocs, %" PRId64 " device frees, %" PRId64 " retries, %" PRIu64
           " OOMs; RSS after warm-up %zu KiB, max later %zu KiB\n",
           s->ops, p->steps, secs, (double)s->ops / secs, st.reserved_bytes[GALLOC_STAT_ALL].peak, st.num_device_alloc,
           st.num_device_free, st.num_alloc_retries, s->ooms, p->rss_base / 1024, p->rss_max / 1024);
    if (p->rss_base != 0 && p->rss_max > p->rss_base + RSS_TOLERANCE) {
        fprintf(stderr, "soak: RSS grew by %zu KiB after warm-up (tolerance %zu KiB)\n",
                (p->rss_max - p->rss_base) / 1024, RSS_TOLERANCE / 1024);
        s->failed = 1;
    }
    if (s->ooms != 0) {
        fprintf(stderr, "soak: %" PRIu64 " allocations failed on an 80 GiB device holding a few GiB\n", s->ooms);
        s->failed = 1;
    }
}

int main(int argc, char **argv)
{
    args_t a;
    if (parse_args(argc, argv, &a) != 0)
        return 2;
    soak_t s = {.rng = a.seed ? a.seed : 1};
    if (open_allocator(&s, &a) != 0)
        return 2;
    progress_t p = {.t0 = now()};
    p.t_last = p.t0;
    p.every = a.total / 10 < REPORT_EVERY ? a.total / 10 : REPORT_EVERY;
    if (p.every == 0)
        p.every = a.total;
    p.next_report = p.every;
    run(&s, &p, a.total);
    summarize(&s, &p);
    galloc_allocator_destroy(s.a);
    printf("soak: %s\n", s.failed ? "FAILED" : "passed");
    return s.failed ? 1 : 0;
}
