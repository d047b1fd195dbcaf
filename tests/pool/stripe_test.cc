// stripe_test: the stripe path (pool/stripe_path.c, pool/stripe.h) called
// directly: which calls it serves, which it hands to the locked path, and that
// the escrow keeps every peak exact (a stripe cannot pass a peak, borrows
// headroom from another stripe, and leaves a new peak to the locked path).
// Locked calls are bracketed with quiesce/resume as front/ does.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/pool/pool_shim.h"

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

class Stripes : public ::testing::Test {
  protected:
    void Open(const char *conf)
    {
        char err[512] = "";
        s_ = pool_shim_new(conf, 8 * GiB, err, sizeof err);
        ASSERT_NE(s_, nullptr) << err;
        pool_shim_resume(s_); // as after any locked call: the stripe path opens if it may
    }
    void SetUp() override { Open(""); }
    void TearDown() override { pool_shim_delete(s_); }

    uintptr_t LockedMalloc(size_t n, uintptr_t stream)
    {
        uintptr_t a = 0;
        pool_shim_quiesce(s_);
        EXPECT_EQ(pool_shim_malloc(s_, n, stream, &a), GALLOC_OK) << pool_shim_error(s_);
        pool_shim_resume(s_);
        return a;
    }
    void LockedFree(uintptr_t a)
    {
        pool_shim_quiesce(s_);
        EXPECT_EQ(pool_shim_free(s_, a), GALLOC_OK) << pool_shim_error(s_);
        pool_shim_resume(s_);
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        pool_shim_quiesce(s_);
        pool_shim_stats(s_, &st);
        EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
        pool_shim_resume(s_);
        return st;
    }

    pool_shim_t *s_ = nullptr;
};

TEST_F(Stripes, CacheHitAndFreeTakeTheStripePath)
{
    uintptr_t a = 0, b = 0;
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 4096, 1, &a), 0) << "no segment on stream 1 yet: the locked path's";
    a = LockedMalloc(4096, 1);
    EXPECT_EQ(pool_shim_stripe_free(s_, a), 1);
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 4096, 1, &b), 1);
    EXPECT_EQ(b, a) << "best fit: the block just freed";
    EXPECT_EQ(pool_shim_stripe_free(s_, b), 1);
    EXPECT_EQ(pool_shim_stripe_free(s_, b), 0) << "a second free is the locked path's to report";
    // Rounding SIZE_MAX would wrap to a small size that the cache could serve.
    EXPECT_EQ(pool_shim_stripe_malloc(s_, SIZE_MAX, 1, &b), 0) << "past 1 EB: the locked path's OOM";
    EXPECT_EQ(pool_shim_stripe_malloc(s_, SIZE_MAX - 100, 1, &b), 0);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 2);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].freed, 2);
    EXPECT_EQ(st.allocation[GALLOC_STAT_SMALL_POOL].allocated, 2);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].peak, 1);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].allocated, 8192);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].peak, 4096);
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].peak, 4096);
    // Split at each malloc, whole again at each free.
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_ALL].allocated, 2);
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.inactive_split_bytes[GALLOC_STAT_ALL].peak, (int64_t)(2 * MiB - 4096));
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 1);
}

TEST_F(Stripes, AnIncreasePastThePeakTakesTheLockedPath)
{
    uintptr_t a = LockedMalloc(4096, 1), b = 0;
    EXPECT_EQ(pool_shim_stripe_free(s_, a), 1); // 4,096 bytes of headroom below the peak on stream 1's stripe
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 8192, 1, &b), 0) << "the block is cached; the headroom is not there";
    b = LockedMalloc(8192, 1);
    EXPECT_EQ(b, a);
    EXPECT_EQ(Stats().allocated_bytes[GALLOC_STAT_ALL].peak, 8192);
    EXPECT_EQ(pool_shim_stripe_free(s_, b), 1);
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 8192, 1, &b), 1) << "within the new peak";
    EXPECT_EQ(pool_shim_stripe_free(s_, b), 1);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, 8192);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 3);
}

