/*
 * sim_int.h: the sim backend's private state, shared by sim.c (device memory)
 * and sim_events.c (events and streams). Only backend/sim*.c include it.
 * Locking: none (see sim.h).
 */
#ifndef GA_BACKEND_SIM_INT_H
#define GA_BACKEND_SIM_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, MADV_DONTNEED, GNU strerror_r */
#endif
#include "backend/sim.h"
#include "conf/options.h"
#include "util/addrmap.h"
#include "util/grow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

_Static_assert(sizeof(size_t) == 8 && sizeof(uintptr_t) == 8, "sim simulates a 64-bit device on a 64-bit host");

#define GRAN GA_SIM_GRANULARITY
#define SIM_MAGIC 0x53494d31u /* "SIM1": lets ga_sim_* reject a state that is not ours */
/* NORESERVE: a large backed device must not be refused by overcommit before it is touched */
#define MAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
/* Callers keep n <= INT64_MAX, so this cannot wrap. */
#define ROUND_GRAN(n) (((uint64_t)(n) + GRAN - 1) & ~(GRAN - 1))

/* A live segment, an entry of sim_t.segs (util/addrmap.h). */
typedef struct seg {
    uintptr_t addr; /* segment start (0 is never handed out): the key */
    size_t bytes;   /* size as requested: what is charged and what segment_free must repeat */
} seg_t;

/* A va_reserve range. */
typedef struct resv {
    uintptr_t base;      /* range start, granularity aligned */
    size_t bytes;        /* range size, a multiple of GRAN */
    size_t mapped_pages; /* bits set in map */
    uint64_t *map;       /* bit i set: page i (at base + i * GRAN) is mapped */
} resv_t;

/* An address range in use (unbacked mode): a live segment or reservation. */
typedef struct range {
    uintptr_t base; /* first address */
    uint64_t span;  /* bytes covered: a multiple of GRAN, or a recorded segment's size rounded to 512 */
} range_t;

/* sim_placement: where unbacked mode puts the next segment or reservation. */
enum { PLACE_RISING, PLACE_DESCENDING, PLACE_RECORDED };

enum { EV_FREE, EV_DONE, EV_PENDING }; /* event_t.status: slot unused, complete, recorded and not complete */

/* An event slot; its handle is (uint64_t)gen << 32 | (index + 1), so 0 is never a handle. */
typedef struct event {
    uint32_t gen;           /* bumped on destroy, so a stale handle is caught */
    uint32_t status;        /* EV_*; EV_DONE also for a never-recorded event, as in CUDA */
    galloc_stream_t stream; /* stream of the last record */
    uint64_t seq;           /* record order: synchronize also completes earlier records on its stream */
} event_t;

