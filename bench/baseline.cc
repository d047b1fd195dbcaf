// baseline.cc: the hot-path sequences of pairs.cc through the process's
// malloc/free, the floor for CPU-side bookkeeping. Built four times (BUILD):
// linked plainly (glibc) and against libjemalloc, libmimalloc and
// libtcmalloc_minimal, each of which replaces malloc process-wide, hence one
// binary per allocator. The benchmark names are pairs.cc's, so the summary
// matches them up.
//
// BENCH_ALLOCATOR names the allocator the binary was linked for; at start the
// binary checks which shared object actually provides malloc and refuses to
// run if it is not that one (a dropped -l flag would otherwise silently
// measure glibc four times). The check is reported as the "malloc_from"
// context entry of the JSON output.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/pair_kernels.h"
#include "bench/sequences.h"

#ifndef BENCH_ALLOCATOR
#error "BENCH_ALLOCATOR must name the allocator this binary links (glibc, jemalloc, mimalloc, tcmalloc)"
#endif

namespace bench {
namespace {

struct HostAdaptor {
    void *Alloc(size_t n)
    {
        void *p = std::malloc(n);
        if (__builtin_expect(p == nullptr, 0)) {
            std::fprintf(stderr, "bench: malloc(%zu) failed\n", n);
            std::abort();
        }
        return p;
    }
    void Free(void *p) { std::free(p); }
};

void BM_Pairs(benchmark::State &state, Seq seq)
{
    HostAdaptor a;
    if (seq == Seq::kChurn) {
        Churn<HostAdaptor> churn(a, static_cast<uint64_t>(state.thread_index()));
        churn.Warm();
        churn.Loop(state);
        return;
    }
    std::vector<size_t> sizes = MakeSizes(seq, 0);
    WarmPairs(a, sizes);
    PairLoop(state, a, sizes);
}

// The shared object that provides malloc for this process ("libc.so.6",
// "libjemalloc.so.2", ...), and whether it is the one BENCH_ALLOCATOR expects.
bool CheckMallocProvider(std::string *from)
{
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    if (sym == nullptr || dladdr(sym, &info) == 0 || info.dli_fname == nullptr)
        return false;
    const char *base = std::strrchr(info.dli_fname, '/');
    *from = base != nullptr ? base + 1 : info.dli_fname;
    const char *want = BENCH_ALLOCATOR;
    const char *needle = std::strcmp(want, "glibc") == 0 ? "libc.so" : want;
    return from->find(needle) != std::string::npos;
}

int Register()
{
    std::string from;
    if (!CheckMallocProvider(&from)) {
        std::fprintf(stderr, "bench: built for %s but malloc comes from '%s'\n", BENCH_ALLOCATOR, from.c_str());
        std::exit(2);
    }
    benchmark::AddCustomContext("allocator", BENCH_ALLOCATOR);
    benchmark::AddCustomContext("malloc_from", from);
    for (Seq s : {Seq::kFixed4K, Seq::kSmallMix, Seq::kTrainingMix, Seq::kChurn}) {
        std::string name = std::string("pair/") + SeqName(s);
        PairIterations(benchmark::RegisterBenchmark(name.c_str(), BM_Pairs, s))->UseRealTime()->Threads(1)->Threads(2);
    }
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
