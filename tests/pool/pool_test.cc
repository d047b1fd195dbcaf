// pool_test: PyTorch's native caching policy, pinned with exact figures.
// Each case follows a worked example of PyTorch's allocator (named "E1".."E12",
// after the project's reference notes on CUDACachingAllocator.cpp) or one of its
// rounding, pool, split, merge or GC rules; every fixture runs the
// invariant check (blocks tile segments, stats equal a recount) in TearDown.
#include <gtest/gtest.h>

#include "tests/pool/fixture.h"

#include <string>

extern "C" {
#include <galloc/galloc_stats.h>
#include "tests/pool/pool_shim.h"
}

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
constexpr int ALL = GALLOC_STAT_ALL, SMALL = GALLOC_STAT_SMALL_POOL, LARGE = GALLOC_STAT_LARGE_POOL;

class Pool : public PoolFixture {
  protected:
    void SetUp() override { Make(""); }
};

TEST(Round, PyTorchTable)
{
    // Section 2.3 of the spec: request, divisions config -> rounded size.
    struct {
        size_t req;
        const char *conf;
        size_t want;
    } rows[] = {
        {1, "", 512},
        {512, "", 512},
        {513, "", 1024},
        {1200, "roundup_power2_divisions:4", 1536}, // not above 512*4: plain 512 rounding
        {3000, "roundup_power2_divisions:4", 3072},
        {1048577, "", 1049088},
        {1200 * MiB, "roundup_power2_divisions:4", 1280 * MiB},
        {1200 * MiB, "roundup_power2_divisions:8", 1280 * MiB},
        {1200 * MiB, "roundup_power2_divisions:2", 1536 * MiB},
        {1100 * MiB, "roundup_power2_divisions:4", 1280 * MiB},
        {1 * GiB, "roundup_power2_divisions:4", 1 * GiB},
        {5 * MiB, "roundup_power2_divisions:4", 5 * MiB},
        {5 * MiB + 1, "roundup_power2_divisions:4", 6 * MiB},
        {1200 * MiB, "roundup_power2_divisions:[1024:4,>:1]", 1280 * MiB},
        {3000 * MiB, "roundup_power2_divisions:[1024:4,>:1]", 3000 * MiB},
    };
    for (auto &r : rows)
        EXPECT_EQ(pool_shim_round(r.conf, r.req), r.want) << r.req << " under '" << r.conf << "'";
}

TEST(Round, SegmentSizes)
{
    EXPECT_EQ(pool_shim_alloc_size(512), 2 * MiB);
    EXPECT_EQ(pool_shim_alloc_size(1 * MiB), 2 * MiB);
    EXPECT_EQ(pool_shim_alloc_size(1 * MiB + 512), 20 * MiB);
    EXPECT_EQ(pool_shim_alloc_size(10 * MiB - 512), 20 * MiB);
    EXPECT_EQ(pool_shim_alloc_size(10 * MiB), 10 * MiB);
    EXPECT_EQ(pool_shim_alloc_size(11534848), 12 * MiB);
    EXPECT_EQ(pool_shim_alloc_size(30 * MiB), 30 * MiB);
}

TEST(Round, FormatSizeAsC10)
{
    char b[32];
    pool_shim_format_size(0, b, sizeof b);
    EXPECT_STREQ(b, "0 bytes");
    pool_shim_format_size(1024, b, sizeof b);
    EXPECT_STREQ(b, "1024 bytes");
    pool_shim_format_size(1025, b, sizeof b);
    EXPECT_STREQ(b, "1.00 KiB");
    pool_shim_format_size(MiB, b, sizeof b);
    EXPECT_STREQ(b, "1024.00 KiB");
    pool_shim_format_size(GiB, b, sizeof b);
    EXPECT_STREQ(b, "1024.00 MiB");
    pool_shim_format_size(80 * GiB, b, sizeof b);
    EXPECT_STREQ(b, "80.00 GiB");
}

TEST_F(Pool, E1_OneByte)
{
    Alloc(1);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.segment[ALL].current, 1);
    EXPECT_EQ(st.segment[SMALL].current, 1);
    EXPECT_EQ(st.segment[LARGE].current, 0);
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * MiB));
    EXPECT_EQ(st.allocation[SMALL].current, 1);
    EXPECT_EQ(st.allocated_bytes[ALL].current, 512);
    EXPECT_EQ(st.active[SMALL].current, 1);
    EXPECT_EQ(st.active_bytes[ALL].current, 512);
    EXPECT_EQ(st.requested_bytes[ALL].current, 1);
    EXPECT_EQ(st.inactive_split[SMALL].current, 1);
    EXPECT_EQ(st.inactive_split_bytes[SMALL].current, 2096640);
    EXPECT_EQ(st.max_split_size, -1);
}

