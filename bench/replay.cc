// replay.cc: replay throughput, events per second, for generated transformer
// training traces of 10^5 .. 10^7 alloc/free events (GPT-2 125M, mixed
// precision, batch 8, sequence length 1024 fixed, or drawn per step from
// 128..1024 for the `variable` trace).
//
//   replay/<fixed|variable>/<events>/real_time
//
// One iteration replays the whole trace into a fresh allocator (PyTorch's
// default policy, sim device of 80 GiB) through galloc_malloc / galloc_free,
// in a tight loop over an in-memory event array with an id -> pointer array.
// Creating the allocator and freeing what the trace leaves live are not timed;
// the segments the trace creates (cold misses, a few per step at most) are.
// Traces are generated once per process, before timing.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "bench/galloc_util.h"
#include "bench/traces.h"

namespace bench {
namespace {

const Trace &CachedTrace(bool variable, size_t events)
{
    static std::map<std::pair<bool, size_t>, std::unique_ptr<Trace>> cache;
    std::unique_ptr<Trace> &t = cache[{variable, events}];
    if (!t) {
        // Enough steps for any size asked for; the generator stops at `events`.
        ga_gen_model_t m = Model("125M", variable, 1000000);
        t = std::make_unique<Trace>(Generate(m, events));
    }
    return *t;
}

void BM_Replay(benchmark::State &state, bool variable)
{
    const Trace &t = CachedTrace(variable, static_cast<size_t>(state.range(0)));
    std::vector<void *> ptrs(t.ids, nullptr);
    int64_t dev_allocs = 0;
    for (auto _ : state) {
        state.PauseTiming();
        galloc_allocator_t *a = CreateOrDie("sim_capacity:80GiB");
        state.ResumeTiming();
        Replay(a, t, ptrs, false);
        state.PauseTiming();
        dev_allocs = Stats(a).num_device_alloc;
        FreeLeftovers(a, ptrs);
        CheckAndDestroy(a);
        state.ResumeTiming();
    }
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(t.events.size()));
    state.counters["events"] = static_cast<double>(t.events.size());
    state.counters["dev_allocs"] = static_cast<double>(dev_allocs);
}

int Register()
{
    benchmark::RegisterBenchmark("replay/fixed", BM_Replay, false)
        ->Arg(100000)
        ->Arg(1000000)
        ->Arg(10000000)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("replay/variable", BM_Replay, true)
        ->Arg(100000)
        ->Arg(1000000)
        ->Arg(10000000)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
