// traces.h: transformer training traces from the in-memory generator
// (tools/gen/transformer.h), packed into an event array, and the replay loop
// over them through the public API: the id -> pointer map is a plain array
// indexed by the generator's ids (dense, never reused).
//
// Thread-safety: the functions work only on their arguments.
#ifndef GALLOC_BENCH_TRACES_H
#define GALLOC_BENCH_TRACES_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <galloc/galloc.h>
#include "tools/gen/transformer.h"

namespace bench {

// One alloc or free (annotations are dropped). 16 bytes.
struct TraceEvent {
    uint64_t size; // bytes to allocate; 0 = free the block `id`
    uint32_t id;   // the generator's block id (< Trace::ids)
};

struct Trace {
    std::vector<TraceEvent> events;
    uint32_t ids = 0;            // one past the largest id: the size of the pointer array
    uint64_t allocs = 0;         // alloc events
    uint64_t peak_requested = 0; // highest sum of live requested bytes
};

// The model presets (GPT-2 layouts, mixed precision, Adam): "125M", "350M",
// "1.3B". variable: sequence lengths drawn per step from 128..seq_len.
ga_gen_model_t Model(const std::string &name, bool variable, uint32_t steps);

// Generate m's events, stopping once max_events alloc/free events are kept
// (0 = the whole run). Stops the run on a generator error.
Trace Generate(const ga_gen_model_t &m, size_t max_events);

// Replay t into a (stream 0); ptrs must have t.ids entries, all NULL. An
// allocation failing with out-of-memory leaves its slot NULL (its free is then
// a no-op) and is counted in the result if tolerate_oom, else stops the run,
// as does every other failure. Returns the number of failed allocations.
uint64_t Replay(galloc_allocator_t *a, const Trace &t, std::vector<void *> &ptrs, bool tolerate_oom);

// Free whatever the trace left live (a trace cut at max_events, and the
// persistent state), resetting ptrs to NULL.
void FreeLeftovers(galloc_allocator_t *a, std::vector<void *> &ptrs);

} // namespace bench

#endif // GALLOC_BENCH_TRACES_H
