// stripes_util.h: what the per-stream locking tests share (stripes_test,
// stripes_free_test): a sim allocator, the four counters every malloc and
// free moves, the serial model of their figures, the invariants every read
// must show, and random malloc/free workers with their tallies.
#ifndef GALLOC_TESTS_API_STRIPES_UTIL_H
#define GALLOC_TESTS_API_STRIPES_UTIL_H

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace stripes {

#if defined(__SANITIZE_THREAD__)
constexpr int kScale = 2; // TSan runs each memory access through its shadow: ~10x slower
#else
constexpr int kScale = 10;
#endif

constexpr galloc_stat_pool_t kPools[] = {GALLOC_STAT_ALL, GALLOC_STAT_SMALL_POOL, GALLOC_STAT_LARGE_POOL};
constexpr size_t kSmallSize = size_t{1} << 20; // largest small-pool block

// The four counters every malloc and free moves, each with a pool index.
enum Counter { kAllocation, kAllocatedBytes, kActiveBytes, kRequestedBytes, kCounters };
const char *const kCounterNames[] = {"allocation", "allocated_bytes", "active_bytes", "requested_bytes"};

galloc_stat_t (galloc_stats_t::*const kCounterArrays[])[GALLOC_STAT_POOLS] = {
    &galloc_stats_t::allocation, &galloc_stats_t::allocated_bytes, &galloc_stats_t::active_bytes,
    &galloc_stats_t::requested_bytes};

inline const galloc_stat_t &StatOf(const galloc_stats_t &st, int c, int pool)
{
    return (st.*kCounterArrays[c])[pool];
}

inline galloc_allocator_t *CreateSim()
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:80GiB", &a, err, sizeof err), GALLOC_OK) << err;
    return a;
}

inline galloc_stats_t StatsOf(galloc_allocator_t *a)
{
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    return st;
}

inline std::string Str(const galloc_stat_t &x)
{
    return "current " + std::to_string(x.current) + " peak " + std::to_string(x.peak) + " allocated " +
           std::to_string(x.allocated) + " freed " + std::to_string(x.freed);
}

// PyTorch's round_size under the default config: 512-byte multiples.
inline size_t Rounded(size_t n)
{
    return n < 512 ? 512 : (n + 511) / 512 * 512;
}

// The stats of a serial order of mallocs and frees, for requests whose block
// is exactly Rounded(n): every small request, and large ones whose rounded
// size is a multiple of 2 MiB (every segment and free remainder then is one
// too, so each fit splits exactly).
struct Model {
    galloc_stat_t s[kCounters][GALLOC_STAT_POOLS] = {};
    void Change(size_t n, int sign)
    {
        const int64_t amount[kCounters] = {1, (int64_t)Rounded(n), (int64_t)Rounded(n), (int64_t)n};
        const int pool = Rounded(n) <= kSmallSize ? GALLOC_STAT_SMALL_POOL : GALLOC_STAT_LARGE_POOL;
        for (int c = 0; c < kCounters; c++)
            for (int p : {(int)GALLOC_STAT_ALL, pool}) {
                galloc_stat_t &x = s[c][p];
                x.current += sign * amount[c];
                (sign > 0 ? x.allocated : x.freed) += amount[c];
                x.peak = std::max(x.peak, x.current);
            }
    }

    void Expect(const galloc_stats_t &st, int where) const
    {
        for (int c = 0; c < kCounters; c++)
            for (int p : kPools)
                EXPECT_EQ(Str(StatOf(st, c, p)), Str(s[c][p])) << kCounterNames[c] << "[" << p << "] at " << where;
    }
};

