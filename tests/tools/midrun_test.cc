// midrun_test.cc: traces that start mid-run (issue 18, item 1). A Kineto
// trace's totals say what was allocated and reserved before its first event;
// the reader recreates it as a prologue (pinned power-of-two blocks, one
// GA_EV_RESERVE), replay and fit start from it, and the reports say so. A
// synthetic trace with exact figures, a trace without totals, and the real
// HolisticTraceAnalysis trace (V100, device 1), whose own Total Allocated and
// Total Reserved peaks the replay is compared with.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/tools/fit_util.h"
#include "tests/tools/shared_traces.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include <galloc/galloc.h>
#include "tools/engine/replay.h"
#include "tools/fit/fit.h"
#include "tools/readers/trace_reader.h"
#include "tools/report/report.h"
}

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20, GiB = uint64_t{1} << 30;

std::string Mem(double ts, long long addr, long long bytes, long long ta, long long tr, bool totals = true)
{
    std::string a = "{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": " + std::to_string(ts) +
                    ", \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": " + std::to_string(addr) +
                    ", \"Bytes\": " + std::to_string(bytes);
    if (totals)
        a += ", \"Total Allocated\": " + std::to_string(ta) + ", \"Total Reserved\": " + std::to_string(tr);
    return a + "}}";
}

// The profiler started with 96 MiB allocated and 256 MiB reserved: 64 MiB
// and 32 MiB come and go in the window (the second event in the file is the
// first in time). Peaks: Total Allocated 192 MiB, Total Reserved 256 MiB.
std::string MidRun(bool totals)
{
    const long long M = 1 << 20, R = 256 * M;
    return "{\"traceEvents\": [\n" + Mem(2, 0x20000000, 32 * M, 192 * M, R, totals) + ",\n" +
           Mem(1, 0x10000000, 64 * M, 160 * M, R, totals) + ",\n" + Mem(3, 0x10000000, -64 * M, 128 * M, R, totals) +
           ",\n" + Mem(4, 0x20000000, -32 * M, 96 * M, R, totals) + "\n]}\n";
}

struct Events {
    std::vector<ga_event_t> ev;
    ga_reader_notes_t notes = {};
    explicit Events(const std::string &path)
    {
        char err[512] = "";
        ga_reader_t *r = nullptr;
        EXPECT_EQ(ga_reader_open(path.c_str(), GA_FORMAT_AUTO, &r, err, sizeof err), 0) << err;
        if (r == nullptr)
            return;
        ga_event_t e;
        while (ga_reader_next(r, &e, err, sizeof err) == 1)
            ev.push_back(e);
        ga_reader_notes(r, &notes);
        ga_reader_close(r);
    }
};

TEST(MidRun, KinetoTotalsBecomeAPrologue)
{
    Events r(Write("midrun.json", MidRun(true)));
    ASSERT_EQ(r.ev.size(), 7u);
    // 96 MiB live = 64 MiB + 32 MiB pinned blocks, then reserved up to 256 MiB.
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[0].size, 64 * MiB);
    EXPECT_EQ(r.ev[0].flags, GA_EVF_PROLOGUE | GA_EVF_SEEDED);
    EXPECT_EQ(r.ev[1].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[1].size, 32 * MiB);
    EXPECT_NE(r.ev[0].id, r.ev[1].id);
    EXPECT_EQ(r.ev[2].kind, GA_EV_RESERVE);
    EXPECT_EQ(r.ev[2].size, 256 * MiB);
    EXPECT_EQ(r.ev[2].flags, GA_EVF_PROLOGUE);
    EXPECT_EQ(r.ev[3].kind, GA_EV_ALLOC); // the trace, in time order
    EXPECT_EQ(r.ev[3].size, 64 * MiB);
    EXPECT_EQ(r.ev[3].flags, 0u);
    EXPECT_EQ(r.notes.prologue, 3u);
    EXPECT_EQ(r.notes.start.kind, GA_START_SEEDED);
    EXPECT_EQ(r.notes.start.live, 96 * MiB);
    EXPECT_EQ(r.notes.start.reserved, 256 * MiB);
    EXPECT_EQ(r.notes.start.peak_allocated, 192 * MiB);
    EXPECT_EQ(r.notes.start.peak_reserved, 256 * MiB);
}

TEST(MidRun, WithoutTotalsTheStartIsUnknown)
{
    Events r(Write("midrun_nototals.json", MidRun(false)));
    ASSERT_EQ(r.ev.size(), 4u); // no prologue: nothing to seed from
    EXPECT_EQ(r.notes.prologue, 0u);
    EXPECT_EQ(r.notes.start.kind, GA_START_UNKNOWN);
    char *buf = nullptr;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ga_report_start_text(f, &r.notes.start, "");
    ga_report_json_start(f, &r.notes.start);
    fclose(f);
    EXPECT_EQ(std::string(buf),
              "note: the trace has no allocator totals (Total Allocated, Total Reserved): if it starts mid-run, "
              "memory allocated or reserved before its first event is not included in these figures, and a "
              "device size found here is too small by that much\n"
              "{\"kind\": \"unknown\", \"not_included\": \"memory allocated or reserved before the first event\"}");
    free(buf);
}

