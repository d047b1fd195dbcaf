// hooks_faults_test: device-memory hooks (galloc_hooks.h) when something fails:
// a hook refusing a segment or a page, a failure where refusing is impossible,
// a device refusing a free or unmap, every event failing once and from the
// N-th on, and threads on their own streams while a hook keeps the ledger.
// The fixture and its checks: hooks_fixture.h (hooks_test.cc says what they
// hold).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}
#include "tests/util/hook_ledger.h"

#include "tests/api/hooks_fixture.h"

namespace {

using hooks_fixture::ALL;
using hooks_fixture::Describe;
using hooks_fixture::Hooks;
using hooks_fixture::HooksBoth;
using hooks_fixture::Ledger;
using hooks_fixture::MiB;

TEST_F(Hooks, ARefusedSegmentFailsTheMallocAndChangesNothing)
{
    Make();
    Ledger &first = Hook();
    Ledger &second = Hook();
    void *keep = Alloc(5 * MiB);
    galloc_stats_t before = Stats();
    ga_sim_counters_t dev = Sim();
    second.RefuseAt(second.told() + 1, 42);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 30 * MiB, 0, &p), GALLOC_E_HOOK);
    EXPECT_EQ(p, nullptr);
    galloc_stats_t after = Stats();
    EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0) << "no stat moves";
    EXPECT_EQ(Sim().live_segments, dev.live_segments) << "the segment went back";
    EXPECT_EQ(Sim().used_bytes, dev.used_bytes);
    std::string msg = Err();
    EXPECT_NE(msg.find("device-memory hook 2 refused SEGMENT_ALLOC of 31457280 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("it returned 42"), std::string::npos) << msg;
    // The first hook accepted it and was told the undo; the second was not.
    ASSERT_EQ(first.events().size(), 3u);
    EXPECT_EQ(first.events()[1].kind, (uint32_t)GALLOC_HOOK_SEGMENT_ALLOC);
    EXPECT_EQ(first.events()[2].kind, (uint32_t)GALLOC_HOOK_SEGMENT_FREE);
    EXPECT_EQ(first.events()[2].flags, GALLOC_HOOK_F_UNDO);
    EXPECT_EQ(first.events()[2].addr, first.events()[1].addr);
    EXPECT_EQ(second.events().size(), 2u);
    Balanced("refused");
    galloc_hook_stats_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_hook_stats(a_, second.id(), &st), GALLOC_OK);
    EXPECT_EQ(st.refused, 1u);
    // No retry, no OOM counted: the next malloc succeeds.
    EXPECT_EQ(Stats().num_ooms, 0);
    Free(Alloc(30 * MiB));
    Free(keep);
}

TEST_F(Hooks, ARefusedPageTakesBackEveryPageOfTheMapping)
{
    Make("expandable_segments:True");
    Ledger &first = Hook();
    Ledger &second = Hook();
    char *a = static_cast<char *>(Alloc(5 * MiB));
    galloc_stats_t before = Stats();
    uint64_t mapped = Sim().live_mapped_bytes;
    second.RefuseAt(second.told() + 2); // the second of the three pages
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 60 * MiB, 0, &p), GALLOC_E_HOOK); // 15 MiB left, 45 MiB = 3 pages
    galloc_stats_t after = Stats();
    EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0);
    EXPECT_EQ(Sim().live_mapped_bytes, mapped);
    Balanced("refused");
    // first: MAP p1, MAP p2, then UNMAP p2, UNMAP p1 (undo, last first);
    // second: MAP p1, MAP p2 refused, UNMAP p1.
    std::vector<std::string> f, s;
    for (size_t i = 1; i < first.events().size(); i++)
        f.push_back(Describe(first.events()[i]));
    for (size_t i = 1; i < second.events().size(); i++)
        s.push_back(Describe(second.events()[i]));
    auto page = [&](int i, const char *what) {
        galloc_hook_event_t e = {};
        e.kind = what[0] == 'M' ? GALLOC_HOOK_SEGMENT_MAP : GALLOC_HOOK_SEGMENT_UNMAP;
        e.addr = (uintptr_t)(a + i * 20 * MiB);
        e.size = 20 * MiB;
        e.flags = what[0] == 'U' ? GALLOC_HOOK_F_UNDO : 0;
        return Describe(e);
    };
    EXPECT_EQ(f, (std::vector<std::string>{page(1, "M"), page(2, "M"), page(2, "U"), page(1, "U")}));
    EXPECT_EQ(s, (std::vector<std::string>{page(1, "M"), page(2, "M"), page(1, "U")}));
    Free(a);
}

