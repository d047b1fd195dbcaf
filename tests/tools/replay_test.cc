// replay_test.cc: the replay engine through the public API on the sim device:
// exact PyTorch figures for small traces, side-by-side columns, creation
// failures, OOMs with PyTorch's message, expected OOM points, stream events,
// trace anomalies, the sampled series, --snapshot-range, the --verify reader
// and comparison (pool ids by correspondence), and a 1,000,000-event trace (events/s is printed and
// recorded, never asserted).
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/job_util.h"
#include "tests/tools/snapfile_util.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include <galloc/galloc.h>
#include "tools/engine/replay.h"
#include "tools/readers/trace_reader.h"
#include "tools/replay/verify.h"
#include "tools/replay/verify_int.h"
#include "tools/report/outputs.h"
#include "tools/snapshot/seed.h"
#include "tools/snapshot/snap_view.h"
}

namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

// Replays one file (every unit, the results of the last one kept) and checks
// each allocator with galloc_check before it is destroyed. confs {nullptr}:
// the unit's own run (its recorded settings, else PyTorch's defaults).
class Replay {
  public:
    Replay(const std::string &path, std::vector<const char *> confs, uint64_t device_memory = 0, bool sample = false)
        : job_(path, device_memory)
    {
        EXPECT_TRUE(job_.ok) << job_.error;
        ga_replay_opts_t o = {};
        o.sample = sample;
        o.check = true;
        std::vector<ga_replay_spec_t> specs;
        if (!(confs.size() == 1 && confs[0] == nullptr))
            for (const char *c : confs)
                specs.push_back(ga_replay_spec_t{c, false});
        for (size_t u = 0; u < job_.units(); u++) {
            if (u > 0)
                ga_replay_release(&rp_);
            EXPECT_EQ(ga_replay_run(job_.unit(u), &o, specs.data(), specs.size(), &rp_), 0);
            ran_ = true;
            for (size_t i = 0; i < rp_.n_cols; i++)
                EXPECT_EQ(rp_.cols[i].errors, 0u) << rp_.cols[i].first_error;
        }
    }
    ~Replay()
    {
        if (ran_)
            ga_replay_release(&rp_);
    }
    const ga_replay_t &rp() const { return rp_; }
    const ga_replay_column_t &col(size_t i) const { return rp_.cols[i]; }

  private:
    LoadedJob job_;
    ga_replay_t rp_ = {};
    bool ran_ = false;
};

int64_t Stat(const ga_replay_column_t &c, const char *key)
{
    int64_t v = -12345;
    EXPECT_EQ(galloc_stats_lookup(&c.stats, key, &v), GALLOC_OK) << key;
    return v;
}

TEST(Replay, ExactFiguresOfASmallTrace)
{
    std::string p = Write("small.trace", "galloc-trace 1\nalloc 1 1000\nalloc 2 3MiB\nfree 1\n");
    Replay r(p, {nullptr});
    ASSERT_EQ(r.rp().n_cols, 1u);
    const ga_replay_column_t &c = r.col(0);
    EXPECT_EQ(c.create_status, GALLOC_OK) << c.create_error;
    EXPECT_EQ(r.rp().events, 3u);
    EXPECT_EQ(c.events, 3u);
    EXPECT_STREQ(c.label, "defaults");
    // 1000 bytes round to 1024 in a 2 MiB small-pool segment; 3 MiB gets a
    // 20 MiB large-pool segment (requests under 10 MiB), as PyTorch does.
    EXPECT_EQ(Stat(c, "requested_bytes.all.peak"), 1000 + 3 * 1048576);
    EXPECT_EQ(Stat(c, "allocated_bytes.all.peak"), 1024 + 3 * 1048576);
    EXPECT_EQ(Stat(c, "reserved_bytes.all.peak"), 22 * 1048576);
    EXPECT_EQ(Stat(c, "requested_bytes.all.current"), 3 * 1048576);
    EXPECT_EQ(Stat(c, "segment.all.peak"), 2);
    EXPECT_EQ(Stat(c, "num_device_alloc"), 2);
    EXPECT_EQ(Stat(c, "max_split_size"), -1);
    EXPECT_EQ(c.ooms_total, 0u);
    EXPECT_EQ(c.unmatched, 0u);
    EXPECT_GT(c.seconds, 0.0);
    EXPECT_EQ(r.rp().device_memory, 80 * GiB);
}

