// owners_test.cc: who holds the memory (issue 37; tools/engine/owners.h,
// docs/owners.md). Snapshots are recorded here by galloc itself, on the sim
// device, with a trace source giving every call the stack and time the test
// chooses, so each moment's owners have exact figures: a genuine OOM whose top
// site is known, a fragmentation OOM whose holes one site pins, a window that
// starts mid-run, record_function ranges that make a phase, a trace with no
// stacks; the invariant (owners sum to allocated, segments to reserved) on
// every moment.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/tools/job_util.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include <galloc/galloc.h>
#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/job/job.h"
}

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr int64_t T0 = 1700000000000000; // the recording's clock: token t happens at T0 + 1000 t

using Stack = std::vector<galloc_frame_t>;

// Frames the tests hand out (innermost first).
const Stack kBuild = {{"model.py", "build", 10}, {"train.py", "main", 40}};
const Stack kForward = {{"model.py", "forward", 20},
                        {"/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "_call_impl", 1790},
                        {"train.py", "step", 30},
                        {"train.py", "main", 41}};
const Stack kRequest = {{"train.py", "step", 31}, {"train.py", "main", 41}};
const Stack kFree = {{"train.py", "step", 99}};

// A recording allocator whose every call has a token: its stack and time.
struct Recorder {
    galloc_allocator_t *a = nullptr;
    std::vector<Stack> stacks{Stack{}}; // token 0: none
    uint32_t cur = 0;

    Recorder(const std::string &conf, size_t max_entries = 0)
    {
        char err[GALLOC_ERROR_MAX] = "";
        EXPECT_EQ(galloc_allocator_create("sim", 0, conf.c_str(), &a, err, sizeof err), GALLOC_OK) << err;
        galloc_trace_source_t src = {};
        src.struct_size = sizeof src;
        src.ctx = this;
        src.token = [](void *c) { return static_cast<Recorder *>(c)->cur; };
        src.time_us = [](void *, uint32_t t, const char *) { return T0 + 1000 * static_cast<int64_t>(t); };
        src.frames = [](void *c, uint32_t t, const char *, const galloc_frame_t **out) -> size_t {
            auto *r = static_cast<Recorder *>(c);
            *out = r->stacks[t].data();
            return r->stacks[t].size();
        };
        EXPECT_EQ(galloc_set_trace_source(a, &src), GALLOC_OK);
        galloc_history_options_t h = {sizeof h, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON,
                                      max_entries};
        EXPECT_EQ(galloc_record_memory_history(a, &h), GALLOC_OK);
    }
    ~Recorder() { galloc_allocator_destroy(a); }
    void Next(const Stack &s)
    {
        stacks.push_back(s);
        cur = static_cast<uint32_t>(stacks.size() - 1);
    }
    void *Alloc(uint64_t size, const Stack &s, galloc_status_t want = GALLOC_OK)
    {
        Next(s);
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a, size, 0, &p), want);
        return p;
    }
    void Free(void *p)
    {
        Next(kFree);
        EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    }
    void Range(const char *stage, const char *name)
    {
        Next(Stack{});
        EXPECT_EQ(galloc_record_annotation(a, stage, name), GALLOC_OK);
    }
    std::string Write(const std::string &name)
    {
        std::string p = TmpPath(name);
        EXPECT_EQ(galloc_snapshot_write(a, p.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
        return p;
    }
};

// A unit replayed under its recorded settings with owners.
struct Owned {
    ga_replay_column_t c = {};
    explicit Owned(const ga_job_unit_t *u, const char *conf = nullptr)
    {
        ga_replay_opts_t o = {};
        o.owners = true;
        o.check = true;
        ga_replay_spec_t spec = conf ? ga_replay_spec_t{conf, false} : ga_replay_default_spec(u);
        EXPECT_EQ(ga_replay_column(u, &o, &spec, nullptr, &c), 0);
        EXPECT_NE(c.owners, nullptr);
        EXPECT_EQ(c.errors, 0u) << c.first_error;
    }
    ~Owned() { ga_replay_column_release(&c); }
    const ga_owners_t &w() const { return *c.owners; }
};

std::string SiteName(const ga_owners_t &w, uint32_t site)
{
    return w.index->sites[site].key;
}

// The sites of moment m, most bytes first.
std::vector<ga_owner_site_row_t> Sites(const ga_owners_t &w, const ga_owners_moment_t &m)
{
    ga_owner_site_row_t *rows = nullptr;
    size_t n = 0;
    EXPECT_EQ(ga_owners_sites(&m, w.index, &rows, &n), 0);
    std::vector<ga_owner_site_row_t> v(rows, rows + n);
    free(rows);
    return v;
}

void ExpectInvariant(const ga_owners_moment_t &m)
{
    char why[256] = "";
    EXPECT_TRUE(ga_owners_moment_check(&m, why, sizeof why)) << why;
}

TEST(Owners, GenuineOomNamesTheSiteThatHoldsTheMemory)
{
    std::string path;
    {
        Recorder r("sim_capacity:1GiB");
        for (int i = 0; i < 4; i++)
            r.Alloc(64 * MiB, kBuild); // weights: never freed
        std::vector<void *> acts;
        for (int i = 0; i < 8; i++)
            acts.push_back(r.Alloc(64 * MiB, kForward));
        r.Alloc(300 * MiB, kRequest, GALLOC_E_OOM); // 768 MiB live + 300 MiB > 1 GiB
        for (void *p : acts)
            r.Free(p);
        path = r.Write("genuine.pickle");
    }
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    const ga_job_unit_t *u = j.unit();
    EXPECT_EQ(u->memory, 1024 * MiB); // reserved + device_free at the oom entry
    Owned o(u);
    ASSERT_EQ(o.c.ooms_total, 1u);
    EXPECT_EQ(o.c.ooms[0].facts.cls, GA_OOM_GENUINE);
    const ga_owners_t &w = o.w();
    ASSERT_EQ(w.n_ooms, 1u);
    const ga_owners_moment_t &m = w.ooms[0];
    ExpectInvariant(m);
    EXPECT_EQ(m.event, 12u);
    EXPECT_EQ(m.allocated, int64_t(768 * MiB));
    EXPECT_EQ(m.reserved, int64_t(768 * MiB));
    EXPECT_EQ(m.time_us, T0 + 13000); // token 13: the failed malloc
    EXPECT_EQ(m.request_size, 300 * MiB);
    ASSERT_NE(m.request_cls, UINT32_MAX);
    const ga_owner_class_t &rq = w.index->classes[m.request_cls];
    EXPECT_EQ(SiteName(w, rq.site), "train.py:31 step");
    EXPECT_EQ(rq.phase, GA_PHASE_OTHER);

    auto sites = Sites(w, m);
    ASSERT_EQ(sites.size(), 2u);
    EXPECT_EQ(SiteName(w, sites[0].site), "model.py:20 forward");
    EXPECT_EQ(sites[0].cell.bytes, int64_t(512 * MiB));
    EXPECT_EQ(sites[0].cell.blocks, 8);
    EXPECT_EQ(sites[0].cell.kept_bytes, 0); // freed later: transient
    EXPECT_EQ(sites[0].phase_bytes[GA_PHASE_FORWARD], int64_t(512 * MiB));
    double ev, us;
    ASSERT_TRUE(ga_owner_mean_age(&sites[0].cell, &m, w.t0_us, &ev, &us));
    EXPECT_DOUBLE_EQ(ev, 12 - 7.5);     // allocated at events 4..11
    EXPECT_DOUBLE_EQ(us, 13000 - 8500); // tokens 5..12, the OOM's 13
    EXPECT_EQ(SiteName(w, sites[1].site), "model.py:10 build");
    EXPECT_EQ(sites[1].cell.bytes, int64_t(256 * MiB));
    EXPECT_EQ(sites[1].cell.kept_bytes, int64_t(256 * MiB)); // never freed: persistent
    EXPECT_EQ(sites[1].phase_bytes[GA_PHASE_OTHER], int64_t(256 * MiB));
    ASSERT_TRUE(m.has_segments);
    EXPECT_EQ(m.n_segments, 12u);
    for (size_t i = 0; i < m.n_segments; i++)
        EXPECT_EQ(m.segments[i].free_bytes, 0u);

    // The peaks: 768 MiB allocated and reserved, first reached at event 11.
    ExpectInvariant(w.peak_allocated);
    ExpectInvariant(w.peak_reserved);
    EXPECT_EQ(w.peak_allocated.event, 11u);
    EXPECT_EQ(w.peak_allocated.allocated, int64_t(768 * MiB));
    EXPECT_EQ(w.peak_reserved.event, 11u);
    EXPECT_EQ(w.peak_reserved.reserved, int64_t(768 * MiB));
    EXPECT_EQ(o.c.stats.allocated_bytes[GALLOC_STAT_ALL].peak, w.peak_allocated.allocated);
    EXPECT_EQ(o.c.stats.reserved_bytes[GALLOC_STAT_ALL].peak, w.peak_reserved.reserved);
}

TEST(Owners, FragmentationOomShowsTheHolesAndWhoPinsThem)
{
    const Stack load = {{"data.py", "load", 5}, {"train.py", "main", 20}};
    const Stack pin = {{"cache.py", "pin", 7}, {"train.py", "main", 22}};
    const Stack big = {{"train.py", "main", 23}};
    std::string path;
    {
        Recorder r("sim_capacity:1000MiB");
        std::vector<void *> blocks;
        for (int i = 0; i < 9; i++)
            blocks.push_back(r.Alloc(100 * MiB, load)); // nine 100 MiB segments
        for (void *p : blocks)
            r.Free(p); // cached
        for (int i = 0; i < 9; i++)
            r.Alloc(60 * MiB, pin);            // each splits a cached 100 MiB block: a 40 MiB hole beside it
        r.Alloc(120 * MiB, big, GALLOC_E_OOM); // 360 MiB free in holes + 100 MiB on the device, none in one piece
        path = r.Write("frag.pickle");
    }
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    Owned o(j.unit());
    ASSERT_EQ(o.c.ooms_total, 1u);
    EXPECT_EQ(o.c.ooms[0].facts.cls, GA_OOM_FRAGMENTATION);
    const ga_owners_t &w = o.w();
    ASSERT_EQ(w.n_ooms, 1u);
    const ga_owners_moment_t &m = w.ooms[0];
    ExpectInvariant(m);
    EXPECT_EQ(m.allocated, int64_t(540 * MiB));
    auto sites = Sites(w, m);
    ASSERT_EQ(sites.size(), 1u);
    EXPECT_EQ(SiteName(w, sites[0].site), "cache.py:7 pin");
    EXPECT_EQ(sites[0].cell.blocks, 9);
    ASSERT_TRUE(m.has_segments);
    ASSERT_EQ(m.n_segments, 9u);
    for (size_t i = 0; i < m.n_segments; i++) {
        const ga_owner_segment_t &s = m.segments[i];
        EXPECT_EQ(s.size, 100 * MiB);
        EXPECT_EQ(s.free_bytes, 40 * MiB);
        EXPECT_EQ(s.largest_free, 40 * MiB);
        ASSERT_EQ(s.n_pins, 1u);
        EXPECT_EQ(SiteName(w, w.index->classes[s.pins[0]].site), "cache.py:7 pin");
        EXPECT_EQ(s.pin_bytes[0], 60 * MiB);
    }
    // The reserved peak is the nine segments, reached by the ninth 100 MiB allocation.
    EXPECT_EQ(w.peak_reserved.reserved, int64_t(900 * MiB));
    EXPECT_EQ(w.peak_reserved.event, 8u);
    ExpectInvariant(w.peak_reserved);
}

TEST(Owners, RecordFunctionRangesMakeThePhase)
{
    const Stack step = {{"train.py", "step", 38}};
    std::string path;
    {
        Recorder r("sim_capacity:1GiB");
        r.Alloc(32 * MiB, kForward);
        r.Range("START", "Optimizer.step#SGD.step");
        r.Alloc(16 * MiB, step); // no torch/optim frame: the range says optimizer
        r.Range("END", "Optimizer.step#SGD.step");
        r.Alloc(8 * MiB, step); // the same line outside the range: other
        path = r.Write("ranges.pickle");
    }
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    Owned o(j.unit());
    const ga_owners_t &w = o.w();
    const ga_owners_moment_t &m = w.peak_allocated;
    ExpectInvariant(m);
    EXPECT_EQ(m.allocated, int64_t(56 * MiB));
    ga_owner_cell_t ph[GA_PHASES];
    ga_owners_phases(&m, w.index, ph);
    EXPECT_EQ(ph[GA_PHASE_FORWARD].bytes, int64_t(32 * MiB));
    EXPECT_EQ(ph[GA_PHASE_OPTIMIZER].bytes, int64_t(16 * MiB));
    EXPECT_EQ(ph[GA_PHASE_OTHER].bytes, int64_t(8 * MiB));
    auto sites = Sites(w, m);
    ASSERT_EQ(sites.size(), 2u);
    EXPECT_EQ(SiteName(w, sites[0].site), "model.py:20 forward");
    EXPECT_EQ(SiteName(w, sites[1].site), "train.py:38 step"); // one site, two phases
    EXPECT_EQ(sites[1].phase_bytes[GA_PHASE_OPTIMIZER], int64_t(16 * MiB));
    EXPECT_EQ(sites[1].phase_bytes[GA_PHASE_OTHER], int64_t(8 * MiB));
}

TEST(Owners, AWindowThatStartsMidRunNamesWhatItCan)
{
    const Stack early = {{"early.py", "make", 1}};
    const Stack temp = {{"early.py", "temp", 2}};
    const Stack loop = {{"loop.py", "step", 5}};
    std::string path;
    {
        // 27 entries in all, the two early allocations and their segments
        // the first 4: a ring of 23 starts the window right after them.
        Recorder r("sim_capacity:1GiB", 23);
        r.Alloc(64 * MiB, early); // live to the end: the final segments keep its stack
        void *t = r.Alloc(32 * MiB, temp);
        for (int i = 0; i < 6; i++)
            r.Free(r.Alloc(16 * MiB, loop));
        r.Free(t); // freed in the window: allocated before it, by code the trace does not name
        for (int i = 0; i < 2; i++)
            r.Alloc(16 * MiB, loop);
        path = r.Write("midrun.pickle");
    }
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    const ga_job_unit_t *u = j.unit();
    ASSERT_TRUE(u->midrun);
    ASSERT_TRUE(u->seeded) << u->seed_error;
    Owned o(u);
    const ga_owners_t &w = o.w();
    // Before the window's first event the state holds the two early blocks.
    const ga_owners_moment_t &m = w.peak_allocated;
    ExpectInvariant(m);
    bool saw_early = false, saw_before = false;
    for (const auto &s : Sites(w, m)) {
        std::string name = SiteName(w, s.site);
        if (name == "early.py:1 make") {
            saw_early = true;
            EXPECT_EQ(s.cell.bytes, int64_t(64 * MiB));
            EXPECT_EQ(s.cell.before, 1);
            EXPECT_EQ(s.cell.kept_blocks, 1);
        }
        if (w.index->sites[s.site].kind == GA_SITE_BEFORE) {
            saw_before = true;
            EXPECT_EQ(s.cell.bytes, int64_t(32 * MiB));
            EXPECT_EQ(s.cell.kept_blocks, 0);
        }
    }
    EXPECT_TRUE(saw_early);
    EXPECT_TRUE(saw_before);
}

TEST(Owners, ATraceWithoutStacksSaysSo)
{
    std::string path = Write("nostack.trace", "galloc-trace 1 device_memory 1GiB\n"
                                              "alloc 1 64MiB\nalloc 2 32MiB 7\nfree 1\n");
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    Owned o(j.unit(), "");
    const ga_owners_t &w = o.w();
    char keyed[128];
    EXPECT_STREQ(ga_owners_keyed_by(w.index, keyed, sizeof keyed), "nothing: the record carries no stacks");
    const ga_owners_moment_t &m = w.peak_allocated;
    ExpectInvariant(m);
    EXPECT_EQ(m.allocated, int64_t(96 * MiB));
    auto sites = Sites(w, m);
    ASSERT_EQ(sites.size(), 1u);
    EXPECT_EQ(w.index->sites[sites[0].site].kind, GA_SITE_NONE);
    // the streams are still told apart
    EXPECT_EQ(w.index->n_streams, 2u);
    ASSERT_EQ(m.n_entries, 2u);
}

// A profiler trace of two devices: each unit's owners are its own, keyed by
// the ranges that enclose each memory event on its thread.
std::string KinetoMem(double ts, int dev, long long addr, long long bytes)
{
    return "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(ts) +
           ", \"args\": {\"Device Type\": 1, \"Device Id\": " + std::to_string(dev) +
           ", \"Addr\": " + std::to_string(addr) + ", \"Bytes\": " + std::to_string(bytes) + "}}";
}

std::string KinetoRange(const char *cat, const char *name, double ts, double dur)
{
    return std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
           "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + "}";
}

