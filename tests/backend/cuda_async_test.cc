// cuda_async_test: backend:cudaMallocAsync on the "cuda" backend through the
// public API, on the strict fake driver. What PyTorch's
// CUDAMallocAsyncAllocator (c10/cuda/CUDAMallocAsyncAllocator.cpp) does is the
// reference: the default pool's release threshold raised to UINT64_MAX at
// first use, one cuMemAllocAsync / cuMemFreeAsync per malloc / free, recorded
// streams waited for before the free, empty_cache = synchronize + trim to 0,
// stats = the pool's reserved / used (current, high) in the "all" entries of
// reserved_bytes, allocated_bytes and active_bytes, every other key 0.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "tests/backend/gpu_sweeps.h"

namespace cuda_test {
namespace {

constexpr int kThreshold = 4; // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD

class CudaAsync : public CudaTest {
  protected:
    void SetUp() override
    {
        CudaTest::SetUp();
        Make("backend:cudaMallocAsync");
    }
    uint64_t PoolAttr(int attr)
    {
        uint64_t v = 0;
        EXPECT_EQ(f_.fake_cuda_pool_attr(0, attr, &v), 0);
        return v;
    }
};

// The keys that are not zero in st.
std::set<std::string> NonZeroKeys(const galloc_stats_t &st)
{
    std::set<std::string> keys;
    galloc_stats_foreach(
        &st,
        [](void *ctx, const char *key, int64_t v) {
            if (v != 0)
                static_cast<std::set<std::string> *>(ctx)->insert(key);
            return 0;
        },
        &keys);
    return keys;
}

TEST_F(CudaAsync, TheReleaseThresholdIsRaisedOnceTheAllocatorExists)
{
    EXPECT_EQ(PoolAttr(kThreshold), UINT64_MAX);
    EXPECT_EQ(f_.fake_cuda_calls("cuDeviceGetDefaultMemPool"), 1u);
}

TEST(CudaAsyncPool, TheNativeAllocatorLeavesThePoolAlone)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    uint64_t v = 1;
    EXPECT_EQ(f.fake_cuda_pool_attr(0, kThreshold, &v), 0);
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(f.fake_cuda_calls("cuDeviceGetDefaultMemPool"), 0u);
    galloc_allocator_destroy(a);
}

TEST_F(CudaAsync, OneByteReportsThePoolsFigures)
{
    void *p = Alloc(1);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xee, 1);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 512) << "the fake pool counts used memory in 512-byte units";
    EXPECT_EQ(st.allocated_bytes[ALL].peak, 512);
    EXPECT_EQ(st.active_bytes[ALL].current, 512);
    EXPECT_EQ(st.active_bytes[ALL].peak, 512);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(st.reserved_bytes[ALL].peak, (int64_t)(2 * kMiB));
    const std::set<std::string> want = {"active_bytes.all.current",    "active_bytes.all.peak",
                                        "allocated_bytes.all.current", "allocated_bytes.all.peak",
                                        "reserved_bytes.all.current",  "reserved_bytes.all.peak"};
    EXPECT_EQ(NonZeroKeys(st), want) << "everything else stays 0, as PyTorch's getDeviceStats leaves it";
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAllocAsync"), 1u);
    Free(p);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "kept by the raised release threshold";
    ASSERT_EQ(galloc_stream_synchronize(a_, 0), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "even across a synchronization";
    f_.fake_cuda_trace_clear();
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    std::string trace = f_.Trace();
    EXPECT_NE(trace.find("cuCtxSynchronize"), std::string::npos) << trace;
    EXPECT_LT(trace.find("cuCtxSynchronize"), trace.find("cuMemPoolTrimTo")) << trace;
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
}

TEST_F(CudaAsync, PeaksResetToCurrentAccumulatedResetDoesNothing)
{
    void *p = Alloc(3 * kMiB);
    void *q = Alloc(1 * kMiB);
    Free(p);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].peak, (int64_t)(4 * kMiB));
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(1 * kMiB));
    ASSERT_EQ(galloc_stats_reset_accumulated(a_), GALLOC_OK);
    EXPECT_EQ(Stats().allocated_bytes[ALL].peak, (int64_t)(4 * kMiB));
    ASSERT_EQ(galloc_stats_reset_peak(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].peak, (int64_t)(1 * kMiB));
    EXPECT_EQ(st.reserved_bytes[ALL].peak, st.reserved_bytes[ALL].current);
    Free(q);
}

