// concurrency_test: several threads drive one allocator with a random mix of
// malloc, free, record_stream, stream_synchronize, empty_cache, stats,
// history recording on/off, snapshots and private-pool routing, for a bounded number of operations; the invariant
// check runs at the end and stats must balance. Tagged "concurrency" so CI
// also runs it under ThreadSanitizer (--config=tsan).
//
// OwnStreams: the case of Note: per-stream locking (docs/architecture.md), two threads on one allocator each on a stream
// of its own. Whatever locking serves it, the stats must be those of one
// serial order of the calls: peaks that follow the threads' causal order
// (a handshake forces the overlap), and counters that move together in every
// call (allocated and active bytes without record_stream) peaking together.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr int kThreads = 4;
constexpr int kOps = 20000;

void worker(galloc_allocator_t *a, int t, const std::string &snap, std::atomic<int> *errors)
{
    std::mt19937_64 rng(1000 + (uint64_t)t);
    std::vector<void *> live;
    galloc_mempool_id_t pool;
    bool routed = false;
    if (galloc_mempool_create(a, &pool) != GALLOC_OK)
        errors->fetch_add(1);
    for (int i = 0; i < kOps; i++) {
        int op = (int)(rng() % 100);
        galloc_stream_t s = (galloc_stream_t)(rng() % 3);
        if (op < 45 && live.size() < 64) {
            size_t n = rng() % 4 == 0 ? 1 + rng() % (24 << 20) : 1 + rng() % (1 << 20);
            void *p = nullptr;
            galloc_status_t st = galloc_malloc(a, n, s, &p);
            if (st == GALLOC_OK)
                live.push_back(p);
            else if (st != GALLOC_E_OOM)
                errors->fetch_add(1);
        } else if (op < 85 && !live.empty()) {
            size_t k = rng() % live.size();
            if (galloc_free(a, live[k]) != GALLOC_OK)
                errors->fetch_add(1);
            live[k] = live.back();
            live.pop_back();
        } else if (op < 90 && !live.empty()) {
            if (galloc_record_stream(a, live[rng() % live.size()], s) != GALLOC_OK)
                errors->fetch_add(1);
        } else if (op < 94) {
            if (galloc_stream_synchronize(a, s) != GALLOC_OK)
                errors->fetch_add(1);
        } else if (op < 95) {
            if (galloc_empty_cache(a) != GALLOC_OK)
                errors->fetch_add(1);
        } else if (op < 96) {
            // Snapshots read every segment and the trace ring while other
            // threads allocate; recording is switched on and off under them.
            galloc_history_options_t h = {};
            h.struct_size = sizeof h;
            h.enabled = rng() % 2 ? GALLOC_HISTORY_ALL : GALLOC_HISTORY_NONE;
            h.max_entries = 4096;
            if (galloc_record_memory_history(a, &h) != GALLOC_OK)
                errors->fetch_add(1);
            if (rng() % 8 == 0 && galloc_snapshot_write(a, snap.c_str(), GALLOC_SNAPSHOT_PICKLE) != GALLOC_OK)
                errors->fetch_add(1);
        } else if (op < 98) {
            galloc_stats_t st;
            st.struct_size = sizeof st;
            if (galloc_memory_stats(a, &st) != GALLOC_OK || st.allocation[GALLOC_STAT_ALL].current < 0)
                errors->fetch_add(1);
        } else {
            galloc_status_t st = routed ? galloc_mempool_end_allocate(a, pool)
                                        : galloc_mempool_begin_allocate(a, pool, GALLOC_ROUTE_THREAD, 0);
            if (st != GALLOC_OK)
                errors->fetch_add(1);
            routed = !routed;
        }
    }
    if (routed && galloc_mempool_end_allocate(a, pool) != GALLOC_OK)
        errors->fetch_add(1);
    for (void *p : live)
        if (galloc_free(a, p) != GALLOC_OK)
            errors->fetch_add(1);
    if (galloc_mempool_release(a, pool) != GALLOC_OK)
        errors->fetch_add(1);
}

TEST(Concurrency, ThreadsTimesMixedOperationsKeepInvariants)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:2GiB,sim_manual_events:True", &a, err, sizeof err),
              GALLOC_OK)
        << err;
    std::atomic<int> errors{0};
    std::vector<std::thread> ts;
    const char *tmp = std::getenv("TEST_TMPDIR");
    std::vector<std::string> snaps;
    for (int t = 0; t < kThreads; t++)
        snaps.push_back(std::string(tmp != nullptr ? tmp : "/tmp") + "/concurrency_" + std::to_string(t) + ".pickle");
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back(worker, a, t, std::cref(snaps[t]), &errors);
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a), GALLOC_OK); // waits for every pending free, releases every pool
    galloc_stats_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.active[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, st.allocation[GALLOC_STAT_ALL].freed);
    EXPECT_GT(st.allocation[GALLOC_STAT_ALL].allocated, kThreads * kOps / 4);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

