// cuda_vmm_test: expandable_segments:True on the "cuda" backend through the
// public API, on the strict fake driver. The figures are the sim suite's
// (tests/pool/expandable_test.cc: pages of 20 MiB for the large pool, 2 MiB for
// the small one; one num_device_alloc per mapping of a block, one
// num_device_free per unmapping; no segment count), and underneath them the
// driver calls PyTorch's ExpandableSegment makes: one cuMemAddressReserve per
// segment, per page one cuMemCreate + cuMemMap + cuMemSetAccess, and on
// shrinking cuMemUnmap + cuMemRelease per page, cuMemAddressFree at the end.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/backend/gpu_sweeps.h"

namespace cuda_test {
namespace {

class CudaVmm : public CudaTest {
  protected:
    void SetUp() override
    {
        CudaTest::SetUp();
        Make("expandable_segments:True");
    }
};

TEST_F(CudaVmm, GrowsByPagesAndStaysContiguous)
{
    char *a = static_cast<char *>(Alloc(5 * kMiB)); // maps one 20 MiB page
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(20 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.segment[ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(5 * kMiB));
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_reservations, 1u);
    EXPECT_EQ(fs.live_handles, 1u);
    EXPECT_EQ(fs.live_handle_bytes, 20 * kMiB);
    EXPECT_EQ(fs.live_mappings, 1u);
    EXPECT_EQ(fs.device_used[0], 20 * kMiB) << "reserving address space costs no memory";
    char *b = static_cast<char *>(Alloc(30 * kMiB)); // 15 MiB free + one more page, then split
    EXPECT_EQ(b, a + 5 * kMiB);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(40 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(35 * kMiB));
    EXPECT_EQ(f_.Stats().live_mappings, 2u) << "one handle per page";
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAddressReserve"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemSetAccess"), 2u);
    std::memset(b, 0x77, 30 * kMiB); // the whole range is mapped read-write, across the page boundary
    Free(a);
    Free(b);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(40 * kMiB)) << "cached until empty_cache";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_device_free, 1) << "one unmapping of the block, two pages";
    EXPECT_EQ(st.num_sync_all_streams, 1);
    fs = f_.Stats();
    EXPECT_EQ(f_.fake_cuda_calls("cuMemUnmap"), 2u);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemRelease"), 2u);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAddressFree"), 1u) << "the VA range went back too";
    EXPECT_EQ(fs.live_handles + fs.live_mappings + fs.live_reservations, 0u);
    EXPECT_EQ(fs.device_used[0], 0u);
}

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

TEST_F(CudaVmm, SmallPoolUsesTwoMiBPages)
{
    char *a = static_cast<char *>(Alloc(1));
    char *b = static_cast<char *>(Alloc(4096));
    EXPECT_EQ(b, a + 512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(st.reserved_bytes[LARGE].current, 0);
    EXPECT_EQ(f_.Stats().live_handle_bytes, 2 * kMiB);
    Free(a);
    Free(b);
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

TEST_F(CudaVmm, AMapFailureIsAnOomThatMapsNothing)
{
    ASSERT_EQ(f_.fake_cuda_fail("cuMemCreate", 0, 1, kOutOfMemory), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 5 * kMiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_ooms, 1);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_handles + fs.live_mappings, 0u);
    f_.fake_cuda_fail_clear();
    Free(Alloc(5 * kMiB));
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

TEST_F(CudaVmm, ARefusedUndoIsReleasedBeforeTheNextMap)
{
    // cuMemSetAccess fails and so does the cuMemUnmap undoing the map: the
    // page stays mapped in the driver while the pool believes it unmapped.
    ASSERT_EQ(f_.fake_cuda_fail("cuMemSetAccess", 1, 0, kUnknown), 0);
    ASSERT_EQ(f_.fake_cuda_fail("cuMemUnmap", 1, 0, kUnknown), 0);
    // The pool frees its (empty) cache and retries: the orphan is unmapped
    // and released before the page maps again at the same address.
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    std::memset(a, 1, 5 * kMiB);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_mappings, 1u);
    EXPECT_EQ(fs.live_handles, 1u);
    EXPECT_EQ(fs.violations, 0u) << f_.Violation();
    Free(a);
}

// The fault sweeps: workloads and recounts in gpu_sweeps.h, shared by vendors.
TEST(CudaVmmSweep, EveryDriverCallFailingOnce)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kExpandable, 40u));
}

TEST(CudaVmmSweep, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f;
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kExpandable, 20u);
}

} // namespace
} // namespace cuda_test
