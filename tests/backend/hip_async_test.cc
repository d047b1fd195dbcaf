// hip_async_test: backend:hipMallocAsync on the "hip" backend through the
// public API, on the strict fake HIP runtime: cuda_async_test's figures with
// the HIP calls PyTorch's hipified CUDAMallocAsyncAllocator makes: the default
// pool's release threshold raised to UINT64_MAX at first use, one
// hipMallocAsync / hipFreeAsync per malloc / free, recorded streams waited for
// before the free, empty_cache = hipDeviceSynchronize + hipMemPoolTrimTo(0),
// stats = the pool's reserved / used (current, high) in the "all" entries.
#include <gtest/gtest.h>

#include <string>

#include "tests/backend/gpu_sweeps.h"

namespace cuda_test {
namespace {

constexpr int kThreshold = 4, kReservedCurrent = 5; // hipMemPoolAttr values

class HipAsync : public HipTest {
  protected:
    void SetUp() override
    {
        HipTest::SetUp();
        Make("backend:hipMallocAsync");
    }
    uint64_t PoolAttr(int attr)
    {
        uint64_t v = 0;
        EXPECT_EQ(f_.fake_cuda_pool_attr(0, attr, &v), 0);
        return v;
    }
};

TEST_F(HipAsync, TheReleaseThresholdIsRaisedOnceTheAllocatorExists)
{
    EXPECT_EQ(PoolAttr(kThreshold), UINT64_MAX);
    EXPECT_EQ(f_.fake_cuda_calls("hipDeviceGetDefaultMemPool"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemPoolSetAttribute"), 1u);
}

TEST_F(HipAsync, OneByteReportsThePoolsFigures)
{
    void *p = Alloc(1);
    ASSERT_NE(p, nullptr);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 512) << "the fake pool counts used memory in 512-byte units";
    EXPECT_EQ(st.active_bytes[ALL].current, 512);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 0) << "native-only counters stay 0";
    EXPECT_EQ(f_.fake_cuda_calls("hipMallocAsync"), 1u);
    Free(p);
    EXPECT_EQ(f_.fake_cuda_calls("hipFreeAsync"), 1u);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "kept by the raised release threshold";
    f_.fake_cuda_trace_clear();
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    std::string trace = f_.Trace();
    EXPECT_NE(trace.find("hipDeviceSynchronize"), std::string::npos) << trace;
    EXPECT_LT(trace.find("hipDeviceSynchronize"), trace.find("hipMemPoolTrimTo")) << trace;
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    EXPECT_EQ(PoolAttr(kReservedCurrent), 0u);
}

TEST_F(HipAsync, RecordedStreamsAreWaitedForBeforeTheFree)
{
    uintptr_t s1 = 0, s2 = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s2), 0);
    void *a = Alloc(4096, s1);
    ASSERT_EQ(galloc_record_stream(a_, a, s2), GALLOC_OK);
    f_.fake_cuda_trace_clear();
    Free(a);
    std::string trace = f_.Trace();
    EXPECT_EQ(f_.fake_cuda_calls("hipStreamSynchronize"), 1u) << trace;
    EXPECT_LT(trace.find("hipStreamSynchronize"), trace.find("hipFreeAsync")) << trace;
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s2), 0);
    EXPECT_EQ(f_.Stats().leaks, 0u);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST(HipAsyncPool, UnavailableWhereTheRuntimeLacksIt)
{
    FakeCuda f("libfake_hip_noasync.so", "hip");
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "backend:hipMallocAsync").c_str(), &a, err, sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_NE(std::string(err).find("stream-ordered allocation is unavailable: the hip driver library lacks "
                                    "hipMallocAsync"),
              std::string::npos)
        << err;
    EXPECT_EQ(f.Stats().leaks, 0u);
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    galloc_allocator_destroy(a); // the native allocator does not need it
}

TEST_F(HipAsync, DestroyFreesWhatIsStillLive)
{
    Alloc(1);
    Alloc(5 * kMiB);
    EXPECT_EQ(f_.Stats().live_async, 2u);
    // TearDown destroys and checks the fake counts no leak
}

// ---- The fault sweep: cuda_async_test's workload on the HIP runtime. ----

// The fault sweeps: workloads and recounts in gpu_sweeps.h, shared by vendors.
TEST(HipAsyncSweep, EveryRuntimeCallFailingOnce)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kAsync, 30u));
}

TEST(HipAsyncSweep, EveryRuntimeCallFailingFromTheNthOn)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kAsync, 10u);
}

} // namespace
} // namespace cuda_test
