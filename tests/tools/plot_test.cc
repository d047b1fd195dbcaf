// plot_test.cc: ga_plot_write (tools/plot) writes a valid PNG and SVG of the
// replay's series, and reports bad paths and bad input with a message and no
// file left behind; its layout (layout.h) scales the y axis to the job, never
// overlaps labels and keeps coinciding curves apart.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "tools/plot/layout.h"
#include "tools/plot/oom_group.h"
#include "tools/plot/plot.h"
#include "tools/plot/stack.h"
}

namespace {

constexpr double kGiB = 1073741824.0;

std::string TmpPath(const std::string &name)
{
    const char *dir = std::getenv("TEST_TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string ReadFile(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

bool Exists(const std::string &path)
{
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

// Two configurations over a few training steps: the saw-tooth of activations
// on top of the weights, reserved above allocated, one OOM in the second.
struct Sample {
    std::vector<double> x, req[2], alloc[2], res[2];
    ga_series_t series[2];
    ga_oom_marker_t oom;
    ga_plot_input_t in;

    Sample()
    {
        const int n = 600;
        for (int k = 0; k < n; k++) {
            double phase = (k % 150) / 150.0; // forward grows, backward shrinks
            double act = phase < 0.5 ? phase * 2 : (1 - phase) * 2;
            x.push_back(k * 10.0);
            for (int c = 0; c < 2; c++) {
                double r = (40 + 30 * act) * kGiB;
                req[c].push_back(r);
                alloc[c].push_back(r + 0.3 * kGiB);
                res[c].push_back(c == 0 ? 72 * kGiB : (44 + 36 * (k / (double)n) + 2 * act) * kGiB);
            }
        }
        series[0] = {"defaults", x.size(), x.data(), req[0].data(), alloc[0].data(), res[0].data()};
        series[1] = {"expandable_segments:True", x.size(), x.data(), req[1].data(), alloc[1].data(), res[1].data()};
        oom = {5400.0, 1, "fragmentation"};
        in = {"sample.trace", UINT64_C(80) << 30, 6000, 2, series, 1, &oom};
    }
};

// Width and height from a PNG's IHDR chunk (big-endian at bytes 16 and 20).
uint32_t Be32(const std::string &s, size_t at)
{
    return (uint32_t)(unsigned char)s[at] << 24 | (uint32_t)(unsigned char)s[at + 1] << 16 |
           (uint32_t)(unsigned char)s[at + 2] << 8 | (uint32_t)(unsigned char)s[at + 3];
}

TEST(Plot, WritesPng)
{
    Sample s;
    std::string path = TmpPath("plot.png");
    char err[256] = "";
    ASSERT_EQ(ga_plot_write(path.c_str(), &s.in, err, sizeof(err)), 0) << err;
    std::string png = ReadFile(path);
    ASSERT_GT(png.size(), 10000u) << "a plot with text and lines is not a few bytes";
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(png.substr(12, 4), "IHDR");
    EXPECT_EQ(Be32(png, 16), 1200u);
    EXPECT_GE(Be32(png, 20), 600u);
    EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND");
    // Keep a copy where Bazel collects test outputs, for a human to look at.
    if (const char *out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
        std::ofstream(std::string(out) + "/plot.png", std::ios::binary) << png;
    }
}

// A minimal XML check: the prolog, then balanced elements under a single <svg>
// root in the SVG namespace. Comments, processing instructions and CDATA skipped.
std::string XmlRoot(const std::string &xml, std::string *problem)
{
    std::vector<std::string> stack;
    std::string root;
    size_t i = 0;
    while ((i = xml.find('<', i)) != std::string::npos) {
        if (xml.compare(i, 4, "<!--") == 0) {
            i = xml.find("-->", i);
        } else if (xml.compare(i, 9, "<![CDATA[") == 0) {
            i = xml.find("]]>", i);
        } else if (xml.compare(i, 2, "<?") == 0) {
            i = xml.find("?>", i);
        } else {
            size_t end = xml.find('>', i);
            if (end == std::string::npos) {
                *problem = "unterminated tag";
                return "";
            }
            std::string tag = xml.substr(i + 1, end - i - 1);
            bool closing = tag[0] == '/', empty = tag.back() == '/';
            std::string name =
                tag.substr(closing ? 1 : 0, tag.find_first_of(" \t\n/>", closing ? 1 : 0) - (closing ? 1 : 0));
            if (closing) {
                if (stack.empty() || stack.back() != name) {
                    *problem = "mismatched </" + name + ">";
                    return "";
                }
                stack.pop_back();
            } else {
                if (stack.empty()) {
                    if (!root.empty()) {
                        *problem = "second root <" + name + ">";
                        return "";
                    }
                    root = tag;
                }
                if (!empty)
                    stack.push_back(name);
            }
            i = end;
        }
        if (i == std::string::npos) {
            *problem = "unterminated comment or section";
            return "";
        }
    }
    if (!stack.empty())
        *problem = "unclosed <" + stack.back() + ">";
    return root;
}

TEST(Plot, WritesSvg)
{
    Sample s;
    std::string path = TmpPath("plot.SVG"); // the extension is case-insensitive
    char err[256] = "";
    ASSERT_EQ(ga_plot_write(path.c_str(), &s.in, err, sizeof(err)), 0) << err;
    std::string svg = ReadFile(path);
    ASSERT_EQ(svg.compare(0, 5, "<?xml"), 0);
    std::string problem;
    std::string root = XmlRoot(svg, &problem);
    EXPECT_EQ(problem, "");
    EXPECT_EQ(root.compare(0, 4, "svg "), 0) << root;
    EXPECT_NE(root.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos) << root;
    EXPECT_NE(root.find("width=\"1200"), std::string::npos) << root;
}

TEST(Plot, EmptyInputStillDrawsAxes)
{
    ga_plot_input_t in = {nullptr, 0, 0, 0, nullptr, 0, nullptr};
    std::string path = TmpPath("empty.png");
    char err[256] = "";
    EXPECT_EQ(ga_plot_write(path.c_str(), &in, err, sizeof(err)), 0) << err;
    EXPECT_GT(ReadFile(path).size(), 1000u);
    // One point and no requested line are fine too.
    double x = 0, v = 1 << 20;
    ga_series_t one = {"", 1, &x, nullptr, &v, &v};
    in.series = &one;
    in.n_series = 1;
    EXPECT_EQ(ga_plot_write(path.c_str(), &in, err, sizeof(err)), 0) << err;
}

TEST(Plot, UnknownExtension)
{
    Sample s;
    std::string path = TmpPath("plot.jpg");
    char err[256] = "";
    EXPECT_NE(ga_plot_write(path.c_str(), &s.in, err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find(".png or .svg"), std::string::npos) << err;
    EXPECT_FALSE(Exists(path));
    EXPECT_NE(ga_plot_write(TmpPath("noext").c_str(), &s.in, err, sizeof(err)), 0);
}

TEST(Plot, UnwritablePaths)
{
    Sample s;
    char err[256] = "";
    EXPECT_NE(ga_plot_write("/nonexistent-dir/plot.png", &s.in, err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find("No such file or directory"), std::string::npos) << err;
    // A directory where the file should go.
    std::string dir = TmpPath("adir.svg");
    mkdir(dir.c_str(), 0700);
    EXPECT_NE(ga_plot_write(dir.c_str(), &s.in, err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find("cannot create"), std::string::npos) << err;
}

TEST(Plot, WriteErrorRemovesFile)
{
    // A full disk: the open succeeds, the writes fail.
    Sample s;
    for (const char *name : {"full.png", "full.svg"}) {
        std::string link = TmpPath(name);
        unlink(link.c_str());
        ASSERT_EQ(symlink("/dev/full", link.c_str()), 0);
        char err[256] = "";
        EXPECT_NE(ga_plot_write(link.c_str(), &s.in, err, sizeof(err)), 0) << name;
        EXPECT_NE(std::string(err).find("No space left on device"), std::string::npos) << err;
        EXPECT_FALSE(Exists(link)) << "the partial output is removed";
    }
}

TEST(Plot, BadInput)
{
    Sample s;
    std::string path = TmpPath("bad.png");
    char err[256] = "";
    EXPECT_NE(ga_plot_write(path.c_str(), nullptr, err, sizeof(err)), 0);
    EXPECT_NE(ga_plot_write(nullptr, &s.in, err, sizeof(err)), 0);
    s.oom.series = 2; // only two series
    EXPECT_NE(ga_plot_write(path.c_str(), &s.in, err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find("OOM marker 0 names series 2 of 2"), std::string::npos) << err;
    s.oom.series = 0;
    s.series[1].event_index = nullptr;
    EXPECT_NE(ga_plot_write(path.c_str(), &s.in, err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find("no event_index"), std::string::npos) << err;
    EXPECT_FALSE(Exists(path));
    // err may be NULL.
    EXPECT_NE(ga_plot_write(path.c_str(), &s.in, nullptr, 0), 0);
}

// ---- layout (issue 18): asserted on the layout, not on pixels ---------------

constexpr double kMiB = 1048576.0;

// One configuration (or n identical ones) rising to peak bytes over 100 events.
struct Flat {
    std::vector<double> x, v;
    std::vector<ga_series_t> s;
    Flat(double peak, size_t n = 1)
    {
        for (int k = 0; k < 100; k++) {
            x.push_back(k);
            v.push_back(peak * (k + 1) / 100.0);
        }
        for (size_t i = 0; i < n; i++)
            s.push_back({"c", x.size(), x.data(), v.data(), v.data(), v.data()});
    }
    ga_plot_input_t In(uint64_t device, const ga_oom_marker_t *m = nullptr, size_t nm = 0)
    {
        return {"t", device, 100, s.size(), s.data(), nm, m};
    }
};

void ExpectNoOverlap(const ga_plot_layout_t &l)
{
    std::vector<ga_plot_rect_t> r;
    if (l.device_labelled)
        r.push_back(l.device_label);
    for (size_t i = 0; i < l.n_labels; i++)
        r.push_back(l.labels[i].box);
    for (size_t i = 0; i < r.size(); i++) {
        EXPECT_GE(r[i].x, l.x0) << i;
        EXPECT_GE(r[i].y, l.y0) << i;
        EXPECT_LE(r[i].x + r[i].w, l.x0 + l.w) << i;
        EXPECT_LE(r[i].y + r[i].h, l.y0 + l.h) << i;
        for (size_t j = i + 1; j < r.size(); j++)
            EXPECT_FALSE(ga_plot_rects_overlap(&r[i], &r[j])) << "labels " << i << " and " << j << " overlap";
    }
}

TEST(PlotLayout, SmallJobIsScaledToItsDataNotTheDevice)
{
    Flat f(242 * kMiB);
    ga_plot_input_t in = f.In(UINT64_C(80) << 30);
    ga_plot_layout_t l;
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    EXPECT_GE(l.ymax, 242 * kMiB);
    EXPECT_LE(l.ymax, 1.5 * 242 * kMiB) << "the job fills the axis";
    EXPECT_STREQ(l.unit_name, "MiB");
    EXPECT_FALSE(l.device_line);
    EXPECT_TRUE(l.device_above) << "an 80 GiB device is named above the axis";
    EXPECT_TRUE(l.device_labelled);
    EXPECT_NE(std::string(l.device_text).find("80.00 GiB"), std::string::npos) << l.device_text;
    ga_plot_layout_free(&l);
}

TEST(PlotLayout, DeviceWithinAFactorIsALine)
{
    Flat f(60 * kGiB);
    ga_plot_input_t in = f.In(UINT64_C(80) << 30);
    ga_plot_layout_t l;
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    EXPECT_TRUE(l.device_line);
    EXPECT_FALSE(l.device_above);
    EXPECT_GE(l.ymax, 80 * kGiB);
    EXPECT_LE(l.ymax, 1.25 * 80 * kGiB);
    EXPECT_STREQ(l.unit_name, "GiB");
    ga_plot_layout_free(&l);
    // Right at the factor, still a line; past it, an arrow.
    Flat g(80 * kGiB / GA_PLOT_DEVICE_FACTOR * 0.99);
    in = g.In(UINT64_C(80) << 30);
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    EXPECT_FALSE(l.device_line);
    EXPECT_LE(l.ymax, 1.5 * 80 * kGiB / GA_PLOT_DEVICE_FACTOR);
    ga_plot_layout_free(&l);
}

TEST(PlotLayout, OomLabelsAndTheDeviceLabelNeverOverlap)
{
    // Two configurations failing at the same moment right under the device
    // line's label (what overprinted before), then each failing at the same
    // six moments, far enough apart to be twelve marks whose labels compete.
    Flat f(80 * kGiB, 2);
    ga_oom_marker_t two[2] = {{99, 0, "fragmentation"}, {98, 1, "genuine"}};
    ga_plot_input_t in = f.In(UINT64_C(80) << 30, two, 2);
    ga_plot_layout_t l;
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    EXPECT_TRUE(l.device_labelled);
    EXPECT_EQ(l.n_labels, 2u) << "both fit somewhere";
    ExpectNoOverlap(l);
    ga_plot_layout_free(&l);

    std::vector<ga_oom_marker_t> many;
    for (size_t series : {0, 1})
        for (double event : {5, 20, 35, 50, 65, 80})
            many.push_back({event, series, "fragmentation"});
    in = f.In(UINT64_C(80) << 30, many.data(), many.size());
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    EXPECT_EQ(l.n_groups, 12u);
    EXPECT_LE(l.n_labels, (size_t)GA_PLOT_MAX_LABELS);
    EXPECT_GE(l.n_labels, 4u) << "stacked, not dropped at the first clash";
    ExpectNoOverlap(l);
    ga_plot_layout_free(&l);
}

TEST(PlotLayout, CoincidingCurvesAreDrawnApart)
{
    Flat same(10 * kGiB, 3);
    ga_plot_input_t in = same.In(0);
    ga_plot_layout_t l;
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    for (int k = 0; k < GA_PLOT_LINES; k++) {
        EXPECT_EQ(l.offset[0 * GA_PLOT_LINES + k], 0.0);
        EXPECT_EQ(l.same_as[0 * GA_PLOT_LINES + k], SIZE_MAX);
        EXPECT_EQ(l.offset[1 * GA_PLOT_LINES + k], GA_PLOT_OFFSET_PX);
        EXPECT_EQ(l.same_as[1 * GA_PLOT_LINES + k], 0u);
        EXPECT_EQ(l.offset[2 * GA_PLOT_LINES + k], 2 * GA_PLOT_OFFSET_PX) << "a third copy above the second";
    }
    ga_plot_layout_free(&l);
    // Distinct curves stay where their values are.
    Sample s;
    ASSERT_EQ(ga_plot_layout_make(&s.in, &l), 0);
    EXPECT_EQ(l.offset[1 * GA_PLOT_LINES + GA_PLOT_RESERVED], 0.0);
    EXPECT_EQ(l.same_as[1 * GA_PLOT_LINES + GA_PLOT_RESERVED], SIZE_MAX);
    ExpectNoOverlap(l);
    ga_plot_layout_free(&l);
}

TEST(PlotLayout, HugeDeviceIsASize)
{
    Flat f(1 * kMiB);
    ga_plot_input_t in = f.In(UINT64_MAX);
    ga_plot_layout_t l;
    ASSERT_EQ(ga_plot_layout_make(&in, &l), 0);
    EXPECT_TRUE(l.device_above);
    EXPECT_EQ(std::string(l.device_text), "device 16.00 EiB above");
    EXPECT_LE(l.ymax, 2 * kMiB);
    ga_plot_layout_free(&l);
}

// ---- stacked by owner (galloc replay --plot with owners) --------------------

// Two configurations stacked by site over 100 events: sites "a" and "b" (in
// opposite orders) and "other sites", a reserved line over them.
struct Stacked {
    std::vector<double> x, a, b, o, res;
    ga_series_band_t bands[2][3];
    ga_series_t s[2];
    std::vector<ga_oom_marker_t> ooms;

    Stacked()
    {
        for (int k = 0; k < 100; k++) {
            x.push_back(k);
            a.push_back(k * 100 * kMiB);
            b.push_back(2 * kGiB);
            o.push_back(512 * kMiB);
            res.push_back(a.back() + b.back() + o.back() + kGiB);
        }
        bands[0][0] = {"train.py:35 step", a.data(), 9.9 * kGiB, false};
        bands[0][1] = {"model.py:10 build", b.data(), 2 * kGiB, false};
        bands[1][0] = {"model.py:10 build", b.data(), 2 * kGiB, false};
        bands[1][1] = {"train.py:35 step", a.data(), 9.9 * kGiB, false};
        for (int i = 0; i < 2; i++) {
            bands[i][2] = {"other sites", o.data(), 512 * kMiB, true};
            s[i] = {i ? "expandable_segments:True" : "defaults", x.size(), x.data(), nullptr, nullptr, res.data()};
            s[i].n_bands = 3;
            s[i].bands = bands[i];
            s[i].bands_at = "the reserved peak";
            s[i].has_peaks = true;
            s[i].peak_reserved_event = 99;
            s[i].peak_reserved = res.back();
            s[i].peak_allocated_event = 99;
            s[i].peak_allocated = res.back() - kGiB;
        }
    }
    ga_plot_input_t In() { return {"stacked.pickle", UINT64_C(24) << 30, 100, 2, s, ooms.size(), ooms.data()}; }
};

void ExpectMarksApart(const ga_plot_panel_t &p)
{
    const ga_plot_layout_t &f = p.frame;
    std::vector<ga_plot_rect_t> r;
    if (f.device_labelled)
        r.push_back(f.device_label);
    for (size_t i = 0; i < p.n_marks; i++)
        if (p.marks[i].labelled)
            r.push_back(p.marks[i].box);
    for (size_t i = 0; i < r.size(); i++) {
        EXPECT_GE(r[i].x, f.x0) << i;
        EXPECT_GE(r[i].y, f.y0) << i;
        EXPECT_LE(r[i].x + r[i].w, f.x0 + f.w) << i;
        EXPECT_LE(r[i].y + r[i].h, f.y0 + f.h) << i;
        for (size_t j = i + 1; j < r.size(); j++)
            EXPECT_FALSE(ga_plot_rects_overlap(&r[i], &r[j])) << "labels " << i << " and " << j << " overlap";
        for (size_t m = 0; m < p.n_marks; m++) {
            ga_plot_rect_t sym = ga_plot_mark_symbol(&p.marks[m]);
            EXPECT_FALSE(ga_plot_rects_overlap(&r[i], &sym)) << "label " << i << " over mark " << m;
        }
    }
}

TEST(PlotStack, PanelsShareTheScalesAndASiteKeepsItsColour)
{
    Stacked st;
    ga_plot_input_t in = st.In();
    EXPECT_TRUE(ga_plot_stacked(&in));
    ga_plot_stack_layout_t l;
    ASSERT_EQ(ga_plot_stack_layout_make(&in, &l), 0);
    ASSERT_EQ(l.n_panels, 2u);
    const ga_plot_panel_t &p0 = l.panels[0], &p1 = l.panels[1];
    EXPECT_EQ(p0.frame.ymax, p1.frame.ymax) << "one y scale";
    EXPECT_EQ(p0.frame.xmax, p1.frame.xmax);
    EXPECT_GE(p0.frame.ymax, st.res.back());
    EXPECT_TRUE(p0.frame.device_line) << "24 GiB is near a 13.4 GiB job";
    EXPECT_GT(p1.frame.y0, p0.legend_y + 20.0 * p0.legend_rows) << "a panel starts below the last one's legend";
    EXPECT_EQ(p0.legend_rows, 2u);
    EXPECT_EQ(l.height, ga_plot_stack_height(&in));
    EXPECT_GT(l.height, l.key_y);
    // train.py keeps its colour though it is the second band in panel 1, model.py too.
    EXPECT_EQ(p0.colors[0], p1.colors[1]);
    EXPECT_EQ(p0.colors[1], p1.colors[0]);
    EXPECT_NE(p0.colors[0], p0.colors[1]);
    EXPECT_EQ(p0.colors[2], GA_PLOT_OTHER_COLOR);
    EXPECT_EQ(p1.colors[2], GA_PLOT_OTHER_COLOR);
    // The peaks are marked at their values, on the axes.
    ASSERT_GE(p0.n_marks, 2u);
    EXPECT_EQ(p0.marks[0].kind, GA_PLOT_MARK_PEAK_RESERVED);
    EXPECT_EQ(p0.marks[0].y, ga_plot_layout_y(&p0.frame, st.res.back()));
    EXPECT_STREQ(p0.marks[0].text, "peak reserved 13.17 GiB");
    EXPECT_EQ(p0.marks[1].kind, GA_PLOT_MARK_PEAK_ALLOCATED);
    EXPECT_STREQ(p0.marks[1].text, "peak allocated 12.17 GiB");
    EXPECT_TRUE(p0.marks[0].labelled);
    EXPECT_TRUE(p0.marks[1].labelled);
    ExpectMarksApart(p0);
    ExpectMarksApart(p1);
    ga_plot_stack_layout_free(&l);
    // Without bands it is the plot of lines.
    st.s[0].n_bands = st.s[1].n_bands = 0;
    in = st.In();
    EXPECT_FALSE(ga_plot_stacked(&in));
}

TEST(PlotStack, OomsCloseTogetherShareOneLabelledMark)
{
    Stacked st;
    // Panel 0: three within a few pixels (two classes), one far off; panel 1: two far apart.
    st.ooms = {{40, 0, "fragmentation"}, {41, 0, "genuine"},       {42, 0, "fragmentation"},
               {90, 0, "genuine"},       {10, 1, "fragmentation"}, {80, 1, "fragmentation"}};
    ga_plot_input_t in = st.In();
    ga_plot_stack_layout_t l;
    ASSERT_EQ(ga_plot_stack_layout_make(&in, &l), 0);
    const ga_plot_panel_t &p0 = l.panels[0], &p1 = l.panels[1];
    ASSERT_EQ(p0.n_marks, 4u); // two peaks, two groups
    const ga_plot_mark_t &g = p0.marks[2], &h = p0.marks[3];
    EXPECT_EQ(g.kind, GA_PLOT_MARK_OOMS);
    EXPECT_EQ(g.count, 3u);
    EXPECT_EQ(g.first_oom, 0u);
    EXPECT_STREQ(g.text, "3 OOMs (events 40-42): 2 fragmentation, 1 genuine");
    EXPECT_EQ(g.x, ga_plot_layout_x(&p0.frame, 40));
    EXPECT_EQ(g.x_end, ga_plot_layout_x(&p0.frame, 42));
    EXPECT_EQ(g.y, ga_plot_layout_y(&p0.frame, st.res[40])) << "on the reserved line";
    EXPECT_EQ(h.count, 1u);
    EXPECT_STREQ(h.text, "OOM (event 90): genuine");
    EXPECT_TRUE(g.labelled);
    EXPECT_TRUE(h.labelled);
    ASSERT_EQ(p1.n_marks, 4u);
    EXPECT_STREQ(p1.marks[2].text, "OOM (event 10): fragmentation");
    EXPECT_STREQ(p1.marks[3].text, "OOM (event 80): fragmentation");
    ExpectMarksApart(p0);
    ExpectMarksApart(p1);
    ga_plot_stack_layout_free(&l);

    // A burst of 40 at one point: one mark, however many; same class, one word.
    st.ooms.assign(40, ga_oom_marker_t{50, 0, "genuine"});
    in = st.In();
    ASSERT_EQ(ga_plot_stack_layout_make(&in, &l), 0);
    ASSERT_EQ(l.panels[0].n_marks, 3u);
    EXPECT_STREQ(l.panels[0].marks[2].text, "40 OOMs (event 50): genuine");
    EXPECT_EQ(l.panels[1].n_marks, 2u);
    ga_plot_stack_layout_free(&l);
}

TEST(PlotStack, WritesPngAndSvg)
{
    Stacked st;
    st.ooms = {{40, 0, "fragmentation"}, {41, 0, "genuine"}, {95, 1, "genuine"}};
    ga_plot_input_t in = st.In();
    char err[256] = "";
    std::string path = TmpPath("stacked.png");
    ASSERT_EQ(ga_plot_write(path.c_str(), &in, err, sizeof(err)), 0) << err;
    std::string png = ReadFile(path);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(Be32(png, 16), 1200u);
    EXPECT_EQ(Be32(png, 20), (uint32_t)ga_plot_stack_height(&in));
    if (const char *out = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR"))
        std::ofstream(std::string(out) + "/stacked.png", std::ios::binary) << png;
    path = TmpPath("stacked.svg");
    ASSERT_EQ(ga_plot_write(path.c_str(), &in, err, sizeof(err)), 0) << err;
    std::string problem;
    EXPECT_EQ(XmlRoot(ReadFile(path), &problem).compare(0, 4, "svg "), 0);
    EXPECT_EQ(problem, "");
    // A band without values is refused, and no file is left.
    st.bands[1][1].bytes = nullptr;
    in = st.In();
    path = TmpPath("bad_stacked.png");
    EXPECT_NE(ga_plot_write(path.c_str(), &in, err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find("series 1 band 1 has no values"), std::string::npos) << err;
    EXPECT_FALSE(Exists(path));
}

TEST(PlotStack, BytesAreWrittenInTheirUnit)
{
    char b[32];
    ga_plot_format_bytes(900, b, sizeof b);
    EXPECT_STREQ(b, "900 bytes");
    ga_plot_format_bytes(512 * kMiB, b, sizeof b);
    EXPECT_STREQ(b, "512.00 MiB");
    ga_plot_format_bytes(1.5 * kGiB, b, sizeof b);
    EXPECT_STREQ(b, "1.50 GiB");
}

} // namespace
