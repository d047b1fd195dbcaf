// pairs.cc: galloc's hot path. malloc+free pairs on the sim backend after a
// warm-up pass, so every timed request is a cache hit and no device call is
// made (the dev_allocs counter shows it: device allocations during the timed
// loop, expected 0). The same sequences run through the host allocators in
// baseline.cc, under the same benchmark names.
//
//   pair/<sequence>/real_time/threads:{1,2}   both threads share one allocator
//                                             and stream 0
//   own_streams/<sequence>/real_time/threads:{1,2}
//                                             the same on one allocator, each
//                                             thread on a stream of its own
//                                             (per-stream locking's case: blocks
//                                             never move between threads)
//   own_allocators/<sequence>/real_time/threads:{1,2}
//                                             each thread on an allocator of
//                                             its own: nothing shared, the
//                                             ceiling per-stream locking could
//                                             reach for own_streams
//   multistream/<other streams>/real_time     pairs on stream 1 while 0..64
//                                             other streams hold cached and
//                                             live blocks in the same pools
//   step/training/real_time                   one training step per iteration:
//                                             50 sizes of 2..512 MiB allocated,
//                                             then freed (the hot-path goals' "training
//                                             step"; an item is one pair)
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>
#include <vector>

#include "bench/galloc_util.h"
#include "bench/pair_kernels.h"
#include "bench/sequences.h"

namespace bench {
namespace {

// 80 GiB, PyTorch's default policy. Shared by a run's threads: created before
// they start and destroyed after they end (Setup / Teardown).
constexpr const char *kConf = "sim_capacity:80GiB";
galloc_allocator_t *g_alloc = nullptr;
// num_device_alloc once the last thread finished its warm-up (a max over
// threads: the counter only grows).
std::atomic<int64_t> g_dev_before{0};

void SetupShared(const benchmark::State &)
{
    g_alloc = CreateOrDie(kConf);
    g_dev_before = 0;
}

void TeardownShared(const benchmark::State &)
{
    CheckAndDestroy(g_alloc);
    g_alloc = nullptr;
}

void NoteWarm()
{
    int64_t n = Stats(g_alloc).num_device_alloc, prev = g_dev_before.load();
    while (n > prev && !g_dev_before.compare_exchange_weak(prev, n)) {
    }
}

// After the loop (every thread is past the stop barrier): device allocations
// made while timing.
void ReportDeviceAllocs(benchmark::State &state)
{
    if (state.thread_index() == 0)
        state.counters["dev_allocs"] = static_cast<double>(Stats(g_alloc).num_device_alloc - g_dev_before.load());
}

void BM_Pairs(benchmark::State &state, Seq seq)
{
    GallocAdaptor a{g_alloc, 0};
    if (seq == Seq::kChurn) {
        Churn<GallocAdaptor> churn(a, static_cast<uint64_t>(state.thread_index()));
        churn.Warm();
        NoteWarm();
        churn.Loop(state);
        ReportDeviceAllocs(state);
        return;
    }
    std::vector<size_t> sizes = MakeSizes(seq, 0);
    WarmPairs(a, sizes);
    NoteWarm();
    PairLoop(state, a, sizes);
    ReportDeviceAllocs(state);
}

// BM_Pairs with thread t on stream 1 + t: with one allocator lock the
// threads still serialize, and the pool's per-stream free sets alternate.
void BM_OwnStreams(benchmark::State &state, Seq seq)
{
    GallocAdaptor a{g_alloc, static_cast<galloc_stream_t>(1 + state.thread_index())};
    std::vector<size_t> sizes = MakeSizes(seq, 0);
    WarmPairs(a, sizes);
    NoteWarm();
    PairLoop(state, a, sizes);
    ReportDeviceAllocs(state);
}

// BM_OwnStreams with an allocator per thread: no state, lock or cache line
// in common, so 2 threads scale as far as the machine lets them (the upper
// bound for own_streams).
void BM_OwnAllocators(benchmark::State &state, Seq seq)
{
    galloc_allocator_t *alloc = CreateOrDie(kConf);
    GallocAdaptor a{alloc, 1};
    std::vector<size_t> sizes = MakeSizes(seq, 0);
    WarmPairs(a, sizes);
    int64_t before = Stats(alloc).num_device_alloc;
    PairLoop(state, a, sizes);
    if (state.thread_index() == 0)
        state.counters["dev_allocs"] = static_cast<double>(Stats(alloc).num_device_alloc - before);
    CheckAndDestroy(alloc);
}

// Pairs on stream 1 (the small mix) while `others` other streams each hold
// cached free blocks of the same sizes and a few live ones. galloc's free sets
// are ordered by (stream, size), so the other streams' blocks share the trees
// the single-stream lookups walk.
void BM_MultiStream(benchmark::State &state)
{
    const int others = static_cast<int>(state.range(0));
    galloc_allocator_t *alloc = CreateOrDie(kConf);
    std::vector<size_t> sizes = MakeSizes(Seq::kSmallMix, 0);
    std::vector<std::pair<GallocAdaptor, void *>> held;
    for (int s = 0; s < others; s++) {
        GallocAdaptor o{alloc, static_cast<galloc_stream_t>(2 + s)};
        std::vector<void *> blocks;
        for (size_t i = 0; i < 256; i++)
            blocks.push_back(o.Alloc(sizes[(i * 7 + static_cast<size_t>(s)) % kSeqLen]));
        blocks.push_back(o.Alloc(size_t{3} << 20));  // large pool: a 20 MiB segment
        blocks.push_back(o.Alloc(size_t{64} << 20)); // and a 64 MiB one
        // Keep every 8th block live (it pins split remainders on that stream),
        // free the rest into the stream's cache.
        for (size_t i = 0; i < blocks.size(); i++) {
            if (i % 8 == 0)
                held.emplace_back(o, blocks[i]);
            else
                o.Free(blocks[i]);
        }
    }
    GallocAdaptor a{alloc, 1};
    WarmPairs(a, sizes);
    int64_t before = Stats(alloc).num_device_alloc;
    PairLoop(state, a, sizes);
    state.counters["dev_allocs"] = static_cast<double>(Stats(alloc).num_device_alloc - before);
    state.counters["streams"] = others + 1;
    for (auto &h : held)
        h.first.Free(h.second);
    CheckAndDestroy(alloc);
}

// The hot-path goals' training step: 50 activation-sized requests (log-uniform 2 MiB
// .. 512 MiB, multiples of 512 B, seed 42) allocated in order and then freed
// in order, as a forward pass holds its activations until the backward pass.
// After the warm-up step every request is a cache hit; items are pairs.
constexpr size_t kStepSizes = 50;

void BM_TrainingStep(benchmark::State &state)
{
    galloc_allocator_t *alloc = CreateOrDie(kConf);
    GallocAdaptor a{alloc, 0};
    Rng r(42);
    std::vector<size_t> sizes(kStepSizes);
    for (size_t &s : sizes)
        s = r.LogUniform(size_t{2} << 20, size_t{512} << 20, 512);
    std::vector<void *> live(kStepSizes);
    auto step = [&] {
        for (size_t i = 0; i < kStepSizes; i++)
            live[i] = a.Alloc(sizes[i]);
        benchmark::DoNotOptimize(live.data());
        for (void *p : live)
            a.Free(p);
    };
    step();
    int64_t before = Stats(alloc).num_device_alloc;
    for (auto _ : state)
        step();
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kStepSizes));
    state.counters["dev_allocs"] = static_cast<double>(Stats(alloc).num_device_alloc - before);
    state.counters["pairs"] = static_cast<double>(kStepSizes); // per iteration (summarize.py)
    CheckAndDestroy(alloc);
}

