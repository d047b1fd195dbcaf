// malloc_cases: the native caching pool's scenarios that run the same on the
// "cuda" and the "hip" backend (one generic GPU layer, two vendor tables),
// written once over a Vendor (vendor_cases.h) and compiled into
// cuda_malloc_test and hip_malloc_test, which instantiate Malloc, MallocLoad
// and MallocSweep with their vendor. The figures are the sim suites' exact
// ones (tests/api/api_test.cc, tests/pool/pool_test.cc, streams_test.cc);
// underneath them, the vendor's driver or runtime calls. Where the two files
// asserted different parts of a scenario, the shared body asserts both.
#include <gtest/gtest.h>

#include <string>

#include "tests/backend/conformance.h"
#include "tests/backend/gpu_sweeps.h"
#include "tests/backend/vendor_cases.h"

namespace cuda_test {

TEST_P(Malloc, OneByteAsTheSimReportsIt)
{
    Make();
    EXPECT_STREQ(galloc_allocator_backend(a_), v().name);
    void *p = Alloc(1);
    ASSERT_NE(p, nullptr);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 512);
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(st.requested_bytes[ALL].current, 1);
    EXPECT_EQ(st.segment[SMALL].current, 1);
    EXPECT_EQ(st.num_device_alloc, 1);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_segments, 1u);
    EXPECT_EQ(fs.live_segment_bytes, 2 * kMiB) << "one " << v().mem_alloc << " of kSmallBuffer";
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_alloc), 1u);
    Free(p);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "cached";
    EXPECT_EQ(f_.Stats().live_segments, 1u);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(f_.Stats().live_segments, 0u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_free), 1u);
}

TEST_P(Malloc, SegmentSizesAsPyTorch)
{
    Make();
    void *a = Alloc(1 * kMiB + 1); // large pool: a 20 MiB segment (kLargeBuffer)
    void *b = Alloc(30 * kMiB);    // >= 10 MiB: rounded to 2 MiB, exactly 30 MiB
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(50 * kMiB));
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(1 * kMiB + 512 + 30 * kMiB));
    EXPECT_EQ(st.segment[LARGE].current, 2);
    EXPECT_EQ(f_.Stats().device_used[0], 50 * kMiB);
    Free(a);
    Free(b);
}

TEST_P(Malloc, DeviceOomFreesTheCacheAndRetriesThenReportsPyTorchsMessage)
{
    ASSERT_EQ(f_.fake_cuda_configure(2, 1 * kGiB, 2 * kMiB), 0);
    Make();
    Free(Alloc(600 * kMiB)); // cached: 600 MiB reserved
    void *b = Alloc(700 * kMiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_alloc_retries, 1) << v().mem_alloc << " refused, the cache was freed, the retry worked";
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(700 * kMiB));
    EXPECT_EQ(st.num_device_free, 1);
    void *c = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 800 * kMiB, 0, &c), GALLOC_E_OOM);
    EXPECT_EQ(c, nullptr);
    // PyTorch's message names the vendor (its ROCm build says HIP) and the
    // vendor's own PYTORCH_<VENDOR>_ALLOC_CONF variable.
    EXPECT_EQ(LastError(a_).rfind(std::string(v().upper) +
                                      " out of memory. Tried to allocate 800.00 MiB. GPU 0 has a total capacity of "
                                      "1024.00 MiB of which 324.00 MiB is free. Of the allocated memory 700.00 MiB is "
                                      "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.",
                                  0),
              0u)
        << LastError(a_);
    EXPECT_NE(
        LastError(a_).find("try setting PYTORCH_" + std::string(v().upper) + "_ALLOC_CONF=expandable_segments:True"),
        std::string::npos)
        << LastError(a_);
    EXPECT_EQ(Stats().num_ooms, 1);
    Free(b);
}