// What every stats read must show, whatever runs beside it: 0 <= current <=
// peak, allocated - freed == current (no accumulated reset here), and the
// ALL entry the sum of SMALL and LARGE. Returns the first violation, or "".
inline std::string Violation(const galloc_stats_t &st)
{
    for (int c = 0; c < kCounters; c++) {
        for (int p : kPools) {
            const galloc_stat_t &x = StatOf(st, c, p);
            if (x.current < 0 || x.current > x.peak || x.allocated - x.freed != x.current)
                return std::string(kCounterNames[c]) + "[" + std::to_string(p) + "]: " + Str(x);
        }
        if (StatOf(st, c, GALLOC_STAT_ALL).current !=
            StatOf(st, c, GALLOC_STAT_SMALL_POOL).current + StatOf(st, c, GALLOC_STAT_LARGE_POOL).current)
            return std::string(kCounterNames[c]) + ": all != small + large";
    }
    return "";
}

// Random request sizes: small mostly, 1 in 8 large (up to 24 MiB).
inline size_t RandomSize(std::mt19937_64 &rng)
{
    return rng() % 8 == 0 ? 1 + rng() % (24 << 20) : 1 + rng() % (64 << 10);
}

// A thread's own tally of what it allocated, to compare with the totals.
struct Tally {
    int64_t count = 0;
    int64_t requested = 0;
    void Add(const Tally &o) { count += o.count, requested += o.requested; }
};

// Random malloc/free on one stream, holding at most max_live blocks, for ops
// calls; frees what it still holds at the end.
inline Tally RandomPairs(galloc_allocator_t *a, galloc_stream_t stream, uint64_t seed, int ops, size_t max_live,
                         std::atomic<int> *errors)
{
    std::mt19937_64 rng(seed);
    std::vector<void *> live;
    Tally t;
    for (int i = 0; i < ops; i++) {
        if (live.size() < max_live && (live.empty() || rng() % 2 == 0)) {
            size_t n = RandomSize(rng);
            void *p = nullptr;
            *errors += galloc_malloc(a, n, stream, &p) != GALLOC_OK;
            live.push_back(p);
            t.Add({1, (int64_t)n});
        } else {
            size_t k = rng() % live.size();
            *errors += galloc_free(a, live[k]) != GALLOC_OK;
            live[k] = live.back();
            live.pop_back();
        }
    }
    for (void *p : live)
        *errors += galloc_free(a, p) != GALLOC_OK;
    return t;
}

// After all threads ended and freed everything: totals equal the tallies,
// nothing is current, and the invariant walk passes.
inline void ExpectBalanced(galloc_allocator_t *a, const Tally &t)
{
    galloc_stats_t st = StatsOf(a);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, t.count);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].freed, t.count);
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].allocated, t.requested);
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].freed, t.requested);
    for (int c = 0; c < kCounters; c++)
        for (int p : kPools)
            EXPECT_EQ(StatOf(st, c, p).current, 0) << kCounterNames[c] << "[" << p << "]";
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(Violation(st), "");
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
}

// One RandomPairs thread per stream; `running` counts those not done yet.
struct Workers {
    std::atomic<int> running{0}, errors{0};
    std::vector<Tally> tally;
    std::vector<std::thread> ts;
    Workers(galloc_allocator_t *a, const std::vector<galloc_stream_t> &streams, int ops, size_t max_live)
        : running((int)streams.size()), tally(streams.size())
    {
        for (size_t i = 0; i < streams.size(); i++)
            ts.emplace_back([=] {
                tally[i] = RandomPairs(a, streams[i], 100 + i, ops, max_live, &errors);
                running--;
            });
    }
    Tally Join()
    {
        Tally sum;
        for (size_t i = 0; i < ts.size(); i++) {
            ts[i].join();
            sum.Add(tally[i]);
        }
        EXPECT_EQ(errors.load(), 0);
        return sum;
    }
};

constexpr int kGrowRounds = 40;
inline size_t SmallReq(int r)
{
    return 512 * (size_t)(r + 1) - 7;
} // 512 (r + 1) bytes
inline size_t BigReq(int r)
{
    return ((size_t)(10 + 2 * r) << 20) - 3;
} // 10 + 2 r MiB
constexpr size_t kTransientReq = (size_t{4} << 20) - 5;

} // namespace stripes

#endif // GALLOC_TESTS_API_STRIPES_UTIL_H