// Streams 1 and 2 on two stripes: 768 KiB live on each at once sets the peak
// at 1.5 MiB, and the grant gives each stripe the same ceiling, 768 KiB.
TEST_F(Stripes, AShortStripeBorrowsAndANewPeakIsTheLockedPaths)
{
    ASSERT_NE(pool_shim_stripe_of(1), pool_shim_stripe_of(2));
    uintptr_t a = LockedMalloc(768 * KiB, 1), b = LockedMalloc(768 * KiB, 2), c = 0, d = 0;
    LockedFree(a);
    LockedFree(b);
    // 1 MiB on stream 1 needs 256 KiB more than its stripe holds: borrowed from stream 2's.
    EXPECT_EQ(pool_shim_stripe_malloc(s_, MiB, 1, &c), 1);
    // Stream 2 now needs 768 KiB with 1.5 MiB - 1 MiB left in all: past the peak, the locked path's.
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 768 * KiB, 2, &d), 0);
    d = LockedMalloc(768 * KiB, 2);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, (int64_t)(MiB + 768 * KiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].peak, (int64_t)(MiB + 768 * KiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(MiB + 768 * KiB));
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].peak, (int64_t)(MiB + 768 * KiB));
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].peak, 2);
    EXPECT_EQ(pool_shim_stripe_free(s_, c), 1);
    EXPECT_EQ(pool_shim_stripe_free(s_, d), 1);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].allocated, (int64_t)(2 * 768 * KiB + MiB + 768 * KiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].freed, st.allocated_bytes[GALLOC_STAT_ALL].allocated);
}

TEST_F(Stripes, RecordingTurnsTheStripePathOff)
{
    uintptr_t a = LockedMalloc(4096, 1);
    LockedFree(a);
    pool_shim_quiesce(s_);
    ASSERT_EQ(pool_shim_record_history(s_, 1), GALLOC_OK);
    pool_shim_resume(s_);
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 4096, 1, &a), 0) << "every call is traced on the locked path";
    pool_shim_quiesce(s_);
    ASSERT_EQ(pool_shim_record_history(s_, 0), GALLOC_OK);
    pool_shim_resume(s_);
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 4096, 1, &a), 1);
    EXPECT_EQ(pool_shim_stripe_free(s_, a), 1);
}

// usable_size reads the block under its stripe's lock, whatever would send
// its free to the locked path (stream uses here); what the maps do not hold,
// or any lookup while the stripe path is closed, is the locked path's.
TEST_F(Stripes, UsableSizeTakesTheStripePath)
{
    uintptr_t a = LockedMalloc(4096, 1), b = LockedMalloc(1000, 2);
    size_t n = 0;
    EXPECT_EQ(pool_shim_stripe_usable_size(s_, a, &n), 1);
    EXPECT_EQ(n, 4096u);
    EXPECT_EQ(pool_shim_stripe_usable_size(s_, b, &n), 1) << "another stripe's map, searched after the hint's";
    EXPECT_EQ(n, 1024u);
    n = 7;
    EXPECT_EQ(pool_shim_stripe_usable_size(s_, a + 512, &n), 0) << "inside a block: the locked path says why";
    EXPECT_EQ(n, 7u) << "unchanged when not found";
    pool_shim_quiesce(s_);
    EXPECT_EQ(pool_shim_usable_size(s_, a + 512, &n), GALLOC_E_NOT_OWNED);
    ASSERT_EQ(pool_shim_record_stream(s_, a, 2), GALLOC_OK);
    pool_shim_resume(s_);
    EXPECT_EQ(pool_shim_stripe_usable_size(s_, a, &n), 1) << "stream uses do not change the size";
    EXPECT_EQ(n, 4096u);
    pool_shim_quiesce(s_);
    ASSERT_EQ(pool_shim_record_history(s_, 1), GALLOC_OK);
    pool_shim_resume(s_);
    EXPECT_EQ(pool_shim_stripe_usable_size(s_, b, &n), 0) << "the stripe path is closed while recording";
    pool_shim_quiesce(s_);
    EXPECT_EQ(pool_shim_usable_size(s_, b, &n), GALLOC_OK);
    EXPECT_EQ(n, 1024u);
    ASSERT_EQ(pool_shim_record_history(s_, 0), GALLOC_OK);
    pool_shim_resume(s_);
    LockedFree(a);
    LockedFree(b);
    EXPECT_EQ(pool_shim_stripe_usable_size(s_, b, &n), 0) << "freed";
}

TEST_F(Stripes, StreamUsesAndPendingEventsTakeTheLockedPath)
{
    uintptr_t a = LockedMalloc(4096, 1), b = 0;
    pool_shim_quiesce(s_);
    ASSERT_EQ(pool_shim_record_stream(s_, a, 2), GALLOC_OK);
    pool_shim_resume(s_);
    EXPECT_EQ(pool_shim_stripe_free(s_, a), 0) << "its events are recorded on the locked path";
    LockedFree(a);
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 4096, 1, &b), 0) << "a block waits on events: malloc processes them first";
    b = LockedMalloc(4096, 1); // returns the block (the sim's events are complete)
    EXPECT_EQ(b, a);
    EXPECT_EQ(pool_shim_stripe_free(s_, b), 1);
    EXPECT_EQ(Stats().active[GALLOC_STAT_ALL].current, 0);
}

