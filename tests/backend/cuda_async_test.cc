// cuda_async_test: backend:cudaMallocAsync on the "cuda" backend through the
// public API, on the strict fake driver. What PyTorch's
// CUDAMallocAsyncAllocator (c10/cuda/CUDAMallocAsyncAllocator.cpp) does is the
// reference. The scenarios the hip backend runs the same way (the release
// threshold, one byte's figures, recorded streams, an absent async group,
// destroy, the fault sweep) are async_cases.cc's, instantiated here with the
// CUDA names; below them the tests cuda has alone: peaks, refused frees, the
// memory fraction's message, size limits and private pools.
#include <gtest/gtest.h>

#include <string>

#include "tests/backend/cuda_fixture.h"
#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Async, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, AsyncPlain, ::testing::Values(&kCudaVendor), VendorName);

namespace {

constexpr int kThreshold = 4; // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD

class CudaAsync : public CudaTest {
  protected:
    void SetUp() override
    {
        CudaTest::SetUp();
        Make("backend:cudaMallocAsync");
    }
};

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

} // namespace
} // namespace cuda_test
