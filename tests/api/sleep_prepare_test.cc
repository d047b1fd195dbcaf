// sleep_prepare_test: galloc_sleep_prepare, the pinned reserve grown ahead of
// a sleep. The device is simwatch's ops with host_alloc counted
// ("simwatch_pins"), so the tests say exactly how many blocks each call pins:
// a prepared sleep pins none and its copies come back byte for byte; a
// block waiting in the store (kept by a wake, pinned by an earlier prepare)
// is not pinned twice; bad arguments each have their status and change
// nothing; a fault at every device call of a prepare leaves the store as it
// was, galloc_check passing and nothing leaked; empty_cache gives the
// reserve back.
#include "tests/api/sleep_fixture.h"

namespace {

uint64_t g_pins = 0; // host_alloc calls through "simwatch_pins"
const galloc_backend_ops_t *g_watch = nullptr;
galloc_backend_ops_t g_pins_ops;

galloc_status_t CountedHostAlloc(void *s, size_t b, void **p)
{
    g_pins++;
    return g_watch->host_alloc(s, b, p);
}

void RegisterPins()
{
    if (g_watch != nullptr)
        return;
    ASSERT_EQ(simwatch_register(), GALLOC_OK);
    g_watch = galloc_backend_find("simwatch");
    ASSERT_NE(g_watch, nullptr);
    g_pins_ops = *g_watch;
    g_pins_ops.name = "simwatch_pins";
    g_pins_ops.host_alloc = CountedHostAlloc;
    ASSERT_EQ(galloc_backend_register(&g_pins_ops), GALLOC_OK);
}

class SleepPrepare : public SleepBase {
  protected:
    void SetUp() override
    {
        RegisterPins();
        backend_ = "simwatch_pins";
        Make();
    }
    // Tag w (offloaded): 4 KiB, 1 MiB and 30 MiB with a freed block between
    // the first two; tag kv (discarded): 6 MiB. Filled with seeds 1..3, 9.
    void Populate()
    {
        w_[0] = TagAlloc("w", 4 * KiB);
        void *gap = TagAlloc("w", 64 * KiB);
        w_[1] = TagAlloc("w", 1 * MiB);
        w_[2] = TagAlloc("w", 30 * MiB);
        ASSERT_EQ(galloc_free(a_, gap), GALLOC_OK);
        kv_ = TagAlloc("kv", 6 * MiB);
        for (int i = 0; i < 3; i++)
            Fill(w_[i], kSizes[i], 1 + i);
    }
    void ExpectW(unsigned seed = 1)
    {
        for (int i = 0; i < 3; i++)
            EXPECT_EQ(Mismatch(w_[i], kSizes[i], seed + i), kSizes[i]) << "block " << i;
    }
    // Pins made by f (host_alloc calls).
    uint64_t Pins(const std::function<void()> &f)
    {
        uint64_t before = g_pins;
        f();
        return g_pins - before;
    }
    static constexpr size_t kSizes[3] = {4 * KiB, 1 * MiB, 30 * MiB};
    static constexpr uint64_t kOffloaded = 4 * KiB + 1 * MiB + 30 * MiB;
    void *w_[3] = {};
    void *kv_ = nullptr;
};

constexpr size_t SleepPrepare::kSizes[3];

TEST_P(SleepPrepare, APreparedSleepPinsNothingAndCopiesExactly)
{
    Populate();
    int64_t reserved = Reserved();
    ga_sim_counters_t c0 = Sim();
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, "w,kv", "w"), GALLOC_OK) << Err(); }), 3u);
    // Three pins and nothing else: no sync, no copy, the device untouched.
    EXPECT_EQ(Sim().op_calls - c0.op_calls, 3u);
    EXPECT_EQ(Sim().live_host_allocs, 3u);
    EXPECT_EQ(Sim().live_host_bytes, kOffloaded);
    EXPECT_EQ(Reserved(), reserved);
    galloc_sleep_stats_t s = SleepStats();
    EXPECT_EQ(s.bytes_host_cached, kOffloaded);
    EXPECT_EQ(s.bytes_offloaded, 0u);
    EXPECT_EQ(s.tags_asleep, 0u);
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    c0 = Sim();
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep(a_, "w,kv", "w"), GALLOC_OK) << Err(); }), 0u);
    // sync, 3 copies, the unmaps (w: 2 plain segments or 3 pages; kv: 1).
    EXPECT_EQ(Sim().op_calls - c0.op_calls, Expandable() ? 8u : 7u);
    s = SleepStats();
    EXPECT_EQ(s.bytes_host_cached, 0u); // the sleep took the whole reserve
    EXPECT_EQ(s.bytes_offloaded, kOffloaded);
    EXPECT_EQ(Sim().live_host_allocs, 3u);
    EXPECT_EQ(Reserved(), 0);
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << Err();
    ExpectW();
    EXPECT_EQ(SleepStats().bytes_host_cached, kOffloaded); // kept by the wake, as without a prepare
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err();
    EXPECT_EQ(Sim().live_host_allocs, 0u);
}

