// stream_faults_test: a device that fails while blocks freed on other streams
// wait for their events. PyTorch throws from process_events (cudaEventQuery)
// and synchronize_and_free_events (cudaEventSynchronize); galloc fails the
// call with GALLOC_E_DEVICE instead and must never hand out a block the
// device may still be using. The sim device fails event waits or queries on
// demand (ga_sim_set_event_faults), numbered from its open.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/pool/fixture.h"

extern "C" {
#include <galloc/galloc_stats.h>
#include "tests/pool/pool_shim.h"
}

namespace {

constexpr uint64_t MiB = 1 << 20;
constexpr int ALL = GALLOC_STAT_ALL;
constexpr uintptr_t S1 = 0x1001, S2 = 0x1002;

using Keys = std::map<std::string, int64_t>;

// Every one of PyTorch's 123 keys, so a test can say "only these changed".
Keys AllKeys(const galloc_stats_t &s)
{
    Keys k;
    galloc_stats_foreach(
        &s,
        [](void *ctx, const char *key, int64_t v) {
            (*static_cast<Keys *>(ctx))[key] = v;
            return 0;
        },
        &k);
    return k;
}

class StreamFaults : public PoolFixture {
  protected:
    void SetUp() override { Make("sim_manual_events:True"); }
    Keys Now() { return AllKeys(Stats()); }
    // The message names the failed call and carries the backend's own text.
    void ExpectError(const std::string &prefix)
    {
        std::string msg = pool_shim_error(s_);
        EXPECT_EQ(msg.substr(0, prefix.size()), prefix) << msg;
    }
};

TEST_F(StreamFaults, EmptyCacheWaitFailureKeepsThatBlockAndLaterOnesPending)
{
    uintptr_t cached = Alloc(20 * MiB);
    Free(cached); // a whole cached segment: what a successful empty_cache would release
    uintptr_t a = Alloc(4096), b = Alloc(4096), c = Alloc(4096); // one 2 MiB small segment
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, b, S2), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, c, S1), GALLOC_OK);
    Free(a); // queue: a (S1), b (S2), c (S1)
    Free(b);
    Free(c);
    ASSERT_EQ(pool_shim_pending_blocks(s_), 3u);

    pool_shim_event_faults(s_, 2, 0, 0, 0); // the wait for b's event fails
    Keys before = Now();
    EXPECT_EQ(pool_shim_empty_cache(s_), GALLOC_E_DEVICE);
    ExpectError("waiting for an event on stream 0x1002 failed: injected fault on event_synchronize #2");
    EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 2u); // a is done; b failed, c was never waited for

    // Changed: the sync counted (PyTorch counts it before waiting) and a back
    // in its pool. Nothing was released: PyTorch threw before release_blocks.
    Keys want = before;
    want["num_sync_all_streams"] = 1;
    for (const char *p : {"all", "small_pool"}) {
        std::string pre = std::string(".") + p + ".";
        want["active" + pre + "current"] = 2;
        want["active" + pre + "freed"] += 1;
        want["active_bytes" + pre + "current"] = 8192;
        want["active_bytes" + pre + "freed"] += 4096;
        want["requested_bytes" + pre + "current"] = 8192;
        want["requested_bytes" + pre + "freed"] += 4096;
        // a is a free split piece now, apart from the free tail (b and c sit between)
        want["inactive_split" + pre + "current"] = 2;
        want["inactive_split" + pre + "peak"] = 2;
        want["inactive_split" + pre + "allocated"] += 1;
        want["inactive_split_bytes" + pre + "current"] = 2 * MiB - 8192;
        want["inactive_split_bytes" + pre + "allocated"] += 4096;
    }
    EXPECT_EQ(Now(), want);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_device_free, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(22 * MiB));

    // The malloc's poll sees b and c still pending: a is reused, b and c are not.
    uintptr_t x = Alloc(4096), y = Alloc(4096);
    EXPECT_EQ(x, a);
    EXPECT_EQ(y, c + 4096); // from the tail, past c
    EXPECT_EQ(pool_shim_pending_blocks(s_), 2u);

    // The fault was one call: b's stream finishes and b is reused as usual.
    ASSERT_EQ(pool_shim_stream_sync(s_, S2), GALLOC_OK);
    uintptr_t z = Alloc(4096);
    EXPECT_EQ(z, b);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u);
    Free(x);
    Free(y);
    Free(z);

    // A second empty_cache waits for c and releases both segments whole.
    EXPECT_EQ(pool_shim_empty_cache(s_), GALLOC_OK) << pool_shim_error(s_);
    st = Stats();
    EXPECT_EQ(st.num_sync_all_streams, 2);
    EXPECT_EQ(st.num_device_free, 2);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.active[ALL].current, 0);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
}

