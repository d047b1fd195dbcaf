// cuda_malloc_test: the native caching pool on the "cuda" backend, through the
// public API, on the strict fake driver (tests/fake_cuda): the sim suites'
// exact figures (tests/api/api_test.cc, tests/pool/pool_test.cc,
// streams_test.cc), the driver calls behind them, loading and its failures,
// devices and contexts, the conformance suite, and the fault sweep.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/backend/conformance.h"
#include "tests/backend/gpu_sweeps.h"

extern "C" {
#include "backend/cuda_api.h"
}

namespace cuda_test {
namespace {

class CudaMalloc : public CudaTest {};

TEST_F(CudaMalloc, OneByteAsTheSimReportsIt)
{
    Make();
    EXPECT_STREQ(galloc_allocator_backend(a_), "cuda");
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
    EXPECT_EQ(fs.live_segment_bytes, 2 * kMiB) << "one cuMemAlloc of kSmallBuffer";
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAlloc_v2"), 1u);
    Free(p);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "cached";
    EXPECT_EQ(f_.Stats().live_segments, 1u);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(f_.Stats().live_segments, 0u);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemFree_v2"), 1u);
}

TEST_F(CudaMalloc, SegmentSizesAsPyTorch)
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

TEST_F(CudaMalloc, SettingsGivenAsStrings)
{
    Make("roundup_power2_divisions:4,max_split_size_mb:2048");
    void *p = Alloc(1200 * kMiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(1280 * kMiB));
    EXPECT_EQ(st.max_split_size, (int64_t)(2048 * kMiB));
    Free(p);
}

TEST_F(CudaMalloc, FractionHalfOf80GiBRefuses41GiB)
{
    Make();
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 41 * kGiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(Stats().num_ooms, 1);
    EXPECT_EQ(LastError(a_).rfind("CUDA out of memory. Tried to allocate 41.00 GiB. GPU 0 has a total capacity of "
                                  "80.00 GiB of which 80.00 GiB is free. 40.00 GiB allowed; ",
                                  0),
              0u)
        << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAlloc_v2"), 0u) << "the cap is checked before the device is asked";
}

TEST_F(CudaMalloc, DeviceOomFreesTheCacheAndRetriesThenReportsPyTorchsMessage)
{
    ASSERT_EQ(f_.fake_cuda_configure(2, 1 * kGiB, 2 * kMiB), 0);
    Make();
    void *a = Alloc(600 * kMiB);
    Free(a); // cached: 600 MiB reserved
    void *b = Alloc(700 * kMiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_alloc_retries, 1) << "cuMemAlloc refused, the cache was freed, the retry worked";
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(700 * kMiB));
    EXPECT_EQ(st.num_device_free, 1);
    void *c = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 800 * kMiB, 0, &c), GALLOC_E_OOM);
    EXPECT_EQ(c, nullptr);
    EXPECT_EQ(LastError(a_).rfind("CUDA out of memory. Tried to allocate 800.00 MiB. GPU 0 has a total capacity of "
                                  "1024.00 MiB of which 324.00 MiB is free. Of the allocated memory 700.00 MiB is "
                                  "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.",
                                  0),
              0u)
        << LastError(a_);
    EXPECT_EQ(Stats().num_ooms, 1);
    Free(b);
}

TEST_F(CudaMalloc, DeviceMemoryIsRealAndBlocksDoNotOverlap)
{
    Make();
    const size_t sizes[] = {1, 512, 4096, 1 * kMiB, 1 * kMiB + 1, 3 * kMiB, 12 * kMiB, 700, 2 * kMiB};
    std::vector<void *> p;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        p.push_back(Alloc(sizes[i]));
        std::memset(p.back(), (int)(0x10 + i), sizes[i]);
    }
    for (size_t i = 0; i < p.size(); i++) {
        const unsigned char *c = static_cast<const unsigned char *>(p[i]);
        EXPECT_EQ(c[0], 0x10 + i);
        EXPECT_EQ(c[sizes[i] - 1], 0x10 + i) << "block " << i << " was overwritten by a neighbour";
    }
    for (void *x : p)
        Free(x);
}

TEST_F(CudaMalloc, CrossStreamFreeWaitsForItsEvent)
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
    void *c = Alloc(4096); // the next malloc polls the event (cuEventQuery) and reuses a
    EXPECT_EQ(c, a);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_events, 1u) << "pooled for reuse";
    EXPECT_EQ(fs.events_with_timing, 0u) << "created with CU_EVENT_DISABLE_TIMING";
    EXPECT_EQ(f_.fake_cuda_calls("cuEventRecord"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("cuEventQuery"), 2u);
    ASSERT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK);
    EXPECT_EQ(f_.fake_cuda_calls("cuStreamSynchronize"), 1u);
    Free(b);
    Free(c);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(CudaMalloc, AnyDeviceIndex)
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
    EXPECT_STREQ(err, "device backend \"cuda\" could not open device 2: device 2 is not present: the cuda driver "
                      "reports 2 devices");
}