galloc_stats_t StatsOf(galloc_allocator_t *a)
{
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    return st;
}

galloc_allocator_t *CreateSim()
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:80GiB", &a, err, sizeof err), GALLOC_OK) << err;
    return a;
}

// Round r: thread A allocates on stream 1, then B on stream 2, then A frees,
// then B frees, each step waiting for the previous one (a handshake through
// `turn`). Both blocks are live at once in every round, so the peaks are the
// largest round's sum, whichever stream each was counted on. A fold of
// per-stream counters after the fact would miss that overlap.
TEST(Concurrency, OwnStreamsPeaksFollowTheCausalOrder)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    constexpr int kRounds = 200;
    // Sizes in 512-byte units: A's and B's, largest sum in round 137.
    auto size_a = [](int r) { return size_t{512} * (size_t)(1 + r % 13) + (r == 137 ? size_t{3} << 20 : 0); };
    auto size_b = [](int r) { return size_t{512} * (size_t)(1 + r % 7) + (r == 137 ? (size_t{5} << 20) + 1 : 1); };
    std::atomic<int> turn{0}, errors{0};
    auto wait_for = [&](int v) {
        while (turn.load() != v)
            std::this_thread::yield();
    };
    std::thread ta([&] {
        for (int r = 0; r < kRounds; r++) {
            wait_for(4 * r);
            void *p = nullptr;
            errors += galloc_malloc(a, size_a(r), 1, &p) != GALLOC_OK;
            turn = 4 * r + 1;
            wait_for(4 * r + 2);
            errors += galloc_free(a, p) != GALLOC_OK;
            turn = 4 * r + 3;
        }
    });
    std::thread tb([&] {
        for (int r = 0; r < kRounds; r++) {
            wait_for(4 * r + 1);
            void *p = nullptr;
            errors += galloc_malloc(a, size_b(r), 2, &p) != GALLOC_OK;
            turn = 4 * r + 2;
            wait_for(4 * r + 3);
            errors += galloc_free(a, p) != GALLOC_OK;
            turn = 4 * r + 4;
        }
    });
    ta.join();
    tb.join();
    EXPECT_EQ(errors.load(), 0);
    galloc_stats_t st = StatsOf(a);
    // Round 137: A 512 * (1 + 137 % 13 = 8) + 3 MiB, B 512 * (1 + 137 % 7 = 5) + 5 MiB + 1: requested
    // 4,096 + 3,145,728 + 2,560 + 5,242,881 = 8,395,265; allocated rounds B up to 512 bytes: 8,395,776.
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].peak, 8395265);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, 8395776);
    EXPECT_EQ(st.active_bytes[GALLOC_STAT_ALL].peak, 8395776);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].peak, 2);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 2 * kRounds);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].freed, 2 * kRounds);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

// Two threads racing malloc+free pairs on their own streams, no handshake:
// the interleaving is the scheduler's, but every call moves allocated_bytes
// and active_bytes by the same amount, so in any serial order their peaks are
// equal; the counts and totals are exact.
TEST(Concurrency, OwnStreamsRacingPairsKeepStatsOfOneSerialOrder)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
#if defined(__SANITIZE_THREAD__)
    constexpr int kPairs = 5000;
#else
    constexpr int kPairs = 50000;
#endif
    std::atomic<int> errors{0};
    auto run = [&](galloc_stream_t stream, uint64_t seed) {
        std::mt19937_64 rng(seed);
        for (int i = 0; i < kPairs; i++) {
            void *p = nullptr;
            errors += galloc_malloc(a, 1 + rng() % (64 << 10), stream, &p) != GALLOC_OK;
            errors += galloc_free(a, p) != GALLOC_OK;
        }
    };
    std::thread t1(run, 1, 1), t2(run, 2, 2);
    t1.join();
    t2.join();
    EXPECT_EQ(errors.load(), 0);
    galloc_stats_t st = StatsOf(a);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 2 * kPairs);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].freed, 2 * kPairs);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.active_bytes[GALLOC_STAT_ALL].current, 0);
    // At most one block per thread is live at a time.
    EXPECT_GE(st.allocation[GALLOC_STAT_ALL].peak, 1);
    EXPECT_LE(st.allocation[GALLOC_STAT_ALL].peak, 2);
    EXPECT_LE(st.allocated_bytes[GALLOC_STAT_ALL].peak, 2 * (64 << 10));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, st.active_bytes[GALLOC_STAT_ALL].peak);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].peak, st.active_bytes[GALLOC_STAT_SMALL_POOL].peak);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].peak, st.active[GALLOC_STAT_ALL].peak);
    // Each stream's blocks came from its own segments: one 2 MiB small segment each.
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 2);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
