// scaling.cc: how the cost of a cache-hit malloc+free pair grows with the
// number of blocks the allocator holds, n = 10^2 .. 10^5.
//
//   live/held/<n>/real_time        n live blocks packed into their segments;
//                                  the pairs are served from the free tail.
//                                  The live blocks sit in the pointer map
//                                  (hash: expected flat).
//   live/fragmented/<n>/real_time  2n blocks allocated, every other one freed:
//                                  n live blocks and about n free holes that
//                                  cannot merge, all in the small pool's
//                                  best-fit tree; the pairs ask for the holes'
//                                  sizes in random order, so each lookup
//                                  walks a tree of ~n nodes (expected log n).
//
// Block sizes are 512 B .. 32 KiB (64 classes of 512 B): the small pool, where
// PyTorch caches the most blocks. The holes counter gives the number of free
// blocks in the tree (inactive_split), held the live ones.
#include <benchmark/benchmark.h>

#include <utility>
#include <vector>

#include "bench/galloc_util.h"
#include "bench/pair_kernels.h"
#include "bench/sequences.h"

namespace bench {
namespace {

constexpr const char *kConf = "sim_capacity:80GiB";

size_t ClassSize(uint64_t k)
{
    return 512 * (1 + k % 64);
}

void BM_Live(benchmark::State &state, bool fragmented)
{
    const size_t n = static_cast<size_t>(state.range(0));
    galloc_allocator_t *alloc = CreateOrDie(kConf);
    GallocAdaptor a{alloc, 0};
    Rng r(n);
    std::vector<void *> live;
    std::vector<size_t> hole_sizes;
    if (fragmented) {
        // All 2n first: freeing as we went would let the next request refill the hole.
        std::vector<std::pair<void *, size_t>> all;
        for (size_t i = 0; i < 2 * n; i++) {
            size_t sz = ClassSize(r.Next());
            all.emplace_back(a.Alloc(sz), sz);
        }
        for (size_t i = 0; i < all.size(); i++) {
            if (i % 2 == 0) {
                live.push_back(all[i].first);
            } else {
                a.Free(all[i].first);
                hole_sizes.push_back(all[i].second);
            }
        }
    } else {
        for (size_t i = 0; i < n; i++)
            live.push_back(a.Alloc(ClassSize(r.Next())));
    }
    // The pairs: hole sizes in random order (fragmented), else the same classes.
    std::vector<size_t> sizes(kSeqLen);
    for (size_t &s : sizes)
        s = fragmented ? hole_sizes[r.Next() % hole_sizes.size()] : ClassSize(r.Next());
    WarmPairs(a, sizes);
    galloc_stats_t before = Stats(alloc);
    PairLoop(state, a, sizes);
    galloc_stats_t after = Stats(alloc);
    state.counters["dev_allocs"] = static_cast<double>(after.num_device_alloc - before.num_device_alloc);
    state.counters["held"] = static_cast<double>(after.active[GALLOC_STAT_ALL].current);
    state.counters["holes"] = static_cast<double>(after.inactive_split[GALLOC_STAT_ALL].current);
    for (void *p : live)
        a.Free(p);
    CheckAndDestroy(alloc);
}

int Register()
{
    for (bool frag : {false, true}) {
        PairIterations(benchmark::RegisterBenchmark(frag ? "live/fragmented" : "live/held", BM_Live, frag))
            ->Arg(100)
            ->Arg(1000)
            ->Arg(10000)
            ->Arg(100000)
            ->UseRealTime();
    }
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
