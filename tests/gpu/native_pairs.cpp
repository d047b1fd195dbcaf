// native_pairs.cpp: malloc+free pairs through PyTorch's own caching allocator
// (c10::cuda::CUDACachingAllocator::raw_alloc_with_stream / raw_delete) and
// through galloc's C API on the real driver, in one process on one GPU, over
// bench/'s size sequences (bench/sequences.cc, compiled in). A PyTorch C++
// extension: tests/gpu/speed.py builds it on the GPU machine with
// torch.utils.cpp_extension.load and prints the rows of bench/RESULTS.md.
//
// Each thread runs on a stream of its own (PyTorch: one from its pool; galloc:
// the same cudaStream_t), first one untimed pass over the sequence (so every
// size is cached: the timed pairs are cache hits, as bench/pairs.cc's), then
// `pairs` timed pairs cycling through it. galloc is reached with dlopen of the
// libgalloc.so given, so the extension needs no galloc header at build time
// beyond the few prototypes below (the public ABI, api/galloc_allocator.h).
#include <torch/extension.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/sequences.h"

namespace {

typedef int (*create_fn)(const char *, int, const char *, void **, char *, size_t);
typedef void (*destroy_fn)(void *);
typedef int (*malloc_fn)(void *, size_t, uintptr_t, void **);
typedef int (*free_fn)(void *, void *);

struct Galloc {
    create_fn create;
    destroy_fn destroy;
    malloc_fn malloc;
    free_fn free;
};

Galloc Open(const std::string &lib)
{
    void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr)
        throw std::runtime_error(std::string("dlopen: ") + dlerror());
    Galloc g;
    g.create = reinterpret_cast<create_fn>(dlsym(h, "galloc_allocator_create"));
    g.destroy = reinterpret_cast<destroy_fn>(dlsym(h, "galloc_allocator_destroy"));
    g.malloc = reinterpret_cast<malloc_fn>(dlsym(h, "galloc_malloc"));
    g.free = reinterpret_cast<free_fn>(dlsym(h, "galloc_free"));
    if (!g.create || !g.destroy || !g.malloc || !g.free)
        throw std::runtime_error(lib + ": a galloc symbol is missing");
    return g;
}

bench::Seq SeqOf(const std::string &name)
{
    for (bench::Seq s : {bench::Seq::kFixed4K, bench::Seq::kSmallMix, bench::Seq::kTrainingMix})
        if (name == bench::SeqName(s))
            return s;
    throw std::invalid_argument("unknown sequence " + name);
}

// Runs body(thread, stream) on `threads` threads at once; returns the wall seconds of the slowest.
template <class F> double OnThreads(int threads, F body)
{
    std::vector<c10::cuda::CUDAStream> streams;
    for (int t = 0; t < threads; t++)
        streams.push_back(c10::cuda::getStreamFromPool(false, 0));
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> secs(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            body(t, streams[t], /*timed=*/false);
            ready++;
            while (!go.load())
                std::this_thread::yield();
            auto t0 = std::chrono::steady_clock::now();
            body(t, streams[t], /*timed=*/true);
            secs[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        });
    while (ready.load() < threads)
        std::this_thread::yield();
    go = true;
    for (auto &th : ts)
        th.join();
    double worst = 0;
    for (double s : secs)
        worst = s > worst ? s : worst;
    return worst;
}

// Nanoseconds per pair per thread: PyTorch's native allocator.
double Native(const std::string &seq, int threads, int64_t pairs)
{
    std::vector<size_t> sizes = bench::MakeSizes(SeqOf(seq), 0);
    double s = OnThreads(threads, [&](int t, c10::cuda::CUDAStream st, bool timed) {
        size_t i = static_cast<size_t>(t) * (bench::kSeqLen / 2 + 17);
        int64_t n = timed ? pairs : static_cast<int64_t>(bench::kSeqLen);
        for (int64_t k = 0; k < n; k++, i++) {
            void *p = c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(sizes[i & (bench::kSeqLen - 1)], st.stream());
            c10::cuda::CUDACachingAllocator::raw_delete(p);
        }
    });
    c10::cuda::CUDACachingAllocator::emptyCache();
    return s * 1e9 / static_cast<double>(pairs);
}

// The same through galloc (backend "cuda", conf as given), one allocator shared by the threads.
double Galloc(const std::string &lib, const std::string &conf, const std::string &seq, int threads, int64_t pairs)
{
    Galloc g = Open(lib);
    void *a = nullptr;
    char err[512] = "";
    if (g.create("cuda", 0, conf.c_str(), &a, err, sizeof err) != 0)
        throw std::runtime_error(std::string("galloc_allocator_create: ") + err);
    std::vector<size_t> sizes = bench::MakeSizes(SeqOf(seq), 0);
    std::atomic<int> failed{0};
    double s = OnThreads(threads, [&](int t, c10::cuda::CUDAStream st, bool timed) {
        size_t i = static_cast<size_t>(t) * (bench::kSeqLen / 2 + 17);
        int64_t n = timed ? pairs : static_cast<int64_t>(bench::kSeqLen);
        uintptr_t stream = reinterpret_cast<uintptr_t>(st.stream());
        for (int64_t k = 0; k < n; k++, i++) {
            void *p = nullptr;
            if (g.malloc(a, sizes[i & (bench::kSeqLen - 1)], stream, &p) != 0 || g.free(a, p) != 0) {
                failed++;
                return;
            }
        }
    });
    g.destroy(a);
    if (failed.load())
        throw std::runtime_error("a galloc call failed");
    return s * 1e9 / static_cast<double>(pairs);
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("native", &Native, "ns per malloc+free pair per thread through PyTorch's caching allocator");
    m.def("galloc", &Galloc, "ns per malloc+free pair per thread through galloc (dlopen of lib)");
}
