// storm_finish.cc: the storm's end (see storm.h): the stats against the
// workers' serial recount, with blocks live and after every block is freed,
// every stream synchronized and the cache emptied.
#include <gtest/gtest.h>

#include <string>

#include "tests/reliability/storm.h"

namespace storm {

namespace {

std::string LastError(galloc_allocator_t *a)
{
    char msg[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, msg, sizeof msg);
    return msg;
}

galloc_stats_t Stats(galloc_allocator_t *a)
{
    galloc_stats_t s;
    s.struct_size = sizeof s;
    EXPECT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    return s;
}

const char *const kPoolNames[GALLOC_STAT_POOLS] = {"all", "small_pool", "large_pool"};

// Wait for every worker's stream, then let empty_cache complete the frees
// that waited on them (it polls every pending event).
void Drain(const Config &c)
{
    for (galloc_stream_t st : c.streams)
        EXPECT_EQ(galloc_stream_synchronize(c.a, st), GALLOC_OK) << LastError(c.a);
    EXPECT_EQ(galloc_empty_cache(c.a), GALLOC_OK) << LastError(c.a);
}

} // namespace

void Finish(const Config &c, Result &r)
{
    galloc_allocator_t *a = c.a;
    EXPECT_EQ(r.errors, 0u) << "first: " << r.first_error << " (seed " << c.seed << ")";
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a) << " (seed " << c.seed << ")";

    // With the workers' blocks live (some perhaps asleep, which changes no
    // block count) and every free completed: the current values are theirs.
    Drain(c);
    Recount held;
    for (const Live &b : r.live)
        held.Alloc(b);
    galloc_stats_t s = Stats(a);
    for (int p = 0; p < GALLOC_STAT_POOLS; p++) {
        SCOPED_TRACE(kPoolNames[p]);
        EXPECT_EQ(s.allocation[p].current, held.allocs[p]);
        EXPECT_EQ(s.active[p].current, held.allocs[p]);
        EXPECT_EQ(s.requested_bytes[p].current, held.requested_alloc[p]);
        EXPECT_GE(s.allocated_bytes[p].current, held.bytes_alloc[p]);
        EXPECT_EQ(s.active_bytes[p].current, s.allocated_bytes[p].current);
    }

    // Free everything (a sleeping tag's blocks too, as documented), wait for
    // every stream and give the cache back; wake every tag the sleep thread
    // left asleep, under no cap.
    for (const Live &b : r.live) {
        EXPECT_EQ(galloc_free(a, b.p), GALLOC_OK) << LastError(a);
        r.recount.Free(b);
    }
    r.live.clear();
    Drain(c);
    ASSERT_EQ(galloc_set_memory_fraction(a, 1.0), GALLOC_OK);
    ASSERT_EQ(galloc_wake(a, nullptr), GALLOC_OK) << LastError(a);
    galloc_sleep_stats_t ss;
    ASSERT_EQ(galloc_sleep_stats(a, &ss), GALLOC_OK);
    EXPECT_EQ(ss.tags, c.streams.size());
    EXPECT_EQ(ss.tags_asleep, 0u);
    EXPECT_EQ(ss.bytes_asleep, 0u);
    EXPECT_EQ(ss.bytes_offloaded, 0u);
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a) << " (seed " << c.seed << ")";

    // The serial recount: every successful malloc and free the workers made.
    s = Stats(a);
    const Recount &rc = r.recount;
    for (int p = 0; p < GALLOC_STAT_POOLS; p++) {
        SCOPED_TRACE(kPoolNames[p]);
        EXPECT_EQ(s.allocation[p].allocated, rc.allocs[p]);
        EXPECT_EQ(s.allocation[p].freed, rc.frees[p]);
        EXPECT_EQ(s.requested_bytes[p].allocated, rc.requested_alloc[p]);
        EXPECT_EQ(s.requested_bytes[p].freed, rc.requested_freed[p]);
        // A block counts its whole size, at least the rounded request.
        EXPECT_GE(s.allocated_bytes[p].allocated, rc.bytes_alloc[p]);
        EXPECT_EQ(s.allocated_bytes[p].freed, s.allocated_bytes[p].allocated);
        // Every block is free and every free has completed: active = allocated.
        EXPECT_EQ(s.active[p].allocated, rc.allocs[p]);
        EXPECT_EQ(s.active[p].freed, rc.frees[p]);
        EXPECT_EQ(s.active_bytes[p].allocated, s.allocated_bytes[p].allocated);
        EXPECT_EQ(s.active_bytes[p].freed, s.allocated_bytes[p].freed);
        // Nothing live: no block, no split block waiting.
        EXPECT_EQ(s.allocation[p].current, 0);
        EXPECT_EQ(s.active[p].current, 0);
        EXPECT_EQ(s.allocated_bytes[p].current, 0);
        EXPECT_EQ(s.active_bytes[p].current, 0);
        EXPECT_EQ(s.requested_bytes[p].current, 0);
        EXPECT_EQ(s.inactive_split[p].current, 0);
        EXPECT_EQ(s.inactive_split_bytes[p].current, 0);
    }
    EXPECT_EQ(rc.allocs[GALLOC_STAT_ALL], (int64_t)(r.ops[kMalloc] + r.ops[kCalmMalloc] + r.ops[kTagMalloc]));
    EXPECT_EQ(rc.frees[GALLOC_STAT_ALL], rc.allocs[GALLOC_STAT_ALL]);
    // Every malloc the workers saw refused for memory counted one OOM, and
    // nothing else did (a wake refused under the fraction is not a malloc).
    EXPECT_EQ(s.num_ooms, (int64_t)r.ops[kOom]);
    // Each empty_cache (the control thread's and Drain's two) synchronized
    // every stream once; OOM flushes add theirs.
    EXPECT_GE(s.num_sync_all_streams, (int64_t)r.ops[kEmptyCache] + 2);

    // The default pools hold nothing after empty_cache; each tag, a private
    // pool in use (PyTorch keeps those at empty_cache), keeps its cached
    // segments: putting every tag to sleep releases their physical memory,
    // and then no byte is reserved.
    ASSERT_EQ(galloc_sleep(a, nullptr, nullptr), GALLOC_OK) << LastError(a);
    s = Stats(a);
    for (int p = 0; p < GALLOC_STAT_POOLS; p++) {
        SCOPED_TRACE(kPoolNames[p]);
        EXPECT_EQ(s.reserved_bytes[p].current, 0);
    }
    // (num_device_alloc and num_device_free need not match: with expandable
    // segments, as in PyTorch, one unmap may undo several maps.)
    ASSERT_EQ(galloc_empty_cache(a), GALLOC_OK) << LastError(a);
    ASSERT_EQ(galloc_sleep_stats(a, &ss), GALLOC_OK);
    EXPECT_EQ(ss.bytes_offloaded, 0u);
    EXPECT_EQ(ss.bytes_host_cached, 0u); // empty_cache gave the pinned copies back
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a) << " (seed " << c.seed << ")";
}

} // namespace storm
