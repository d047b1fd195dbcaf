// regression_test.cc: generated workloads from the "galloc fit" issue with
// exact expected outcomes, replayed through the replay engine (the same code
// `galloc replay` runs): a batch growing from N to N+1, and frees still
// waiting on another stream when the device runs out of memory; and the
// cap of a snapshot whose capped OOM comes second. The load-order and
// variable-sequence-length workloads are in fit_test.cc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/tools/job_util.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include <galloc/galloc.h>
#include "tools/engine/replay.h"
#include "tools/readers/trace_reader.h"
}

namespace {

constexpr int64_t MiB = int64_t{1} << 20, GiB = int64_t{1} << 30;

// Replays `trace` under one configuration and keeps its column.
class Replayed {
  public:
    Replayed(const std::string &trace, const char *conf) : job_(trace)
    {
        EXPECT_TRUE(job_.ok) << job_.error;
        ga_replay_opts_t o = {};
        o.check = true; // galloc_check at the end
        ga_replay_spec_t spec = {conf, false};
        ok_ = job_.ok && ga_replay_run(job_.unit(), &o, &spec, 1, &rp_) == 0;
        EXPECT_TRUE(ok_);
    }
    ~Replayed()
    {
        if (ok_)
            ga_replay_release(&rp_);
    }
    const ga_replay_column_t &col() const { return rp_.cols[0]; }
    const galloc_stats_t &st() const { return rp_.cols[0].stats; }

