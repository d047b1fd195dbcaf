// concurrency_test: several threads drive one allocator with a random mix of
// malloc, free, record_stream, stream_synchronize, empty_cache, stats,
// history recording on/off, snapshots and private-pool routing, for a bounded number of operations; the invariant
// check runs at the end and stats must balance. Tagged "concurrency" so CI
// also runs it under ThreadSanitizer (--config=tsan).
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

} // namespace
