// inspect.cc: what galloc_usable_size costs (api/galloc_inspect.h). A replay
// that attributes memory to its owners asks it after every malloc, so it
// must cost about what a free does, not what a locked call does:
//
//   usable_size/stripe/real_time/threads:{1,2}
//                                 a live 4 KiB block per thread, each on a
//                                 stream of its own: the stripe path (its
//                                 stripe's lock only)
//   usable_size/recording/real_time
//                                 the same with history recording on, which
//                                 closes the stripe path: the locked path,
//                                 the allocator's lock alone
//   locked_call/memory_info/real_time/threads:{1,2}
//                                 a locked call that does next to nothing
//                                 while the stripe path is open: the
//                                 allocator's lock and every stripe's, the
//                                 stripes' counters folded and headroom
//                                 granted again (what usable_size would cost
//                                 without its stripe member)
//   pair_usable/fixed_4KiB/real_time
//                                 pairs.cc's fixed 4 KiB pair with a
//                                 usable_size after each malloc (a replay's
//                                 step); compare with pair/fixed_4KiB
//
// An item is one call (pair_usable: one pair).
#include <benchmark/benchmark.h>

#include "bench/galloc_util.h"
#include "bench/pair_kernels.h"

namespace bench {
namespace {

constexpr const char *kConf = "sim_capacity:80GiB";
galloc_allocator_t *g_alloc = nullptr;

void SetupShared(const benchmark::State &)
{
    g_alloc = CreateOrDie(kConf);
}

void TeardownShared(const benchmark::State &)
{
    CheckAndDestroy(g_alloc);
    g_alloc = nullptr;
}

size_t UsableOrDie(galloc_allocator_t *a, void *p)
{
    size_t n = 0;
    galloc_status_t st = galloc_usable_size(a, p, &n);
    if (__builtin_expect(st != GALLOC_OK, 0))
        Die(a, "galloc_usable_size", st);
    return n;
}

void Loop(benchmark::State &state, galloc_allocator_t *alloc, galloc_stream_t stream)
{
    GallocAdaptor a{alloc, stream};
    void *p = a.Alloc(4096);
    for (auto _ : state)
        benchmark::DoNotOptimize(UsableOrDie(alloc, p));
    state.SetItemsProcessed(state.iterations());
    a.Free(p);
}

void BM_Stripe(benchmark::State &state)
{
    Loop(state, g_alloc, static_cast<galloc_stream_t>(1 + state.thread_index()));
}

void BM_LockedCall(benchmark::State &state)
{
    GallocAdaptor a{g_alloc, static_cast<galloc_stream_t>(1 + state.thread_index())};
    a.Free(a.Alloc(4096)); // the stripe path opens after the first locked call
    size_t free_bytes = 0, total = 0;
    for (auto _ : state) {
        galloc_status_t st = galloc_memory_info(g_alloc, &free_bytes, &total);
        if (__builtin_expect(st != GALLOC_OK, 0))
            Die(g_alloc, "galloc_memory_info", st);
        benchmark::DoNotOptimize(free_bytes);
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_Recording(benchmark::State &state)
{
    galloc_allocator_t *alloc = CreateOrDie(kConf);
    galloc_history_options_t o = {};
    o.struct_size = sizeof o;
    o.enabled = GALLOC_HISTORY_STATE;
    o.context = GALLOC_CONTEXT_NONE;
    o.stacks = GALLOC_STACKS_PYTHON;
    galloc_status_t st = galloc_record_memory_history(alloc, &o);
    if (st != GALLOC_OK)
        Die(alloc, "galloc_record_memory_history", st);
    Loop(state, alloc, 1);
    CheckAndDestroy(alloc);
}

void BM_PairUsable(benchmark::State &state)
{
    galloc_allocator_t *alloc = CreateOrDie(kConf);
    GallocAdaptor a{alloc, 0};
    a.Free(a.Alloc(4096)); // warm: every timed malloc is a cache hit
    for (auto _ : state) {
        void *p = a.Alloc(4096);
        benchmark::DoNotOptimize(UsableOrDie(alloc, p));
        a.Free(p);
    }
    state.SetItemsProcessed(state.iterations());
    CheckAndDestroy(alloc);
}

int Register()
{
    PairIterations(benchmark::RegisterBenchmark("usable_size/stripe", BM_Stripe))
        ->Setup(SetupShared)
        ->Teardown(TeardownShared)
        ->UseRealTime()
        ->Threads(1)
        ->Threads(2);
    PairIterations(benchmark::RegisterBenchmark("usable_size/recording", BM_Recording))->UseRealTime();
    PairIterations(benchmark::RegisterBenchmark("locked_call/memory_info", BM_LockedCall))
        ->Setup(SetupShared)
        ->Teardown(TeardownShared)
        ->UseRealTime()
        ->Threads(1)
        ->Threads(2);
    PairIterations(benchmark::RegisterBenchmark("pair_usable/fixed_4KiB", BM_PairUsable))->UseRealTime();
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
