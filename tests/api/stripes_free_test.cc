// stripes_free_test: per-stream locking (stripes_test's Note) where frees
// and settings cross stripes: a free from another thread, two threads
// freeing one block, recording / the fraction / empty_cache toggled while
// workers run, and many streams sharing stripes. Exact figures, as
// stripes_test. Tagged "concurrency": CI also runs it under TSan.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/api/stripes_util.h"

namespace {

using namespace stripes;

struct Handoff {
    std::mutex mu;
    std::deque<void *> q;
    bool done = false;
};

// Pops and frees A's blocks until A is done and the queue is empty; with
// own != NULL, a pair of its own on own_stream after each free. Returns the
// pointers freed.
std::vector<void *> DrainFrees(galloc_allocator_t *a, Handoff &h, galloc_stream_t own_stream, Tally *own,
                               std::atomic<int> *errors)
{
    std::vector<void *> freed;
    for (;;) {
        std::unique_lock<std::mutex> l(h.mu);
        void *p = h.q.empty() ? nullptr : h.q.front();
        if (p != nullptr)
            h.q.pop_front();
        bool done = h.done;
        l.unlock();
        if (p == nullptr) {
            if (done)
                return freed;
            std::this_thread::yield();
            continue;
        }
        *errors += galloc_free(a, p) != GALLOC_OK;
        freed.push_back(p);
        if (own != nullptr) // two calls holding at most one block: one pair
            own->Add(RandomPairs(a, own_stream, (uint64_t)own->count, 2, 1, errors));
    }
}

// Hazard: a free from a thread that never allocated on the block's stream
// (its last-stripe hint points elsewhere, or nowhere for main) must still
// find the block in the stripe that holds it, exactly once; a free that
// searches only its own stripe fails, one that searches without the owner's
// lock races A's mallocs into the same map.
TEST(Stripes, CrossThreadFree)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    const int n = 2000 * kScale;
    Handoff h;
    std::atomic<int> errors{0};
    Tally made, b_own;
    std::thread ta([&] {
        std::mt19937_64 rng(4);
        for (int i = 0; i < n; i++) {
            size_t sz = RandomSize(rng);
            void *p = nullptr;
            errors += galloc_malloc(a, sz, 1, &p) != GALLOC_OK;
            made.Add({1, (int64_t)sz});
            for (bool queued = false; !queued; std::this_thread::yield()) { // at most 64 in flight
                std::lock_guard<std::mutex> l(h.mu);
                if (h.q.size() < 64) {
                    h.q.push_back(p);
                    queued = true;
                }
            }
        }
        std::lock_guard<std::mutex> l(h.mu);
        h.done = true;
    });
    std::vector<void *> by_b;
    std::thread tb([&] { by_b = DrainFrees(a, h, 2, &b_own, &errors); });
    std::vector<void *> by_main = DrainFrees(a, h, 0, nullptr, &errors);
    ta.join();
    tb.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(by_b.size() + by_main.size(), (size_t)n);
    made.Add(b_own);
    ExpectBalanced(a, made);
    // Nothing is live: a second free of any of them is refused and changes nothing.
    int refused = 0;
    for (const auto *list : {&by_b, &by_main})
        for (void *p : *list)
            refused += galloc_free(a, p) == GALLOC_E_NOT_OWNED;
    EXPECT_EQ(refused, n);
    ExpectBalanced(a, made);
    galloc_allocator_destroy(a);
}

