// hip_malloc_test: the native caching pool on the "hip" backend, through the
// public API, on the strict fake HIP runtime (tests/fake_hip, the fake CUDA
// driver's core under the HIP runtime API): the figures of cuda_malloc_test
// (the generic GPU layer is the same, only the vendor table differs), the HIP
// calls behind them, the per-thread current device HIP has instead of
// contexts, loading and its failures, the conformance suite and the fault
// sweep.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/backend/conformance.h"
#include "tests/backend/gpu_sweeps.h"

extern "C" {
#include "backend/hip_api.h"
}

namespace cuda_test {
namespace {

class HipMalloc : public HipTest {};

TEST_F(HipMalloc, OneByteAsTheSimReportsIt)
{
    Make();
    EXPECT_STREQ(galloc_allocator_backend(a_), "hip");
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
    EXPECT_EQ(fs.live_segment_bytes, 2 * kMiB) << "one hipMalloc of kSmallBuffer";
    EXPECT_EQ(f_.fake_cuda_calls("hipMalloc"), 1u);
    Free(p);
    EXPECT_EQ(f_.Stats().live_segments, 1u) << "cached";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(f_.Stats().live_segments, 0u);
    EXPECT_EQ(f_.fake_cuda_calls("hipFree"), 1u);
}

TEST_F(HipMalloc, OpenMakesTheRuntimeCallsAndNoContextCall)
{
    Make();
    // Open, then the allocator reads the device's capacity: no primary-context
    // retain (the runtime holds it) and no hipSetDevice (device 0 is current).
    EXPECT_EQ(f_.Trace(), "hipInit,hipRuntimeGetVersion,hipGetDeviceCount,hipDeviceGet,hipGetDevice,hipMemGetInfo,");
    f_.fake_cuda_trace_clear();
    Free(Alloc(1));
    EXPECT_EQ(f_.Trace(), "hipGetDevice,hipMalloc,") << "device 0 already current: no hipSetDevice";
}

TEST_F(HipMalloc, SegmentSizesAsPyTorch)
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

TEST_F(HipMalloc, DeviceOomFreesTheCacheAndRetriesThenReportsPyTorchsFigures)
{
    ASSERT_EQ(f_.fake_cuda_configure(2, 1 * kGiB, 2 * kMiB), 0);
    Make();
    Free(Alloc(600 * kMiB)); // cached: 600 MiB reserved
    void *b = Alloc(700 * kMiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_alloc_retries, 1) << "hipMalloc refused, the cache was freed, the retry worked";
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(700 * kMiB));
    void *c = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 800 * kMiB, 0, &c), GALLOC_E_OOM);
    EXPECT_EQ(c, nullptr);
    // PyTorch's ROCm build names HIP and its own variable in the message.
    EXPECT_EQ(LastError(a_).rfind("HIP out of memory. Tried to allocate 800.00 MiB. GPU 0 has a total capacity of "
                                  "1024.00 MiB of which 324.00 MiB is free.",
                                  0),
              0u)
        << LastError(a_);
    EXPECT_NE(LastError(a_).find("try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"), std::string::npos)
        << LastError(a_);
    Free(b);
}

TEST_F(HipMalloc, CrossStreamFreeWaitsForItsEvent)
{
    Make();
    uintptr_t s1 = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    f_.fake_cuda_set_manual_streams(1);
    void *a = Alloc(4096);
    ASSERT_EQ(galloc_record_stream(a_, a, s1), GALLOC_OK);
    Free(a);
    EXPECT_EQ(Stats().active[ALL].current, 1) << "active until the event on s1 completes";
    void *b = Alloc(4096);
    EXPECT_NE(b, a);
    ASSERT_EQ(f_.fake_cuda_stream_complete(0, s1), 0);
    void *c = Alloc(4096); // the next malloc polls the event (hipEventQuery) and reuses a
    EXPECT_EQ(c, a);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_events, 1u) << "pooled for reuse";
    EXPECT_EQ(fs.events_with_timing, 0u) << "created with hipEventDisableTiming";
    EXPECT_EQ(f_.fake_cuda_calls("hipEventCreateWithFlags"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("hipEventRecord"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("hipEventQuery"), 2u);
    ASSERT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK);
    EXPECT_EQ(f_.fake_cuda_calls("hipStreamSynchronize"), 1u);
    Free(b);
    Free(c);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(f_.fake_cuda_calls("hipEventDestroy"), 1u);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(HipMalloc, AnyDeviceIndex)
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
    EXPECT_STREQ(err, "device backend \"hip\" could not open device 2: device 2 is not present: the hip driver "
                      "reports 2 devices");
}

