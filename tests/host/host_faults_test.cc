// host_faults_test: the host cache under device faults on sim (house style's
// sweep: fail the Nth device call, N = 1, 2, ... until the workload runs
// untouched; once failing one call, once failing every call from the Nth on).
// A refused pin or give-back must change no figure (galloc differs from
// PyTorch here, which throws halfway), nothing may leak, and galloc_check must
// pass after every call. The fake drivers' sweeps of the same calls are
// tests/backend/hostcache_cases.cc.
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/host/host_fixture.h"

namespace host_test {
namespace {

class HostFaults : public HostTest, public ::testing::WithParamInterface<const char *> {
  protected:
    void SetUp() override { Make(GetParam()); }
    // pinned_max_cached_size_mb:0 caches nothing: every free gives its block back.
    bool Caches() const { return std::strcmp(GetParam(), "pinned_max_cached_size_mb:0") != 0; }
    // empty_cache keeps a block whose give-back is refused, counted.
    void EmptyCache(bool retry)
    {
        galloc_status_t st = galloc_host_empty_cache(a_);
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        if (st != GALLOC_OK) {
            EXPECT_EQ(st, GALLOC_E_DEVICE);
            EXPECT_GT(Stats()["allocations.current"], 0);
            failures_++;
            if (retry) {
                EXPECT_EQ(galloc_host_empty_cache(a_), GALLOC_OK) << Err();
            }
        }
    }
    // One call; on failure nothing changed (a pin or a give-back refused) and
    // the retry succeeds.
    galloc_status_t Step(const std::string &what, const std::function<galloc_status_t()> &call, bool retry)
    {
        HostStats before = Stats();
        ga_sim_counters_t dev = Sim();
        galloc_status_t st = call();
        if (st != GALLOC_OK) {
            EXPECT_TRUE(st == GALLOC_E_NOMEM || st == GALLOC_E_DEVICE) << what << ": " << galloc_status_name(st);
            EXPECT_NE(Err(), "") << what;
            EXPECT_EQ(Stats(), before) << what << " failed and changed a figure: " << Err();
            EXPECT_EQ(Sim().live_host_allocs, dev.live_host_allocs) << what;
            EXPECT_EQ(Sim().live_host_registered, dev.live_host_registered) << what;
            failures_++;
            if (retry) {
                EXPECT_EQ(st = call(), GALLOC_OK) << what << ": the retry must succeed: " << Err();
            }
        }
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << what << ": " << Err();
        return st;
    }
    // Pins of three buckets, a block used on a stream, reuse after its event,
    // a cached block taken again, empty_cache. Every call that can reach the
    // device does so with no event left to process, so a refusal has nothing
    // else to undo (without a cache the completed event's block is given back
    // by an empty_cache first, whose refusal keeps it). A free whose give-back
    // is refused (no cache) keeps the block cached: no failure is seen.
    void Workload(bool retry)
    {
        std::vector<void *> live;
        auto pin = [&](size_t n) {
            void *p = nullptr;
            if (Step(
                    "host_malloc(" + std::to_string(n) + ")", [&] { return galloc_host_malloc(a_, n, &p); }, retry) ==
                GALLOC_OK)
                live.push_back(p);
            return p;
        };
        void *a = pin(MiB);
        void *b = pin(3 * KiB);
        pin(100 * KiB);
        if (a != nullptr) {
            ASSERT_EQ(galloc_host_record_stream(a_, a, 7), GALLOC_OK);
            ASSERT_EQ(galloc_host_free(a_, a), GALLOC_OK);
            live.erase(std::find(live.begin(), live.end(), a));
            Complete(7);
            if (!Caches())
                EmptyCache(retry);
        }
        if (b != nullptr) {
            ASSERT_EQ(galloc_host_free(a_, b), GALLOC_OK);
            live.erase(std::find(live.begin(), live.end(), b));
        }
        void *d = pin(MiB);  // a's, once its event is processed (first: no miss may process it)
        void *c = pin(4000); // b's 4 KiB block, cached
        if (Caches() && a != nullptr && d != nullptr) {
            EXPECT_EQ(d, a);
        }
        if (Caches() && b != nullptr && c != nullptr) {
            EXPECT_EQ(c, b);
        }
        for (void *p : live)
            ASSERT_EQ(galloc_host_free(a_, p), GALLOC_OK);
        EmptyCache(retry);
    }
    int failures_ = 0;
};

TEST_P(HostFaults, EachDeviceCallFailingOnceChangesNothing)
{
    for (uint64_t n = 1; n < 100; n++) {
        SCOPED_TRACE("failing op call #" + std::to_string(n));
        Make(GetParam());
        failures_ = 0;
        uint64_t base = Sim().op_calls;
        ASSERT_EQ(ga_sim_set_op_faults(sim_, base + n, 0), GALLOC_OK);
        Workload(true);
        ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
        EXPECT_EQ(Stats()["allocations.current"], 0);
        // Only the reserve segment stays (until destroy), once made.
        bool reserve = std::strcmp(GetParam(), "pinned_reserve_segment_size_mb:1") == 0;
        EXPECT_EQ(Sim().live_host_allocs + Sim().live_host_registered, reserve ? 1u : 0u);
        bool injected = Sim().faults_injected > 0;
        Destroy();
        if (HasFailure())
            break;
        if (!injected) {
            EXPECT_GE(n, 5u) << "the workload reaches the device at least 4 times";
            break;
        }
        if (Caches()) {
            EXPECT_EQ(failures_, 1);
        } else {
            EXPECT_LE(failures_, 1) << "a refused give-back in a free is absorbed (cached)";
        }
    }
}

TEST_P(HostFaults, EveryDeviceCallFailingFromTheNthLeavesNoLeak)
{
    for (uint64_t n = 1; n < 100; n++) {
        SCOPED_TRACE("failing every op call from #" + std::to_string(n));
        Make(GetParam());
        uint64_t base = Sim().op_calls;
        ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, base + n), GALLOC_OK);
        Workload(false);
        ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
        ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK) << Err();
        EXPECT_EQ(Stats()["allocations.current"], 0);
        EXPECT_EQ(Stats()["active_requests.current"], 0);
        bool injected = Sim().faults_injected > 0;
        Destroy();
        if (HasFailure() || !injected)
            break;
    }
}

