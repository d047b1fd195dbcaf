// async_cases: backend:<vendor>MallocAsync scenarios that run the same on the
// "cuda" and the "hip" backend, written once over a Vendor (vendor_cases.h)
// and compiled into cuda_async_test and hip_async_test, which instantiate
// Async and AsyncPlain with their vendor. What PyTorch's
// CUDAMallocAsyncAllocator (c10/cuda/CUDAMallocAsyncAllocator.cpp, hipified
// for ROCm) does is the reference: the default pool's release threshold
// raised to UINT64_MAX at first use, one alloc-async / free-async per malloc
// / free, recorded streams waited for before the free, empty_cache =
// synchronize + trim to 0, stats = the pool's reserved / used (current, high)
// in the "all" entries of reserved_bytes, allocated_bytes and active_bytes,
// every other key 0. Where the two files asserted different parts of a
// scenario, the shared body asserts both.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "tests/backend/gpu_sweeps.h"
#include "tests/backend/vendor_cases.h"

namespace cuda_test {
namespace {

// Pool attributes: the same values in CUmemPool_attribute and hipMemPoolAttr.
constexpr int kThreshold = 4, kReservedCurrent = 5;

// The keys that are not zero in st.
std::set<std::string> NonZeroKeys(const galloc_stats_t &st)
{
    std::set<std::string> keys;
    galloc_stats_foreach(
        &st,
        [](void *ctx, const char *key, int64_t val) {
            if (val != 0)
                static_cast<std::set<std::string> *>(ctx)->insert(key);
            return 0;
        },
        &keys);
    return keys;
}

} // namespace

TEST_P(Async, TheReleaseThresholdIsRaisedOnceTheAllocatorExists)
{
    EXPECT_EQ(PoolAttr(kThreshold), UINT64_MAX);
    EXPECT_EQ(f_.fake_cuda_calls(v().default_pool), 1u);
    EXPECT_EQ(f_.fake_cuda_calls(v().pool_set_attr), 1u);
}

TEST_P(Async, OneByteReportsThePoolsFigures)
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
    EXPECT_EQ(st.num_device_alloc, 0) << "native-only counters stay 0";
    const std::set<std::string> want = {"active_bytes.all.current",    "active_bytes.all.peak",
                                        "allocated_bytes.all.current", "allocated_bytes.all.peak",
                                        "reserved_bytes.all.current",  "reserved_bytes.all.peak"};
    EXPECT_EQ(NonZeroKeys(st), want) << "everything else stays 0, as PyTorch's getDeviceStats leaves it";
    EXPECT_EQ(f_.fake_cuda_calls(v().alloc_async), 1u);
    Free(p);
    EXPECT_EQ(f_.fake_cuda_calls(v().free_async), 1u);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "kept by the raised release threshold";
    ASSERT_EQ(galloc_stream_synchronize(a_, 0), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(2 * kMiB)) << "even across a synchronization";
    f_.fake_cuda_trace_clear();
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    std::string trace = f_.Trace();
    EXPECT_NE(trace.find(v().device_sync), std::string::npos) << trace;
    EXPECT_LT(trace.find(v().device_sync), trace.find(v().pool_trim)) << trace;
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    EXPECT_EQ(PoolAttr(kReservedCurrent), 0u);
}

// galloc_usable_size: the bytes asked for (the driver pool's USED_MEM counts
// those); a pointer inside the allocation or freed is not owned.
TEST_P(Async, UsableSizeIsTheRequest)
{
    void *p = Alloc(1000);
    ASSERT_NE(p, nullptr);
    size_t n = 0;
    EXPECT_EQ(galloc_usable_size(a_, p, &n), GALLOC_OK);
    EXPECT_EQ(n, 1000u);
    EXPECT_EQ(galloc_usable_size(a_, static_cast<char *>(p) + 8, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(n, 0u);
    Free(p);
    EXPECT_EQ(galloc_usable_size(a_, p, &n), GALLOC_E_NOT_OWNED);
}

TEST_P(Async, RecordedStreamsAreWaitedForBeforeTheFree)
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
    EXPECT_EQ(f_.fake_cuda_calls(v().stream_sync), 1u) << trace;
    EXPECT_LT(trace.find(v().stream_sync), trace.find(v().free_async)) << trace;
    void *b = Alloc(4096, s1);
    f_.fake_cuda_trace_clear();
    Free(b);
    EXPECT_EQ(f_.Trace().find(v().stream_sync), std::string::npos) << "one stream: freed on it directly";
    void *p = reinterpret_cast<void *>(0x1234);
    EXPECT_EQ(galloc_record_stream(a_, p, s1), GALLOC_E_NOT_OWNED);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s2), 0);
    EXPECT_EQ(f_.Stats().leaks, 0u);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

// Neither the sim backend nor a library without the stream-ordered group
// offers the async allocator; the native one needs no part of that group.
// The vendor's spelling of the setting is accepted, and the message names it
// as that vendor's PyTorch build documents it (the sim device speaks as CUDA).
TEST_P(AsyncPlain, UnavailableWhereTheBackendOrDriverCannot)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    const std::string async = v().AsyncBackend(), named = async;
    EXPECT_EQ(galloc_allocator_create("sim", 0, async.c_str(), &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(std::string(err).rfind("backend:cudaMallocAsync is not available on device backend \"sim\"", 0), 0u)
        << err;
    FakeCuda f(v().Fake("_noasync"), v().name);
    ASSERT_NE(f.fake_cuda_reset, nullptr) << f.error();
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, async).c_str(), &a, err, sizeof err),
              GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(err, named + " is not available on device backend \"" + v().name +
                       "\": pool_usage: stream-ordered allocation is unavailable: the " + v().name +
                       " driver library lacks " + v().alloc_async);
    EXPECT_EQ(f.Stats().leaks, 0u);
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    galloc_allocator_destroy(a); // the native allocator does not need it
}

TEST_P(Async, DestroyFreesWhatIsStillLive)
{
    Alloc(1);
    Alloc(5 * kMiB);
    EXPECT_EQ(f_.Stats().live_async, 2u);
    // TearDown destroys and checks the fake counts no leak
}

// The fault sweeps: workloads and recounts in gpu_sweeps.h.
TEST_P(AsyncPlain, EveryDriverCallFailingOnce)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kAsync, 30u));
}

TEST_P(AsyncPlain, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kAsync, 10u);
}

} // namespace cuda_test
