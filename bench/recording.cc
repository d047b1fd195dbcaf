// recording.cc: what history recording (galloc_record_memory_history, PyTorch's
// torch.cuda.memory._record_memory_history) costs on the hot path: the
// fixed 4 KiB cache-hit pair of pairs.cc, single-threaded, under
//
//   recording/never        recording never started (the baseline)
//   recording/off          started with ALL + stacks, then stopped (enabled NONE):
//                          what is left on the hot path once recording is off
//   recording/state        enabled STATE, context NONE: live-block state only
//   recording/all          enabled ALL, context NONE: every event into the trace ring
//   recording/all_stacks   enabled ALL, context ALL, stacks ALL: plus a native
//                          stack captured at every malloc and every free
//
// Each pair is two API calls (malloc, free), i.e. two recorded events; the
// summary divides the difference to `never` by two to give the cost per event.
// The ring holds 65,536 entries and overwrites its oldest, so memory stays
// bounded however long the benchmark runs.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/galloc_util.h"
#include "bench/pair_kernels.h"
#include "bench/sequences.h"

namespace bench {
namespace {

enum class Mode { kNever, kOff, kState, kAll, kAllStacks };

void Record(galloc_allocator_t *a, galloc_history_t enabled, galloc_context_t context, galloc_stacks_t stacks)
{
    galloc_history_options_t o = {};
    o.struct_size = sizeof o;
    o.enabled = enabled;
    o.context = context;
    o.stacks = stacks;
    o.max_entries = 65536;
    galloc_status_t st = galloc_record_memory_history(a, &o);
    if (st != GALLOC_OK)
        Die(a, "galloc_record_memory_history", st);
}

void BM_Recording(benchmark::State &state, Mode mode)
{
    galloc_allocator_t *alloc = CreateOrDie("sim_capacity:80GiB");
    switch (mode) {
    case Mode::kNever: break;
    case Mode::kOff:
        Record(alloc, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL);
        Record(alloc, GALLOC_HISTORY_NONE, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON);
        break;
    case Mode::kState: Record(alloc, GALLOC_HISTORY_STATE, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON); break;
    case Mode::kAll: Record(alloc, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON); break;
    case Mode::kAllStacks: Record(alloc, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL); break;
    }
    GallocAdaptor a{alloc, 0};
    std::vector<size_t> sizes = MakeSizes(Seq::kFixed4K, 0);
    WarmPairs(a, sizes);
    PairLoop(state, a, sizes);
    CheckAndDestroy(alloc);
}

int Register()
{
    const struct {
        const char *name;
        Mode mode;
    } modes[] = {{"recording/never", Mode::kNever},
                 {"recording/off", Mode::kOff},
                 {"recording/state", Mode::kState},
                 {"recording/all", Mode::kAll},
                 {"recording/all_stacks", Mode::kAllStacks}};
    for (const auto &m : modes)
        PairIterations(benchmark::RegisterBenchmark(m.name, BM_Recording, m.mode))->UseRealTime();
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