// HIP's equivalent of the CUDA context: the calling thread's current device.
// galloc makes its device current for each call and gives the thread its own
// back, on any thread.
TEST_F(HipMalloc, TheCallersDeviceIsRestoredOnEveryThread)
{
    Make("", 1);
    auto set_device = f_.Sym<ga_hipSetDevice_fn *>("hipSetDevice");
    auto get_device = f_.Sym<ga_hipGetDevice_fn *>("hipGetDevice");
    ASSERT_TRUE(f_.ok()) << f_.error();
    int d = -1;
    void *p = Alloc(1);
    ASSERT_EQ(get_device(&d), GA_HIP_SUCCESS);
    EXPECT_EQ(d, 0) << "the thread's device 0 was given back";
    EXPECT_EQ(f_.Stats().device_used[1], 2 * kMiB);
    ASSERT_EQ(set_device(0), GA_HIP_SUCCESS);
    std::thread t([&] { // a thread that never chose a device: device 0, restored after the call
        void *q = nullptr;
        EXPECT_EQ(galloc_malloc(a_, 100, 0, &q), GALLOC_OK) << LastError(a_);
        EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
        int td = -1;
        EXPECT_EQ(get_device(&td), GA_HIP_SUCCESS);
        EXPECT_EQ(td, 0);
    });
    t.join();
    Free(p);
    EXPECT_EQ(f_.Stats().device_used[0], 0u) << "nothing was allocated on the caller's device";
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST(HipLoad, ABadPathCarriesDlerrorsText)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, "device_backend:hip,driver_path:/nonexistent/libamdhip64.so", &a,
                                      err, sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_STREQ(err, "device backend \"hip\" could not open device 0: cannot load /nonexistent/libamdhip64.so: "
                      "/nonexistent/libamdhip64.so: cannot open shared object file: No such file or directory");
}

TEST(HipLoad, AMissingRequiredSymbolClosesTheLibrary)
{
    FakeCuda f("libfake_hip_noalloc.so", "hip");
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_NE(std::string(err).find("the HIP runtime library lacks a required symbol"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("undefined symbol: hipMalloc"), std::string::npos) << err;
    EXPECT_EQ(f.Stats().calls, 0u) << "nothing was called in a library that failed to load";
}

TEST(HipLoad, WithoutTheVmmCallsExpandableSegmentsIsAClearError)
{
    FakeCuda f("libfake_hip_novmm.so", "hip");
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
                      "management is unavailable: the hip driver library lacks hipMemCreate");
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "backend:hipMallocAsync").c_str(), &a, err, sizeof err),
              GALLOC_OK)
        << "the stream-ordered group is complete in this library: " << err;
    galloc_allocator_destroy(a);
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_F(HipMalloc, RuntimeErrorsCarryTheFunctionAndTheHipErrorNameAndText)
{
    Make();
    ASSERT_EQ(f_.fake_cuda_fail("hipMalloc", 0, 1, kUnknown), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_E_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(LastError(a_), "device allocation of 2097152 bytes failed: segment_alloc(2097152 bytes) on device 0: "
                             "hipMalloc failed: hipErrorUnknown: unknown error");
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(f_.fake_cuda_fail("hipMalloc", 1, 0, kOutOfMemory), 0);
    p = Alloc(1); // hipErrorOutOfMemory frees the (empty) cache and retries
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    Free(p);
}

TEST_F(HipMalloc, ASetDeviceFailureIsADeviceErrorNamingHipSetDevice)
{
    Make("", 1);
    ASSERT_EQ(f_.fake_cuda_fail("hipSetDevice", 1, 0, GA_HIP_ERROR_INVALID_DEVICE), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_E_DEVICE);
    EXPECT_NE(LastError(a_).find("hipSetDevice failed: hipErrorInvalidDevice: invalid device ordinal"),
              std::string::npos)
        << LastError(a_);
    EXPECT_EQ(f_.Stats().live_segments, 0u);
    Free(Alloc(1));
}

TEST_F(HipMalloc, Conformance)
{
    galloc_backend_args_t args = {};
    args.struct_size = sizeof(args);
    std::string path = f_.path();
    args.library_path = path.c_str();
    ga_test_backend_conformance("hip", args);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.violations, 0u) << f_.Violation();
}

// ---- The fault sweep: cuda_malloc_test's workload on the HIP runtime. ----

// The fault sweeps: workloads and recounts in gpu_sweeps.h, shared by vendors.
TEST(HipMallocSweep, EveryRuntimeCallFailingOnce)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kNative, 30u));
}

TEST(HipMallocSweep, EveryRuntimeCallFailingFromTheNthOn)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kNative, 10u);
}

} // namespace
} // namespace cuda_test