TEST(Replay, SideBySideColumns)
{
    std::string p = Write("sbs.trace", "galloc-trace 1 device_memory 8GiB\nalloc 1 600MiB\nfree 1\nalloc 2 300MiB\n");
    Replay r(p, {"", "max_split_size_mb:512", "roundup_power2_divisions:4"});
    ASSERT_EQ(r.rp().n_cols, 3u);
    EXPECT_EQ(r.rp().device_memory, 8 * GiB); // from the trace's header
    EXPECT_STREQ(r.col(0).label, "defaults");
    EXPECT_STREQ(r.col(1).label, "max_split_size_mb:512");
    EXPECT_NE(std::string(r.col(1).conf).find("sim_capacity:8589934592"), std::string::npos) << r.col(1).conf;
    EXPECT_EQ(Stat(r.col(1), "max_split_size"), 512 * 1048576);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(r.col(i).events, 3u);
        EXPECT_EQ(Stat(r.col(i), "requested_bytes.all.peak"), 600 * 1048576);
    }
    // Defaults split the cached 600 MiB block for the 300 MiB request; with
    // max_split_size_mb:512 the oversize block is not split, so a new segment
    // is made: the columns differ exactly where the setting matters.
    EXPECT_EQ(Stat(r.col(0), "num_device_alloc"), 1);
    EXPECT_EQ(Stat(r.col(1), "num_device_alloc"), 2);
}

TEST(Replay, CreationFailureIsReportedPerColumn)
{
    std::string p = Write("cf.trace", "galloc-trace 1\nalloc 1 1MiB\n");
    Replay r(p, {"no_such_key:1", ""});
    ASSERT_EQ(r.rp().n_cols, 2u);
    EXPECT_EQ(r.col(0).create_status, GALLOC_E_CONFIG);
    // The offset points into the string the user wrote, not into the one
    // with the tool's sim_capacity in front.
    EXPECT_STREQ(r.col(0).create_error,
                 "create string: Unrecognized key 'no_such_key' in CUDA allocator config (offset 0)");
    EXPECT_EQ(r.col(0).events, 0u);
    EXPECT_EQ(r.col(1).create_status, GALLOC_OK);
    EXPECT_EQ(r.col(1).events, 1u);
}

TEST(Replay, OomKeepsPyTorchsMessageAndTheAnnotation)
{
    std::string p = Write("oom.trace", "galloc-trace 1 device_memory 64MiB\nalloc 1 40MiB\nannotate step 8847\n"
                                       "alloc 2 40MiB\nfree 2\nfree 1\n");
    Replay r(p, {nullptr});
    const ga_replay_column_t &c = r.col(0);
    ASSERT_EQ(c.ooms_total, 1u);
    ASSERT_EQ(c.n_ooms, 1u);
    const ga_replay_oom_t &o = c.ooms[0];
    EXPECT_EQ(o.event, 2u);
    EXPECT_EQ(o.where, 4u);
    EXPECT_EQ(o.size, 40 * MiB);
    EXPECT_FALSE(o.expected);
    EXPECT_STREQ(o.annotation, "step 8847");
    EXPECT_EQ(std::string(o.message).rfind("CUDA out of memory. Tried to allocate 40.00 MiB. GPU 0 has a total "
                                           "capacity of 64.00 MiB",
                                           0),
              0u)
        << o.message;
    EXPECT_EQ(o.allocated, static_cast<int64_t>(40 * MiB));
    EXPECT_EQ(Stat(c, "num_ooms"), 1);
    EXPECT_EQ(c.unmatched, 0u); // the failed allocation's free is consumed silently
}

