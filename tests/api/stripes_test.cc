// stripes_test: guards for per-stream locking (Note: per-stream locking, docs/architecture.md) (bench/NOTES.md,
// "Per-stream locking": a lock, pointer map and escrowed peak headroom per
// stripe of streams). Each case passes with the single allocator lock and
// must keep passing with stripes: exact figures, the stats of one serial
// order of the calls. Tagged "concurrency": CI also runs it under TSan.
// The frees across threads and streams, and the settings toggled while
// workers run: stripes_free_test.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/api/stripes_util.h"

namespace {

using namespace stripes;

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

} // namespace
