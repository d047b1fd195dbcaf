// owners_plot_test.cc: galloc replay --plot with owners (issue 37): every
// sample point records the live bytes of each site (tools/engine/sampler.c),
// the top sites are chosen at the first OOM or else at the reserved peak
// (ga_sampler_bands), the rest summed as "other sites", and the plot stacked
// by site is written (tools/report/outputs.c). Snapshots are recorded by
// galloc itself (recorder.h) with sizes whose blocks are exactly what they
// request (a segment of their own, or a split leaving more than 1 MiB), so
// the figures hold whether a block's bytes come from galloc_usable_size or
// from the request.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/tools/job_util.h"
#include "tests/tools/recorder.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/report/outputs.h"
}

namespace {

using recorder::MiB;
using recorder::Recorder;
using recorder::Stack;

// Site k's stack: "s<k>.py:<k + 1> f<k>".
struct Sites {
    std::vector<std::string> files, names;
    std::vector<Stack> stacks;
    explicit Sites(int n)
    {
        for (int k = 0; k < n; k++) {
            files.push_back("s" + std::to_string(k) + ".py");
            names.push_back("f" + std::to_string(k));
        }
        for (int k = 0; k < n; k++)
            stacks.push_back(Stack{{files[k].c_str(), names[k].c_str(), k + 1}});
    }
    static std::string Key(int k)
    {
        return "s" + std::to_string(k) + ".py:" + std::to_string(k + 1) + " f" + std::to_string(k);
    }
};

// A unit replayed under its recorded settings with owners and sampling.
struct Sampled {
    ga_replay_column_t c = {};
    explicit Sampled(const ga_job_unit_t *u)
    {
        ga_replay_opts_t o = {};
        o.owners = true;
        o.sample = true;
        o.check = true;
        ga_replay_spec_t spec = ga_replay_default_spec(u);
        EXPECT_EQ(ga_replay_column(u, &o, &spec, nullptr, &c), 0);
        EXPECT_NE(c.owners, nullptr);
        EXPECT_EQ(c.errors, 0u) << c.first_error;
    }
    ~Sampled() { ga_replay_column_release(&c); }
    const ga_owners_t &w() const { return *c.owners; }
    // Site key's bytes at point p (-1: no such site).
    double At(const std::string &key, size_t p) const
    {
        const ga_owners_index_t *x = c.owners->index;
        for (size_t s = 0; s < x->n_sites; s++)
            if (key == x->sites[s].key)
                return c.sampler.site[s * GA_SAMPLER_CAP + p];
        return -1;
    }
};

// Ten sites, site k allocating one block of (k + 1) x 20 MiB (a segment of
// its own each): 1,100 MiB at event 9, the reserved peak. Then site 0 frees
// its block (event 10) and allocates it again (event 11, in the cached segment).
std::string TenSites(const Sites &s)
{
    Recorder r("sim_capacity:2GiB");
    std::vector<void *> p;
    for (int k = 0; k < 10; k++)
        p.push_back(r.Alloc(uint64_t(k + 1) * 20 * MiB, s.stacks[k]));
    r.Free(p[0]);
    r.Alloc(20 * MiB, s.stacks[0]);
    return r.Write("ten_sites.pickle");
}

TEST(OwnersPlot, EveryPointHoldsEachSitesLiveBytes)
{
    Sites s(10);
    LoadedJob j(TenSites(s));
    ASSERT_TRUE(j.ok) << j.error;
    Sampled o(j.unit());
    const ga_sampler_t &sp = o.c.sampler;
    ASSERT_EQ(sp.n_sites, o.w().index->n_sites);
    ASSERT_EQ(sp.n, 12u); // every event a point (stride 1), the last one included
    for (size_t p = 0; p < sp.n; p++) {
        EXPECT_EQ(sp.x[p], double(p));
        double sum = 0;
        for (int k = 0; k < 10; k++) {
            double want = p >= size_t(k) ? double(k + 1) * 20 * MiB : 0;
            if (k == 0 && p == 10)
                want = 0; // freed at event 10, allocated again at 11
            EXPECT_EQ(o.At(Sites::Key(k), p), want) << "site " << k << " at point " << p;
            sum += want;
        }
        EXPECT_EQ(sp.alloc[p], sum) << "the sites hold every allocated byte at point " << p;
    }
}

TEST(OwnersPlot, TheTopSitesAtTheReservedPeakAndTheRestAsOther)
{
    Sites s(10);
    LoadedJob j(TenSites(s));
    ASSERT_TRUE(j.ok) << j.error;
    Sampled o(j.unit());
    ASSERT_EQ(o.c.ooms_total, 0u);
    EXPECT_EQ(o.w().peak_reserved.event, 9u);
    ga_site_bands_t b;
    ASSERT_EQ(ga_sampler_bands(&o.c.sampler, o.c.owners, GA_SAMPLER_TOP_SITES, &b), 0);
    EXPECT_EQ(b.by, GA_MOMENT_PEAK_RESERVED);
    ASSERT_EQ(b.n, 9u); // sites 9 .. 2, most bytes first, then "other sites"
    for (int i = 0; i < 8; i++) {
        int k = 9 - i;
        EXPECT_EQ(b.bands[i].label, Sites::Key(k)) << i;
        EXPECT_FALSE(b.bands[i].other);
        EXPECT_EQ(b.bands[i].at_moment, double(k + 1) * 20 * MiB);
        for (size_t p = 0; p < o.c.sampler.n; p++)
            EXPECT_EQ(b.bands[i].bytes[p], p >= size_t(k) ? double(k + 1) * 20 * MiB : 0) << k << " " << p;
    }
    const ga_series_band_t &other = b.bands[8];
    EXPECT_STREQ(other.label, "other sites");
    EXPECT_TRUE(other.other);
    EXPECT_EQ(other.at_moment, 60.0 * MiB); // sites 1 and 0
    const double want[12] = {20, 60, 60, 60, 60, 60, 60, 60, 60, 60, 40, 60};
    for (size_t p = 0; p < 12; p++)
        EXPECT_EQ(other.bytes[p], want[p] * MiB) << p;
    ga_site_bands_free(&b);

    // Fewer sites than the top: no "other sites" band.
    ASSERT_EQ(ga_sampler_bands(&o.c.sampler, o.c.owners, 10, &b), 0);
    EXPECT_EQ(b.n, 10u);
    EXPECT_EQ(b.other, nullptr);
    for (size_t i = 0; i < b.n; i++)
        EXPECT_FALSE(b.bands[i].other);
    ga_site_bands_free(&b);
}

TEST(OwnersPlot, AnOomChoosesTheSitesItsMemoryIsHeldBy)
{
    const Stack b = {{"b.py", "load", 1}}, c = {{"c.py", "keep", 2}}, d = {{"d.py", "big", 3}},
                f = {{"f.py", "small", 4}}, e = {{"e.py", "want", 5}};
    std::string path;
    {
        Recorder r("sim_capacity:1GiB");
        void *pb = r.Alloc(300 * MiB, b);    // event 0
        r.Alloc(200 * MiB, c);               // 1
        r.Alloc(500 * MiB, d);               // 2: 1,000 MiB reserved, the peak
        r.Free(pb);                          // 3: cached
        r.Alloc(100 * MiB, f);               // 4: in b's cached segment, 200 MiB left free beside it
        r.Alloc(400 * MiB, e, GALLOC_E_OOM); // 5: 200 MiB cached + 24 MiB on the device
        path = r.Write("oom_sites.pickle");
    }
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    Sampled o(j.unit());
    ASSERT_EQ(o.c.ooms_total, 1u);
    ASSERT_EQ(o.w().n_ooms, 1u);
    EXPECT_EQ(o.w().peak_reserved.event, 2u);
    ga_site_bands_t bands;
    ASSERT_EQ(ga_sampler_bands(&o.c.sampler, o.c.owners, GA_SAMPLER_TOP_SITES, &bands), 0);
    EXPECT_EQ(bands.by, GA_MOMENT_OOM);
    ASSERT_EQ(bands.n, 4u);
    EXPECT_STREQ(bands.bands[0].label, "d.py:3 big");
    EXPECT_STREQ(bands.bands[1].label, "c.py:2 keep");
    EXPECT_STREQ(bands.bands[2].label, "f.py:4 small");
    EXPECT_EQ(bands.bands[2].at_moment, 100.0 * MiB);
    // b held 300 MiB until event 3, not at the OOM: named for what it held
    // earlier (it would hide in "other sites" else), 0 at the OOM, on top.
    EXPECT_STREQ(bands.bands[3].label, "b.py:1 load");
    EXPECT_FALSE(bands.bands[3].other);
    EXPECT_EQ(bands.bands[3].at_moment, 0.0);
    ASSERT_EQ(o.c.sampler.n, 6u);
    const double other[6] = {300, 300, 300, 0, 0, 0};
    for (size_t p = 0; p < 6; p++)
        EXPECT_EQ(bands.bands[3].bytes[p], other[p] * MiB) << p;
    ga_site_bands_free(&bands);
}

TEST(OwnersPlot, NoSitesWithoutOwnersOrSampling)
{
    Sites s(10);
    LoadedJob j(TenSites(s));
    ASSERT_TRUE(j.ok) << j.error;
    ga_replay_column_t c = {};
    ga_replay_opts_t o = {};
    o.sample = true; // owners off: the plot keeps its lines
    ga_replay_spec_t spec = ga_replay_default_spec(j.unit());
    ASSERT_EQ(ga_replay_column(j.unit(), &o, &spec, nullptr, &c), 0);
    EXPECT_EQ(c.sampler.n_sites, 0u);
    EXPECT_EQ(c.sampler.site, nullptr);
    EXPECT_EQ(c.sampler.n, 12u);
    ga_site_bands_t b;
    ASSERT_EQ(ga_sampler_bands(&c.sampler, c.owners, GA_SAMPLER_TOP_SITES, &b), 0);
    EXPECT_EQ(b.n, 0u);
    ga_replay_column_release(&c);
}

// A long trace: the sampler halves its points, and each site's samples with them.
TEST(OwnersPlot, SitesAreHalvedWithThePoints)
{
    const Stack a = {{"a.py", "loop", 1}}, k = {{"k.py", "keep", 2}}, m = {{"m.py", "more", 3}};
    std::string path;
    {
        Recorder r("sim_capacity:8GiB");
        r.Alloc(40 * MiB, k); // event 0
        r.Alloc(60 * MiB, m); // event 1
        for (int i = 0; i < 3000; i++)
            r.Free(r.Alloc(20 * MiB, a)); // alloc at event 2 + 2i, free at 3 + 2i
        path = r.Write("long.pickle");
    }
    LoadedJob j(path);
    ASSERT_TRUE(j.ok) << j.error;
    Sampled o(j.unit());
    const ga_sampler_t &sp = o.c.sampler;
    ASSERT_GT(sp.stride, 1u);
    ASSERT_LE(sp.n, size_t(GA_SAMPLER_CAP));
    EXPECT_EQ(sp.x[sp.n - 1], 6001.0);
    for (size_t p = 0; p < sp.n; p++) {
        uint64_t ev = uint64_t(sp.x[p]);
        EXPECT_EQ(o.At("k.py:2 keep", p), 40.0 * MiB) << p;
        EXPECT_EQ(o.At("m.py:3 more", p), ev >= 1 ? 60.0 * MiB : 0) << p;
        // on the grid (even events) the loop's block is live, at the final point (odd) freed
        EXPECT_EQ(o.At("a.py:1 loop", p), ev >= 2 && ev % 2 == 0 ? 20.0 * MiB : 0) << "event " << ev;
    }
}

TEST(OwnersPlot, ThePlotStackedBySiteIsWritten)
{
    Sites s(10);
    LoadedJob j(TenSites(s));
    ASSERT_TRUE(j.ok) << j.error;
    Sampled o(j.unit());
    ga_plot_run_t run = {"recorded", &o.c.sampler, o.c.ooms, o.c.n_ooms, o.c.owners};
    std::string path = TmpPath("stacked.png");
    char err[512] = "";
    ASSERT_EQ(
        ga_outputs_plot_runs(path.c_str(), "ten_sites.pickle", j.unit()->memory, j.unit()->n, &run, 1, err, sizeof err),
        0)
        << err;
    std::string png = ReadAll(path);
    ASSERT_GT(png.size(), 10000u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    if (const char *out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) // for a human to look at
        std::ofstream(std::string(out) + "/stacked.png", std::ios::binary) << png;
}

} // namespace
