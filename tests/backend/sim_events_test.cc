// sim_events_test: the simulated device's streams and events, as the pool's
// cross-stream frees use them: completion at once or by the test, and
// injected wait/query faults. Part of //tests/backend:sim_test.
#include <gtest/gtest.h>

#include <cstdint>

#include "tests/backend/sim_fixture.h"

namespace sim_test {
namespace {
TEST(SimEvents, CompleteAtOnceByDefault)
{
    Dev d(Args());
    uintptr_t e1 = 0, e2 = 0, e3 = 0;
    ASSERT_EQ(ga_backend_event_create(d.b(), &e1), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_create(d.b(), &e2), GALLOC_OK);
    EXPECT_NE(e1, 0u);
    EXPECT_NE(e1, e2);
    EXPECT_EQ(ga_backend_event_query(d.b(), e1), GALLOC_OK) << "never recorded: complete";
    EXPECT_EQ(ga_backend_event_record(d.b(), e1, 7), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(d.b(), e1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_synchronize(d.b(), e1), GALLOC_OK);
    EXPECT_EQ(d.counters().live_events, 2u);
    EXPECT_EQ(ga_backend_event_destroy(d.b(), e1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(d.b(), e1), GALLOC_E_INVAL) << "a destroyed handle";
    ASSERT_EQ(ga_backend_event_create(d.b(), &e3), GALLOC_OK); // reuses e1's slot, not its handle
    EXPECT_NE(e3, e1);
    EXPECT_EQ(ga_backend_event_record(d.b(), e1, 7), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_event_destroy(d.b(), e1), GALLOC_E_INVAL);
    EXPECT_EQ(d.counters().violations, 3u);
    EXPECT_EQ(ga_backend_event_destroy(d.b(), e2), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_destroy(d.b(), e3), GALLOC_OK);
    EXPECT_EQ(d.counters().live_events, 0u);
}

TEST(SimEvents, ManualModeWaitsForTheStream)
{
    Dev d(Args());
    ga_backend_t *b = d.b();
    ASSERT_EQ(ga_sim_set_manual_events(d.state(), true), GALLOC_OK);
    uintptr_t e[5] = {};
    for (uintptr_t &x : e)
        ASSERT_EQ(ga_backend_event_create(b, &x), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_record(b, e[0], 1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_record(b, e[1], 2), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_record(b, e[2], 1), GALLOC_OK);
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(ga_backend_event_query(b, e[i]), GALLOC_E_NOT_READY) << i;
    EXPECT_EQ(ga_sim_stream_complete(d.state(), 3), GALLOC_OK); // another stream: nothing changes
    EXPECT_EQ(ga_backend_event_query(b, e[0]), GALLOC_E_NOT_READY);
    EXPECT_EQ(ga_sim_stream_complete(d.state(), 1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[0]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[2]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[1]), GALLOC_E_NOT_READY);
    EXPECT_EQ(ga_backend_event_record(b, e[0], 1), GALLOC_OK); // recorded again: pending again
    EXPECT_EQ(ga_backend_event_query(b, e[0]), GALLOC_E_NOT_READY);
    EXPECT_EQ(ga_backend_event_synchronize(b, e[1]), GALLOC_OK); // a wait completes it
    EXPECT_EQ(ga_backend_event_query(b, e[1]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[0]), GALLOC_E_NOT_READY);

    // A wait finishes its stream up to that record: earlier records complete, later ones do not.
    EXPECT_EQ(ga_backend_event_record(b, e[2], 5), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_record(b, e[3], 5), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_record(b, e[4], 5), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_synchronize(b, e[3]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[2]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[3]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[4]), GALLOC_E_NOT_READY);

    EXPECT_EQ(ga_sim_set_manual_events(d.state(), false), GALLOC_OK); // everything pending completes
    EXPECT_EQ(ga_backend_event_query(b, e[0]), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e[4]), GALLOC_OK);
    EXPECT_EQ(d.counters().violations, 0u) << "NOT_READY is no violation";
    for (uintptr_t x : e)
        EXPECT_EQ(ga_backend_event_destroy(b, x), GALLOC_OK);
}

TEST(SimEvents, InjectedWaitAndQueryFaultsLeaveTheEventPending)
{
    Dev d(Args());
    ga_backend_t *b = d.b();
    ASSERT_EQ(ga_sim_set_manual_events(d.state(), true), GALLOC_OK);
    uintptr_t e1 = 0, e2 = 0;
    ASSERT_EQ(ga_backend_event_create(b, &e1), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_create(b, &e2), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_record(b, e1, 1), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_record(b, e2, 1), GALLOC_OK);

    // The second wait fails, once: the event stays pending and nothing of its stream completes.
    ASSERT_EQ(ga_sim_set_event_faults(d.state(), 2, 0, 0, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e1), GALLOC_E_NOT_READY);    // queries are numbered apart
    EXPECT_EQ(ga_backend_event_synchronize(b, e1), GALLOC_OK);       // wait #1
    EXPECT_EQ(ga_backend_event_synchronize(b, e2), GALLOC_E_DEVICE); // wait #2
    char want[96];
    std::snprintf(want, sizeof want, "injected fault on event_synchronize #2 (event 0x%llx)", (unsigned long long)e2);
    EXPECT_EQ(d.error(), want);
    EXPECT_EQ(ga_backend_event_query(b, e2), GALLOC_E_NOT_READY);
    EXPECT_EQ(ga_backend_event_synchronize(b, e2), GALLOC_OK); // wait #3: nth is one call only
    EXPECT_EQ(ga_backend_event_query(b, e2), GALLOC_OK);

    // Queries from the 4th on fail; a failed query reports neither done nor pending.
    ASSERT_EQ(ga_backend_event_record(b, e1, 2), GALLOC_OK);
    ASSERT_EQ(ga_sim_set_event_faults(d.state(), 0, 0, 0, d.counters().query_calls + 1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e1), GALLOC_E_DEVICE);
    EXPECT_EQ(ga_backend_event_query(b, e2), GALLOC_E_DEVICE);
    EXPECT_EQ(ga_sim_stream_complete(d.state(), 2), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e1), GALLOC_E_DEVICE);
    ga_sim_counters_t c = d.counters();
    EXPECT_EQ(c.sync_calls, 3u);
    EXPECT_EQ(c.query_calls, 6u);
    EXPECT_EQ(c.faults_injected, 4u);
    EXPECT_EQ(c.violations, 0u) << "an injected fault is no violation";

    // Waits from the 4th on fail; off again, everything behaves.
    ASSERT_EQ(ga_sim_set_event_faults(d.state(), 0, 4, 0, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_synchronize(b, e1), GALLOC_E_DEVICE);
    EXPECT_EQ(ga_backend_event_synchronize(b, e1), GALLOC_E_DEVICE);
    ASSERT_EQ(ga_sim_set_event_faults(d.state(), 0, 0, 0, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_synchronize(b, e1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e1), GALLOC_OK);
    EXPECT_EQ(d.counters().faults_injected, 6u);

    // A stale handle is a violation, not numbered as a call.
    ASSERT_EQ(ga_backend_event_destroy(b, e2), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_synchronize(b, e2), GALLOC_E_INVAL);
    EXPECT_EQ(d.counters().sync_calls, 6u);
    EXPECT_EQ(ga_sim_set_event_faults(nullptr, 1, 0, 0, 0), GALLOC_E_INVAL);
    ASSERT_EQ(ga_backend_event_destroy(b, e1), GALLOC_OK);
}

// Random allocs and frees against a reference model; many live segments make
// the hash table grow and its deletions shift entries.

} // namespace
} // namespace sim_test
