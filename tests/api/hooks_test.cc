// hooks_test: device-memory hooks (galloc_hooks.h) through the public API on
// the sim device, seen through simwatch (its live bytes, leaks at destroy,
// refused device calls). Every test keeps hook_ledger.h's ledger and checks
// after each call that its bytes equal reserved_bytes.all.current and the
// device's own used bytes, and after destroy that nothing is left in it.
//
// Figures are PyTorch's: 2 MiB small segments, 20 MiB large segments for 1 to
// 10 MiB requests, larger requests rounded to 2 MiB; expandable segments map
// 20 MiB pages in the large pool, 2 MiB in the small one.
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

namespace {

using hook_test::Describe;
using hook_test::Ledger;

constexpr size_t MiB = size_t{1} << 20;
constexpr int ALL = GALLOC_STAT_ALL;

class Hooks : public ::testing::Test {
  protected:
    void Make(const std::string &conf = "", const std::string &capacity = "1GiB")
    {
        ASSERT_EQ(simwatch_register(), GALLOC_OK);
        std::string c = "sim_backed:False,sim_capacity:" + capacity + (conf.empty() ? "" : "," + conf);
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("simwatch", 0, c.c_str(), &a_, err, sizeof err), GALLOC_OK) << err;
        sim_ = simwatch_last_state();
    }
    // Destroy: the ledgers told of every range still present (DESTROY), the
    // device left with nothing.
    void Destroy()
    {
        if (a_ == nullptr)
            return;
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        galloc_allocator_destroy(a_);
        a_ = nullptr;
        ga_sim_counters_t c;
        ASSERT_TRUE(simwatch_last_close(&c));
        EXPECT_TRUE(simwatch_counters_clean(&c)) << "leak: segments " << c.live_segments << ", mapped "
                                                 << c.live_mapped_bytes << ", reservations " << c.live_reservations;
        for (Ledger *l : ledgers_) {
            l->Forget();
            EXPECT_EQ(l->Bytes(), 0) << "destroy must tell every range away";
            EXPECT_EQ(l->errors(), "");
        }
    }
    void TearDown() override { Destroy(); }

    Ledger &Hook(uint32_t kinds = 0, uint32_t flags = 0)
    {
        owned_.emplace_back(new Ledger());
        Ledger &l = *owned_.back();
        EXPECT_EQ(l.Add(a_, kinds, flags), GALLOC_OK) << Err();
        ledgers_.push_back(&l);
        return l;
    }
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX] = "";
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    void *Alloc(size_t n, galloc_stream_t s = 0)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << Err();
        return p;
    }
    void Free(void *p) { EXPECT_EQ(galloc_free(a_, p), GALLOC_OK) << Err(); }
    void EmptyCache() { EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err(); }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        EXPECT_EQ(galloc_memory_stats(a_, &st), GALLOC_OK);
        return st;
    }
    int64_t Reserved() { return Stats().reserved_bytes[ALL].current; }
    ga_sim_counters_t Sim()
    {
        ga_sim_counters_t c;
        EXPECT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        return c;
    }
    // Every ledger holds what the allocator reserves and the device uses.
    void Balanced(const std::string &where = "")
    {
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << where << ": " << Err();
        int64_t reserved = Reserved();
        EXPECT_EQ((int64_t)Sim().used_bytes, reserved) << where;
        for (Ledger *l : ledgers_) {
            EXPECT_EQ(l->Bytes(), reserved) << where;
            EXPECT_EQ(l->errors(), "") << where;
        }
    }
    static void ExpectEvent(const galloc_hook_event_t &e, uint32_t kind, const void *addr, size_t size,
                            uint32_t flags = 0, galloc_stream_t stream = 0)
    {
        EXPECT_EQ(e.kind, kind) << Describe(e);
        EXPECT_EQ(e.addr, (uintptr_t)addr) << Describe(e);
        EXPECT_EQ(e.size, size) << Describe(e);
        EXPECT_EQ(e.flags, flags) << Describe(e);
        EXPECT_EQ(e.stream, stream) << Describe(e);
    }

    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
    std::vector<std::unique_ptr<Ledger>> owned_;
    std::vector<Ledger *> ledgers_;
};

// ---- Registration. ----

