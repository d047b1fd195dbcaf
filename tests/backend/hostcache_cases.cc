// hostcache_cases: the pinned host cache (api/galloc_host.h, host/) on the
// fake drivers, through the public API: its driver calls (cuMemHostAlloc /
// hipHostMalloc, or cuMemHostRegister_v2 / hipHostRegister with
// pinned_use_cuda_host_register, the events of its blocks' streams, their
// queries, the give-backs), what the driver holds against host_memory_stats(),
// and the fault sweeps: every driver call of a pin / record / free / reuse /
// empty_cache workload failing once (out of memory, then an unknown error),
// and every call from the Nth on; no figure changes on a refusal, nothing
// leaks (Sweep, cuda_fixture.h). Written once over a Vendor (vendor_cases.h),
// instantiated by cuda_hostcache_test.cc and hip_hostcache_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

namespace {

galloc_host_stats_t HostStats(galloc_allocator_t *a)
{
    galloc_host_stats_t s = {};
    s.struct_size = sizeof s;
    EXPECT_EQ(galloc_host_memory_stats(a, &s), GALLOC_OK);
    return s;
}

// The workload of the sweeps: two blocks, one used on two streams, freed
// (two events), both taken again (the events queried), a third pinned, all
// freed and given back.
struct HostWork {
    std::vector<void *> live;
    void Pin(Run &r, size_t n)
    {
        void *p = nullptr;
        if (r.Step("host_malloc(" + std::to_string(n) + ")", [&] { return galloc_host_malloc(r.a(), n, &p); }) ==
            GALLOC_OK)
            live.push_back(p);
    }
    void Unpin(Run &r, size_t i)
    {
        if (i < live.size() && live[i] != nullptr &&
            r.Step("host_free", [&] { return galloc_host_free(r.a(), live[i]); }) == GALLOC_OK)
            live[i] = nullptr;
    }
    void Use(Run &r, size_t i, uintptr_t s)
    {
        if (i < live.size() && live[i] != nullptr)
            r.Step("host_record_stream", [&] { return galloc_host_record_stream(r.a(), live[i], s); });
    }
    int64_t Live() const
    {
        int64_t n = 0;
        for (void *p : live)
            n += p != nullptr;
        return n;
    }
};

} // namespace

TEST_P(HostCache, DriverCallsFollowThePolicy)
{
    Make();
    uintptr_t s1 = 0, s2 = 0;
    f_.fake_cuda_set_manual_streams(1);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s2), 0);
    void *p = nullptr, *q = nullptr;
    ASSERT_EQ(galloc_host_malloc(a_, 3 * kMiB, &p), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls(v().host_alloc), 1u);
    EXPECT_EQ(f_.Stats().live_host_bytes, 4 * kMiB) << "3 MiB rounded to a power of two";
    std::memset(p, 0x7a, 3 * kMiB);
    ASSERT_EQ(galloc_host_record_stream(a_, p, s1), GALLOC_OK);
    ASSERT_EQ(galloc_host_record_stream(a_, p, s2), GALLOC_OK);
    ASSERT_EQ(galloc_host_free(a_, p), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls(v().event_record), 2u) << "one event per stream";
    ASSERT_EQ(galloc_host_malloc(a_, 3 * kMiB, &q), GALLOC_OK);
    EXPECT_NE(q, p) << "the streams' work is not done";
    EXPECT_EQ(f_.fake_cuda_calls(v().host_alloc), 2u);
    ASSERT_EQ(f_.fake_cuda_stream_complete(0, s1), 0);
    ASSERT_EQ(f_.fake_cuda_stream_complete(0, s2), 0);
    void *r = nullptr;
    ASSERT_EQ(galloc_host_malloc(a_, 3 * kMiB, &r), GALLOC_OK);
    EXPECT_EQ(r, p) << "both events completed";
    EXPECT_EQ(f_.fake_cuda_calls(v().host_alloc), 2u);
    galloc_host_stats_t s = HostStats(a_);
    EXPECT_EQ(s.allocations.current, 2);
    EXPECT_EQ((uint64_t)s.allocated_bytes.current, f_.Stats().live_host_bytes);
    EXPECT_EQ(s.num_host_alloc, 2);
    EXPECT_EQ(s.host_alloc_time.count, 2);
    ASSERT_EQ(galloc_host_free(a_, q), GALLOC_OK);
    ASSERT_EQ(galloc_host_free(a_, r), GALLOC_OK);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(f_.fake_cuda_calls(v().host_free), 2u);
    EXPECT_EQ(f_.Stats().live_host_blocks, 0u);
    EXPECT_EQ(HostStats(a_).host_free_time.count, 2);
    EXPECT_EQ(f_.Stats().live_events, 2u) << "the events stay pooled for the next frees";
    ASSERT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    ASSERT_EQ(f_.fake_cuda_stream_destroy(s2), 0);
}