TEST_F(Hooks, AFailureWhereRefusingIsImpossibleIsCountedAndIgnored)
{
    Make();
    Ledger &l = Hook();
    void *p = Alloc(5 * MiB);
    Free(p);
    l.RefuseAt(l.told() + 1); // the FREE
    EmptyCache();
    Balanced("freed anyway");
    EXPECT_EQ(Reserved(), 0);
    galloc_hook_stats_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_hook_stats(a_, l.id(), &st), GALLOC_OK);
    EXPECT_EQ(st.ignored, 1u);
    EXPECT_EQ(st.refused, 0u);
    EXPECT_EQ(st.events, 2u);
}

TEST_P(HooksBoth, ADeviceRefusingAFreeOrUnmapIsToldBack)
{
    Make(Conf());
    Ledger &l = Hook();
    void *p = Alloc(50 * MiB);
    Free(p);
    size_t before = l.events().size();
    ga_sim_counters_t c = Sim();
    ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, c.op_calls + 1), GALLOC_OK); // every device call refused
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_E_DEVICE);
    ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
    Balanced("refused");
    ASSERT_EQ(l.events().size(), before + 2);
    const auto &gone = l.events()[before], &back = l.events()[before + 1];
    EXPECT_EQ(gone.kind, Expandable() ? (uint32_t)GALLOC_HOOK_SEGMENT_UNMAP : (uint32_t)GALLOC_HOOK_SEGMENT_FREE);
    EXPECT_EQ(back.kind, Expandable() ? (uint32_t)GALLOC_HOOK_SEGMENT_MAP : (uint32_t)GALLOC_HOOK_SEGMENT_ALLOC);
    EXPECT_EQ(back.flags, GALLOC_HOOK_F_RESTORED);
    EXPECT_EQ(back.addr, gone.addr);
    EXPECT_EQ(back.size, gone.size);
    EmptyCache();
    Balanced("released");
    EXPECT_EQ(l.Ranges(), 0u);
}

// The fault sweep: the hook fails its n-th event (once, then from the n-th on),
// n = 1, 2, ... until a run completes without reaching it. After every call:
// a call that failed with GALLOC_E_HOOK changed no current figure, galloc_check
// passes, the ledger equals reserved and the device's bytes; after destroy the
// ledger is empty and the device holds nothing.
struct SweepStep {
    const char *what;
    std::function<galloc_status_t(galloc_allocator_t *, std::vector<void *> &)> call;
};

static std::vector<SweepStep> SweepWorkload()
{
    auto m = [](size_t slot, size_t n, galloc_stream_t s) {
        return [=](galloc_allocator_t *a, std::vector<void *> &p) {
            void *q = nullptr;
            galloc_status_t st = galloc_malloc(a, n, s, &q);
            if (st == GALLOC_OK)
                p[slot] = q;
            return st;
        };
    };
    auto f = [](size_t slot) {
        return [=](galloc_allocator_t *a, std::vector<void *> &p) {
            galloc_status_t st = p[slot] != nullptr ? galloc_free(a, p[slot]) : GALLOC_OK;
            p[slot] = nullptr;
            return st;
        };
    };
    auto tagged = [](size_t slot, size_t n) {
        return [=](galloc_allocator_t *a, std::vector<void *> &p) {
            void *q = nullptr;
            (void)galloc_tag_begin(a, "w");
            galloc_status_t st = galloc_malloc(a, n, 0, &q);
            (void)galloc_tag_end(a, "w");
            if (st == GALLOC_OK)
                p[slot] = q;
            return st;
        };
    };
    auto empty = [](galloc_allocator_t *a, std::vector<void *> &) { return galloc_empty_cache(a); };
    return {
        {"malloc 1", m(0, 1, 0)},
        {"malloc 5 MiB", m(1, 5 * MiB, 0)},
        {"malloc 30 MiB", m(2, 30 * MiB, 0)},
        {"free 5 MiB", f(1)},
        {"malloc 50 MiB", m(3, 50 * MiB, 0)},
        {"tag malloc 3 MiB", tagged(4, 3 * MiB)},
        {"sleep", [](galloc_allocator_t *a, std::vector<void *> &) { return galloc_sleep(a, "w", nullptr); }},
        {"wake", [](galloc_allocator_t *a, std::vector<void *> &) { return galloc_wake(a, "w"); }},
        {"free 30 MiB", f(2)},
        {"empty_cache", empty},
        {"malloc 7 MiB on 2", m(5, 7 * MiB, 2)},
        {"free 1", f(0)},
        {"free tagged", f(4)},
        {"free 50 MiB", f(3)},
        {"empty_cache", empty},
        {"malloc 90 MiB", m(6, 90 * MiB, 0)},
    };
}

static void CurrentEqual(const galloc_stats_t &a, const galloc_stats_t &b, const std::string &what)
{
    for (int i = 0; i < GALLOC_STAT_POOLS; i++) {
        EXPECT_EQ(a.reserved_bytes[i].current, b.reserved_bytes[i].current) << what;
        EXPECT_EQ(a.allocated_bytes[i].current, b.allocated_bytes[i].current) << what;
        EXPECT_EQ(a.active_bytes[i].current, b.active_bytes[i].current) << what;
        EXPECT_EQ(a.segment[i].current, b.segment[i].current) << what;
        EXPECT_EQ(a.allocation[i].current, b.allocation[i].current) << what;
        EXPECT_EQ(a.inactive_split_bytes[i].current, b.inactive_split_bytes[i].current) << what;
    }
}