int Register()
{
    for (Seq s : {Seq::kFixed4K, Seq::kSmallMix, Seq::kTrainingMix, Seq::kChurn}) {
        std::string name = std::string("pair/") + SeqName(s);
        PairIterations(benchmark::RegisterBenchmark(name.c_str(), BM_Pairs, s))
            ->Setup(SetupShared)
            ->Teardown(TeardownShared)
            ->UseRealTime()
            ->Threads(1)
            ->Threads(2);
    }
    for (Seq s : {Seq::kFixed4K, Seq::kSmallMix}) {
        std::string name = std::string("own_streams/") + SeqName(s);
        PairIterations(benchmark::RegisterBenchmark(name.c_str(), BM_OwnStreams, s))
            ->Setup(SetupShared)
            ->Teardown(TeardownShared)
            ->UseRealTime()
            ->Threads(1)
            ->Threads(2);
    }
    for (Seq s : {Seq::kFixed4K, Seq::kSmallMix}) {
        std::string name = std::string("own_allocators/") + SeqName(s);
        PairIterations(benchmark::RegisterBenchmark(name.c_str(), BM_OwnAllocators, s))
            ->UseRealTime()
            ->Threads(1)
            ->Threads(2);
    }
    PairIterations(benchmark::RegisterBenchmark("multistream", BM_MultiStream))
        ->Arg(0)
        ->Arg(1)
        ->Arg(4)
        ->Arg(16)
        ->Arg(64)
        ->UseRealTime();
    PairIterations(benchmark::RegisterBenchmark("step/training", BM_TrainingStep))->UseRealTime();
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