TEST_F(Hooks, BadArgumentsAreRefused)
{
    Make();
    Ledger l;
    galloc_hook_t h = {};
    h.struct_size = sizeof h;
    h.fn = [](void *, const galloc_hook_event_t *) { return 0; };
    galloc_hook_id_t id = 99;
    EXPECT_EQ(galloc_hook_add(nullptr, &h, &id), GALLOC_E_INVAL);
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(galloc_hook_add(a_, nullptr, &id), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_hook_add(a_, &h, nullptr), GALLOC_E_INVAL);
    galloc_hook_t bad = h;
    bad.fn = nullptr;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    EXPECT_EQ(Err(), "galloc_hook_add: fn is NULL");
    bad = h;
    bad.struct_size = sizeof h - 1;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    bad = h;
    bad.kinds = 1u << 5;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    EXPECT_EQ(Err(), "galloc_hook_add: unknown kind bits");
    bad = h;
    bad.flags = 2;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(galloc_hook_remove(a_, 1), GALLOC_E_INVAL) << "nothing registered";
    EXPECT_EQ(Err(), "galloc_hook_remove: no hook 1 on this allocator");
    galloc_hook_stats_t st = {};
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_hook_stats(a_, 1, &st), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_hook_stats(a_, 1, nullptr), GALLOC_E_INVAL);
    // Registered, ids count up and are never reused.
    ASSERT_EQ(galloc_hook_add(a_, &h, &id), GALLOC_OK);
    EXPECT_EQ(id, 1u);
    EXPECT_EQ(galloc_hook_remove(a_, id), GALLOC_OK);
    EXPECT_EQ(galloc_hook_remove(a_, id), GALLOC_E_INVAL) << "removed already";
    ASSERT_EQ(galloc_hook_add(a_, &h, &id), GALLOC_OK);
    EXPECT_EQ(id, 2u);
}

TEST_F(Hooks, AUserAllocatorHasNoHooks)
{
    galloc_user_allocator_t u = {};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.malloc_fn = [](void *, size_t n, int, galloc_stream_t) { return malloc(n); };
    u.free_fn = [](void *, void *p, size_t, int, galloc_stream_t) { free(p); };
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a_, err, sizeof err), GALLOC_OK) << err;
    Ledger l;
    EXPECT_EQ(l.Add(a_), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_hook_remove(a_, 1), GALLOC_E_UNSUPPORTED);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
}

TEST_F(Hooks, ADestroyedAllocatorSaysSo)
{
    Make();
    galloc_allocator_t *a = a_;
    Destroy();
    Ledger l;
    EXPECT_EQ(l.Add(a), GALLOC_E_DESTROYED);
}

// ---- What the hooks are told. ----

TEST_F(Hooks, SegmentsAreToldInOrderWithExactAddressesAndSizes)
{
    Make();
    Ledger &l = Hook();
    void *small = Alloc(1);
    void *mid = Alloc(5 * MiB);
    void *big = Alloc(30 * MiB, 7);
    Balanced("three segments");
    ASSERT_EQ(l.events().size(), 3u);
    ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, small, 2 * MiB);
    ExpectEvent(l.events()[1], GALLOC_HOOK_SEGMENT_ALLOC, mid, 20 * MiB);
    ExpectEvent(l.events()[2], GALLOC_HOOK_SEGMENT_ALLOC, big, 30 * MiB, 0, 7);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(l.events()[i].seq, i + 1);
        EXPECT_EQ(l.events()[i].device, 0);
        EXPECT_EQ(l.events()[i].pool.a + l.events()[i].pool.b, 0u) << "the default pools";
    }
    // Cache hits and frees make and release nothing: no event.
    Free(Alloc(1));
    Free(small);
    Free(mid);
    Free(big);
    EXPECT_EQ(l.events().size(), 3u);
    EmptyCache();
    Balanced("empty cache");
    ASSERT_EQ(l.events().size(), 6u);
    // release_cached_blocks: the large pool first, in its free-set order
    // (stream, size, address), then the small pool.
    ExpectEvent(l.events()[3], GALLOC_HOOK_SEGMENT_FREE, mid, 20 * MiB);
    ExpectEvent(l.events()[4], GALLOC_HOOK_SEGMENT_FREE, big, 30 * MiB, 0, 7);
    ExpectEvent(l.events()[5], GALLOC_HOOK_SEGMENT_FREE, small, 2 * MiB);
    galloc_hook_stats_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_hook_stats(a_, l.id(), &st), GALLOC_OK);
    EXPECT_EQ(st.events, 6u);
    EXPECT_EQ(st.refused + st.ignored, 0u);
}