TEST_F(Stripes, ExpandableSegmentsTakeTheStripePath)
{
    pool_shim_delete(s_);
    s_ = nullptr;
    Open("expandable_segments:True");
    uintptr_t a = LockedMalloc(4096, 1), b = 0;
    EXPECT_EQ(pool_shim_stripe_free(s_, a), 1);
    EXPECT_EQ(pool_shim_stripe_malloc(s_, 4096, 1, &b), 1);
    EXPECT_EQ(b, a);
    EXPECT_EQ(pool_shim_stripe_free(s_, b), 1);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 2);
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_ALL].allocated, 0) << "PyTorch keeps expandable segments out of it";
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(2 * MiB)) << "one 2 MiB page mapped";
}

// The same random calls on two pools of the same settings: one tries the
// stripe path first and takes the locked path when it declines (as api/
// does), the other has only the locked path. Every status and address, and
// every stat at each comparison, must agree: the stripe path is a shorter way
// to the same state, never a different policy.
struct Twin {
    pool_shim_t *striped = nullptr, *locked = nullptr;
    int served = 0; // calls the stripe path served
    explicit Twin(const char *conf)
    {
        char err[512] = "";
        striped = pool_shim_new(conf, 8 * GiB, err, sizeof err);
        locked = pool_shim_new(conf, 8 * GiB, err, sizeof err);
        EXPECT_TRUE(striped != nullptr && locked != nullptr) << err;
        if (striped != nullptr)
            pool_shim_resume(striped);
    }
    ~Twin()
    {
        pool_shim_delete(striped);
        pool_shim_delete(locked);
    }
    void Malloc(size_t n, uintptr_t stream, std::vector<uintptr_t> *live)
    {
        uintptr_t a = 0, b = 0;
        galloc_status_t sa = GALLOC_OK;
        if (pool_shim_stripe_malloc(striped, n, stream, &a)) {
            served++;
        } else {
            pool_shim_quiesce(striped);
            sa = pool_shim_malloc(striped, n, stream, &a);
            pool_shim_resume(striped);
        }
        galloc_status_t sb = pool_shim_malloc(locked, n, stream, &b);
        ASSERT_EQ(sa, sb) << n << " bytes on stream " << stream;
        ASSERT_EQ(a, b) << n << " bytes on stream " << stream;
        if (sa == GALLOC_OK)
            live->push_back(a);
    }
    void Free(uintptr_t a)
    {
        galloc_status_t sa = GALLOC_OK;
        if (pool_shim_stripe_free(striped, a)) {
            served++;
        } else {
            pool_shim_quiesce(striped);
            sa = pool_shim_free(striped, a);
            pool_shim_resume(striped);
        }
        ASSERT_EQ(sa, GALLOC_OK);
        ASSERT_EQ(pool_shim_free(locked, a), GALLOC_OK);
    }
    void Compare(int step)
    {
        galloc_stats_t sa, sb;
        pool_shim_quiesce(striped);
        pool_shim_stats(striped, &sa);
        ASSERT_EQ(pool_shim_check(striped), GALLOC_OK) << pool_shim_error(striped);
        pool_shim_resume(striped);
        pool_shim_stats(locked, &sb);
        ASSERT_EQ(memcmp(&sa, &sb, sizeof sa), 0) << "stats differ after step " << step;
    }
};

void RunTwins(const char *conf, uint64_t seed, int steps)
{
    SCOPED_TRACE(std::string("conf '") + conf + "' seed " + std::to_string(seed));
    Twin t(conf);
    ASSERT_TRUE(t.striped != nullptr && t.locked != nullptr);
    std::mt19937_64 rng(seed);
    std::vector<uintptr_t> live;
    for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); i++) {
        if (live.size() < 8 || (live.size() < 200 && rng() % 100 < 52)) {
            // Mostly small, some large, a few up to 64 MiB; three streams on their own stripes.
            uint64_t pick = rng() % 100;
            size_t n = pick < 60 ? 1 + rng() % (64 * KiB) : pick < 95 ? 1 + rng() % (8 * MiB) : 1 + rng() % (64 * MiB);
            t.Malloc(n, 1 + rng() % 3, &live);
        } else {
            size_t k = rng() % live.size();
            t.Free(live[k]);
            live[k] = live.back();
            live.pop_back();
        }
        if (i % 7 == 6)
            t.Compare(i);
    }
    t.Compare(steps);
    EXPECT_GT(t.served, steps / 2) << "the stripe path must have served most calls";
}

TEST(StripeTwins, DefaultSettings)
{
    RunTwins("", 11, 30000);
}

TEST(StripeTwins, ExpandableSegments)
{
    RunTwins("expandable_segments:True", 12, 30000);
}

TEST(StripeTwins, SplitLimitsAndRounding)
{
    RunTwins("max_split_size_mb:32,roundup_power2_divisions:4", 13, 30000);
}

} // namespace
