// host_sleep_test: the sleep offload on the host cache (pool/pinned.c): its
// copies are host cache blocks of their device block's exact size, counted
// in host_memory_stats(); a wake keeps them (bytes_host_cached) for the next
// sleep; a kept block can serve a galloc_host_malloc of a size it fits; the
// cache cap bounds what a wake keeps and a prepare pins; galloc_empty_cache
// gives back the kept blocks only, galloc_host_empty_cache every cached one;
// a refused give-back stays cached (an orphan) until the next sleep or wake
// retries it; and a sweep failing each device call of a sleep cycle leaks
// nothing.
#include "tests/host/host_fixture.h"

namespace host_test {
namespace {

class HostSleep : public HostTest {
  protected:
    void SetUp() override {}
    void Tagged(size_t n)
    {
        ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_malloc(a_, n, 0, &w_), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK) << Err();
    }
    galloc_sleep_stats_t Sleep()
    {
        galloc_sleep_stats_t s = {};
        EXPECT_EQ(galloc_sleep_stats(a_, &s), GALLOC_OK);
        return s;
    }
    void *w_ = nullptr;
};

TEST_F(HostSleep, CopiesAreExactHostBlocksKeptForTheNextSleep)
{
    Make("sim_backed:True");
    const int64_t n = 3 * MiB; // a 3 MiB device block: its copy is not rounded to 4 MiB
    Tagged(n);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    HostStats s = Stats();
    EXPECT_EQ(s["allocations.current"], 1);
    EXPECT_EQ(s["allocated_bytes.current"], n);
    EXPECT_EQ(s["active_bytes.current"], n) << "held by the sleeping tag";
    EXPECT_EQ(Sim().live_host_bytes, (uint64_t)n);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Sleep().bytes_host_cached, (uint64_t)n);
    EXPECT_EQ(Stats()["active_bytes.current"], 0);
    EXPECT_EQ(Stats()["allocations.current"], 1) << "kept in the cache";
    // The next sleep takes it: no new pin.
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Stats()["num_host_alloc"], 1);
    EXPECT_EQ(Sleep().bytes_host_cached, 0u);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    // galloc_empty_cache gives back the sleep's kept blocks (galloc_sleep.h).
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Sleep().bytes_host_cached, 0u);
    EXPECT_EQ(Stats()["allocations.current"], 0);
    EXPECT_EQ(Stats()["num_host_free"], 1);
    ASSERT_EQ(galloc_free(a_, w_), GALLOC_OK);
}

TEST_F(HostSleep, AKeptBlockServesAHostMallocThatFits)
{
    // Above the threshold a request is exact, so a 3 MiB request matches the kept 3 MiB copy.
    Make("sim_backed:True,pinned_max_round_threshold_mb:1");
    Tagged(3 * MiB);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Sleep().bytes_host_cached, 3 * MiB);
    void *p = Pin(3 * MiB);
    EXPECT_EQ(Stats()["num_host_alloc"], 1) << "the kept block served it";
    EXPECT_EQ(Sleep().bytes_host_cached, 0u) << "no longer kept";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats()["allocations.current"], 1) << "galloc_empty_cache leaves the host cache's own blocks";
    Unpin(p);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    ASSERT_EQ(galloc_free(a_, w_), GALLOC_OK);
}

TEST_F(HostSleep, TheCacheCapBoundsWhatAWakeKeeps)
{
    Make("sim_backed:True,pinned_max_cached_size_mb:2");
    Tagged(3 * MiB);
    // A prepare would pin a block the cache gives back when it is kept: it skips it.
    ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Stats()["num_host_alloc"], 0);
    EXPECT_EQ(Sleep().bytes_host_cached, 0u);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Stats()["num_host_alloc"], 1) << "the sleep pins it";
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Sleep().bytes_host_cached, 0u) << "3 MiB is above the 2 MiB cap: given back";
    EXPECT_EQ(Stats()["num_host_free"], 1);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    ASSERT_EQ(galloc_free(a_, w_), GALLOC_OK);
}

TEST_F(HostSleep, HostEmptyCacheGivesBackKeptBlocksToo)
{
    Make("sim_backed:True");
    Tagged(MiB);
    ASSERT_EQ(galloc_sleep_prepare(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Sleep().bytes_host_cached, MiB);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Sleep().bytes_host_cached, 0u);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    ASSERT_EQ(galloc_free(a_, w_), GALLOC_OK);
}

TEST_F(HostSleep, ARefusedGiveBackIsRetriedByTheNextSleep)
{
    Make("sim_backed:True");
    Tagged(MiB);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ASSERT_EQ(Sleep().bytes_host_cached, MiB);
    // The kept block's give-back is refused: it stays pinned and counted,
    // no longer kept for a sleep (galloc_empty_cache was asked to drop it).
    ASSERT_EQ(ga_sim_set_op_faults(sim_, Sim().op_calls + 1, 0), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
    EXPECT_EQ(Sim().faults_injected, 1u);
    EXPECT_EQ(Sleep().bytes_host_cached, 0u);
    EXPECT_EQ(Stats()["allocations.current"], 1);
    EXPECT_EQ(Sim().live_host_allocs, 1u);
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    // The next sleep retries it before it pins its copy.
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Stats()["num_host_free"], 1);
    EXPECT_EQ(Stats()["num_host_alloc"], 2);
    EXPECT_EQ(Sim().live_host_allocs, 1u) << "the sleeping copy only";
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_free(a_, w_), GALLOC_OK);
}

// Fail each device call of a prepare / sleep / wake / empty_cache cycle once,
// then every call from the Nth on: whatever failed, the cache stays
// consistent (galloc_check), and once the faults stop, a wake, a free and
// both empty_cache calls leave no pinned memory behind.
class HostSleepFaults : public HostSleep, public ::testing::WithParamInterface<bool> {};

TEST_P(HostSleepFaults, ACycleLeaksNothing)
{
    const bool from = GetParam();
    for (uint64_t n = 1; n < 200; n++) {
        SCOPED_TRACE(std::string(from ? "failing every op call from #" : "failing op call #") + std::to_string(n));
        Make("sim_backed:True");
        Tagged(3 * MiB);
        void *v = nullptr;
        ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_malloc(a_, 5000, 0, &v), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK) << Err();
        uint64_t base = Sim().op_calls;
        ASSERT_EQ(ga_sim_set_op_faults(sim_, from ? 0 : base + n, from ? base + n : 0), GALLOC_OK);
        (void)galloc_sleep_prepare(a_, "w", "w");
        (void)galloc_sleep(a_, "w", "w");
        (void)galloc_wake(a_, "w");
        (void)galloc_empty_cache(a_);
        (void)galloc_sleep(a_, "w", "w");
        (void)galloc_wake(a_, "w");
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
        bool injected = Sim().faults_injected > 0;
        ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_free(a_, w_), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_free(a_, v), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK) << Err();
        EXPECT_EQ(Sleep().bytes_host_cached, 0u);
        EXPECT_EQ(Stats()["allocations.current"], 0);
        EXPECT_EQ(Sim().live_host_allocs, 0u);
        Destroy();
        if (HasFailure() || !injected)
            break;
    }
}

INSTANTIATE_TEST_SUITE_P(OnceAndFrom, HostSleepFaults, ::testing::Bool());

} // namespace
} // namespace host_test