// A failing event query is "not yet": the block is never reused early, a new
// one is pinned, and the next query that succeeds frees it (galloc treats it
// so; PyTorch's C10_CUDA_CHECK would throw out of allocate).
TEST_P(HostFaults, AFailedEventQueryOnlyDelaysReuse)
{
    void *a = Pin(MiB);
    ASSERT_EQ(galloc_host_record_stream(a_, a, 4), GALLOC_OK);
    Unpin(a);
    Complete(4);
    ASSERT_EQ(ga_sim_set_event_faults(sim_, 0, 0, 0, Sim().query_calls + 1), GALLOC_OK);
    void *b = Pin(MiB);
    EXPECT_NE(b, a);
    EXPECT_EQ(Stats()["active_requests.current"], 2);
    ASSERT_EQ(ga_sim_set_event_faults(sim_, 0, 0, 0, 0), GALLOC_OK);
    void *c = Pin(MiB);
    if (Caches()) {
        EXPECT_EQ(c, a);
    } else {
        EXPECT_EQ(Stats()["num_host_free"], 1) << "its event done, a went back to the driver";
    }
    Unpin(b);
    Unpin(c);
}

std::string PathName(const ::testing::TestParamInfo<const char *> &i)
{
    static const char *const names[] = {"host_alloc", "host_register", "reserve_segment", "no_cache"};
    return names[i.index];
}

INSTANTIATE_TEST_SUITE_P(Paths, HostFaults,
                         ::testing::Values("", "pinned_use_cuda_host_register:True", "pinned_reserve_segment_size_mb:1",
                                           "pinned_max_cached_size_mb:0"),
                         PathName);

} // namespace
} // namespace host_test
