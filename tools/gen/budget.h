/*
 * budget.h: the memory budget of a training step, two ways: the analytic
 * formula the lesson teaches (mission-notes.md, "The memory budget of a
 * training step"), and the peak reserved memory of the generated trace
 * replayed on galloc's simulated device under an allocator configuration,
 * which replaces the formula's flat 15 % guess with a measured figure.
 *
 * The simulation uses galloc's public API only (api/galloc.h), as any user
 * program would. Thread-safety: functions work only on their arguments; each
 * simulation creates and destroys its own allocator.
 */
#ifndef GA_TOOLS_GEN_BUDGET_H
#define GA_TOOLS_GEN_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc.h>
#include "tools/gen/transformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The formula's terms, in bytes (doubles: layers x 34 x s x d x b can pass
 * 2^64 for absurd flags, and every figure is shown in GiB anyway). */
typedef struct ga_budget {
    double weights;        /* 6 bytes/parameter in mixed precision (fp16 + fp32 master), else 4 */
    double grads;          /* 2 bytes/parameter in mixed precision, else 4 */
    double optimizer;      /* Adam: two fp32 moments, 8 bytes/parameter */
    double activations;    /* layers x 34 x s x d x b x elem; with checkpointing layers x s x d x b x elem */
    double kv_cache;       /* layers x 4 x s x d x b x elem; reported apart, not part of total */
    double total;          /* weights + grads + optimizer + activations */
    double total_overhead; /* total x 1.15: the lesson's flat allocator overhead */
} ga_budget_t;

/* ga_budget_analytic: the formula for m (elem = 2 bytes in mixed precision,
 * as the formula assumes; 4 without, where activations are fp32), with
 * s = ga_gen_seq_len(m): the fixed length, or MAX of a variable one. */
void ga_budget_analytic(const ga_gen_model_t *m, ga_budget_t *out);

/* ga_budget_of_trace: for a trace `galloc gen transformer` wrote (its header
 * names the model flags, read back with gen's own parser), the model and its
 * analytic budget; false for any other file, or one that cannot be read. */
bool ga_budget_of_trace(const char *path, ga_gen_model_t *m, ga_budget_t *out);

/* Above any real device, below the sim's limit on one virtual reservation
 * (expandable segments reserve 1.125 x the device): the "unbounded" device on
 * which a run that does not fit is replayed again to measure what it needs. */
#define GA_BUDGET_UNBOUNDED_BYTES (UINT64_C(64) << 40)

/* One configuration's simulated run. */
typedef struct ga_budget_sim {
    galloc_status_t status;       /* GALLOC_OK, or why the run could not be simulated (allocator creation refused
                               the configuration, a device error); an OOM is not a failure */
    char error[GALLOC_ERROR_MAX]; /* status != OK: the allocator's message */
    bool fits;                    /* the whole trace ran on device_memory without an OOM */
    uint32_t oom_step;            /* !fits: the step of the first failed allocation (GA_GEN_SETUP_STEP:
                                     while creating the weights) */
    uint64_t oom_event;           /* !fits: its 1-based event index */
    uint64_t oom_size;            /* !fits: the bytes it asked for */
    int64_t peak_reserved;        /* reserved_bytes.all.peak on device_memory, up to the OOM if any */
    int64_t peak_allocated;       /* allocated_bytes.all.peak, likewise */
    int64_t peak_requested;       /* requested_bytes.all.peak, likewise */
    int64_t num_alloc_retries;    /* cache flushes PyTorch's allocator needed to fit (slow steps) */
    int64_t needed_reserved;      /* peak reserved on an unbounded device: what the run needs; equals
                                     peak_reserved when it fits; -1 if even that run failed */
    int64_t needed_allocated;     /* peak allocated on the unbounded device (-1 likewise) */
} ga_budget_sim_t;

/*
 * ga_budget_simulate: replay m's generated events through a new sim allocator
 * created with "sim_capacity:<device_memory>,<conf>" (conf NULL or "" =
 * PyTorch's defaults), stopping at the first out-of-memory; when it does not
 * fit, replay again on a GA_BUDGET_UNBOUNDED_BYTES device for the needed
 * figures. Fills *out and returns out->status. Allocators are destroyed on
 * every path. Returns GALLOC_E_INVAL for a NULL argument, device_memory 0 or
 * an invalid model (message in out->error when out is not NULL).
 */
galloc_status_t ga_budget_simulate(const ga_gen_model_t *m, const char *conf, uint64_t device_memory,
                                   ga_budget_sim_t *out);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_GEN_BUDGET_H */