TEST(Replay, ExpectedOomPoints)
{
    std::string p = Write("exp.trace", "galloc-trace 1\noom 1GiB\n");
    Replay big(p, {nullptr});
    EXPECT_EQ(big.col(0).expected_ooms, 1u);
    EXPECT_EQ(big.col(0).expected_avoided, 1u); // fits on 80 GiB: this configuration avoids it
    EXPECT_EQ(big.col(0).ooms_total, 0u);
    EXPECT_EQ(Stat(big.col(0), "allocated_bytes.all.current"), 0);
    Replay small(p, {nullptr}, 512 * MiB);
    EXPECT_EQ(small.col(0).expected_avoided, 0u);
    ASSERT_EQ(small.col(0).n_ooms, 1u);
    EXPECT_TRUE(small.col(0).ooms[0].expected);

    std::string rmm = Write("exp.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate failure,0x0,"
                                       "1099511627776,0x0\n");
    Replay failure(rmm, {nullptr});
    EXPECT_EQ(failure.col(0).ooms_total, 1u);
    EXPECT_TRUE(failure.col(0).ooms[0].expected);
}

TEST(Replay, StreamsPendingFreesAndCacheControl)
{
    std::string p = Write("streams.trace", "galloc-trace 1\n"
                                           "alloc 1 100MiB 7\n"
                                           "record_stream 1 9\n"
                                           "free 1\n"
                                           "stream_sync 9\n"
                                           "alloc 2 50MiB 7\n"
                                           "free 2 11\n" // freed on another stream
                                           "alloc 3 10MiB\n"
                                           "free_requested 3\n"
                                           "alloc 4 1MiB\n"
                                           "free_completed 3\n"
                                           "free 4\n"
                                           "empty_cache\n"
                                           "set_fraction 0.5\n"
                                           "alloc 5 50GiB\n");
    Replay r(p, {nullptr});
    const ga_replay_column_t &c = r.col(0);
    EXPECT_EQ(c.unmatched, 0u);
    EXPECT_EQ(c.duplicates, 0u);
    EXPECT_EQ(Stat(c, "reserved_bytes.all.current"), 0); // empty_cache released everything
    EXPECT_GE(Stat(c, "num_sync_all_streams"), 1);
    EXPECT_EQ(c.ooms_total, 1u); // 50 GiB is above half of the 80 GiB device
}

TEST(Replay, TraceAnomaliesAreCounted)
{
    std::string p = Write("anom.trace", "galloc-trace 1\nfree 99\nalloc 1 1MiB\nalloc 1 2MiB\nrecord_stream 5 1\n");
    Replay r(p, {nullptr});
    EXPECT_EQ(r.col(0).unmatched, 2u);
    EXPECT_EQ(r.col(0).duplicates, 1u);
    EXPECT_EQ(Stat(r.col(0), "requested_bytes.all.current"), 2 * 1048576); // the stale block was freed
}

// A bad line refuses the whole file at load, with its line: a replay of the
// events before it would read as a verdict.
TEST(Replay, ReadErrorsRefuseTheFileWithTheLine)
{
    std::string p = Write("bad.trace", "galloc-trace 1\nalloc 1 1MiB\nalloc 2\n");
    LoadedJob job(p);
    EXPECT_FALSE(job.ok);
    EXPECT_NE(job.error.find(p + ":3:"), std::string::npos) << job.error;
    EXPECT_EQ(job.units(), 0u);
}

