// stripes_test: guards for per-stream locking (Note: per-stream locking, docs/architecture.md) (bench/NOTES.md,
// "Per-stream locking": a lock, pointer map and escrowed peak headroom per
// stripe of streams). Each case passes with the single allocator lock and
// must keep passing with stripes: exact figures, the stats of one serial
// order of the calls. Tagged "concurrency": CI also runs it under TSan.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

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

const galloc_stat_t &StatOf(const galloc_stats_t &st, int c, int pool)
{
    return (st.*kCounterArrays[c])[pool];
}

galloc_allocator_t *CreateSim()
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:80GiB", &a, err, sizeof err), GALLOC_OK) << err;
    return a;
}

galloc_stats_t StatsOf(galloc_allocator_t *a)
{
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    return st;
}

std::string Str(const galloc_stat_t &x)
{
    return "current " + std::to_string(x.current) + " peak " + std::to_string(x.peak) + " allocated " +
           std::to_string(x.allocated) + " freed " + std::to_string(x.freed);
}

// PyTorch's round_size under the default config: 512-byte multiples.
size_t Rounded(size_t n)
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
std::string Violation(const galloc_stats_t &st)
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
size_t RandomSize(std::mt19937_64 &rng)
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
Tally RandomPairs(galloc_allocator_t *a, galloc_stream_t stream, uint64_t seed, int ops, size_t max_live,
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
void ExpectBalanced(galloc_allocator_t *a, const Tally &t)
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
size_t SmallReq(int r)
{
    return 512 * (size_t)(r + 1) - 7;
} // 512 (r + 1) bytes
size_t BigReq(int r)
{
    return ((size_t)(10 + 2 * r) << 20) - 3;
} // 10 + 2 r MiB
constexpr size_t kTransientReq = (size_t{4} << 20) - 5;

// A grower's live blocks, each with its request size.
using Block = std::pair<void *, size_t>;
struct Grower {
    galloc_stream_t stream;
    std::vector<Block> small;
    Block big{nullptr, 0};
};

// Frees b and takes it out of the model.
void Give(galloc_allocator_t *a, const Block &b, Model &m, std::atomic<int> &errors)
{
    errors += galloc_free(a, b.first) != GALLOC_OK;
    m.Change(b.second, -1);
}

// One turn of round r: a new small block kept; the big block freed (a dip,
// which gives headroom back to this stripe) and replaced by a larger one
// (past the old high); a transient block on top, freed again, so the
// round's new all-time high is not the state the turn leaves.
void GrowTurn(galloc_allocator_t *a, int r, Grower &g, Model &m, std::atomic<int> &errors)
{
    auto take = [&](size_t n) {
        void *p = nullptr;
        errors += galloc_malloc(a, n, g.stream, &p) != GALLOC_OK;
        m.Change(n, +1);
        return p;
    };
    g.small.emplace_back(take(SmallReq(r)), SmallReq(r));
    if (g.big.first != nullptr)
        Give(a, g.big, m, errors);
    g.big = {take(BigReq(r)), BigReq(r)};
    Give(a, {take(kTransientReq), kTransientReq}, m, errors);
}

// Hazard: every turn climbs past the all-time high, so it must exhaust its
// stripe's headroom and take the slow path, while the other stripe still
// holds headroom from its own dips. A slow path that
// hands out peak - current without taking the other stripe's share back lets
// both stripes climb past the peak unseen; one that folds only its own
// delta misses the other stream's blocks in the high. The handshake makes
// the order serial, so the model's figures are the only right ones; stats
// are read every third round (all locks: the escrow is quiescent then).
TEST(Stripes, EscrowExhaustedInTurn)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    Model m;
    std::atomic<int> turn{0}, errors{0}; // round r is thread r % 2's turn
    Grower g[2] = {{1, {}, {}}, {2, {}, {}}};
    auto run = [&](int who) {
        for (int r = who; r < kGrowRounds; r += 2) {
            while (turn.load() != r)
                std::this_thread::yield();
            GrowTurn(a, r, g[who], m, errors);
            if (r % 3 == 2)
                m.Expect(StatsOf(a), r);
            turn = r + 1;
        }
    };
    std::thread t0(run, 0), t1(run, 1);
    t0.join();
    t1.join();
    for (Grower &x : g) {
        x.small.push_back(x.big);
        for (const Block &b : x.small)
            Give(a, b, m, errors);
    }
    EXPECT_EQ(errors.load(), 0);
    galloc_stats_t st = StatsOf(a);
    // By hand, the high of round 39: bigs of 88 and 86 MiB, the 4 MiB
    // transient (178 MiB = 186,646,528), and the 40 smalls, 512 * (1 + ... + 40)
    // = 419,840; requested 3 + 3 + 5 and 40 * 7 bytes less.
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, 187066368);
    EXPECT_EQ(st.active_bytes[GALLOC_STAT_ALL].peak, 187066368);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].peak, 186646528);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].peak, 419840);
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].peak, 187066368 - 11 - 280);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].peak, 43);
    EXPECT_EQ(st.allocation[GALLOC_STAT_LARGE_POOL].peak, 3);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 40 + 40 + 40);
    // Every other figure, current and totals included, from the model.
    m.Expect(st, kGrowRounds);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

constexpr size_t kPairReq = 3000;                  // B's block: 3,072 bytes, small pool
constexpr size_t kHeldReq = (size_t{5} << 20) - 1; // main's block: 5 MiB, large pool

