// gpu_sweeps.h: the fault-injection sweeps of the GPU backends, written once
// for every vendor. Each workload runs through the public API on a fake
// driver (tests/fake_cuda or tests/fake_hip: the FakeCuda handle says which);
// Sweep (cuda_fixture.h) fails every driver call in turn, or every call from
// the Nth on, and each recount checks galloc's stats against the fake's own
// books. The shared vendor suites (malloc_cases.cc, vmm_cases.cc,
// async_cases.cc) call SweepOnce / SweepFrom with their vendor's fake and layer.
#ifndef GA_TESTS_BACKEND_GPU_SWEEPS_H
#define GA_TESTS_BACKEND_GPU_SWEEPS_H

#include <cstdio>
#include <string>

#include "tests/backend/cuda_fixture.h"

namespace cuda_test {

enum class Layer { kNative, kExpandable, kAsync };

inline const char *LayerName(Layer l)
{
    return l == Layer::kNative ? "native" : l == Layer::kExpandable ? "expandable" : "async";
}

// Segments in both pools, a cross-stream free and its event, a cached block
// reused, empty_cache (events waited for, segments freed), then destroy.
inline void NativeWorkload(Run &r, uintptr_t s1)
{
    r.Malloc(0, 1);
    r.Malloc(1, 5 * kMiB);
    r.Malloc(2, 30 * kMiB, s1);
    r.RecordStream(0, s1);
    r.Free(0);        // records an event on s1
    r.Malloc(3, 100); // polls it
    r.Free(1);
    r.EmptyCache(); // synchronizes events, frees the whole free segments
    r.Malloc(4, 5 * kMiB);
    size_t f = 0, t = 0;
    r.Step("memory_info", [&] { return galloc_memory_info(r.a(), &f, &t); });
    r.Free(2);
    r.Free(3);
}

inline void ExpandableWorkload(Run &r, uintptr_t s1)
{
    r.Malloc(0, 5 * kMiB);
    r.Malloc(1, 30 * kMiB); // grows by a page
    r.Malloc(2, 1);         // the small pool's own segment
    r.Free(1);
    r.EmptyCache();         // unmaps the free page
    r.Malloc(3, 10 * kMiB); // fits what stays mapped
    r.RecordStream(3, s1);
    r.Free(3);
    r.Malloc(4, 3 * kMiB, s1); // a segment of its own for s1
    r.Free(0);
    r.EmptyCache();
    r.Free(2);
}

inline void AsyncWorkload(Run &r, uintptr_t s1)
{
    r.Malloc(0, 1);
    r.Malloc(1, 3 * kMiB, s1);
    r.RecordStream(0, s1);
    r.Free(0); // waits for s1, then frees on the default stream
    r.EmptyCache();
    r.Malloc(2, 4096);
    r.Step("reset_peak", [&] { return galloc_stats_reset_peak(r.a()); });
    r.Free(1);
    r.Step("stream_synchronize", [&] { return galloc_stream_synchronize(r.a(), s1); });
}

// One sweep of `layer` on fake f: every call failing once with `code`
// (from = false) or every call from the Nth on (from = true).
inline SweepResult LayerSweep(FakeCuda &f, Layer layer, int code, bool from)
{
    uintptr_t s1 = 0;
    std::string extra = layer == Layer::kExpandable ? "expandable_segments:True"
                        : layer == Layer::kAsync    ? "backend:" + f.vendor() + "MallocAsync"
                                                    : "";
    auto setup = [&](FakeCuda &fc) {
        if (layer == Layer::kExpandable) {
            EXPECT_EQ(fc.fake_cuda_configure(2, 4 * kGiB, 2 * kMiB), 0);
        }
        EXPECT_EQ(fc.fake_cuda_stream_create(0, &s1), 0);
    };
    auto workload = [&](Run &r) {
        if (layer == Layer::kNative)
            NativeWorkload(r, s1);
        else if (layer == Layer::kExpandable)
            ExpandableWorkload(r, s1);
        else
            AsyncWorkload(r, s1);
    };
    auto recount = [&](Run &r, FakeCuda &fc) {
        galloc_stats_t st = Stats(r.a());
        if (layer == Layer::kNative) {
            EXPECT_EQ(st.allocation[ALL].current, r.LiveCount());
            EXPECT_EQ((uint64_t)st.reserved_bytes[ALL].current, fc.Stats().device_used[0])
                << "reserved_bytes is what the driver charged";
            EXPECT_EQ(st.segment[ALL].current, (int64_t)fc.Stats().live_segments);
        } else if (layer == Layer::kExpandable) {
            EXPECT_EQ(st.allocation[ALL].current, r.LiveCount());
            // A refused undo leaves an orphan the backend releases before its
            // next map. 41 MiB cannot fit in what empty_cache left mapped (a
            // free run that long holds a whole 20 MiB page, which it unmaps),
            // so this malloc maps, and the orphans go first.
            // The sweep's one fault may land on an unmap of these
            // empty_caches: it reports the refusal (GALLOC_E_DEVICE) and
            // keeps the page mapped, and a second empty_cache unmaps it.
            auto empty_cache = [&r] {
                galloc_status_t ec = galloc_empty_cache(r.a());
                return ec == GALLOC_E_DEVICE ? galloc_empty_cache(r.a()) : ec;
            };
            void *p = nullptr;
            ASSERT_EQ(empty_cache(), GALLOC_OK);
            ASSERT_EQ(galloc_malloc(r.a(), 41 * kMiB, 0, &p), GALLOC_OK);
            ASSERT_EQ(galloc_free(r.a(), p), GALLOC_OK);
            ASSERT_EQ(empty_cache(), GALLOC_OK);
            st = Stats(r.a());
            fake_gpu_stats_t fs = fc.Stats();
            EXPECT_EQ((uint64_t)st.reserved_bytes[ALL].current, fs.live_mapped_bytes)
                << "reserved_bytes follows mapped bytes";
            EXPECT_EQ(fs.live_mapped_bytes, fs.live_handle_bytes) << "no handle without its mapping";
        } else {
            uint64_t reserved = 0;
            EXPECT_EQ(fc.fake_cuda_pool_attr(0, 5 /* reserved, current: CUDA's and HIP's value */, &reserved), 0);
            EXPECT_EQ((uint64_t)st.reserved_bytes[ALL].current, reserved);
            EXPECT_EQ((int64_t)fc.Stats().live_async, r.LiveCount());
            EXPECT_EQ(st.active_bytes[ALL].current, st.allocated_bytes[ALL].current);
        }
    };
    return Sweep(f, CudaConf(f, extra), code, from, setup, workload, recount);
}

// Every call of the layer's workload failing once, with an out-of-memory and
// an unknown error: one run per call of the clean run, no leak. Returns the
// runs of the out-of-memory sweep.
inline uint64_t SweepOnce(FakeCuda &f, Layer layer, uint64_t min_runs)
{
    uint64_t oom_runs = 0;
    for (int code : {kOutOfMemory, kUnknown}) {
        SweepResult r = LayerSweep(f, layer, code, false);
        EXPECT_GT(r.runs, min_runs);
        EXPECT_EQ(r.runs, r.clean_calls) << "one run per driver call of the clean run";
        EXPECT_EQ(r.max_leaks, 0u);
        if (code == kOutOfMemory)
            oom_runs = r.runs;
        std::printf("%s %s sweep, error %d: %llu calls failed one at a time, %llu visible failures, 0 leaks\n",
                    f.vendor().c_str(), LayerName(layer), code, (unsigned long long)r.runs,
                    (unsigned long long)r.visible);
    }
    return oom_runs;
}

// Every call from the Nth on failing (the driver "dies" mid-workload): no leak.
inline void SweepFrom(FakeCuda &f, Layer layer, uint64_t min_runs)
{
    SweepResult r = LayerSweep(f, layer, kUnknown, true);
    EXPECT_GT(r.runs, min_runs);
    EXPECT_EQ(r.max_leaks, 0u);
    std::printf("%s %s sweep, every call from the Nth on: %llu runs, 0 leaks\n", f.vendor().c_str(), LayerName(layer),
                (unsigned long long)r.runs);
}

} // namespace cuda_test

#endif // GA_TESTS_BACKEND_GPU_SWEEPS_H