TEST_F(CudaMalloc, TheCallersContextIsRestoredOnEveryThread)
{
    Make();
    auto get_current = f_.Sym<ga_cuCtxGetCurrent_fn *>("cuCtxGetCurrent");
    ga_cu_context_t c = reinterpret_cast<ga_cu_context_t>(1);
    void *p = Alloc(1);
    ASSERT_EQ(get_current(&c), GA_CUDA_SUCCESS);
    EXPECT_EQ(c, nullptr) << "galloc set its context for the call and restored none";
    std::thread t([&] { // another thread has no context current: galloc sets it there too
        void *q = nullptr;
        EXPECT_EQ(galloc_malloc(a_, 100, 0, &q), GALLOC_OK) << LastError(a_);
        EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
    });
    t.join();
    Free(p);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST(CudaLoad, NoDriverIsUnavailableNamingLibcudaAndSimKeepsWorking)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = galloc_allocator_create("cuda", 0, "", &a, err, sizeof err);
    if (st == GALLOC_OK) {
        galloc_allocator_destroy(a);
        GTEST_SKIP() << "a CUDA driver is installed here";
    }
    EXPECT_EQ(st, GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(a, nullptr);
    EXPECT_NE(std::string(err).find("libcuda.so.1"), std::string::npos) << err;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &a, err, sizeof err), GALLOC_OK) << err;
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a, 1, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    galloc_allocator_destroy(a);
}

TEST(CudaLoad, ABadPathCarriesDlerrorsText)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, "device_backend:cuda,driver_path:/nonexistent/libcuda.so", &a, err,
                                      sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_STREQ(err, "device backend \"cuda\" could not open device 0: cannot load /nonexistent/libcuda.so: "
                      "/nonexistent/libcuda.so: cannot open shared object file: No such file or directory");
}

TEST(CudaLoad, AMissingRequiredSymbolClosesTheLibrary)
{
    FakeCuda f("libfake_cuda_noalloc.so");
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_NE(std::string(err).find("lacks a required symbol"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("undefined symbol: cuMemAlloc_v2"), std::string::npos) << err;
    EXPECT_EQ(f.Stats().calls, 0u) << "nothing was called in a library that failed to load";
}

TEST(CudaLoad, AMissingOptionalSymbolDisablesOnlyItsFeature)
{
    FakeCuda f("libfake_cuda_novmm.so");
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a, 1, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    galloc_allocator_destroy(a);
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "expandable_segments:True").c_str(), &a, err,
                                      sizeof err),
              GALLOC_E_UNSUPPORTED);
    EXPECT_STREQ(err, "expandable_segments:True needs virtual memory management: granularity: virtual memory "
                      "management is unavailable: the cuda driver library lacks cuMemCreate");
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "backend:cudaMallocAsync").c_str(), &a, err, sizeof err),
              GALLOC_OK)
        << "the stream-ordered group is complete in this library: " << err;
    galloc_allocator_destroy(a);
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_F(CudaMalloc, DriverErrorsCarryTheFunctionAndTheCUresultNameAndText)
{
    Make();
    ASSERT_EQ(f_.fake_cuda_fail("cuMemAlloc_v2", 0, 1, kUnknown), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_E_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(LastError(a_), "device allocation of 2097152 bytes failed: segment_alloc(2097152 bytes) on device 0: "
                             "cuMemAlloc_v2 failed: CUDA_ERROR_UNKNOWN: unknown error");
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(f_.fake_cuda_fail("cuMemAlloc_v2", 1, 0, kOutOfMemory), 0);
    p = Alloc(1); // an OOM from the driver frees the (empty) cache and retries
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    Free(p);
}

TEST_F(CudaMalloc, Conformance)
{
    galloc_backend_args_t args = {};
    args.struct_size = sizeof(args);
    std::string path = f_.path();
    args.library_path = path.c_str();
    ga_test_backend_conformance("cuda", args);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.violations, 0u) << "the suite's own double free is refused by galloc before the driver: "
                                << f_.Violation();
}

// The fault sweeps: workloads and recounts in gpu_sweeps.h, shared by vendors.
TEST(CudaMallocSweep, EveryDriverCallFailingOnce)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kNative, 30u));
}

TEST(CudaMallocSweep, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kNative, 10u);
}

} // namespace
} // namespace cuda_test
