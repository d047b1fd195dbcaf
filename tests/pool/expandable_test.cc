// expandable_test: expandable_segments:True on the sim device, with exact
// figures from PyTorch's ExpandableSegment rules (pages of 20 MiB for the
// large pool, 2 MiB for the small pool; map rounds up to pages, unmap takes only
// whole free pages; one num_device_alloc per map call, one num_device_free per
// unmap call; no segment count).
#include <gtest/gtest.h>

#include "tests/pool/fixture.h"

#include <vector>

extern "C" {
#include <galloc/galloc_stats.h>
#include "tests/pool/pool_shim.h"
}

namespace {

constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;
constexpr int ALL = GALLOC_STAT_ALL, SMALL = GALLOC_STAT_SMALL_POOL, LARGE = GALLOC_STAT_LARGE_POOL;

class Expandable : public PoolFixture {
  protected:
    void SetUp() override { Make("expandable_segments:True"); }
};

TEST_F(Expandable, GrowsByPagesAndStaysContiguous)
{
    uintptr_t a = Alloc(5 * MiB); // maps one 20 MiB page
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.segment[ALL].current, 0); // PyTorch counts no segment for expandable memory
    EXPECT_EQ(st.inactive_split[ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(5 * MiB));
    uintptr_t b = Alloc(30 * MiB); // 15 MiB free + one more page = 35 MiB, then split
    EXPECT_EQ(b, a + 5 * MiB);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(40 * MiB));
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(35 * MiB));
    Free(a);
    Free(b);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(40 * MiB)); // cached until empty_cache
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, 0);
    ASSERT_EQ(pool_shim_empty_cache(s_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_device_free, 1); // one unmap call for both pages
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(pool_shim_segments(s_), 0u); // the VA range went back too
}

TEST_F(Expandable, EmptyCacheKeepsPagesThatHoldLiveBlocks)
{
    uintptr_t a = Alloc(5 * MiB);
    uintptr_t b = Alloc(30 * MiB);
    Free(b); // free 5..40 MiB: page 0 still holds a, page 1 is entirely free
    ASSERT_EQ(pool_shim_empty_cache(s_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(pool_shim_segments(s_), 1u);
    uintptr_t c = Alloc(10 * MiB); // fits the 15 MiB still mapped after a
    EXPECT_EQ(c, a + 5 * MiB);
    EXPECT_EQ(Stats().num_device_alloc, 2); // no new mapping for c
    Free(a);
    Free(c);
}

TEST_F(Expandable, SmallPoolUsesTwoMiBPages)
{
    uintptr_t a = Alloc(1);
    uintptr_t b = Alloc(4096);
    EXPECT_EQ(b, a + 512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * MiB));
    EXPECT_EQ(st.reserved_bytes[LARGE].current, 0);
    Free(a);
    Free(b);
}

TEST_F(Expandable, ExpandableAvoidsTheFragmentationOfFixedSegments)
{
    // Allocate and free growing buffers: fixed segments strand the old sizes in
    // cache, one expandable segment reuses the same pages.
    for (int i = 1; i <= 8; i++) {
        uintptr_t a = Alloc((size_t)i * 25 * MiB);
        Free(a);
    }
    EXPECT_EQ(Stats().reserved_bytes[ALL].peak, (int64_t)(200 * MiB));
    Make("");
    for (int i = 1; i <= 8; i++) {
        uintptr_t a = Alloc((size_t)i * 25 * MiB);
        Free(a);
    }
    // 26 + 50 + 76 + 100 + 126 + 150 + 176 + 200 MiB segments, all cached.
    EXPECT_EQ(Stats().reserved_bytes[ALL].peak, (int64_t)(904 * MiB));
}

TEST_F(Expandable, MapFailureIsAnOomThatMapsNothing)
{
    Make("expandable_segments:True", 100 * MiB);
    uintptr_t a = Alloc(90 * MiB); // 5 pages = the whole device
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(100 * MiB));
    uintptr_t x = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 30 * MiB, 0, &x), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(100 * MiB));
    Free(a);
    EXPECT_NE(Alloc(30 * MiB), 0u); // reuses the cached pages
}

TEST_F(Expandable, FaultOnTheSecondPageLeavesNoHalfMapping)
{
    Make("expandable_segments:True", 1 * GiB);
    uintptr_t a = Alloc(1 * MiB + 1); // page 1 (device allocation #1)
    pool_shim_fail_from(s_, 3);       // the 2nd page of the next mapping fails, and every later one
    uintptr_t x = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 50 * MiB, 0, &x), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    pool_shim_fail_from(s_, 0);
    uintptr_t b = Alloc(50 * MiB);
    EXPECT_EQ(b, a + 1049088);
    Free(a);
    Free(b);
}

TEST_F(Expandable, StreamsGetTheirOwnSegments)
{
    uintptr_t a = Alloc(5 * MiB, 1);
    uintptr_t b = Alloc(5 * MiB, 2);
    EXPECT_EQ(pool_shim_segments(s_), 2u);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(40 * MiB));
    Free(a);
    Free(b);
}

TEST_F(Expandable, RandomChurnKeepsInvariants)
{
    Make("expandable_segments:True", 2 * GiB);
    uint64_t x = 88172645463325252ull;
    std::vector<uintptr_t> live;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (live.size() < 40 && (x & 3) != 0) {
            uintptr_t a = 0;
            size_t n = (x >> 8) % ((x & 4) ? 60 * MiB : MiB) + 1;
            galloc_status_t st = pool_shim_malloc(s_, n, (x >> 40) & 1, &a);
            ASSERT_TRUE(st == GALLOC_OK || st == GALLOC_E_OOM) << st;
            if (st == GALLOC_OK)
                live.push_back(a);
        } else if (!live.empty()) {
            size_t k = (x >> 20) % live.size();
            ASSERT_EQ(pool_shim_free(s_, live[k]), GALLOC_OK);
            live[k] = live.back();
            live.pop_back();
        }
        if (i % 997 == 0) {
            ASSERT_EQ(pool_shim_empty_cache(s_), GALLOC_OK);
        }
        ASSERT_EQ(pool_shim_check(s_), GALLOC_OK) << "step " << i << ": " << pool_shim_error(s_);
    }
    for (uintptr_t a : live)
        ASSERT_EQ(pool_shim_free(s_, a), GALLOC_OK);
    ASSERT_EQ(pool_shim_empty_cache(s_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(pool_shim_segments(s_), 0u);
}

} // namespace