TEST_F(Pool, E2_FreeKeepsReservedUntilEmptyCache)
{
    uintptr_t p = Alloc(1);
    Free(p);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 0);
    EXPECT_EQ(st.allocation[ALL].allocated, 1);
    EXPECT_EQ(st.allocation[ALL].freed, 1);
    EXPECT_EQ(st.allocated_bytes[ALL].freed, 512);
    EXPECT_EQ(st.inactive_split[ALL].current, 0);
    EXPECT_EQ(st.inactive_split[ALL].peak, 1);
    EXPECT_EQ(st.inactive_split[ALL].freed, 1);
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, 0);
    EXPECT_EQ(st.inactive_split_bytes[ALL].peak, 2096640);
    EXPECT_EQ(st.requested_bytes[ALL].freed, 1);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * MiB));
    EXPECT_EQ(st.segment[ALL].current, 1);
    EXPECT_EQ(pool_shim_empty_cache(s_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(st.segment[ALL].current, 0);
    EXPECT_EQ(st.segment[ALL].freed, 1);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].freed, (int64_t)(2 * MiB));
    EXPECT_EQ(st.reserved_bytes[ALL].peak, (int64_t)(2 * MiB));
}

TEST_F(Pool, E3_SecondSmallBlockFollowsTheFirst)
{
    uintptr_t p = Alloc(1);
    uintptr_t q = Alloc(1);
    EXPECT_EQ(q, p + 512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 1024);
    EXPECT_EQ(st.requested_bytes[ALL].current, 2);
    EXPECT_EQ(st.inactive_split[ALL].current, 1);
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, 2096128);
    EXPECT_EQ(st.inactive_split_bytes[ALL].peak, 2096640);
    EXPECT_EQ(st.num_device_alloc, 1);
}

TEST_F(Pool, E4_ExactlyOneMiBIsSmall)
{
    Alloc(MiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[SMALL].current, (int64_t)MiB);
    EXPECT_EQ(st.inactive_split_bytes[SMALL].current, (int64_t)MiB);
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * MiB));
}

TEST_F(Pool, E5_OneMiBPlusOneLandsInA20MiBSegment)
{
    Alloc(MiB + 1);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[LARGE].current, 1049088);
    EXPECT_EQ(st.requested_bytes[LARGE].current, 1048577);
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.segment[LARGE].current, 1);
    EXPECT_EQ(st.inactive_split[LARGE].current, 1);
    EXPECT_EQ(st.inactive_split_bytes[LARGE].current, 19922432);
}

TEST_F(Pool, E6_ThirtyMiBReservesExactlyThirty)
{
    Alloc(30 * MiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(30 * MiB));
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(30 * MiB));
    EXPECT_EQ(st.active_bytes[ALL].current, (int64_t)(30 * MiB));
    EXPECT_EQ(st.inactive_split[ALL].current, 0);
}

TEST_F(Pool, E7_SmallRemainderStaysInsideTheBlock)
{
    Alloc(11534337);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(12 * MiB));
    EXPECT_EQ(st.requested_bytes[ALL].current, 11534337);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(12 * MiB));
    EXPECT_EQ(st.inactive_split[ALL].current, 0);
}

TEST_F(Pool, E8_SplitAndMergeInOneSegment)
{
    uintptr_t a = Alloc(5 * MiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, (int64_t)(15 * MiB));
    uintptr_t b = Alloc(5 * MiB);
    EXPECT_EQ(b, a + 5 * MiB);
    st = Stats();
    EXPECT_EQ(st.inactive_split[ALL].current, 1);
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, (int64_t)(10 * MiB));
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(10 * MiB));
    Free(a);
    st = Stats();
    EXPECT_EQ(st.inactive_split[ALL].current, 2);
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, (int64_t)(15 * MiB));
    Free(b);
    st = Stats();
    EXPECT_EQ(st.inactive_split[ALL].current, 0);
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, 0);
    EXPECT_EQ(st.inactive_split[ALL].peak, 2);
    EXPECT_EQ(st.inactive_split_bytes[ALL].peak, (int64_t)(15 * MiB));
    EXPECT_EQ(st.allocated_bytes[ALL].peak, (int64_t)(10 * MiB));
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(pool_shim_free_blocks(s_, 0), 1u);
    uintptr_t c = Alloc(5 * MiB); // reuses the cached segment
    EXPECT_EQ(c, a);
    EXPECT_EQ(Stats().num_device_alloc, 1);
}

