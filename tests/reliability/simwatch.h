/*
 * simwatch.h: the sim device seen from inside, for reliability tests and
 * fuzzers that otherwise use only the public API.
 *
 * An allocator's backend state is private to front/, so the public API cannot
 * show whether galloc gave every segment, mapping, reservation and event back
 * before closing the device (the sim device frees leftovers silently at close).
 * simwatch_register adds a backend "simwatch": the sim device's own ops table
 * with open and close wrapped. Open remembers the sim state (so a test can read
 * ga_sim_counters or change faults between calls); close reads the counters
 * just before the sim device frees what is still live, and counts a leak if
 * anything is.
 *
 * It includes backend/sim.h, so its users (the fuzzers in //fuzz, which may
 * not depend on //backend) get ga_sim_counters and ga_sim_set_faults too.
 *
 * Select it with galloc_allocator_create("simwatch", ...); every sim_* config
 * key applies as for "sim". Thread-safety: the functions below take a lock, but
 * the sim counters they return are only consistent while no other thread is
 * inside the allocator.
 */
#ifndef GA_TESTS_RELIABILITY_SIMWATCH_H
#define GA_TESTS_RELIABILITY_SIMWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <galloc/galloc_status.h>
#include "backend/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Register "simwatch" once per process (later calls are no-ops). Returns the
 * registry's status (GALLOC_OK once registered). */
galloc_status_t simwatch_register(void);

/* The sim state of the most recent open, NULL before the first open or after
 * that device was closed. Pass it to ga_sim_counters / ga_sim_set_faults. */
void *simwatch_last_state(void);

/* The counters read at the most recent close, just before the sim device
 * freed anything still live. Returns false if no simwatch device closed yet. */
bool simwatch_last_close(ga_sim_counters_t *out);

/* How many closes so far found a live segment, mapped byte, reservation,
 * event or host_alloc block: each is memory or a handle galloc failed to
 * give back. */
uint64_t simwatch_leaky_closes(void);

/* Whether c shows nothing live on the device. */
bool simwatch_counters_clean(const ga_sim_counters_t *c);

#ifdef __cplusplus
}
#endif
#endif /* GA_TESTS_RELIABILITY_SIMWATCH_H */