TEST(Replay, ExamplesReplayCleanly)
{
    Replay torch(Example("torch_snapshot.pickle"), {nullptr});
    EXPECT_EQ(torch.col(0).unmatched, 0u);
    Replay rmm(Example("rmm_small.csv"), {nullptr, "expandable_segments:True"});
    EXPECT_EQ(rmm.col(0).unmatched, 0u);
    EXPECT_EQ(rmm.col(0).ooms_total, 0u);
    Replay frag(Example("fragmentation.trace"), {nullptr});
    EXPECT_GT(frag.col(0).ooms_total, 0u); // the example's point: defaults run out of memory
    ASSERT_GT(frag.col(0).n_ooms, 0u);
    EXPECT_GT(frag.col(0).ooms[0].reserved - frag.col(0).ooms[0].allocated, static_cast<int64_t>(GiB));
}

TEST(Sampler, StaysBoundedAndEvenlySpaced)
{
    ga_sampler_t s;
    ASSERT_EQ(ga_sampler_init(&s), 0);
    const uint64_t n = 1000003;
    for (uint64_t i = 0; i < n; i++)
        if (i == s.next)
            ga_sampler_add(&s, i, static_cast<double>(i), 0, 0);
    ga_sampler_add(&s, n - 1, static_cast<double>(n - 1), 0, 0);
    EXPECT_LE(s.n, static_cast<size_t>(GA_SERIES_MAX_POINTS + 1));
    EXPECT_GE(s.n, static_cast<size_t>(GA_SERIES_MAX_POINTS / 2));
    EXPECT_EQ(s.x[0], 0.0);
    EXPECT_EQ(s.x[s.n - 1], static_cast<double>(n - 1));
    for (size_t i = 1; i + 1 < s.n; i++)
        EXPECT_EQ(s.x[i] - s.x[i - 1], static_cast<double>(s.stride)) << i;
    ga_sampler_free(&s);
}

TEST(Replay, SeriesFollowTheReplay)
{
    std::ostringstream t;
    t << "galloc-trace 1\n";
    for (int i = 0; i < 5000; i++)
        t << "alloc " << i << " " << (1 + i % 7) * 1000000 << "\n";
    Replay r(Write("series.trace", t.str()), {nullptr, "expandable_segments:True"}, 0, true);
    for (size_t c = 0; c < 2; c++) {
        ga_series_t s;
        ga_replay_series(&r.rp(), c, &s);
        ASSERT_GT(s.n, 100u);
        EXPECT_LE(s.n, static_cast<size_t>(GA_SERIES_MAX_POINTS + 1));
        EXPECT_EQ(s.event_index[s.n - 1], 4999.0);
        for (size_t i = 1; i < s.n; i++) {
            ASSERT_GT(s.event_index[i], s.event_index[i - 1]);
            EXPECT_GE(s.requested[i], s.requested[i - 1]); // only allocations: memory grows
            EXPECT_GE(s.reserved[i], s.allocated[i]);
            EXPECT_GE(s.allocated[i], s.requested[i]);
        }
        EXPECT_EQ(s.requested[s.n - 1], static_cast<double>(Stat(r.col(c), "requested_bytes.all.current")));
    }
}