TEST_F(StreamFaults, EveryWaitFailingLeavesTheQueueWholeAndRetryable)
{
    uintptr_t a = Alloc(4096), b = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, b, S1), GALLOC_OK);
    Free(a);
    Free(b);
    pool_shim_event_faults(s_, 0, 1, 0, 0);
    Keys before = Now();
    for (int i = 1; i <= 3; i++) {
        EXPECT_EQ(pool_shim_empty_cache(s_), GALLOC_E_DEVICE);
        EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
        EXPECT_EQ(pool_shim_pending_blocks(s_), 2u);
        Keys want = before;
        want["num_sync_all_streams"] = i; // once per call, failed or not
        EXPECT_EQ(Now(), want);
    }
    EXPECT_NE(Alloc(4096), a); // nothing came back
    // A block freed after the failures queues behind the stuck ones (the tail held).
    uintptr_t c = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, c, S2), GALLOC_OK);
    Free(c);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 3u);
    pool_shim_event_faults(s_, 0, 0, 0, 0);
    EXPECT_EQ(pool_shim_empty_cache(s_), GALLOC_OK) << pool_shim_error(s_);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
    EXPECT_EQ(Stats().num_sync_all_streams, 4);
    EXPECT_EQ(Stats().active[ALL].current, 1); // the Alloc above, still live
}

TEST_F(StreamFaults, OomPathWaitFailureFailsTheMallocWithTheDeviceError)
{
    // As OomSatisfiedAfterSynchronizingSucceeds in streams_test, but the wait
    // that would free the pending segment fails.
    Make("sim_manual_events:True", 40 * MiB);
    uintptr_t a = Alloc(20 * MiB);
    uintptr_t big = Alloc(20 * MiB); // the device is full
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    pool_shim_event_faults(s_, 1, 0, 0, 0);
    Keys before = Now();
    uintptr_t b = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 12 * MiB, 0, &b), GALLOC_E_DEVICE); // not GALLOC_E_OOM
    EXPECT_EQ(b, 0u);
    ExpectError("waiting for an event on stream 0x1001 failed: injected fault on event_synchronize #1");
    EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
    // PyTorch had counted the sync and nothing else: it threw before its last
    // retry (no num_alloc_retries) and before the OOM report (no num_ooms).
    Keys want = before;
    want["num_sync_all_streams"] = 1;
    EXPECT_EQ(Now(), want);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u);

    // The fault cleared, the same call goes PyTorch's usual way.
    uintptr_t c = Alloc(12 * MiB);
    EXPECT_NE(c, 0u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_sync_all_streams, 2);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(st.num_device_alloc, 3);
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(32 * MiB));
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
    Free(c);
    Free(big);
}

TEST_F(StreamFaults, OomPathKeepsWhatTheWaitsBeforeTheFailureReturned)
{
    // Two pending whole segments; the first wait succeeds, the second fails.
    // The first block stays returned (PyTorch had freed it too), the
    // malloc fails with the device error and releases nothing.
    Make("sim_manual_events:True", 40 * MiB);
    uintptr_t a = Alloc(20 * MiB), b = Alloc(20 * MiB);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, b, S2), GALLOC_OK);
    Free(a);
    Free(b);
    pool_shim_event_faults(s_, 2, 0, 0, 0);
    uintptr_t got = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 30 * MiB, 0, &got), GALLOC_E_DEVICE);
    EXPECT_EQ(got, 0u);
    EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_alloc_retries, 0);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_device_free, 0);
    EXPECT_EQ(st.active[ALL].current, 1);
    EXPECT_EQ(st.active_bytes[ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(40 * MiB));
    EXPECT_EQ(Alloc(20 * MiB), a); // a's segment is free and cached; b's is not reused
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u);
}

TEST_F(StreamFaults, FailedPollFailsTheMallocAndKeepsTheQueue)
{
    uintptr_t a = Alloc(4096), b = Alloc(4096), c = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, b, S2), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, c, S1), GALLOC_OK);
    Free(a);
    Free(b);
    Free(c);
    ASSERT_EQ(pool_shim_stream_sync(s_, S1), GALLOC_OK); // a and c are complete, b is not
    pool_shim_event_faults(s_, 0, 0, 2, 0);              // the query of b's event fails
    Keys before = Now();
    uintptr_t got = 1;
    EXPECT_EQ(pool_shim_malloc(s_, 4096, 0, &got), GALLOC_E_DEVICE);
    EXPECT_EQ(got, 0u);
    ExpectError("querying an event on stream 0x1002 failed: injected fault on event_query #2");
    EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
    // a came back before the failure (PyTorch had freed it too); b and c did not.
    EXPECT_EQ(pool_shim_pending_blocks(s_), 2u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.active[ALL].current, 2);
    EXPECT_EQ(st.allocation[ALL].current, 0);
    EXPECT_EQ(st.allocation[ALL].allocated, 3); // the failed malloc counted nothing
    EXPECT_EQ(Now()["num_sync_all_streams"], before["num_sync_all_streams"]);
    // The next poll succeeds: c is done and comes back; b still waits on S2.
    EXPECT_EQ(Alloc(4096), a);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u);
    EXPECT_EQ(Alloc(4096), c);
    ASSERT_EQ(pool_shim_stream_sync(s_, S2), GALLOC_OK);
    EXPECT_EQ(Alloc(4096), b);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
}

} // namespace