TEST_P(SleepPrepare, ABlockWaitingInTheStoreIsNotPinnedTwice)
{
    Populate();
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err(); }), 3u);
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err(); }), 0u);
    // A second block of a size the store holds one of needs one more; a new
    // size, one more.
    void *more = TagAlloc("w", 1 * MiB);
    void *big = TagAlloc("w", 8 * MiB);
    Fill(more, 1 * MiB, 7);
    Fill(big, 8 * MiB, 8);
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, nullptr, "w"), GALLOC_OK) << Err(); }), 2u);
    EXPECT_EQ(SleepStats().bytes_host_cached, kOffloaded + 9 * MiB);
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err(); }), 0u);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ExpectW();
    EXPECT_EQ(Mismatch(more, 1 * MiB, 7), 1 * MiB);
    EXPECT_EQ(Mismatch(big, 8 * MiB, 8), 8 * MiB);
    // After a wake the store holds every copy's block: nothing to pin.
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err(); }), 0u);
    // A block allocated after the prepare is pinned by the sleep, as before.
    void *late = TagAlloc("w", 2 * MiB);
    Fill(late, 2 * MiB, 5);
    for (int i = 0; i < 3; i++)
        Fill(w_[i], kSizes[i], 11 + i);
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err(); }), 1u);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ExpectW(11);
    EXPECT_EQ(Mismatch(late, 2 * MiB, 5), 2 * MiB);
}

TEST_P(SleepPrepare, EachArgumentHasItsStatusAndChangesNothing)
{
    Populate();
    auto nothing = [&](galloc_status_t want, const char *tags, const char *offload, const char *says) {
        SCOPED_TRACE(std::string("tags ") + (tags ? tags : "NULL") + ", offload " + (offload ? offload : "NULL"));
        galloc_status_t st = GALLOC_OK;
        EXPECT_EQ(Pins([&] { st = galloc_sleep_prepare(a_, tags, offload); }), 0u);
        EXPECT_EQ(st, want) << galloc_strerror(st);
        if (says != nullptr) {
            EXPECT_NE(Err().find(says), std::string::npos) << Err();
        }
        EXPECT_EQ(SleepStats().bytes_host_cached, 0u);
        EXPECT_EQ(Sim().live_host_allocs, 0u);
    };
    nothing(GALLOC_E_INVAL, "w,nope", "w", "'nope' in \"w,nope\" is not a tag of this allocator");
    nothing(GALLOC_E_INVAL, "w", "w,nope", "sleep_prepare (offload_tags)");
    nothing(GALLOC_E_INVAL, "w,", "w", "not a valid tag name");
    nothing(GALLOC_E_INVAL, "w", "bad name!", "not a valid tag name");
    nothing(GALLOC_OK, "kv", "w", nullptr);       // w is not slept by that call, kv is discarded
    nothing(GALLOC_OK, "w,kv", nullptr, nullptr); // every tag discarded
    nothing(GALLOC_OK, nullptr, "", nullptr);
    // A sleeping tag: its copies are held already.
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    uint64_t held = Sim().live_host_allocs;
    EXPECT_EQ(Pins([&] { EXPECT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err(); }), 0u);
    EXPECT_EQ(Sim().live_host_allocs, held);
    EXPECT_EQ(SleepStats().bytes_host_cached, 0u);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ExpectW();
    EXPECT_EQ(galloc_sleep_prepare(nullptr, "w", "w"), GALLOC_E_INVAL);
}