TEST_F(Pool, E9_MaxSplitSizeOversizeRules)
{
    Make("max_split_size_mb:100");
    EXPECT_EQ(Stats().max_split_size, 104857600);
    uintptr_t a = Alloc(150 * MiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.oversize_segments.current, 1);
    EXPECT_EQ(st.oversize_allocations.current, 1);
    Free(a);
    st = Stats();
    EXPECT_EQ(st.oversize_allocations.current, 0);
    EXPECT_EQ(st.oversize_allocations.freed, 1);
    EXPECT_EQ(st.oversize_segments.current, 1);
    uintptr_t b = Alloc(140 * MiB); // 150 < 140 + 20: reused whole
    EXPECT_EQ(b, a);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(150 * MiB));
    EXPECT_EQ(st.requested_bytes[ALL].current, (int64_t)(140 * MiB));
    EXPECT_EQ(st.segment[ALL].current, 1);
    Free(b);
    Alloc(50 * MiB); // below MSS: the oversize block is never taken
    st = Stats();
    EXPECT_EQ(st.segment[ALL].current, 2);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(200 * MiB));
    Alloc(120 * MiB); // 150 >= 120 + 20: rejected, new segment
    st = Stats();
    EXPECT_EQ(st.segment[ALL].current, 3);
    EXPECT_EQ(st.oversize_segments.current, 2);
}

TEST_F(Pool, MaxNonSplitRoundingWidensTheTolerance)
{
    Make("max_split_size_mb:100,max_non_split_rounding_mb:40");
    uintptr_t a = Alloc(150 * MiB);
    Free(a);
    EXPECT_EQ(Alloc(120 * MiB), a); // 150 < 120 + 40
    EXPECT_EQ(Stats().segment[ALL].current, 1);
}

TEST_F(Pool, OddMaxSplitSizeSplitsAnOversizeSegment)
{
    // Spec 4.1 corner case: MSS 21 MiB, a 20.5 MiB request gets a 22 MiB segment
    // that is oversize yet split (request < MSS, remainder 1.5 MiB > 1 MiB).
    Make("max_split_size_mb:21");
    Alloc(20 * MiB + 512 * KiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(22 * MiB));
    EXPECT_EQ(st.oversize_segments.current, 1);
    EXPECT_EQ(st.oversize_allocations.current, 0); // the block handed out is 20.5 MiB < MSS
    EXPECT_EQ(st.inactive_split_bytes[ALL].current, (int64_t)(1536 * KiB));
}

TEST_F(Pool, E10_RoundupPower2Divisions)
{
    Make("roundup_power2_divisions:4");
    Alloc(1200 * MiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(1280 * MiB));
    EXPECT_EQ(st.requested_bytes[ALL].current, (int64_t)(1200 * MiB));
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(1280 * MiB));
    Alloc(1200);
    EXPECT_EQ(Stats().allocated_bytes[SMALL].current, 1536);
}

TEST_F(Pool, E11_MemoryFractionOomWithPyTorchsMessage)
{
    Make("", 8 * GiB);
    ASSERT_EQ(pool_shim_set_fraction(s_, 0.5), GALLOC_OK);
    Alloc(3 * GiB);
    galloc_stats_t before = Stats();
    uintptr_t b = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 2 * GiB, 0, &b), GALLOC_E_OOM);
    EXPECT_EQ(b, 0u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.allocated_bytes[ALL].current, before.allocated_bytes[ALL].current);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(3 * GiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_STREQ(pool_shim_error(s_),
                 "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 8.00 GiB of which "
                 "5.00 GiB is free. 4.00 GiB allowed; Of the allocated memory 3.00 GiB is allocated by PyTorch, and "
                 "0 bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
                 "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
                 "documentation for Memory Management  "
                 "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
                 "alloc-conf)");
}

TEST_F(Pool, FractionHalfOf80GiBRefuses41GiB)
{
    ASSERT_EQ(pool_shim_set_fraction(s_, 0.5), GALLOC_OK);
    uintptr_t a = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 41 * GiB, 0, &a), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_device_alloc, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    std::string msg = pool_shim_error(s_);
    EXPECT_EQ(msg.rfind("CUDA out of memory. Tried to allocate 41.00 GiB. GPU 0 has a total capacity of 80.00 GiB "
                        "of which 80.00 GiB is free. 40.00 GiB allowed; Of the allocated memory 0 bytes",
                        0),
              0u)
        << msg;
    // Exactly at the cap is allowed (strictly greater fails).
    EXPECT_EQ(pool_shim_malloc(s_, 40 * GiB, 0, &a), GALLOC_OK);
    EXPECT_EQ(pool_shim_set_fraction(s_, 1.5), GALLOC_E_INVAL);
    EXPECT_EQ(pool_shim_set_fraction(s_, -0.1), GALLOC_E_INVAL);
}