// A million events through the whole path (text reader, id map, galloc):
// the rate is printed for the report, not asserted.
TEST(Replay, MillionEventTrace)
{
    std::string p;
    {
        const char *d = std::getenv("TEST_TMPDIR");
        p = std::string(d ? d : "/tmp") + "/million.trace";
        FILE *f = std::fopen(p.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fprintf(f, "galloc-trace 1\n");
        // A sliding window of 1,000 live blocks of mixed sizes: every event
        // after the first thousand is a free followed by an alloc.
        uint64_t x = 88172645463325252ull;
        for (int i = 0; i < 500000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t size = (x % 4 == 0) ? (x >> 8) % (64 * MiB) + 1 : (x >> 8) % 65536 + 1;
            std::fprintf(f, "alloc %d %llu\n", i, static_cast<unsigned long long>(size));
            if (i >= 1000)
                std::fprintf(f, "free %d\n", i - 1000);
        }
        for (int i = 499000; i < 500000; i++)
            std::fprintf(f, "free %d\n", i);
        std::fclose(f);
    }
    const char *d = std::getenv("TEST_TMPDIR");
    (void)d;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    LoadedJob loaded(p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double read_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    Replay r(p, {nullptr});
    const ga_replay_column_t &c = r.col(0);
    EXPECT_EQ(r.rp().events, 1000000u);
    EXPECT_EQ(c.events, 1000000u);
    EXPECT_EQ(c.ooms_total, 0u);
    EXPECT_EQ(c.unmatched, 0u);
    EXPECT_EQ(Stat(c, "allocated_bytes.all.current"), 0);
    double replay_rate = static_cast<double>(c.events) / c.seconds;
    double read_rate = static_cast<double>(r.rp().events) / read_seconds;
    std::printf("1,000,000 events: replay %.3f s (%.2f M events/s), read+parse %.3f s (%.2f M events/s)\n", c.seconds,
                replay_rate / 1e6, read_seconds, read_rate / 1e6);
    RecordProperty("replay_events_per_second", static_cast<int>(replay_rate));
    RecordProperty("read_events_per_second", static_cast<int>(read_rate));
}

// --snapshot-range through the engine: recording starts at FIRST and the
// snapshot holds the state after LAST; read back with the --verify reader.
TEST(Replay, SnapshotRangeAndVerifyReader)
{
    std::string p = Write("range.trace", "galloc-trace 1\nalloc 1 3MiB\nalloc 2 30MiB\nalloc 3 40MiB\nfree 2\n"
                                         "alloc 4 3MiB\n");
    std::string snap = Write("range.pickle", "");
    char err[512];
    LoadedJob job(p);
    ASSERT_TRUE(job.ok) << job.error;
    const char *paths[] = {snap.c_str()};
    ga_replay_opts_t o = {};
    o.snapshot_paths = paths;
    o.snapshot_ops = &ga_outputs_snapshot_ops;
    o.snapshot_range = true;
    o.snapshot_first = 1;
    o.snapshot_last = 2;
    ga_replay_t rp;
    ASSERT_EQ(ga_replay_run(job.unit(), &o, nullptr, 0, &rp), 0);
    EXPECT_STREQ(rp.cols[0].snapshot_error, "");
    EXPECT_TRUE(rp.cols[0].snapshot_done);
    ga_replay_release(&rp);

    ga_snap_view_t v;
    SnapFile f(snap);
    ASSERT_NE(f.snap(), nullptr) << f.error;
    ASSERT_EQ(ga_snap_view_load(f.snap(), snap.c_str(), -1, 0, &v, err, sizeof(err)), 0) << err;
    // Events 1 and 2 only: a 30 MiB and a 40 MiB segment; the 20 MiB segment
    // of event 0 predates the range, so its live block counts as untraced.
    ASSERT_EQ(v.n_ev, 2u);
    EXPECT_EQ(v.ev[0].action, GA_DEV_SEGMENT_ALLOC);
    EXPECT_EQ(v.ev[0].size, 30 * MiB);
    EXPECT_EQ(v.ev[0].segment, 0);
    EXPECT_EQ(v.ev[1].size, 40 * MiB);
    EXPECT_EQ(v.ev[1].segment, 1);
    ASSERT_EQ(v.n_seg, 3u);
    EXPECT_EQ(v.untraced_segments, 1u);
    EXPECT_EQ(v.untraced_blocks, 1u);
    EXPECT_EQ(v.device_memory, 0u); // no oom entry: no bound
    ga_snap_view_free(&v);
}

TEST(Verify, ExampleSnapshotDevices)
{
    char err[512];
    ga_snap_view_t v;
    SnapFile f(Example("torch_snapshot.pickle"));
    ASSERT_NE(f.snap(), nullptr) << f.error;
    ASSERT_EQ(ga_snap_view_load(f.snap(), "torch_snapshot.pickle", -1, 0, &v, err, sizeof(err)), 0) << err;
    EXPECT_EQ(v.device, 0);
    EXPECT_EQ(v.trace_entries, 300u);
    EXPECT_EQ(v.untraced_segments, 9u); // the ring buffer wrapped: most segments predate the trace
    EXPECT_EQ(v.untraced_blocks, 11u);
    ga_snap_view_free(&v);
    ASSERT_EQ(ga_snap_view_load(f.snap(), "torch_snapshot.pickle", -1, 1, &v, err, sizeof(err)), 0) << err;
    EXPECT_EQ(v.device, 1);
    ASSERT_EQ(v.n_ev, 2u);
    EXPECT_EQ(v.ev[0].size, 30 * MiB);
    EXPECT_EQ(v.ev[1].size, 2 * MiB);
    EXPECT_EQ(v.untraced_blocks + v.untraced_segments, 0u);
    ASSERT_EQ(v.n_seg, 2u);
    EXPECT_EQ(v.seg[0].segment, 0);
    ASSERT_EQ(v.seg[0].n_blocks, 2u);
    EXPECT_EQ(v.blk[v.seg[0].first_block].state, GA_BLOCK_ALLOCATED);
    ga_snap_view_free(&v);
    SnapFile bad(Write("notpickle", "hello"));
    EXPECT_EQ(bad.snap(), nullptr);
    EXPECT_NE(bad.error.find("notpickle"), std::string::npos) << bad.error;
}

// ga_verify_unit end to end on a snapshot galloc wrote: every device event
// and final segment agrees, and the exit code says so.
TEST(Verify, GallocsOwnSnapshotAgrees)
{
    std::string p = Write("own.trace", "galloc-trace 1\nalloc 1 3MiB\nalloc 2 30MiB\nfree 1\nalloc 3 12MiB\n");
    std::string snap = Write("own.pickle", "");
    {
        LoadedJob job(p);
        ASSERT_TRUE(job.ok) << job.error;
        const char *paths[] = {snap.c_str()};
        ga_replay_opts_t o = {};
        o.snapshot_paths = paths;
        o.snapshot_ops = &ga_outputs_snapshot_ops;
        ga_replay_t rp;
        ASSERT_EQ(ga_replay_run(job.unit(), &o, nullptr, 0, &rp), 0);
        ga_replay_release(&rp);
    }
    LoadedJob written(snap);
    ASSERT_TRUE(written.ok) << written.error;
    std::string out = Write("verify.out", "");
    FILE *f = std::fopen(out.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ga_verify_opts_t vo = {};
    EXPECT_EQ(ga_verify_unit(written.unit(), &vo, true, f), 0);
    std::fclose(f);
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    // A 20 MiB and a 30 MiB segment: the 12 MiB request is split off the
    // freed 20 MiB segment (best fit), as PyTorch does.
    EXPECT_NE(ss.str().find("device events: 2 of 2 agree"), std::string::npos) << ss.str();
    EXPECT_NE(ss.str().find("final segments: 2 of 2 agree"), std::string::npos) << ss.str();
    EXPECT_NE(ss.str().find("verdict: agrees"), std::string::npos) << ss.str();
}

// A view of final segments made before the trace, one per pool id given, each
// a 20 MiB segment holding one allocated block: what the pool comparison sees.
struct PoolView {
    std::vector<ga_snap_segment_t> seg;
    std::vector<ga_snap_block_t> blk;
    ga_snap_view_t v = {};
    explicit PoolView(const std::vector<std::pair<int64_t, int64_t>> &pools)
    {
        for (size_t i = 0; i < pools.size(); i++) {
            ga_snap_segment_t g = {};
            g.addr = 0x7f0000000000ull + i * 32 * MiB;
            g.total_size = 20 * MiB;
            g.pool_id[0] = pools[i].first;
            g.pool_id[1] = pools[i].second;
            g.segment = -1; // matched by rank among the segments made before the trace
            g.first_block = i;
            g.n_blocks = 1;
            seg.push_back(g);
            blk.push_back(ga_snap_block_t{20 * MiB, GA_BLOCK_ALLOCATED});
        }
        v.seg = seg.data();
        v.n_seg = seg.size();
        v.blk = blk.data();
        v.n_blk = blk.size();
    }
};

// Pool ids are compared by correspondence (verify.h): the record's first
// private pool pairs with galloc's pool of the segment matched to it, and
// every later segment must keep that pairing both ways.
TEST(Verify, PoolIdsByCorrespondence)
{
    struct Case {
        std::vector<std::pair<int64_t, int64_t>> rec, rep;
        size_t agree;
        const char *first; // the first difference, "" for none
    } cases[] = {
        // graph pools (5, 0), (6, 0) seeded as galloc's (0, 1), (0, 2)
        {{{0, 0}, {5, 0}, {5, 0}, {6, 0}}, {{0, 0}, {0, 1}, {0, 1}, {0, 2}}, 4, ""},
        // two recorded pools in one of galloc's
        {{{5, 0}, {6, 0}},
         {{0, 1}, {0, 1}},
         1,
         "the segment at 0x7f0002000000 (made before the trace): segment_pool_id (6, 0) in the snapshot, (0, 1) "
         "in galloc; galloc's pool (0, 1) is the snapshot's (5, 0)"},
        // one recorded pool split over two of galloc's
        {{{5, 0}, {5, 0}},
         {{0, 1}, {0, 2}},
         1,
         "the segment at 0x7f0002000000 (made before the trace): segment_pool_id (5, 0) in the snapshot, (0, 2) "
         "in galloc; the snapshot's pool (5, 0) is galloc's (0, 1)"},
        // the default pools pair only with themselves, whatever galloc numbers
        {{{0, 0}, {0, 1}},
         {{0, 1}, {0, 0}},
         0,
         "the segment at 0x7f0000000000 (made before the trace): segment_pool_id (0, 0) in the snapshot, (0, 1) "
         "in galloc"},
    };
    for (const Case &c : cases) {
        PoolView rec(c.rec), rep(c.rep);
        ga_verify_cmp_t cmp;
        ga_verify_compare(&rec.v, &rep.v, &cmp);
        EXPECT_EQ(cmp.seg_total, c.rec.size());
        EXPECT_EQ(cmp.seg_agree, c.agree) << cmp.seg_first;
        EXPECT_STREQ(cmp.seg_first, c.first);
        EXPECT_FALSE(cmp.diverged); // no device events on either side
        EXPECT_EQ(ga_verify_compared(&cmp), c.rec.size());
    }
}

// The state at the example's first trace entry, rebuilt backwards: 9
// segments (one is made in the trace), 11 live blocks, pieces tiling each
// segment exactly in address order.
TEST(Verify, SeedFromTheExampleSnapshot)
{
    char err[512];
    ga_seed_t s;
    SnapFile f(Example("torch_snapshot.pickle"));
    ASSERT_NE(f.snap(), nullptr) << f.error;
    ASSERT_EQ(ga_seed_from_snapshot(f.snap(), "torch_snapshot.pickle", 0, &s, err, sizeof(err)), 0) << err;
    EXPECT_EQ(s.n_seg, 9u);
    EXPECT_EQ(s.live_blocks, 11u);
    for (size_t i = 0; i < s.n_seg; i++) {
        const ga_seed_segment_t &g = s.seg[i];
        uint64_t at = g.addr;
        for (size_t k = g.first; k < g.first + g.n; k++) {
            EXPECT_EQ(s.pc[k].addr, at) << "segment " << i << " piece " << k;
            at += s.pc[k].size;
        }
        EXPECT_EQ(at, g.addr + g.size) << "segment " << i;
        if (i > 0) {
            EXPECT_GT(g.addr, s.seg[i - 1].addr);
        }
    }
    ga_seed_free(&s);
}

} // namespace