typedef struct sim {
    uint32_t magic;                           /* SIM_MAGIC while open */
    int device;                               /* device index, for messages */
    bool backed;                              /* sim_backed: real host memory */
    bool manual_events;                       /* events stay pending until their stream completes */
    uint64_t capacity;                        /* simulated device size, <= INT64_MAX */
    uint64_t seg_bytes;                       /* bytes of live segments */
    uint64_t mapped_bytes;                    /* bytes mapped into reservations */
    uint64_t va_next;                         /* unbacked mode: next free address, granularity aligned */
    uint64_t va_end;                          /* unbacked mode: end of this device's window (exclusive) */
    uint64_t va_base;                         /* unbacked mode: start of this device's window */
    int placement;                            /* PLACE_*: sim_placement */
    uintptr_t place_next;                     /* PLACE_RECORDED: the next segment's address, 0 = none */
    range_t *used;                            /* unbacked mode: ranges in use, ascending by base */
    size_t n_used, used_cap;                  /* used and allocated entries of used */
    uint64_t fail_nth, fail_from, fail_above; /* fault injection, 0 = off (see sim.h) */
    uint64_t alloc_calls;                     /* device allocations attempted: the fault numbering */
    uint64_t faults_injected;                 /* of those, failed on purpose */
    uint64_t violations;                      /* calls rejected with GALLOC_E_INVAL */
    ga_addrmap_t segs;                        /* live segments by address (seg_t) */
    resv_t *resv;                             /* live reservations, unordered (there are few: one per stream) */
    size_t n_resv, resv_cap;                  /* used and allocated entries of resv */
    event_t *ev;                              /* event slots; grown by event_create only */
    size_t ev_cap;                            /* allocated entries of ev */
    uint32_t n_ev;                            /* entries of ev ever used (handles hold 32-bit indices) */
    uint32_t live_events;                     /* entries not EV_FREE */
    uint64_t ev_seq;                          /* last record's sequence number */
    uint64_t sync_calls, query_calls;         /* event_synchronize / event_query calls on live events:
                                                 the numbering of the event faults below */
    uint64_t sync_fail_nth, sync_fail_from;   /* event fault injection, 0 = off (ga_sim_set_event_faults) */
    uint64_t query_fail_nth, query_fail_from;
    uint64_t op_calls;                  /* memory, host, copy and sync calls: the op fault numbering */
    uint64_t op_fail_nth, op_fail_from; /* op fault injection, 0 = off (ga_sim_set_op_faults) */
    ga_addrmap_t host;                  /* live host_alloc blocks by address (host_t) */
    uint64_t host_bytes;                /* their bytes */
    ga_addrmap_t reg;                   /* live host_register ranges by address (host_t) */
    uint64_t reg_bytes;                 /* their bytes */
    char msg[256];                      /* the last failure, for error_string */
} sim_t;

/* A live host_alloc block, an entry of sim_t.host; or a registered range, of sim_t.reg. */
typedef struct host {
    uintptr_t addr; /* the key */
    size_t bytes;
} host_t;

/* Every failure after open goes through ga_sim_fail: one breakpoint sees them
 * all, and a GALLOC_E_INVAL is by definition a caller breaking the contract. */
__attribute__((format(printf, 3, 4))) galloc_status_t ga_sim_fail(sim_t *sim, galloc_status_t st, const char *fmt, ...);

static inline sim_t *ga_sim_of(void *state)
{
    sim_t *sim = state;
    return sim != NULL && sim->magic == SIM_MAGIC ? sim : NULL;
}

/* sim.c: numbers one call of an op that ga_sim_set_op_faults covers (its
 * arguments valid) and fails it with st when its number is picked. */
galloc_status_t ga_sim_op_fault(sim_t *sim, const char *op, galloc_status_t st);
/* The reservation holding addr, or NULL. */
resv_t *ga_sim_resv_find(sim_t *sim, uintptr_t addr);

/* sim_host.c: pinned host memory and copies. */
galloc_status_t ga_sim_host_alloc(void *state, size_t bytes, void **ptr);
galloc_status_t ga_sim_host_free(void *state, void *ptr, size_t bytes);
galloc_status_t ga_sim_copy_d2h(void *state, void *dst, uintptr_t src, size_t bytes);
galloc_status_t ga_sim_copy_h2d(void *state, uintptr_t dst, const void *src, size_t bytes);
galloc_status_t ga_sim_host_register(void *state, void *ptr, size_t bytes);
galloc_status_t ga_sim_host_unregister(void *state, void *ptr, size_t bytes);
/* Frees whatever host memory is still live and forgets registered ranges (close). */
void ga_sim_host_close(sim_t *sim);

/* sim_events.c: the event and stream members of the ops table. */
galloc_status_t ga_sim_event_create(void *state, uintptr_t *event);
galloc_status_t ga_sim_event_destroy(void *state, uintptr_t event);
galloc_status_t ga_sim_event_record(void *state, uintptr_t event, galloc_stream_t s);
galloc_status_t ga_sim_event_query(void *state, uintptr_t event);
galloc_status_t ga_sim_event_synchronize(void *state, uintptr_t event);
galloc_status_t ga_sim_stream_synchronize(void *state, galloc_stream_t s);
galloc_status_t ga_sim_device_synchronize(void *state);

#endif /* GA_BACKEND_SIM_INT_H */