  private:
    LoadedJob job_;
    ga_replay_t rp_;
    bool ok_ = false;
};

// Four activations of batch x 256 MiB per step: two steps at batch 6
// (4 x 1.5 GiB), then two at batch 7 (4 x 1.75 GiB), on an 8 GiB device.
std::string GrowingBatch()
{
    std::ostringstream s;
    s << "galloc-trace 1 device_memory 8GiB\n";
    int id = 0;
    for (int batch : {6, 6, 7, 7}) {
        int first = id + 1;
        for (int a = 0; a < 4; a++)
            s << "alloc " << ++id << " " << batch * 256 << "MiB\n";
        for (int a = id; a >= first; a--)
            s << "free " << a << "\n";
    }
    return Write("growing_batch.trace", s.str());
}

// Defaults: the four cached 1.5 GiB blocks cannot hold 1.75 GiB. The first
// batch-7 activation gets a new segment (7.75 GiB reserved); the second does
// not fit the device, so the OOM path frees the cached segments and retries:
// one retry, no OOM, four segments freed, eight allocated in all.
TEST(Regression, GrowingBatchFitsAfterOneRetryUnderTheDefaults)
{
    Replayed r(GrowingBatch(), "");
    EXPECT_EQ(r.col().ooms_total, 0u);
    EXPECT_EQ(r.st().num_alloc_retries, 1);
    EXPECT_EQ(r.st().num_device_alloc, 8);
    EXPECT_EQ(r.st().num_device_free, 4);
    EXPECT_EQ(r.st().reserved_bytes[GALLOC_STAT_ALL].peak, 6 * GiB + 1792 * MiB);
    EXPECT_EQ(r.st().reserved_bytes[GALLOC_STAT_ALL].current, 7 * GiB);
}

// Expandable segments: the batch-6 blocks merge back into one mapped range,
// and batch 7 maps only what it lacks: no retry. The large pool maps 20 MiB
// pages, so 4 x 1.75 GiB = 7,168 MiB is backed by 359 pages (7,180 MiB).
TEST(Regression, GrowingBatchNeedsNoRetryWithExpandableSegments)
{
    Replayed r(GrowingBatch(), "expandable_segments:True");
    EXPECT_EQ(r.col().ooms_total, 0u);
    EXPECT_EQ(r.st().num_alloc_retries, 0);
    EXPECT_EQ(r.st().reserved_bytes[GALLOC_STAT_ALL].peak, 359 * 20 * MiB);
}

// The case as PyTorch serves it: block 1 is a whole 24 MiB segment,
// used on stream 7 and freed (its event still pending), a 1000 MiB block
// fills the rest of the 1 GiB device. The 12 MiB request finds no free block
// and no device memory; the OOM path synchronizes, block 1 becomes free, its
// segment is released and the retried device allocation succeeds.
TEST(Regression, APendingWholeSegmentIsReleasedAfterTheSyncAndTheRetrySucceeds)
{
    std::string p = Write("pending_segment.trace", "galloc-trace 1 device_memory 1GiB\n"
                                                   "alloc 1 24MiB\n"
                                                   "record_stream 1 7\n"
                                                   "free 1\n"
                                                   "alloc 2 1000MiB\n"
                                                   "alloc 3 12MiB\n");
    Replayed t(p, "sim_manual_events:True");
    EXPECT_EQ(t.col().ooms_total, 0u);
    EXPECT_EQ(t.st().num_alloc_retries, 1);
    EXPECT_EQ(t.st().num_sync_all_streams, 1);
    EXPECT_EQ(t.st().num_device_alloc, 3); // 24 MiB, 1000 MiB, then 12 MiB after the retry
    EXPECT_EQ(t.st().num_device_free, 1);  // the 24 MiB segment
    // 12 MiB is at least 10 MiB: its segment is the request rounded to 2 MiB.
    EXPECT_EQ(t.st().reserved_bytes[GALLOC_STAT_ALL].current, 1012 * MiB);
    EXPECT_EQ(t.st().allocated_bytes[GALLOC_STAT_ALL].current, 1012 * MiB);
}

// A 20 MiB segment holds blocks 1 (0-5 MiB, live) and 2 (5-10 MiB, used on
// stream 7 and freed: waiting for its event), 10 MiB free after them; a
// 1004 MiB block fills the rest of the 1 GiB device. The 12 MiB request
// finds no free block (2 is still pending) and no device memory. The OOM
// path synchronizes (2 merges into a 15 MiB free block) but cannot release
// the segment, block 1 lives in it. PyTorch retries only the device
// allocation and fails (pytorch/pytorch#189504), and so does galloc by
// default; with retry_pool_after_sync:True galloc searches the pool again and
// takes the merged block, counting one retry.
TEST(Regression, AFreePendingOnAnotherStreamServesTheRequestAfterTheSync)
{
    std::string p = Write("pending.trace", "galloc-trace 1 device_memory 1GiB\n"
                                           "alloc 1 5MiB\n"
                                           "alloc 2 5MiB\n"
                                           "record_stream 2 7\n"
                                           "free 2\n"
                                           "alloc 3 1004MiB\n"
                                           "alloc 4 12MiB\n");
    // Manual events: the stream-7 event completes only when synchronized.
    Replayed t(p, "sim_manual_events:True");
    EXPECT_EQ(t.col().ooms_total, 1u); // PyTorch's outcome
    EXPECT_EQ(t.st().num_alloc_retries, 1);
    EXPECT_EQ(t.st().num_sync_all_streams, 1);

    Replayed r(p, "sim_manual_events:True,retry_pool_after_sync:True");
    EXPECT_EQ(r.col().ooms_total, 0u);
    EXPECT_EQ(r.st().num_alloc_retries, 1);
    EXPECT_GE(r.st().num_sync_all_streams, 1);
    EXPECT_EQ(r.st().num_device_alloc, 2); // the 20 MiB segment and the 1004 MiB one: no third
    EXPECT_EQ(r.st().reserved_bytes[GALLOC_STAT_ALL].current, 1 * GiB);
    EXPECT_EQ(r.st().allocated_bytes[GALLOC_STAT_ALL].current, 5 * MiB + 1004 * MiB + 12 * MiB);

    // With events completing at once (the replay's default), block 2 is
    // already free when the request comes: no retry at all.
    Replayed d(p, "");
    EXPECT_EQ(d.col().ooms_total, 0u);
    EXPECT_EQ(d.st().num_alloc_retries, 0);
}

// A snapshot whose memory-fraction-capped OOM is the second event replayed
// (data/make_capped_snapshot.py): a 60 MiB block, then an 8 MiB request
// refused with 4 GiB free. Cap inference replays the events before that OOM
// (the first alone) under each cap: the engine's stop index 0 used to mean
// "all events", so that replay ran into the OOM itself, failed under every
// cap below the one that avoids it, and the cap was reported as not
// consistent with the record (found by seed_fuzz). The cap is at least the
// 60 MiB the first event needs and below the 80 MiB that the request's
// 20 MiB segment would make.
TEST(Regression, ACappedOomAsTheSecondEventHasItsCapInferred)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    std::string dir = srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" : "";
    LoadedJob job(dir + "tests/tools/data/capped_second_entry.pickle"); // infers the cap
    ASSERT_TRUE(job.ok) << job.error;
    const ga_job_unit_t *u = job.unit();
    ASSERT_EQ(u->n, 3u); // alloc, oom, free
    ASSERT_EQ(u->cap.capped_ooms, 1u);
    EXPECT_TRUE(u->cap.inferred) << u->cap.why;
    EXPECT_EQ(u->cap.low, (uint64_t)(60 * MiB));
    EXPECT_EQ(u->cap.high, (uint64_t)(80 * MiB));
}

} // namespace
