// efficiency.cc: memory efficiency of the caching policies on generated
// transformer training runs: peak reserved / peak requested bytes
// (reserved_bytes.all.peak / requested_bytes.all.peak, PyTorch's keys), as
// benchmark counters. The time is that of one replay and is not the point.
//
//   efficiency/<model>_<fixed|variable>/<policy>/iterations:1
//
// Models: GPT-2 125M, 350M and 1.3B (mixed precision, Adam; see traces.cc),
// sequence length 1024 fixed (4 steps), or drawn per step from 128..1024
// (16 steps: a new length each step is what fragments the cache).
// Policies (PYTORCH_CUDA_ALLOC_CONF strings):
//   default         PyTorch's defaults
//   expandable      expandable_segments:True
//   max_split_64    max_split_size_mb:64
//   roundup_pow2_4  roundup_power2_divisions:4
//   gc_0.8          garbage_collection_threshold:0.8 with
//                   per_process_memory_fraction set to 1.25 x the trace's peak
//                   requested bytes (the GC only runs under a fraction: it
//                   frees cached blocks once reserved passes 0.8 x that cap)
// An allocation that runs out of memory under the cap is counted (ooms) and
// the replay goes on without it.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/galloc_util.h"
#include "bench/traces.h"

namespace bench {
namespace {

constexpr double kCapacity = 80.0 * (1ull << 30); // sim_capacity:80GiB
constexpr double kGcHeadroom = 1.25;              // the cap, in peak requested bytes
constexpr double kGiB = 1ull << 30;

struct Workload {
    std::string model;
    bool variable;
};

const Trace &CachedTrace(const Workload &w)
{
    static std::map<std::string, std::unique_ptr<Trace>> cache;
    std::unique_ptr<Trace> &t = cache[w.model + (w.variable ? "v" : "f")];
    if (!t)
        t = std::make_unique<Trace>(Generate(Model(w.model, w.variable, w.variable ? 16 : 4), 0));
    return *t;
}

std::string PolicyConf(const std::string &policy, const Trace &t, double *fraction)
{
    std::string conf = "sim_capacity:80GiB";
    *fraction = 1.0;
    if (policy == "expandable")
        return conf + ",expandable_segments:True";
    if (policy == "max_split_64")
        return conf + ",max_split_size_mb:64";
    if (policy == "roundup_pow2_4")
        return conf + ",roundup_power2_divisions:4";
    if (policy == "gc_0.8") {
        *fraction = kGcHeadroom * static_cast<double>(t.peak_requested) / kCapacity;
        char buf[96];
        std::snprintf(buf, sizeof buf, ",garbage_collection_threshold:0.8,per_process_memory_fraction:%.6f", *fraction);
        return conf + buf;
    }
    return conf;
}

void BM_Efficiency(benchmark::State &state, Workload w, std::string policy)
{
    const Trace &t = CachedTrace(w);
    double fraction = 1.0;
    std::string conf = PolicyConf(policy, t, &fraction);
    std::vector<void *> ptrs(t.ids, nullptr);
    galloc_stats_t s = {};
    uint64_t failed = 0;
    for (auto _ : state) {
        galloc_allocator_t *a = CreateOrDie(conf.c_str());
        failed = Replay(a, t, ptrs, true);
        s = Stats(a);
        FreeLeftovers(a, ptrs);
        CheckAndDestroy(a);
    }
    double reserved = static_cast<double>(s.reserved_bytes[GALLOC_STAT_ALL].peak);
    double requested = static_cast<double>(s.requested_bytes[GALLOC_STAT_ALL].peak);
    state.counters["reserved_peak_GiB"] = reserved / kGiB;
    state.counters["requested_peak_GiB"] = requested / kGiB;
    state.counters["allocated_peak_GiB"] = static_cast<double>(s.allocated_bytes[GALLOC_STAT_ALL].peak) / kGiB;
    state.counters["reserved_over_requested"] = requested > 0 ? reserved / requested : 0.0;
    state.counters["ooms"] = static_cast<double>(failed);
    state.counters["alloc_retries"] = static_cast<double>(s.num_alloc_retries);
    state.counters["dev_allocs"] = static_cast<double>(s.num_device_alloc);
    state.counters["dev_frees"] = static_cast<double>(s.num_device_free);
    state.counters["fraction"] = fraction;
    state.counters["events"] = static_cast<double>(t.events.size());
}

int Register()
{
    const char *const policies[] = {"default", "expandable", "max_split_64", "roundup_pow2_4", "gc_0.8"};
    for (const char *model : {"125M", "350M", "1.3B"}) {
        for (bool variable : {false, true}) {
            Workload w{model, variable};
            for (const char *policy : policies) {
                std::string name = std::string("efficiency/") + model + (variable ? "_variable/" : "_fixed/") + policy;
                benchmark::RegisterBenchmark(name.c_str(), BM_Efficiency, w, std::string(policy))
                    ->Iterations(1)
                    ->Unit(benchmark::kMillisecond);
            }
        }
    }
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