// Replays path (unit 0) under the defaults on a device of mem bytes.
struct Replayed {
    LoadedJob job;
    ga_replay_t rp = {};
    bool ok = false;
    Replayed(const std::string &path, uint64_t mem) : job(path, mem)
    {
        EXPECT_TRUE(job.ok) << job.error;
        ga_replay_opts_t o = {};
        o.check = true;
        ok = job.ok && ga_replay_run(job.unit(), &o, nullptr, 0, &rp) == 0;
        EXPECT_TRUE(ok);
    }
    ~Replayed()
    {
        if (ok)
            ga_replay_release(&rp);
    }
    const galloc_stats_t &st() const { return rp.cols[0].stats; }
};

TEST(MidRun, ReplayStartsFromTheTracedState)
{
    Replayed r(Write("midrun_replay.json", MidRun(true)), 1 * GiB);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.rp.cols[0].errors, 0u) << r.rp.cols[0].first_error;
    EXPECT_EQ(r.rp.cols[0].ooms_total, 0u);
    // Pinned 64 + 32 MiB, cached 128 + 32 MiB: the window's 64 MiB splits
    // the 128 MiB segment, its 32 MiB takes the cached 32 MiB one.
    EXPECT_EQ(r.st().allocated_bytes[GALLOC_STAT_ALL].peak, (int64_t)(192 * MiB)); // = the trace's Total Allocated
    EXPECT_EQ(r.st().reserved_bytes[GALLOC_STAT_ALL].peak, (int64_t)(256 * MiB));  // = its Total Reserved
    EXPECT_EQ(r.st().requested_bytes[GALLOC_STAT_ALL].peak, (int64_t)(192 * MiB));
    EXPECT_EQ(r.st().allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(96 * MiB)); // the pinned blocks
    EXPECT_EQ(r.st().num_device_alloc, 4);
    char *buf = nullptr;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ga_report_start_text(f, &r.job.unit()->notes.start, "");
    ga_report_json_start(f, &r.job.unit()->notes.start);
    fclose(f);
    EXPECT_EQ(std::string(buf),
              "note: the trace starts mid-run: 96.00 MiB allocated and 256.00 MiB reserved before its first event "
              "(its totals); replayed from that state: 96.00 MiB pinned (never freed), 160.00 MiB cached free\n"
              "note: the trace's own peaks: Total Allocated 192.00 MiB (201326592 B), Total Reserved 256.00 MiB "
              "(268435456 B)\n"
              "{\"kind\": \"seeded\", \"live_bytes\": 100663296, \"reserved_bytes\": 268435456, \"model\": "
              "\"live bytes as pinned blocks never freed, the reserved remainder as cached free segments (as much "
              "as the device holds)\", \"trace_peak_allocated_bytes\": 201326592, \"trace_peak_reserved_bytes\": "
              "268435456}");
    free(buf);
}

// The smallest device: what the job needed (the trace's Total Allocated
// peak, 192 MiB), not the 96 MiB the window alone allocates; on a smaller
// device less is cached (as PyTorch could not have cached more).
TEST(MidRun, FitCountsTheMemoryInUseBeforeTheTrace)
{
    std::string trace = Write("midrun_fit.json", MidRun(true));
    FitJob fj(trace, 1 * GiB);
    ASSERT_TRUE(fj.ok) << fj.error;
    ga_fit_job_t &job = fj.job;
    EXPECT_EQ(job.max_alloc, 64 * MiB); // the stand-in blocks are no request of the job
    ga_fit_run_t at;
    ASSERT_EQ(ga_fit_replay(&job, "", false, &at), 0) << at.error;
    EXPECT_TRUE(at.fits);
    EXPECT_EQ(at.peak_allocated, (int64_t)(192 * MiB));
    EXPECT_EQ(at.peak_reserved, (int64_t)(256 * MiB));
    EXPECT_EQ(at.allocated_at_peak, (int64_t)(96 * MiB)); // reserved peaked when the cache was seeded
    uint32_t replays = 0;
    uint64_t min = ga_fit_min_memory(&job, "", false, &at, &replays);
    EXPECT_EQ(min, 192 * MiB);
    FitJob small(trace, 190 * MiB);
    ga_fit_run_t below;
    ASSERT_EQ(ga_fit_replay(&small.job, "", false, &below), 0);
    EXPECT_FALSE(below.fits);
    EXPECT_EQ(below.oom.cls, GA_OOM_GENUINE);
}