// throw_on_cudamalloc_oom (PyTorch main's DeviceCachingAllocator::alloc_block,
// then malloc skipping its retry chain): the same 1 GiB device and the same
// request as above, but refused before the driver is asked: no cuMemAlloc /
// hipMalloc, no cache released, no retry; num_oom_rejections, not num_ooms.
TEST_P(Malloc, ThrowOnCudaMallocOomRefusesWithoutADriverCall)
{
    ASSERT_EQ(f_.fake_cuda_configure(2, 1 * kGiB, 2 * kMiB), 0);
    Make("throw_on_cudamalloc_oom:True");
    Free(Alloc(200 * kMiB)); // cached: 200 MiB reserved
    void *b = Alloc(700 * kMiB);
    uint64_t allocs = f_.fake_cuda_calls(v().mem_alloc), frees = f_.fake_cuda_calls(v().mem_free);
    uint64_t calls = f_.Stats().calls;
    EXPECT_EQ(allocs, 2u);
    void *c = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 300 * kMiB, 0, &c), GALLOC_E_OOM); // 900 + 300 MiB > 1024 MiB
    EXPECT_EQ(c, nullptr);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_alloc), allocs) << "refused before the driver is asked";
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_free), frees) << "the cached 200 MiB stays";
    EXPECT_EQ(f_.Stats().calls, calls) << "no driver call at all";
    EXPECT_EQ(LastError(a_), std::string(v().upper) +
                                 " out of memory. Allocation was preemptively rejected because it would exceed "
                                 "per_process_memory_fraction limit. Requested size: 300.00 MiB");
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_oom_rejections, 1);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_alloc_retries, 0);
    EXPECT_EQ(st.num_sync_all_streams, 0);
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.num_device_free, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(900 * kMiB));
    Free(b);
}

TEST_P(Malloc, CrossStreamFreeWaitsForItsEvent)
{
    Make();
    uintptr_t s1 = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    f_.fake_cuda_set_manual_streams(1);
    void *a = Alloc(4096);
    ASSERT_EQ(galloc_record_stream(a_, a, s1), GALLOC_OK);
    Free(a);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 0);
    EXPECT_EQ(st.active[ALL].current, 1) << "active until the event on s1 completes";
    void *b = Alloc(4096);
    EXPECT_NE(b, a);
    ASSERT_EQ(f_.fake_cuda_stream_complete(0, s1), 0);
    void *c = Alloc(4096); // the next malloc polls the event and reuses a
    EXPECT_EQ(c, a);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_events, 1u) << "pooled for reuse";
    EXPECT_EQ(fs.events_with_timing, 0u) << "created with timing disabled";
    EXPECT_EQ(f_.fake_cuda_calls(v().event_create), 1u);
    EXPECT_EQ(f_.fake_cuda_calls(v().event_record), 1u);
    EXPECT_EQ(f_.fake_cuda_calls(v().event_query), 2u);
    ASSERT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK);
    EXPECT_EQ(f_.fake_cuda_calls(v().stream_sync), 1u);
    Free(b);
    Free(c);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(f_.fake_cuda_calls(v().event_destroy), 1u);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_P(Malloc, AnyDeviceIndex)
{
    Make("", 1);
    void *p = Alloc(1);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.device_used[1], 2 * kMiB);
    EXPECT_EQ(fs.device_used[0], 0u);
    Free(p);
    galloc_allocator_t *b = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 2, CudaConf(f_).c_str(), &b, err, sizeof err), GALLOC_E_UNAVAILABLE);
    const std::string name = v().name;
    EXPECT_EQ(err, "device backend \"" + name + "\" could not open device 2: device 2 is not present: the " + name +
                       " driver reports 2 devices");
}

TEST_P(MallocLoad, ABadPathCarriesDlerrorsText)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    const std::string name = v().name, path = std::string("/nonexistent/") + v().real_lib;
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, ("device_backend:" + name + ",driver_path:" + path).c_str(), &a, err,
                                      sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(err, "device backend \"" + name + "\" could not open device 0: cannot load " + path + ": " + path +
                       ": cannot open shared object file: No such file or directory");
}

TEST_P(MallocLoad, AMissingRequiredSymbolClosesTheLibrary)
{
    FakeCuda f(v().Fake("_noalloc"), v().name);
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_NE(std::string(err).find(std::string("the ") + v().loader + " lacks a required symbol"), std::string::npos)
        << err;
    EXPECT_NE(std::string(err).find(std::string("undefined symbol: ") + v().mem_alloc), std::string::npos) << err;
    EXPECT_EQ(f.Stats().calls, 0u) << "nothing was called in a library that failed to load";
}

