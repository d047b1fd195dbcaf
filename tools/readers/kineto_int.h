/*
 * kineto_int.h: what read_kineto.c shares with kineto_match.c. Private to
 * the readers; not thread-safe (one reader per thread).
 */
#ifndef GA_TOOLS_READERS_KINETO_INT_H
#define GA_TOOLS_READERS_KINETO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GA_KINETO_MAX_DEVICES 1024 /* Device Id above this is refused as garbled */

/* One kept CUDA [memory] event (32 bytes). */
typedef struct ga_kineto_ev {
    double ts;      /* microseconds, as traced */
    uint64_t addr;  /* Addr (the older layout: an id from ga_kineto_match_by_size) */
    int64_t bytes;  /* Bytes: > 0 allocation, < 0 free */
    uint32_t index; /* position in traceEvents (saturates at UINT32_MAX) */
    uint16_t dev;   /* Device Id */
    bool skip;      /* a free matched to no live allocation (older layout): not replayed */
} ga_kineto_ev_t;

/* ga_kineto_match_by_size: for a trace without Addr, ev[0..n) in time order:
 * set each allocation's addr to a unique id (its place + 1) and each free's
 * to the id of the most recent allocation of the same size on the same
 * device still live (LIFO); a free with none gets skip and counts in
 * unmatched[dev] (GA_KINETO_MAX_DEVICES entries). Returns 0, or -1 out of host memory
 * (ev untouched). */
int ga_kineto_match_by_size(ga_kineto_ev_t *ev, size_t n, uint64_t *unmatched);

#endif /* GA_TOOLS_READERS_KINETO_INT_H */