TEST_F(Hooks, AnExpandableSegmentIsToldPageByPageGrowingAndShrinking)
{
    Make("expandable_segments:True");
    Ledger &l = Hook();
    char *a = static_cast<char *>(Alloc(5 * MiB));  // maps page 0
    char *b = static_cast<char *>(Alloc(30 * MiB)); // 15 MiB left + page 1
    char *c = static_cast<char *>(Alloc(50 * MiB)); // 5 MiB left + pages 2, 3, 4 in one mapping
    ASSERT_EQ(b, a + 5 * MiB);
    ASSERT_EQ(c, a + 35 * MiB);
    Balanced("grown");
    auto maps = l.Of(GALLOC_HOOK_SEGMENT_MAP);
    ASSERT_EQ(maps.size(), 5u);
    ASSERT_EQ(l.events().size(), 5u);
    for (size_t i = 0; i < 5; i++)
        ExpectEvent(maps[i], GALLOC_HOOK_SEGMENT_MAP, a + i * 20 * MiB, 20 * MiB);
    EXPECT_EQ(Stats().num_device_alloc, 3) << "PyTorch's count: one per map_block, whatever its pages";
    // Shrinking: only the pages wholly free go, one UNMAP each, in order.
    Free(b);
    Free(c);
    EmptyCache();
    Balanced("shrunk");
    auto unmaps = l.Of(GALLOC_HOOK_SEGMENT_UNMAP);
    ASSERT_EQ(unmaps.size(), 4u);
    for (size_t i = 0; i < 4; i++)
        ExpectEvent(unmaps[i], GALLOC_HOOK_SEGMENT_UNMAP, a + (i + 1) * 20 * MiB, 20 * MiB);
    EXPECT_TRUE(l.Present((uintptr_t)a, 20 * MiB)) << "page 0 holds a";
    // The small pool's pages are 2 MiB.
    char *s = static_cast<char *>(Alloc(1));
    ExpectEvent(l.events().back(), GALLOC_HOOK_SEGMENT_MAP, s, 2 * MiB);
    Free(s);
    Free(a);
    EmptyCache();
    Balanced("empty");
    EXPECT_EQ(l.Ranges(), 0u);
    for (size_t i = 1; i < l.events().size(); i++)
        EXPECT_EQ(l.events()[i].seq, l.events()[i - 1].seq + 1);
}

TEST_F(Hooks, TheOomPathToldItsReleasesThenTheOomWithPyTorchsFigures)
{
    Make("", "64MiB");
    Ledger &l = Hook();
    void *a = Alloc(30 * MiB);
    Free(a);                      // cached
    void *b = Alloc(50 * MiB, 3); // the device is short: the cache goes back, the retry succeeds
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    ASSERT_EQ(l.events().size(), 3u);
    ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, a, 30 * MiB);
    ExpectEvent(l.events()[1], GALLOC_HOOK_SEGMENT_FREE, a, 30 * MiB);
    ExpectEvent(l.events()[2], GALLOC_HOOK_SEGMENT_ALLOC, b, 50 * MiB, 0, 3);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 50 * MiB + 1, 3, &p), GALLOC_E_OOM);
    Balanced("after the OOM");
    ASSERT_EQ(l.events().size(), 4u);
    const galloc_hook_event_t &e = l.events()[3];
    EXPECT_EQ(e.kind, (uint32_t)GALLOC_HOOK_OOM);
    EXPECT_EQ(e.addr, 0u);
    EXPECT_EQ(e.size, 50 * MiB + 512) << "the request rounded as PyTorch rounds it (params.size())";
    EXPECT_EQ(e.stream, 3u);
    EXPECT_EQ(e.oom_alloc_size, 52 * MiB) << "the segment asked for: 2 MiB rounding";
    EXPECT_EQ(e.oom_device_total, 64 * MiB);
    EXPECT_EQ(e.oom_device_free, 14 * MiB);
    EXPECT_EQ(e.oom_allowed, 0u);
    EXPECT_EQ(e.oom_allocated_bytes, (int64_t)(50 * MiB));
    EXPECT_EQ(e.oom_reserved_bytes, (int64_t)(50 * MiB));
    EXPECT_NE(Err().find("Tried to allocate 52.00 MiB"), std::string::npos) << Err();
    // Under a memory fraction the cap is the observer's "total".
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a_, 20 * MiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(l.events().back().kind, (uint32_t)GALLOC_HOOK_OOM);
    EXPECT_EQ(l.events().back().oom_allowed, 32 * MiB);
    Free(b);
}