TEST_P(SleepPrepare, EmptyCacheAndDestroyGiveTheReserveBack)
{
    Populate();
    ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err();
    EXPECT_EQ(SleepStats().bytes_host_cached, 0u);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    EXPECT_EQ(Sim().live_host_bytes, 0u);
    // The sleep pins for itself again.
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err(); }), 3u);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ExpectW();
    // Destroy with a reserve in the store: TearDown's simwatch finds no leak.
    void *more = TagAlloc("w", 3 * MiB);
    ASSERT_NE(more, nullptr);
    EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err(); }), 1u);
    EXPECT_EQ(SleepStats().bytes_host_cached, kOffloaded + 3 * MiB);
}

// A fault at the k-th device call of a prepare (once failing that call only,
// once failing it and every later one) with a store already holding blocks:
// the prepare fails with the pin's status, the store holds what it held,
// what it pinned is given back (a refused give-back is kept and retried),
// galloc_check passes; then a prepare, a sleep that pins nothing and a wake
// restore every byte, and destroy finds nothing leaked.
TEST_P(SleepPrepare, EveryDeviceCallOfAPrepare)
{
    for (int from = 0; from < 2; from++) {
        uint64_t k = 1;
        for (;; k++) {
            SCOPED_TRACE(std::string(from ? "faults from" : "fault at") + " prepare's device call " +
                         std::to_string(k));
            Make();
            Populate();
            ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
            ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err(); // the store: 4 KiB, 1 MiB, 30 MiB
            void *more = TagAlloc("w", 1 * MiB);                 // a second 1 MiB: one pin
            void *big = TagAlloc("w", 8 * MiB);                  // a new size: one pin
            Fill(more, 1 * MiB, 7);
            Fill(big, 8 * MiB, 8);
            ga_sim_counters_t c = Sim();
            ASSERT_EQ(ga_sim_set_op_faults(sim_, from ? 0 : c.op_calls + k, from ? c.op_calls + k : 0), GALLOC_OK);
            galloc_status_t st = galloc_sleep_prepare(a_, "w", "w");
            ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
            bool hit = Sim().faults_injected > c.faults_injected;
            if (!hit) {
                EXPECT_EQ(st, GALLOC_OK) << Err();
                EXPECT_EQ(SleepStats().bytes_host_cached, kOffloaded + 9 * MiB);
                break;
            }
            EXPECT_EQ(st, GALLOC_E_NOMEM) << Err();
            EXPECT_NE(Err().find("sleep_prepare: tag \"w\": pinned host memory for"), std::string::npos) << Err();
            ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
            EXPECT_EQ(SleepStats().bytes_host_cached, kOffloaded); // as the call found it
            EXPECT_GE(Sim().live_host_bytes, kOffloaded);          // plus any refused give-back, kept
            EXPECT_EQ(Asleep("w"), 0);
            EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err(); }), 2u);
            EXPECT_EQ(Sim().live_host_bytes, kOffloaded + 9 * MiB); // the retry gave the kept ones back
            EXPECT_EQ(Pins([&] { ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err(); }), 0u);
            ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
            ExpectW();
            EXPECT_EQ(Mismatch(more, 1 * MiB, 7), 1 * MiB);
            EXPECT_EQ(Mismatch(big, 8 * MiB, 8), 8 * MiB);
            ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
            Destroy();
        }
        EXPECT_EQ(k, 3u); // two pins; the third call is never made
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, SleepPrepare, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "Expandable" : "Plain"; });

} // namespace