TEST_P(HostCache, TheRegisterPathRegistersMallocedMemory)
{
    Make("pinned_use_cuda_host_register:True,pinned_num_register_threads:8");
    void *p = nullptr;
    ASSERT_EQ(galloc_host_malloc(a_, 5 * kMiB, &p), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls(v().host_register), 1u);
    EXPECT_EQ(f_.fake_cuda_calls(v().host_alloc), 0u);
    EXPECT_EQ(f_.Stats().live_registered_bytes, 8 * kMiB);
    // The driver copies from it as from any pinned memory.
    void *d = Alloc(4096);
    std::memset(p, 0x33, 4096);
    ASSERT_EQ(galloc_host_free(a_, p), GALLOC_OK);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(f_.fake_cuda_calls(v().host_unregister), 1u);
    EXPECT_EQ(f_.Stats().live_host_registered, 0u);
    Free(d);
}

TEST_P(HostCache, ALibraryWithoutRegisterRefusesTheRegisterPath)
{
    FakeCuda f(v().Fake("_nohostreg"), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "pinned_use_cuda_host_register:True").c_str(), &a, err,
                                      sizeof err),
              GALLOC_OK)
        << err;
    void *p = nullptr;
    EXPECT_EQ(galloc_host_malloc(a, 4096, &p), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(LastError(a).find(v().host_register), std::string::npos) << LastError(a);
    EXPECT_EQ(HostStats(a).allocations.allocated, 0);
    galloc_allocator_destroy(a);
    EXPECT_EQ(f.Stats().leaks, 0u);
}

namespace {

void HostSweepOne(FakeCuda &f, const std::string &extra, int code, bool from)
{
    uintptr_t s1 = 0, s2 = 0;
    HostWork w;
    auto setup = [&](FakeCuda &fc) {
        EXPECT_EQ(fc.fake_cuda_stream_create(0, &s1), 0);
        EXPECT_EQ(fc.fake_cuda_stream_create(0, &s2), 0);
    };
    auto workload = [&](Run &r) {
        w = HostWork();
        w.Pin(r, kMiB);
        w.Pin(r, 3000);
        w.Use(r, 0, s1);
        w.Use(r, 0, s2);
        w.Unpin(r, 0);  // two events
        w.Unpin(r, 1);  // cached
        w.Pin(r, kMiB); // the events queried: the block comes back
        w.Pin(r, 4000);
        w.Pin(r, 64 * 1024);
        for (size_t i = 0; i < w.live.size(); i++)
            w.Unpin(r, i);
        r.Step("host_empty_cache", [&] { return galloc_host_empty_cache(r.a()); });
    };
    auto recount = [&](Run &r, FakeCuda &fc) {
        // Faults cleared: the events are queried again, the cache emptied.
        EXPECT_EQ(galloc_host_empty_cache(r.a()), GALLOC_OK) << LastError(r.a());
        galloc_host_stats_t s = HostStats(r.a());
        fake_gpu_stats_t fs = fc.Stats();
        bool reg = !extra.empty();
        EXPECT_EQ((uint64_t)s.allocations.current, reg ? fs.live_host_registered : fs.live_host_blocks);
        EXPECT_EQ((uint64_t)s.allocated_bytes.current, reg ? fs.live_registered_bytes : fs.live_host_bytes);
        EXPECT_EQ(s.active_requests.current, w.Live()) << "every freed block's events are done";
        EXPECT_EQ(s.allocations.current, w.Live()) << "the rest was given back";
    };
    SweepResult res = Sweep(f, CudaConf(f, extra), code, from, setup, workload, recount);
    EXPECT_GT(res.runs, from ? 5u : 8u);
    if (!from) {
        EXPECT_EQ(res.runs, res.clean_calls) << "one run per driver call of the clean run";
    }
    EXPECT_EQ(res.max_leaks, 0u);
    std::printf("%s host cache sweep (%s), %s %d: %llu runs, %llu visible failures, 0 leaks\n", f.vendor().c_str(),
                extra.empty() ? "host_alloc" : "register", from ? "every call from the Nth on, error" : "error", code,
                (unsigned long long)res.runs, (unsigned long long)res.visible);
}

} // namespace

TEST_P(HostCacheSweep, EveryDriverCallFailingOnce)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    for (const char *extra : {"", "pinned_use_cuda_host_register:True"})
        for (int code : {kOutOfMemory, kUnknown})
            HostSweepOne(f, extra, code, false);
}

TEST_P(HostCacheSweep, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    for (const char *extra : {"", "pinned_use_cuda_host_register:True"})
        HostSweepOne(f, extra, kUnknown, true);
}

} // namespace cuda_test