TEST_F(Hooks, APrivatePoolsSegmentsCarryItsId)
{
    Make();
    Ledger &l = Hook();
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *p = Alloc(5 * MiB);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    void *q = Alloc(5 * MiB); // the default pool's own segment
    ASSERT_EQ(l.events().size(), 2u);
    ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, p, 20 * MiB);
    EXPECT_EQ(l.events()[0].pool.a, id.a);
    EXPECT_EQ(l.events()[0].pool.b, id.b);
    EXPECT_NE(id.a + id.b, 0u);
    EXPECT_EQ(l.events()[1].pool.a + l.events()[1].pool.b, 0u);
    Free(p);
    Free(q);
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    EmptyCache();
    Balanced("released");
    auto frees = l.Of(GALLOC_HOOK_SEGMENT_FREE);
    ASSERT_EQ(frees.size(), 2u);
    bool seen = false;
    for (const auto &e : frees)
        if (e.addr == (uintptr_t)p) {
            EXPECT_EQ(e.pool.a, id.a);
            EXPECT_EQ(e.pool.b, id.b);
            seen = true;
        }
    EXPECT_TRUE(seen);
}

class HooksBoth : public Hooks, public ::testing::WithParamInterface<bool> {
  protected:
    bool Expandable() const { return GetParam(); }
    std::string Conf() const { return Expandable() ? "expandable_segments:True" : ""; }
    void *TagAlloc(const char *tag, size_t n)
    {
        EXPECT_EQ(galloc_tag_begin(a_, tag), GALLOC_OK) << Err();
        void *p = Alloc(n);
        EXPECT_EQ(galloc_tag_end(a_, tag), GALLOC_OK) << Err();
        return p;
    }
};
INSTANTIATE_TEST_SUITE_P(Segments, HooksBoth, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "expandable" : "plain"; });

TEST_P(HooksBoth, SleepUnmapsAndWakeMapsTheSameRanges)
{
    Make(Conf());
    Ledger &l = Hook();
    char *w = static_cast<char *>(TagAlloc("w", 25 * MiB)); // plain: one 26 MiB VMM segment; expandable: 2 pages
    Balanced("tagged");
    std::vector<galloc_hook_event_t> added = l.events();
    ASSERT_EQ(added.size(), Expandable() ? 2u : 1u);
    EXPECT_EQ(added[0].addr, (uintptr_t)w);
    EXPECT_EQ(added[0].kind, Expandable() ? (uint32_t)GALLOC_HOOK_SEGMENT_MAP : (uint32_t)GALLOC_HOOK_SEGMENT_ALLOC);
    EXPECT_NE(added[0].pool.a + added[0].pool.b, 0u) << "a tag is a private pool";
    l.Clear();
    ASSERT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << Err();
    Balanced("asleep");
    EXPECT_EQ(Reserved(), 0);
    ASSERT_EQ(l.events().size(), added.size());
    for (size_t i = 0; i < added.size(); i++) {
        EXPECT_EQ(l.events()[i].kind, (uint32_t)GALLOC_HOOK_SEGMENT_UNMAP);
        EXPECT_EQ(l.events()[i].addr, added[i].addr);
        EXPECT_EQ(l.events()[i].size, added[i].size);
    }
    l.Clear();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    Balanced("awake");
    ASSERT_EQ(l.events().size(), added.size());
    for (size_t i = 0; i < added.size(); i++) {
        EXPECT_EQ(l.events()[i].kind, (uint32_t)GALLOC_HOOK_SEGMENT_MAP);
        EXPECT_EQ(l.events()[i].addr, added[i].addr);
        EXPECT_EQ(l.events()[i].size, added[i].size);
    }
    // A refused wake: the tag stays asleep, what the wake mapped goes back.
    ASSERT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << Err();
    l.RefuseAt(l.told() + added.size()); // the last unit
    EXPECT_EQ(galloc_wake(a_, "w"), GALLOC_E_HOOK);
    EXPECT_NE(Err().find("refused SEGMENT_MAP"), std::string::npos) << Err();
    int asleep = 0;
    ASSERT_EQ(galloc_tag_asleep(a_, "w", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 1);
    Balanced("refused wake");
    l.RefuseAt(0);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    Balanced("woken again");
    Free(w);
    EmptyCache(); // the tag's pool is in use: its segments stay cached, destroy tells them away
    Balanced("freed");
}

TEST_P(HooksBoth, DestroyTellsEveryRangeStillPresent)
{
    Make(Conf());
    Ledger &l = Hook();
    (void)Alloc(1);
    (void)Alloc(5 * MiB);
    void *c = Alloc(50 * MiB, 2);
    Free(c); // cached
    (void)TagAlloc("w", 3 * MiB);
    (void)TagAlloc("k", 3 * MiB);
    ASSERT_EQ(galloc_sleep(a_, "k", nullptr), GALLOC_OK) << Err(); // its memory is told away already
    Balanced("before destroy");
    size_t before = l.events().size();
    int64_t present = l.Bytes();
    Destroy(); // checks the ledger is empty
    int64_t told = 0;
    for (size_t i = before; i < l.events().size(); i++) {
        const auto &e = l.events()[i];
        EXPECT_EQ(e.flags, GALLOC_HOOK_F_DESTROY) << Describe(e);
        EXPECT_TRUE(e.kind == GALLOC_HOOK_SEGMENT_FREE || e.kind == GALLOC_HOOK_SEGMENT_UNMAP) << Describe(e);
        told += (int64_t)e.size;
    }
    EXPECT_EQ(told, present);
}

TEST_P(HooksBoth, ReplayTellsANewHookWhatIsPresent)
{
    Make(Conf());
    void *a = Alloc(1);
    void *b = Alloc(5 * MiB);
    void *c = Alloc(50 * MiB);
    (void)TagAlloc("k", 3 * MiB);
    ASSERT_EQ(galloc_sleep(a_, "k", nullptr), GALLOC_OK) << Err(); // not present: not replayed
    Ledger &l = Hook(0, GALLOC_HOOK_ADD_REPLAY);
    Balanced("replayed");
    for (const auto &e : l.events())
        EXPECT_EQ(e.flags, GALLOC_HOOK_F_REPLAY) << Describe(e);
    EXPECT_TRUE(l.Present((uintptr_t)a, 2 * MiB));
    if (!Expandable()) {
        ASSERT_EQ(l.events().size(), 3u);
        ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, a, 2 * MiB, GALLOC_HOOK_F_REPLAY);
        ExpectEvent(l.events()[1], GALLOC_HOOK_SEGMENT_ALLOC, b, 20 * MiB, GALLOC_HOOK_F_REPLAY);
        ExpectEvent(l.events()[2], GALLOC_HOOK_SEGMENT_ALLOC, c, 50 * MiB, GALLOC_HOOK_F_REPLAY);
    } else {
        EXPECT_EQ(l.Of(GALLOC_HOOK_SEGMENT_MAP).size(), 1u + 3u) << "the small page, then 60 MiB in 3 pages";
    }
    // Later events come as usual.
    Free(c);
    EmptyCache();
    Balanced("after");
    // A replay refused on its second range: the first is taken back, the
    // hook is not registered.
    Ledger late;
    late.RefuseAt(2);
    EXPECT_EQ(late.Add(a_, 0, GALLOC_HOOK_ADD_REPLAY), GALLOC_E_HOOK);
    EXPECT_NE(Err().find("refused"), std::string::npos) << Err();
    ASSERT_EQ(late.events().size(), 3u);
    EXPECT_EQ(late.events()[2].flags, GALLOC_HOOK_F_UNDO);
    EXPECT_EQ(late.events()[2].addr, late.events()[0].addr);
    EXPECT_EQ(late.Bytes(), 0);
    EXPECT_EQ(late.errors(), "");
    Free(Alloc(200 * MiB));
    EXPECT_EQ(late.events().size(), 3u) << "not registered";
}

