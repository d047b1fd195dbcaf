/* simwatch.c: see simwatch.h. The table is a copy of ga_backend_sim made at
 * registration, so every member but open, close and name is sim's own. */
#include "tests/reliability/simwatch.h"

#include <pthread.h>
#include <stddef.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static galloc_backend_ops_t watch_ops;  /* registered by pointer: must be static */
static galloc_status_t register_status; /* set once by do_register */
static void *last_state;                /* guarded by lock */
static ga_sim_counters_t closed;        /* guarded by lock */
static bool have_closed;                /* guarded by lock */
static uint64_t leaky;                  /* guarded by lock */

bool simwatch_counters_clean(const ga_sim_counters_t *c)
{
    return c->live_segments == 0 && c->live_mapped_bytes == 0 && c->used_bytes == 0 && c->live_reservations == 0 &&
           c->live_events == 0 && c->live_host_allocs == 0 && c->live_host_bytes == 0 && c->live_host_registered == 0;
}

static galloc_status_t watch_open(const galloc_backend_args_t *args, void **state, char *err, size_t errlen)
{
    galloc_status_t st = ga_backend_sim.open(args, state, err, errlen);
    if (st == GALLOC_OK) {
        pthread_mutex_lock(&lock);
        last_state = *state;
        pthread_mutex_unlock(&lock);
    }
    return st;
}

static void watch_close(void *state)
{
    ga_sim_counters_t c;
    if (ga_sim_counters(state, &c) == GALLOC_OK) {
        pthread_mutex_lock(&lock);
        closed = c;
        have_closed = true;
        if (!simwatch_counters_clean(&c))
            leaky++;
        if (last_state == state)
            last_state = NULL;
        pthread_mutex_unlock(&lock);
    }
    ga_backend_sim.close(state);
}

static void do_register(void)
{
    watch_ops = ga_backend_sim;
    watch_ops.name = "simwatch";
    watch_ops.open = watch_open;
    watch_ops.close = watch_close;
    register_status = galloc_backend_register(&watch_ops);
}

galloc_status_t simwatch_register(void)
{
    pthread_once(&once, do_register);
    return register_status;
}

void *simwatch_last_state(void)
{
    pthread_mutex_lock(&lock);
    void *s = last_state;
    pthread_mutex_unlock(&lock);
    return s;
}

bool simwatch_last_close(ga_sim_counters_t *out)
{
    pthread_mutex_lock(&lock);
    bool have = have_closed;
    if (have)
        *out = closed;
    pthread_mutex_unlock(&lock);
    return have;
}

uint64_t simwatch_leaky_closes(void)
{
    pthread_mutex_lock(&lock);
    uint64_t n = leaky;
    pthread_mutex_unlock(&lock);
    return n;
}