// Without the VMM group expandable segments is a clear error at create; the
// native pool and the (complete) stream-ordered group still work.
TEST_P(MallocLoad, AMissingOptionalSymbolDisablesOnlyItsFeature)
{
    FakeCuda f(v().Fake("_novmm"), v().name);
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a, 1, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    galloc_allocator_destroy(a);
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "expandable_segments:True").c_str(), &a, err, sizeof err),
              GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(err, std::string("expandable_segments:True needs virtual memory management: granularity: virtual "
                               "memory management is unavailable: the ") +
                       v().name + " driver library lacks " + v().mem_create);
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, v().AsyncBackend()).c_str(), &a, err, sizeof err),
              GALLOC_OK)
        << "the stream-ordered group is complete in this library: " << err;
    galloc_allocator_destroy(a);
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Malloc, DriverErrorsCarryTheFunctionAndTheErrorNameAndText)
{
    Make();
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_alloc, 0, 1, kUnknown), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_E_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(LastError(a_), std::string("device allocation of 2097152 bytes failed: segment_alloc(2097152 bytes) on "
                                         "device 0: ") +
                                 v().mem_alloc + " failed: " + v().unknown + ": unknown error");
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_alloc, 1, 0, kOutOfMemory), 0);
    p = Alloc(1); // an OOM from the driver frees the (empty) cache and retries
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    Free(p);
}

// A driver that refuses to free a cached segment: empty_cache says so
// (PyTorch's check on cudaFree throws), the segment stays cached and counted,
// every other one is freed, and the next empty_cache frees it.
TEST_P(Malloc, ARefusedFreeInEmptyCacheIsReportedAndTheSegmentStaysCached)
{
    Make();
    void *a = Alloc(30 * kMiB), *b = Alloc(40 * kMiB), *c = Alloc(50 * kMiB);
    Free(a);
    Free(b);
    Free(c);
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_free, 2, 0, kUnknown), 0); // the second of the three frees
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_E_DEVICE);
    const std::string e = LastError(a_);
    EXPECT_EQ(e.rfind("the device refused to free the segment of 41943040 bytes at 0x", 0), 0u) << e;
    EXPECT_NE(e.find(std::string(v().mem_free) + " failed: " + v().unknown), std::string::npos) << e;
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_device_free, 2);
    EXPECT_EQ(st.segment[ALL].current, 1);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 40 * (int64_t)kMiB); // frees go in free-set order: 30, 40, 50 MiB
    EXPECT_EQ((uint64_t)st.reserved_bytes[ALL].current, f_.Stats().device_used[0]);
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);

    // Every free refused: the message counts the others.
    void *d = Alloc(60 * kMiB);
    Free(d);
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_free, 0, 1, kUnknown), 0);
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_E_DEVICE);
    EXPECT_NE(LastError(a_).find("(and 1 more refusals)"), std::string::npos) << LastError(a_);
    EXPECT_EQ(Stats().segment[ALL].current, 2);

    f_.fake_cuda_fail_clear();
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.segment[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_device_free, 4);
}

TEST_P(Malloc, Conformance)
{
    galloc_backend_args_t args = {};
    args.struct_size = sizeof(args);
    std::string options = "driver_path:" + f_.path();
    args.options = options.c_str();
    ga_test_backend_conformance(v().name, args);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.leaks, 0u);
    // The host memory checks ran on the driver: one pinned block of 3 MiB + 17,
    // two round trips (a segment, a mapped range) of 2 x n bytes up and
    // n + 1000 + n down each.
    const uint64_t n = 3 * kMiB + 17;
    EXPECT_EQ(s.peak_host_bytes, n);
    EXPECT_EQ(s.live_host_blocks, 0u);
    EXPECT_EQ(s.copied_h2d_bytes, 4 * n);
    EXPECT_EQ(s.copied_d2h_bytes, 2 * (2 * n + 1000));
    EXPECT_EQ(s.violations, 0u) << "the suite's own double free is refused by galloc before the driver: "
                                << f_.Violation();
}

// The fault sweeps: workloads and recounts in gpu_sweeps.h.
TEST_P(MallocSweep, EveryDriverCallFailingOnce)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kNative, 30u));
}

TEST_P(MallocSweep, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kNative, 10u);
}

} // namespace cuda_test