TEST_F(Hooks, TwoHooksAreToldInRegistrationOrderAndARemovedOneNoMore)
{
    Make();
    std::vector<std::pair<int, uint64_t>> order;
    Ledger &first = Hook();
    Ledger &second = Hook();
    Ledger &oom_only = Hook(GALLOC_HOOK_KIND_BIT(GALLOC_HOOK_OOM));
    first.ShareOrder(&order, 1);
    second.ShareOrder(&order, 2);
    void *p = Alloc(5 * MiB);
    Free(p);
    EmptyCache();
    ASSERT_EQ(order.size(), 4u);
    EXPECT_EQ(order[0], std::make_pair(1, uint64_t{1}));
    EXPECT_EQ(order[1], std::make_pair(2, uint64_t{1}));
    EXPECT_EQ(order[2], std::make_pair(1, uint64_t{2}));
    EXPECT_EQ(order[3], std::make_pair(2, uint64_t{2}));
    EXPECT_EQ(oom_only.events().size(), 0u) << "its mask has OOM only";
    ASSERT_EQ(galloc_hook_remove(a_, first.id()), GALLOC_OK);
    first.Forget();
    ledgers_.erase(ledgers_.begin()); // it keeps no ledger from now on
    order.clear();
    p = Alloc(5 * MiB);
    ASSERT_EQ(order.size(), 1u);
    EXPECT_EQ(order[0].first, 2);
    void *q = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 2000 * MiB, 0, &q), GALLOC_E_OOM);
    ASSERT_EQ(oom_only.events().size(), 1u);
    EXPECT_EQ(oom_only.events()[0].kind, (uint32_t)GALLOC_HOOK_OOM);
    Free(p);
    second.ShareOrder(nullptr, 0); // `order` dies with this body; destroy still tells `second`
}

// ---- Hooks that fail. ----

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