// One read after a reset: main's block is always live, B's at most once.
// Each counter's current and peak are main's amount, or that plus B's; with
// b_holds (B holds a block it allocated after the reset), exactly the sum.
std::string ResetViolation(const galloc_stats_t &st, bool b_holds)
{
    std::string v = Violation(st);
    if (!v.empty())
        return v;
    const int64_t held[kCounters] = {1, (int64_t)Rounded(kHeldReq), (int64_t)Rounded(kHeldReq), (int64_t)kHeldReq};
    const int64_t pair[kCounters] = {1, (int64_t)Rounded(kPairReq), (int64_t)Rounded(kPairReq), (int64_t)kPairReq};
    for (int c = 0; c < kCounters; c++) {
        const galloc_stat_t &all = StatOf(st, c, GALLOC_STAT_ALL);
        const galloc_stat_t &small = StatOf(st, c, GALLOC_STAT_SMALL_POOL);
        const galloc_stat_t &large = StatOf(st, c, GALLOC_STAT_LARGE_POOL);
        bool ok = (all.peak == held[c] + pair[c] || (!b_holds && all.peak == held[c])) &&
                  (small.peak == pair[c] || (!b_holds && small.peak == 0)) && (small.current == pair[c] || !b_holds) &&
                  large.current == held[c] && large.peak == held[c];
        if (!ok)
            return std::string(kCounterNames[c]) + ": peaks all " + std::to_string(all.peak) + " small " +
                   std::to_string(small.peak) + " large " + std::to_string(large.peak);
    }
    return "";
}

// B's loop: pairs of kPairReq on stream 2 until stop. A block whose malloc
// began after main set hold to 1 (so after main's reset) is held, hold = 2,
// until main sets hold to 0. Returns the number of pairs.
int64_t PairLoop(galloc_allocator_t *a, std::atomic<int> &hold, const std::atomic<bool> &stop, std::atomic<int> &errors)
{
    int64_t pairs = 0;
    while (!stop.load()) {
        bool asked = hold.load() == 1;
        void *p = nullptr;
        errors += galloc_malloc(a, kPairReq, 2, &p) != GALLOC_OK;
        if (asked) {
            hold = 2;
            while (hold.load() == 2)
                std::this_thread::yield();
        }
        errors += galloc_free(a, p) != GALLOC_OK;
        pairs++;
    }
    return pairs;
}

// Hazard: reset_peak must set every peak to the current value and take back
// every stripe's headroom; a stripe left with headroom from before the reset
// lets B's next malloc raise current past the new peak (current > peak in a
// read), and a reset that folds no stripe deltas sets peaks below current.
// Every fourth read waits until B holds a block allocated after the reset,
// so that malloc's effect on the peaks is read whatever the scheduling.
TEST(Stripes, ResetPeakWhileAnotherThreadRuns)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    void *held = nullptr;
    ASSERT_EQ(galloc_malloc(a, kHeldReq, 1, &held), GALLOC_OK);
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0}, hold{0};
    int64_t n = 0;
    std::thread b([&] { n = PairLoop(a, hold, stop, errors); });
    int bad = 0;
    std::string first;
    for (int i = 0; i < 2000 * kScale; i++) {
        EXPECT_EQ(galloc_stats_reset_peak(a), GALLOC_OK);
        bool b_holds = i % 4 == 0;
        if (b_holds) {
            hold = 1;
            while (hold.load() != 2)
                std::this_thread::yield();
        }
        std::string v = ResetViolation(StatsOf(a), b_holds);
        hold = 0;
        if (!v.empty() && bad++ == 0)
            first = "read " + std::to_string(i) + ": " + v;
    }
    stop = true;
    b.join();
    EXPECT_EQ(bad, 0) << first;
    EXPECT_EQ(errors.load(), 0);
    galloc_stats_t st = StatsOf(a);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, n + 1);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].allocated, n * 3072);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, 5 << 20);
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].current, (5 << 20) - 1);
    ASSERT_EQ(galloc_free(a, held), GALLOC_OK);
    ExpectBalanced(a, Tally{n + 1, n * 3000 + (5 << 20) - 1});
    galloc_allocator_destroy(a);
}

// Hazard: a stats read takes every lock; if it missed one stripe, or folded
// stripes one by one while their owners run, it would return counters of no
// single moment: current above peak, totals that do not add up, ALL unequal
// to SMALL + LARGE, allocated and active bytes apart, or more live blocks
// than the workers can hold.
TEST(Stripes, StatsReadersSeeConsistentSnapshots)
{
    galloc_allocator_t *a = CreateSim();
    ASSERT_NE(a, nullptr);
    Workers w(a, {1, 2}, 5000 * kScale, 8);
    int reads = 0, bad = 0;
    std::string first;
    while (w.running.load() > 0 || reads == 0) {
        galloc_stats_t st = StatsOf(a);
        std::string v = Violation(st);
        for (int p : kPools)
            if (v.empty() && st.allocated_bytes[p].current != st.active_bytes[p].current)
                v = "allocated_bytes != active_bytes in pool " + std::to_string(p);
        if (v.empty() && (st.allocation[GALLOC_STAT_ALL].current > 16 || st.allocation[GALLOC_STAT_ALL].peak > 16))
            v = "more than 16 blocks: " + std::to_string(st.allocation[GALLOC_STAT_ALL].peak);
        if (!v.empty() && bad++ == 0)
            first = "read " + std::to_string(reads) + ": " + v;
        reads++;
    }
    Tally sum = w.Join();
    EXPECT_EQ(bad, 0) << first;
    ExpectBalanced(a, sum);
    galloc_allocator_destroy(a);
}

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