TEST(Owners, SeveralDevicesEachWithItsOwnSites)
{
    const long long M = 1 << 20;
    std::vector<std::string> evs = {
        KinetoRange("python_function", "train.py(35): step", 100, 400),
        KinetoRange("user_annotation", "## forward ##", 110, 100),
        KinetoRange("cpu_op", "aten::linear", 120, 50),
        KinetoMem(130, 0, 0x1000000, 64 * M), // device 0: train.py:35 step, forward
        KinetoMem(131, 1, 0x2000000, 32 * M), // device 1: the same line
        KinetoRange("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 300, 50),
        KinetoRange("cpu_op", "aten::mm", 310, 20),
        KinetoMem(315, 1, 0x3000000, 16 * M), // device 1: inside the step too: the user's line wins
        KinetoMem(600, 0, 0x4000000, 8 * M),  // device 0: outside every range: no stack
    };
    std::string t = "{\"traceEvents\": [\n";
    for (size_t i = 0; i < evs.size(); i++)
        t += evs[i] + (i + 1 < evs.size() ? ",\n" : "\n");
    LoadedJob j(Write("two_devices.json", t + "]}\n"));
    ASSERT_TRUE(j.ok) << j.error;
    ASSERT_EQ(j.units(), 2u);
    for (size_t k = 0; k < 2; k++) {
        Owned o(j.unit(k), "");
        const ga_owners_t &w = o.w();
        char keyed[128];
        EXPECT_STREQ(ga_owners_keyed_by(w.index, keyed, sizeof keyed), "profiler ranges");
        const ga_owners_moment_t &m = w.peak_allocated;
        ExpectInvariant(m);
        auto sites = Sites(w, m);
        ASSERT_EQ(sites.size(), k == 0 ? 2u : 1u) << k;
        EXPECT_EQ(SiteName(w, sites[0].site), "train.py:35 step") << k;
        if (k == 0) {
            EXPECT_EQ(m.allocated, int64_t(72 * M));
            EXPECT_EQ(sites[0].cell.bytes, int64_t(64 * M));
            EXPECT_EQ(sites[0].phase_bytes[GA_PHASE_FORWARD], int64_t(64 * M));
            EXPECT_EQ(w.index->sites[sites[1].site].kind, GA_SITE_NONE);
            EXPECT_EQ(sites[1].cell.bytes, int64_t(8 * M));
        } else { /* one line, two phases: its forward, and the backward of the mm it made */
            EXPECT_EQ(m.allocated, int64_t(48 * M));
            EXPECT_EQ(sites[0].cell.bytes, int64_t(48 * M));
            EXPECT_EQ(sites[0].phase_bytes[GA_PHASE_FORWARD], int64_t(32 * M));
            EXPECT_EQ(sites[0].phase_bytes[GA_PHASE_BACKWARD], int64_t(16 * M));
        }
    }
}

TEST(Owners, OwnersCostNothingWhenNotAskedFor)
{
    std::string path = Write("plain.trace", "galloc-trace 1\nalloc 1 64MiB\nfree 1\n");
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    ga_replay_column_t c = {};
    ga_replay_opts_t o = {};
    ga_replay_spec_t spec = {"", false};
    ASSERT_EQ(ga_replay_column(j.unit(), &o, &spec, nullptr, &c), 0);
    EXPECT_EQ(c.owners, nullptr);
    ga_replay_column_release(&c);
}

} // namespace