TEST_F(Pool, E12_FailedDeviceAllocFreesCacheAndRetries)
{
    Make("", 40 * MiB);
    uintptr_t x = Alloc(5 * MiB);  // 20 MiB segment
    uintptr_t y = Alloc(16 * MiB); // does not fit x's 15 MiB remainder: a 16 MiB segment
    Free(x);                       // the 20 MiB segment is now whole and cached
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(36 * MiB));
    uintptr_t z = Alloc(21 * MiB); // a 22 MiB segment does not fit the 4 MiB left: flush, retry
    EXPECT_NE(z, 0u);
    st = Stats();
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(38 * MiB));
    Free(y);
    Free(z);
}

TEST_F(Pool, OomAfterFlushKeepsReleasedSegmentsReleased)
{
    Make("", 40 * MiB);
    uintptr_t x = Alloc(5 * MiB);
    uintptr_t y = Alloc(1); // a small segment, kept alive
    Free(x);
    uintptr_t z = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 39 * MiB, 0, &z), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_device_free, 1); // the cached 20 MiB segment went back, as in PyTorch
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(2 * MiB));
    EXPECT_EQ(st.allocation[ALL].current, 1);
    Free(y);
}

TEST_F(Pool, ReleaseAvailableFreesOversizeBlocksFirst)
{
    Make("max_split_size_mb:30", 200 * MiB);
    uintptr_t a = Alloc(60 * MiB), b = Alloc(60 * MiB), c = Alloc(60 * MiB);
    Free(a);
    Free(b);
    // 180 MiB reserved, 20 MiB free on the device. 100 MiB: no single cached block >= 100 MiB,
    // so oversize blocks are released largest first until 100 MiB are free... only 120 MiB cached.
    uintptr_t d = Alloc(100 * MiB);
    EXPECT_NE(d, 0u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_device_free, 2);
    EXPECT_EQ(st.num_alloc_retries, 0); // release_available_cached_blocks sufficed
    EXPECT_EQ(st.num_sync_all_streams, 0);
    EXPECT_EQ(st.oversize_segments.current, 2);
    Free(c);
    Free(d);
}

TEST_F(Pool, GarbageCollectionFreesOldCachedSegments)
{
    Make("garbage_collection_threshold:0.5", 100 * MiB);
    ASSERT_EQ(pool_shim_set_fraction(s_, 1.0), GALLOC_OK);
    uintptr_t a = Alloc(30 * MiB), b = Alloc(30 * MiB);
    Free(a);
    Free(b);
    // 60 MiB reserved > 50 MiB threshold. A miss runs GC before asking the device:
    // both whole cached segments have age >= the average and are released.
    uintptr_t c = Alloc(40 * MiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_device_free, 2);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(40 * MiB));
    EXPECT_EQ(st.num_sync_all_streams, 0); // GC does not synchronize
    Free(c);
}

TEST_F(Pool, GarbageCollectionNeedsAFraction)
{
    Make("garbage_collection_threshold:0.5", 100 * MiB);
    uintptr_t a = Alloc(30 * MiB), b = Alloc(30 * MiB);
    Free(a);
    Free(b);
    Alloc(40 * MiB); // no fraction set: GC off; 60 + 40 fits the device
    EXPECT_EQ(Stats().num_device_free, 0);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(100 * MiB));
}

TEST_F(Pool, StreamsDoNotShareCachedBlocks)
{
    uintptr_t a = Alloc(1, 1);
    Free(a);
    uintptr_t b = Alloc(1, 2);
    EXPECT_NE(b, a);
    EXPECT_EQ(Stats().segment[ALL].current, 2);
    uintptr_t c = Alloc(1, 1);
    EXPECT_EQ(c, a);
}

TEST_F(Pool, SizeZeroAndHugeRequests)
{
    uintptr_t a = 7;
    EXPECT_EQ(pool_shim_malloc(s_, 0, 0, &a), GALLOC_OK);
    EXPECT_EQ(a, 0u);
    EXPECT_EQ(Stats().allocation[ALL].allocated, 0);
    EXPECT_EQ(pool_shim_malloc(s_, (size_t)1 << 60, 0, &a), GALLOC_E_OOM);
    EXPECT_STREQ(pool_shim_error(s_), "CUDA out of memory. Tried to allocate more than 1EB memory.");
    EXPECT_EQ(Stats().num_ooms, 0); // the 1 EB guard runs before the pool, as in PyTorch
    EXPECT_EQ(pool_shim_malloc(s_, SIZE_MAX, 0, &a), GALLOC_E_OOM);
}

