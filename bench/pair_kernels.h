// pair_kernels.h: the timed loops of the hot-path benchmarks, written once as
// templates over an allocator adaptor so that galloc and every host allocator
// run exactly the same loop on exactly the same sizes.
//
// An adaptor A provides `void *Alloc(size_t)` (never NULL: it aborts on
// failure) and `void Free(void *)`. The loops never touch the memory: galloc's
// sim addresses are not dereferenceable, and the point is the allocator's own
// bookkeeping. benchmark::DoNotOptimize makes the pointer escape, so the
// compiler cannot elide a host malloc/free pair.
//
// Thread-safety: each call works on its own locals; the adaptor decides what
// is shared (galloc: one allocator for all threads; host: the process heap).
#ifndef GALLOC_BENCH_PAIR_KERNELS_H
#define GALLOC_BENCH_PAIR_KERNELS_H

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "bench/sequences.h"

namespace bench {

// BENCH_PAIR_ITERATIONS=N in the environment fixes the iteration count of the
// pair benchmarks (no estimation runs): bench/run counts instructions per pair
// under callgrind as the difference between a run of 2N and one of N.
inline benchmark::internal::Benchmark *PairIterations(benchmark::internal::Benchmark *b)
{
    const char *n = std::getenv("BENCH_PAIR_ITERATIONS");
    if (n != nullptr && std::atoll(n) > 0)
        b->Iterations(std::atoll(n));
    return b;
}

// One pass of malloc+free over the sequence, untimed: fills the caches so the
// timed loop sees steady state (for galloc: cache hits only).
template <class A> void WarmPairs(A &a, const std::vector<size_t> &sizes)
{
    for (size_t s : sizes)
        a.Free(a.Alloc(s));
}

// malloc+free pairs cycling through sizes; one iteration is one pair. Thread
// t starts at a different offset so two threads do not request the same size
// at the same moment.
template <class A> void PairLoop(benchmark::State &state, A &a, const std::vector<size_t> &sizes)
{
    size_t i = static_cast<size_t>(state.thread_index()) * (kSeqLen / 2 + 17);
    for (auto _ : state) {
        void *p = a.Alloc(sizes[i & (kSeqLen - 1)]);
        benchmark::DoNotOptimize(p);
        a.Free(p);
        ++i;
    }
    state.SetItemsProcessed(state.iterations());
}

// The random live-set churn: kChurnLive blocks live; each iteration frees a
// random one and allocates a new size in its place (one pair).
template <class A> class Churn {
  public:
    Churn(A &a, uint64_t seed) : a_(a), steps_(MakeChurn(seed)), live_(kChurnLive, nullptr)
    {
        std::vector<size_t> init = MakeChurnInitial(seed);
        for (size_t i = 0; i < kChurnLive; i++)
            live_[i] = a_.Alloc(init[i]);
    }
    ~Churn()
    {
        for (void *p : live_)
            a_.Free(p);
    }
    Churn(const Churn &) = delete;
    Churn &operator=(const Churn &) = delete;

    // One full cycle of the steps, untimed, to reach steady state.
    void Warm()
    {
        for (const ChurnStep &c : steps_)
            Step(c);
    }

    void Loop(benchmark::State &state)
    {
        size_t i = 0;
        for (auto _ : state)
            Step(steps_[i++ & (kChurnLen - 1)]);
        state.SetItemsProcessed(state.iterations());
    }

  private:
    void Step(const ChurnStep &c)
    {
        a_.Free(live_[c.slot]);
        void *p = a_.Alloc(c.size);
        benchmark::DoNotOptimize(p);
        live_[c.slot] = p;
    }

    A &a_;
    std::vector<ChurnStep> steps_;
    std::vector<void *> live_;
};

} // namespace bench

#endif // GALLOC_BENCH_PAIR_KERNELS_H