// The real trace of shared/traces (HolisticTraceAnalysis tests/data, MIT; the
// README beside it gives the provenance), read from its .json.gz: 3.82 GiB
// allocated and 11.90 GiB reserved before its first event.
TEST(MidRun, RealHtaTraceMatchesItsOwnTotals)
{
    GA_SHARED_TRACE(path, "kineto-hta-rank1-memory.json.gz");
    Replayed r(path, 32 * GiB); // a Tesla V100-SXM2-32GB
    ASSERT_TRUE(r.ok);
    const ga_reader_start_t &s = r.job.unit()->notes.start;
    EXPECT_EQ(s.kind, GA_START_SEEDED);
    EXPECT_EQ(s.live, 4096614400u);      // first Total Allocated 4,121,780,224 - its Bytes 25,165,824
    EXPECT_EQ(s.reserved, 12782141440u); // Total Reserved, constant in the window
    EXPECT_EQ(s.peak_allocated, 6629508096u);
    EXPECT_EQ(s.peak_reserved, 12782141440u);
    EXPECT_EQ(r.rp.cols[0].ooms_total, 0u);
    EXPECT_EQ(r.rp.cols[0].unmatched, 0u);
    // Requested bytes are the traced block sizes: the trace's own peak exactly.
    EXPECT_EQ(r.st().requested_bytes[GALLOC_STAT_ALL].peak, 6629508096);
    // galloc hands out a few blocks whole where the remainder is too small to
    // split, and adds small-pool segments: a little above the traced totals.
    EXPECT_EQ(r.st().allocated_bytes[GALLOC_STAT_ALL].peak, 6643786752);
    EXPECT_EQ(r.st().reserved_bytes[GALLOC_STAT_ALL].peak, 12853444608);
    EXPECT_GE(r.st().reserved_bytes[GALLOC_STAT_ALL].peak, 12782141440);

    FitJob fj(path, 32 * GiB);
    ASSERT_TRUE(fj.ok) << fj.error;
    ga_fit_job_t &job = fj.job;
    ga_fit_run_t at;
    ASSERT_EQ(ga_fit_replay(&job, "", false, &at), 0) << at.error;
    EXPECT_TRUE(at.fits);
    uint32_t replays = 0;
    uint64_t min = ga_fit_min_memory(&job, "", false, &at, &replays);
    // Before seeding: 2.46 GiB. Now at least what the job had allocated at
    // its peak (the cached remainder is not needed: the OOM path frees it).
    EXPECT_GE(min, 6629508096u);
    // 6.26 GiB (2 MiB steps), with the sim placing segments as CUDA does
    // (descending, freed ranges reused: fit's default placement).
    EXPECT_EQ(min, 6723469312u);
}

} // namespace

namespace {

std::string Facts(const ga_oom_facts_t &f, bool none_fits)
{
    char *buf = nullptr;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    ga_report_oom_facts(out, &f, nullptr, none_fits);
    fclose(out);
    std::string s(buf);
    free(buf);
    return s;
}

// The per-OOM hint (issue 18, item 3): a fragmentation OOM names only the
// settings its configuration lacks, none when it has both, and none at all
// when galloc fit found no configuration that fits.
TEST(Advice, FragmentationHintNeverRepeatsOrContradicts)
{
    ga_oom_facts_t f = {};
    f.cls = GA_OOM_FRAGMENTATION;
    f.size = 256 * MiB;
    f.cached_free = (int64_t)(2 * GiB);
    f.largest_free_block = (int64_t)(128 * MiB);
    f.device_free = f.usable_free = 64 * MiB;
    f.device_total = f.limit = 8 * GiB;
    f.fraction = 1.0;
    const std::string head = "  fragmentation: 256.00 MiB requested <= 2.00 GiB cached free + 64.00 MiB device free, "
                             "but the largest free block is 128.00 MiB; ";
    EXPECT_EQ(Facts(f, false), head + "settings can help (galloc fit: expandable_segments:True, max_split_size_mb)\n");
    f.has_expandable = true;
    EXPECT_EQ(Facts(f, false), head + "settings can help (galloc fit: max_split_size_mb)\n");
    f.has_max_split = true;
    EXPECT_EQ(Facts(f, false), head + "this configuration already has expandable_segments:True and "
                                      "max_split_size_mb (galloc fit searches the other settings)\n");
    f.has_expandable = false;
    EXPECT_EQ(Facts(f, false), head + "settings can help (galloc fit: expandable_segments:True)\n");
    EXPECT_EQ(Facts(f, true), head + "no configuration galloc fit tried fits this device, so no setting is enough\n");
}

} // namespace
