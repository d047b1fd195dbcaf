// plot_ooms_test.cc: OOMs grouped into labelled marks (tools/plot/oom_group.h),
// the one grouping of both plots: close together or in a run, one mark with
// its count, events and classes; and the plot of lines (galloc fit --plot,
// galloc replay --no-owners --plot) drawing one mark per group (issue 38:
// examples/fit/load_order.trace's 100 OOMs were 100 crosses, a red bar, and
// eight "fragmentation" labels piled over the device line).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "tools/plot/layout.h"
#include "tools/plot/oom_group.h"
#include "tools/plot/series.h"
#include "tools/plot/stack.h"
}

namespace {

constexpr double kGiB = 1073741824.0;

// n configurations over `events` events, each rising to 78 GiB, on an 80 GiB
// device, with the OOM markers given.
struct Lines {
    std::vector<double> x, v;
    std::vector<ga_series_t> s;
    std::vector<ga_oom_marker_t> ooms;
    uint64_t events;

    Lines(uint64_t events_, size_t n = 1) : events(events_)
    {
        for (uint64_t k = 0; k < events; k++) {
            x.push_back((double)k);
            v.push_back(78 * kGiB * (double)(k + 1) / (double)events);
        }
        for (size_t i = 0; i < n; i++)
            s.push_back(
                {i ? "expandable_segments:True" : "defaults", x.size(), x.data(), v.data(), v.data(), v.data()});
    }
    // OOMs of series at every event in [first, last].
    void Run(double first, double last, size_t series, const char *cls)
    {
        for (double e = first; e <= last; e++)
            ooms.push_back({e, series, cls});
    }
    ga_plot_input_t In() { return {"t", UINT64_C(80) << 30, events, s.size(), s.data(), ooms.size(), ooms.data()}; }
};

// The groups of series in in, on in's own line layout.
std::vector<ga_plot_oom_group_t> Groups(const ga_plot_input_t &in, size_t series, size_t max = 32)
{
    ga_plot_layout_t l;
    EXPECT_EQ(ga_plot_layout_make(&in, &l), 0);
    std::vector<size_t> order(in.n_ooms + 1);
    std::vector<ga_plot_oom_group_t> g(max);
    g.resize(ga_plot_oom_groups(&in, series, &l, order.data(), g.data(), max));
    ga_plot_layout_free(&l);
    return g;
}

std::vector<std::string> Texts(const std::vector<ga_plot_oom_group_t> &g)
{
    std::vector<std::string> t;
    for (const auto &x : g)
        t.push_back(x.text);
    return t;
}

// 100 events on 1,076 px: 10.76 px an event, so GA_PLOT_OOM_GROUP_PX (40) is
// 3.7 events and GA_PLOT_OOM_RUN_PX (12) 1.1.
TEST(PlotOoms, CloseTogetherOrInARunOneMark)
{
    Lines f(100);
    f.ooms = {{10, 0, "fragmentation"}, {12, 0, "fragmentation"}, {13, 0, "genuine"}}; // within 40 px of 10
    f.Run(30, 60, 0, "genuine");          // 31 in a run: 323 px, each 10.76 px after the last
    f.ooms.push_back({62, 0, "genuine"}); // 21.5 px after the run's last, 344 px after its first: apart
    f.ooms.push_back({95, 0, nullptr});   // no class
    ga_plot_input_t in = f.In();
    auto g = Groups(in, 0);
    EXPECT_EQ(Texts(g), (std::vector<std::string>{"3 OOMs (events 10-13): 2 fragmentation, 1 genuine",
                                                  "31 OOMs (events 30-60): genuine", "OOM (event 62): genuine",
                                                  "OOM (event 95)"}));
    ASSERT_EQ(g.size(), 4u);
    EXPECT_EQ(g[0].count, 3u);
    EXPECT_EQ(g[0].first_oom, 0u);
    EXPECT_EQ(g[0].first_event, 10);
    EXPECT_EQ(g[0].last_event, 13);
    EXPECT_EQ(g[1].count, 31u);
    EXPECT_EQ(g[1].first_oom, 3u);
    EXPECT_DOUBLE_EQ(g[1].x_end - g[1].x, 30 * 10.76);
    EXPECT_EQ(g[2].count, 1u);
    EXPECT_EQ(g[2].x, g[2].x_end);
    EXPECT_EQ(g[3].first_oom, f.ooms.size() - 1);
}

TEST(PlotOoms, MarkersOutOfOrderAndConfigurationsApart)
{
    Lines f(100, 2);
    f.ooms = {
        {42, 0, "fragmentation"}, {40, 1, "genuine"}, {40, 0, "fragmentation"}, {41, 0, "genuine"}, {90, 1, "genuine"}};
    ga_plot_input_t in = f.In();
    auto g0 = Groups(in, 0), g1 = Groups(in, 1);
    EXPECT_EQ(Texts(g0), (std::vector<std::string>{"3 OOMs (events 40-42): 2 fragmentation, 1 genuine"}));
    EXPECT_EQ(g0[0].first_oom, 2u) << "the earliest event's marker";
    EXPECT_EQ(g0[0].series, 0u);
    EXPECT_EQ(Texts(g1), (std::vector<std::string>{"OOM (event 40): genuine", "OOM (event 90): genuine"}));
    EXPECT_EQ(g1[1].series, 1u);
}

TEST(PlotOoms, PastTheLimitLaterOnesJoinTheLastAndUnlistedOnesAreCounted)
{
    Lines f(100);
    f.ooms = {{10, 0, "genuine"}, {50, 0, "genuine"}, {90, 0, "fragmentation"}, {91, 0, "fragmentation"}};
    ga_plot_input_t in = f.In();
    EXPECT_EQ(Texts(Groups(in, 0, 2)), (std::vector<std::string>{"OOM (event 10): genuine",
                                                                 "3 OOMs (events 50-91): 1 genuine, 2 fragmentation"}));
    f.s[0].ooms_after = 22; // the replay listed the first of more
    in = f.In();
    EXPECT_EQ(Texts(Groups(in, 0)), (std::vector<std::string>{"OOM (event 10): genuine", "OOM (event 50): genuine",
                                                              "2 OOMs (events 90-91): fragmentation; 22 more after"}));
    // Five classes: four counted, the rest said to exist.
    f.s[0].ooms_after = 0;
    f.ooms = {{10, 0, "a"}, {10, 0, "b"}, {10, 0, "c"}, {10, 0, "d"}, {10, 0, "e"}, {10, 0, "a"}};
    in = f.In();
    EXPECT_EQ(Texts(Groups(in, 0)), (std::vector<std::string>{"6 OOMs (event 10): 2 a, 1 b, 1 c, 1 d, ..."}));
}

// examples/fit/load_order.trace as galloc fit --plot draws it: 582 events, the
// defaults failing at every event from 460 (100 listed, 22 more), the answer
// (expandable segments) not at all. One mark, one label.
TEST(PlotOoms, TheLinePlotDrawsOneMarkPerGroup)
{
    Lines f(582, 2);
    f.Run(460, 559, 0, "fragmentation");
    f.s[0].ooms_after = 22;
    ga_plot_input_t in = f.In();
    ga_plot_layout_t l;
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    ASSERT_EQ(l.n_groups, 1u);
    const ga_plot_oom_group_t &g = l.groups[0];
    EXPECT_STREQ(g.text, "100 OOMs (events 460-559): fragmentation; 22 more after");
    EXPECT_EQ(g.count, 100u);
    EXPECT_EQ(g.x, ga_plot_layout_x(&l, 460));
    EXPECT_EQ(g.x_end, ga_plot_layout_x(&l, 559));
    double x, y;
    ga_plot_oom_point(&l, &in, 0, &x, &y);
    EXPECT_EQ(g.y, y) << "on the defaults' reserved line at its first OOM";
    ASSERT_EQ(l.n_labels, 1u);
    EXPECT_EQ(l.labels[0].group, 0u);
    EXPECT_STREQ(l.labels[0].text, g.text);
    ga_plot_rect_t sym = ga_plot_oom_group_symbol(&g);
    EXPECT_FALSE(ga_plot_rects_overlap(&l.labels[0].box, &sym)) << "the label is clear of its cross and span";
    EXPECT_FALSE(ga_plot_rects_overlap(&l.labels[0].box, &l.device_label));
    EXPECT_GE(sym.y + sym.h, g.y + GA_PLOT_OOM_SPAN_DY + 1) << "the symbol covers the span under the cross";
    ga_plot_layout_free(&l);
}

// The stacked plot groups the same way: its marks carry the groups' texts.
TEST(PlotOoms, TheStackedPlotUsesTheSameGroups)
{
    Lines f(582);
    std::vector<double> band = f.v;
    ga_series_band_t b = {"train.py:35 step", band.data(), 78 * kGiB, false};
    f.s[0].n_bands = 1;
    f.s[0].bands = &b;
    f.s[0].bands_at = "the first OOM";
    f.s[0].ooms_after = 22;
    f.Run(460, 559, 0, "fragmentation");
    ga_plot_input_t in = f.In();
    ga_plot_stack_layout_t l;
    ASSERT_EQ(ga_plot_stack_layout_make(&in, &l), 0);
    ASSERT_EQ(l.panels[0].n_marks, 1u);
    const ga_plot_mark_t &m = l.panels[0].marks[0];
    EXPECT_EQ(m.kind, GA_PLOT_MARK_OOMS);
    EXPECT_STREQ(m.text, Texts(Groups(in, 0))[0].c_str());
    EXPECT_STREQ(m.text, "100 OOMs (events 460-559): fragmentation; 22 more after");
    EXPECT_EQ(m.count, 100u);
    EXPECT_TRUE(m.labelled);
    ga_plot_stack_layout_free(&l);
}

} // namespace