TEST_F(Pool, FreeOfForeignPointersChangesNothing)
{
    uintptr_t a = Alloc(4096);
    galloc_stats_t before = Stats();
    EXPECT_EQ(pool_shim_free(s_, a + 512), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(pool_shim_free(s_, 0x1234), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(pool_shim_free(s_, 0), GALLOC_OK);
    Free(a);
    EXPECT_EQ(pool_shim_free(s_, a), GALLOC_E_NOT_OWNED); // double free
    galloc_stats_t after = Stats();
    EXPECT_EQ(after.allocation[ALL].current, before.allocation[ALL].current - 1);
}

TEST_F(Pool, DeviceFaultsAreCleanFailures)
{
    // Every device allocation from the 2nd on fails: the cache is flushed, the
    // retry fails too, and the call is an OOM that leaves no trace but counters.
    Alloc(1);
    pool_shim_fail_from(s_, 2);
    uintptr_t a = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 30 * MiB, 0, &a), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 1);
    EXPECT_EQ(st.segment[ALL].current, 1);
    EXPECT_EQ(st.num_ooms, 1);
    pool_shim_fail_from(s_, 0);
    Alloc(30 * MiB);
}

TEST_F(Pool, RecordsDoNotGrowInSteadyState)
{
    uintptr_t live[64];
    for (int i = 0; i < 64; i++)
        live[i] = Alloc((size_t)(i + 1) * 4096);
    size_t records = pool_shim_block_records(s_);
    int64_t device_allocs = Stats().num_device_alloc;
    for (int i = 0; i < 100000; i++) {
        int k = i % 64;
        uintptr_t a;
        ASSERT_EQ(pool_shim_free(s_, live[k]), GALLOC_OK);
        ASSERT_EQ(pool_shim_malloc(s_, (size_t)(k + 1) * 4096, 0, &a), GALLOC_OK);
        live[k] = a;
    }
    EXPECT_EQ(pool_shim_block_records(s_), records);
    EXPECT_EQ(Stats().num_device_alloc, device_allocs);
}

} // namespace

namespace {

TEST(PoolConf, LargeSegmentSizeReplacesTwentyMiB)
{
    char err[256];
    pool_shim_t *s = pool_shim_new("large_segment_size_mb:64", 80ull << 30, err, sizeof err);
    ASSERT_NE(s, nullptr) << err;
    uintptr_t a;
    ASSERT_EQ(pool_shim_malloc(s, 5 << 20, 0, &a), GALLOC_OK);
    galloc_stats_t st;
    pool_shim_stats(s, &st);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_LARGE_POOL].current, 64 << 20);
    EXPECT_EQ(pool_shim_check(s), GALLOC_OK);
    pool_shim_delete(s);
}

TEST(PoolConf, PerProcessMemoryFractionCapsFromTheStart)
{
    char err[256];
    pool_shim_t *s = pool_shim_new("per_process_memory_fraction:0.25", 8ull << 30, err, sizeof err);
    ASSERT_NE(s, nullptr) << err;
    uintptr_t a;
    EXPECT_EQ(pool_shim_malloc(s, 2ull << 30, 0, &a), GALLOC_OK); // exactly the 2 GiB cap
    EXPECT_EQ(pool_shim_malloc(s, 2 << 20, 0, &a), GALLOC_E_OOM); // one more segment is over it
    EXPECT_NE(std::string(pool_shim_error(s)).find("2.00 GiB allowed; "), std::string::npos) << pool_shim_error(s);
    pool_shim_delete(s);
}

} // namespace

namespace {

// The free sets' AVL tree stays exactly balanced under random inserts and
// removes (rebalance stops early once a subtree's height is unchanged), and
// the shape check used by galloc_check notices a wrong height.
TEST(Avl, StaysBalancedUnderRandomInsertsAndRemoves)
{
    int depth = 0, caught = 0;
    EXPECT_EQ(pool_shim_avl_exercise(4096, 40000, 7u, &depth, &caught), 0);
    EXPECT_GE(depth, 10); // about half the keys are in: log2(2048) = 11
    EXPECT_LE(depth, 17); // AVL bound: 1.44 log2(n + 2)
    EXPECT_EQ(caught, 1);
}

} // namespace
