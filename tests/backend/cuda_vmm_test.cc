// cuda_vmm_test: expandable_segments:True on the "cuda" backend through the
// public API, on the strict fake driver. The scenarios the hip backend runs
// the same way (page growth and shrinking with the driver calls PyTorch's
// ExpandableSegment makes, the small pool's pages, map failures, the fault
// sweep) are vmm_cases.cc's, instantiated here with the CUDA names; below
// them the tests cuda has alone.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/backend/cuda_fixture.h"
#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Vmm, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, VmmSweep, ::testing::Values(&kCudaVendor), VendorName);

namespace {

class CudaVmm : public CudaTest {
  protected:
    void SetUp() override
    {
        CudaTest::SetUp();
        Make("expandable_segments:True");
    }
};

TEST_F(CudaVmm, EmptyCacheKeepsPagesThatHoldLiveBlocks)
{
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    void *b = Alloc(30 * kMiB);
    Free(b); // free 5..40 MiB: page 0 still holds a, page 1 is entirely free
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * kMiB));
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(f_.Stats().live_mappings, 1u);
    EXPECT_EQ(f_.Stats().live_reservations, 1u);
    char *c = static_cast<char *>(Alloc(10 * kMiB)); // fits the 15 MiB still mapped after a
    EXPECT_EQ(c, a + 5 * kMiB);
    EXPECT_EQ(Stats().num_device_alloc, 2);
    Free(a);
    Free(c);
}

TEST_F(CudaVmm, DataSurvivesGrowthAndShrinking)
{
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    std::memset(a, 0x3c, 5 * kMiB);
    void *b = Alloc(60 * kMiB); // three more pages mapped after a
    Free(b);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK); // unmaps them again
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(20 * kMiB));
    EXPECT_EQ(a[0], 0x3c);
    EXPECT_EQ(a[5 * kMiB - 1], 0x3c);
    Free(a);
}

TEST_F(CudaVmm, AFailureOnTheSecondPageLeavesNoHalfMapping)
{
    // Every cuMemCreate from the second on fails: the first page maps, the
    // second does not, and the retry after freeing the cache fails again.
    ASSERT_EQ(f_.fake_cuda_fail("cuMemCreate", 0, 2, kOutOfMemory), 0);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 30 * kMiB, 0, &p), GALLOC_E_OOM);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_handles + fs.live_mappings, 0u) << "the first page was unmapped and released again";
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    f_.fake_cuda_fail_clear();
    Free(Alloc(30 * kMiB));
}

} // namespace
} // namespace cuda_test