TEST_F(CudaAsync, RecordedStreamsAreWaitedForBeforeTheFree)
{
    uintptr_t s1 = 0, s2 = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s2), 0);
    void *a = Alloc(4096, s1);
    ASSERT_EQ(galloc_record_stream(a_, a, s1), GALLOC_OK) << "the creation stream: no effect";
    ASSERT_EQ(galloc_record_stream(a_, a, s2), GALLOC_OK);
    ASSERT_EQ(galloc_record_stream(a_, a, s2), GALLOC_OK) << "recorded once";
    f_.fake_cuda_trace_clear();
    Free(a);
    std::string trace = f_.Trace();
    EXPECT_EQ(f_.fake_cuda_calls("cuStreamSynchronize"), 1u) << trace;
    EXPECT_LT(trace.find("cuStreamSynchronize"), trace.find("cuMemFreeAsync")) << trace;
    void *b = Alloc(4096, s1);
    f_.fake_cuda_trace_clear();
    Free(b);
    EXPECT_EQ(f_.Trace().find("cuStreamSynchronize"), std::string::npos) << "one stream: freed on it directly";
    void *p = reinterpret_cast<void *>(0x1234);
    EXPECT_EQ(galloc_record_stream(a_, p, s1), GALLOC_E_NOT_OWNED);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s2), 0);
    EXPECT_EQ(f_.Stats().leaks, 0u);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST_F(CudaAsync, ForeignAndDoubleFreesAreRefusedWithoutADriverCall)
{
    char *p = static_cast<char *>(Alloc(100));
    uint64_t calls = f_.Stats().calls;
    EXPECT_EQ(galloc_free(a_, p + 512), GALLOC_E_NOT_OWNED);
    Free(p);
    calls = f_.Stats().calls;
    EXPECT_EQ(galloc_free(a_, p), GALLOC_E_NOT_OWNED);
    EXPECT_NE(LastError(a_).find("is not a live allocation"), std::string::npos) << LastError(a_);
    EXPECT_EQ(f_.Stats().calls, calls);
    EXPECT_EQ(galloc_free(a_, nullptr), GALLOC_OK);
}

TEST_F(CudaAsync, TheMemoryFractionLimitsLiveBytesWithPyTorchsMessage)
{
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    ASSERT_EQ(f_.fake_cuda_configure(2, 8 * kGiB, 2 * kMiB), 0);
    Make("backend:cudaMallocAsync");
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
    void *a = Alloc(3 * kGiB);
    void *b = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 2 * kGiB, 0, &b), GALLOC_E_OOM);
    EXPECT_EQ(b, nullptr);
    EXPECT_EQ(LastError(a_), "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
                             "Currently allocated     : 3.00 GiB\n"
                             "Requested               : 2.00 GiB\n"
                             "Device limit            : 8.00 GiB\n"
                             "Free (according to CUDA): 5.00 GiB\n"
                             "PyTorch limit (set by user-supplied memory fraction)\n"
                             "                        : 4.00 GiB");
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAllocAsync"), 1u) << "refused before the driver was asked";
    EXPECT_EQ(galloc_set_memory_fraction(a_, 1.5), GALLOC_E_INVAL);
    Free(a);
}

TEST_F(CudaAsync, ADeviceOomHasNoFractionLimit)
{
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 81 * kGiB, 0, &p), GALLOC_E_OOM);
    EXPECT_NE(LastError(a_).find("Requested               : 81.00 GiB\nDevice limit            : 80.00 GiB"),
              std::string::npos)
        << LastError(a_);
    EXPECT_NE(LastError(a_).find(": 17179869184.00 GiB"), std::string::npos) << "UINT64_MAX, as c10's format_size";
}

TEST_F(CudaAsync, SizeZeroHugeAndPrivatePools)
{
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 0, 0, &p), GALLOC_OK);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(galloc_malloc(a_, size_t{1} << 60, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(LastError(a_), "CUDA out of memory. Tried to allocate more than 1EB memory.");
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAllocAsync"), 0u);
    galloc_mempool_id_t id;
    EXPECT_EQ(galloc_mempool_create(a_, &id), GALLOC_E_UNSUPPORTED);
    size_t free_b = 0, total = 0;
    EXPECT_EQ(galloc_memory_info(a_, &free_b, &total), GALLOC_OK);
    EXPECT_EQ(total, 80 * kGiB);
}

TEST(CudaAsyncPool, UnavailableWhereTheBackendOrDriverCannot)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, "backend:cudaMallocAsync", &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(std::string(err).rfind("backend:cudaMallocAsync is not available on device backend \"sim\"", 0), 0u)
        << err;
    FakeCuda f("libfake_cuda_noasync.so");
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "backend:cudaMallocAsync").c_str(), &a, err, sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_STREQ(err, "backend:cudaMallocAsync is not available on device backend \"cuda\": pool_usage: "
                      "stream-ordered allocation is unavailable: the cuda driver library lacks cuMemAllocAsync");
    EXPECT_EQ(f.Stats().leaks, 0u);
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    galloc_allocator_destroy(a); // the native allocator does not need it
}

TEST_F(CudaAsync, DestroyFreesWhatIsStillLive)
{
    Alloc(1);
    Alloc(5 * kMiB);
    EXPECT_EQ(f_.Stats().live_async, 2u);
    // TearDown destroys and checks the fake counts no leak
}

// The fault sweeps: workloads and recounts in gpu_sweeps.h, shared by vendors.
TEST(CudaAsyncSweep, EveryDriverCallFailingOnce)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kAsync, 30u));
}

TEST(CudaAsyncSweep, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kAsync, 10u);
}

} // namespace
} // namespace cuda_test