TEST_P(HooksBoth, EveryEventFailingOnceAndFromTheNthOn)
{
    for (int from = 0; from < 2; from++) {
        uint64_t runs = 0, refusals = 0;
        for (uint64_t n = 1; n < 1000; n++) {
            SCOPED_TRACE(std::string(from ? "failing every event from #" : "failing event #") + std::to_string(n));
            ledgers_.clear();
            owned_.clear();
            Make(Conf());
            Ledger &l = Hook();
            if (from)
                l.RefuseFrom(n);
            else
                l.RefuseAt(n);
            std::vector<void *> ptr(8, nullptr);
            for (const SweepStep &step : SweepWorkload()) {
                galloc_stats_t before = Stats();
                std::vector<void *> was = ptr;
                galloc_status_t st = step.call(a_, ptr);
                if (st == GALLOC_E_HOOK) {
                    refusals++;
                    galloc_stats_t after = Stats();
                    CurrentEqual(before, after, step.what);
                    EXPECT_EQ(ptr, was) << step.what;
                    std::string what = step.what;
                    if (what.rfind("malloc", 0) == 0 || what.rfind("tag", 0) == 0) { // a wake counts its undone maps
                        EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0) << step.what;
                    }
                } else {
                    EXPECT_EQ(st, GALLOC_OK) << step.what << ": " << Err();
                }
                Balanced(step.what);
                if (HasFailure())
                    break;
            }
            bool reached = l.told() >= n;
            Destroy();
            if (HasFailure() || !reached)
                break;
            runs++;
        }
        EXPECT_GT(runs, 10u);
        EXPECT_GT(refusals, 0u);
    }
}

// ---- Threads. ----

// Threads on their own streams while a hook keeps the ledger: the hook runs
// on the thread whose call caused the event (a thread-local says which call
// is in flight), never two at once (the ledger has no lock: TSan sees any
// overlap), and an addition is always of the calling thread's stream.
thread_local int tl_stream = -1; // the stream of the call this thread is in, -1 outside calls
std::atomic<uint64_t> g_outside{0}, g_foreign{0};

TEST_P(HooksBoth, ThreadsOnTheirOwnStreamsWhileAHookKeepsTheLedger)
{
    Make(Conf(), "4GiB");
    Ledger &l = Hook();
    g_outside = 0;
    g_foreign = 0;
    l.on_event = [](const galloc_hook_event_t *e) {
        if (tl_stream < 0)
            g_outside++;
        else if (hook_test::IsAddition(e->kind) && e->stream != (galloc_stream_t)tl_stream)
            g_foreign++;
    };
    constexpr int kThreads = 4, kOps = 1500;
    std::vector<std::thread> threads;
    std::atomic<int> errors{0};
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(0x600d + t);
            galloc_stream_t s = (galloc_stream_t)(t + 1);
            std::vector<void *> live;
            for (int i = 0; i < kOps; i++) {
                tl_stream = (int)s;
                if (live.size() < 16 && (live.empty() || rng() % 3 != 0)) {
                    size_t n = rng() % 4 == 0 ? (1 + rng() % (40 * MiB)) : (1 + rng() % (512 * 1024));
                    void *p = nullptr;
                    errors += galloc_malloc(a_, n, s, &p) != GALLOC_OK;
                    if (p != nullptr)
                        live.push_back(p);
                } else {
                    size_t k = rng() % live.size();
                    errors += galloc_free(a_, live[k]) != GALLOC_OK;
                    live[k] = live.back();
                    live.pop_back();
                }
                if (i % 200 == 199)
                    errors += galloc_empty_cache(a_) != GALLOC_OK;
                tl_stream = -1;
            }
            tl_stream = (int)s;
            for (void *p : live)
                errors += galloc_free(a_, p) != GALLOC_OK;
            tl_stream = -1;
        });
    }
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(g_outside.load(), 0u) << "a hook ran outside the call that caused it";
    EXPECT_EQ(g_foreign.load(), 0u) << "an addition told on another stream's thread";
    EXPECT_GT(l.Of(GALLOC_HOOK_SEGMENT_ALLOC).size() + l.Of(GALLOC_HOOK_SEGMENT_MAP).size(), 4u);
    Balanced("joined");
    for (size_t i = 1; i < l.events().size(); i++)
        ASSERT_EQ(l.events()[i].seq, l.events()[i - 1].seq + 1) << "one order for every event";
    EmptyCache();
    Balanced("empty");
    EXPECT_EQ(l.Ranges(), 0u);
}

} // namespace