// Hazard: with free looking a block up in one stripe's map and then in the
// others, two frees of one pointer from threads whose hints point to
// different stripes may both find it before either removes it; exactly one
// must win (GALLOC_OK) and the other get GALLOC_E_NOT_OWNED, and the block
// must be counted freed once.
TEST(Stripes, ConcurrentDoubleFreeOneWins)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    const int rounds = 500 * kScale;
    std::atomic<int> go{0}, done{0}, errors{0};
    std::atomic<void *> target{nullptr};
    galloc_status_t result[2] = {GALLOC_OK, GALLOC_OK}; // racer i writes before done++, main reads after
    auto racer = [&](int i) {
        for (int r = 1; r <= rounds; r++) {
            void *own = nullptr; // a pair on its own stream: its stripe hint is not the block's
            errors += galloc_malloc(a, 512, (galloc_stream_t)(3 + i), &own) != GALLOC_OK;
            errors += galloc_free(a, own) != GALLOC_OK;
            while (go.load() != r)
                std::this_thread::yield();
            result[i] = galloc_free(a, target.load());
            done++;
        }
    };
    std::thread r0(racer, 0), r1(racer, 1);
    int64_t requested = 0;
    int bad_rounds = 0;
    for (int r = 1; r <= rounds; r++) {
        size_t n = r % 2 ? 1000 + (size_t)r : (size_t{3} << 20) + (size_t)r; // small and large in turn
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a, n, (galloc_stream_t)(1 + r % 2), &p), GALLOC_OK);
        requested += (int64_t)n;
        target = p;
        go = r;
        while (done.load() != 2 * r)
            std::this_thread::yield();
        bad_rounds += !((result[0] == GALLOC_OK && result[1] == GALLOC_E_NOT_OWNED) ||
                        (result[1] == GALLOC_OK && result[0] == GALLOC_E_NOT_OWNED));
    }
    r0.join();
    r1.join();
    EXPECT_EQ(bad_rounds, 0);
    EXPECT_EQ(errors.load(), 0);
    ExpectBalanced(a, Tally{3 * (int64_t)rounds, requested + 2 * 512 * (int64_t)rounds});
    galloc_allocator_destroy(a);
}

// One round of what takes every lock: recording on or off, the fraction
// moved, the cache emptied, the invariant walk.
void AllLocksRound(galloc_allocator_t *a, int i)
{
    galloc_history_options_t h = {};
    h.struct_size = sizeof h;
    h.enabled = i % 4 < 2 ? GALLOC_HISTORY_ALL : GALLOC_HISTORY_NONE;
    h.max_entries = 4096;
    EXPECT_EQ(galloc_record_memory_history(a, &h), GALLOC_OK) << i;
    EXPECT_EQ(galloc_set_memory_fraction(a, i % 2 ? 0.5 : 1.0), GALLOC_OK) << i;
    EXPECT_EQ(galloc_empty_cache(a), GALLOC_OK) << i;
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << i;
}

// Hazard: recording, the fraction (GC and its cap) and empty_cache each turn
// the fast path off or pull blocks from under it; the flag word must change
// only under all locks, so no fast-path call is in flight across a switch
// (a malloc recorded half, a segment released while a stripe hands out one
// of its blocks). Every walk must pass, and the totals stay exact.
TEST(Stripes, ToggleRecordingAndFractionWhileRunning)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    Workers w(a, {1, 2}, 1000 * kScale, 4);
    int rounds = 0;
    while (w.running.load() > 0 || rounds < 300)
        AllLocksRound(a, rounds++);
    ExpectBalanced(a, w.Join());
    AllLocksRound(a, 0); // recording on for the snapshot
    const char *tmp = std::getenv("TEST_TMPDIR");
    std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/stripes_toggle.pickle";
    ASSERT_EQ(galloc_snapshot_write(a, path.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
    struct stat sb;
    ASSERT_EQ(stat(path.c_str(), &sb), 0);
    EXPECT_GT(sb.st_size, 0);
    galloc_allocator_destroy(a);
}

// Hazard: streams that share a stripe share its lock, its free-record list,
// its headroom and its pointer map; the free sets stay per stream. 0, 64,
// 128 and the two handle-like values (CUDA streams are aligned pointers) are
// equal modulo 64, 1 and 65 too, and 1, 65 and 17 modulo 16: a stripe index
// taken from the low bits puts several of these threads on one stripe.
TEST(Stripes, ManyStreamsShareStripes)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    Workers w(a, {0, 64, 128, 1, 65, 17, 0x7f3a12340000, 0x7f3a12350000}, 1000 * kScale, 4);
    Tally sum = w.Join();
    EXPECT_LE(StatsOf(a).allocation[GALLOC_STAT_ALL].peak, 32); // 8 threads, at most 4 blocks each
    ExpectBalanced(a, sum);
    galloc_allocator_destroy(a);
}

} // namespace
