// compare_test.cc: galloc replay --compare A B (tools/replay/compare.h,
// docs/owners.md "Comparing two records"), run as the command runs it
// (ga_replay_main, stdout and stderr captured) on two snapshots galloc
// records here with chosen stacks, so every site's change is known: a site
// that grew, one only in B, one only in A, one unchanged; the text table,
// its order, the phases, the totals, the JSON figures; devices paired by
// label; and the usage errors. Block sizes are ones whose blocks are exactly
// what they request, so the figures do not depend on galloc_usable_size.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/tools/recorder.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/replay/replay_cli.h"
}

namespace {

using recorder::MiB;
using recorder::Recorder;
using recorder::Stack;

const Stack kBuild = {{"model.py", "build", 10}, {"train.py", "main", 40}};
const Stack kForward = {{"model.py", "forward", 20},
                        {"/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "_call_impl", 1790},
                        {"train.py", "step", 30}};
const Stack kAttention = {{"attn.py", "attention", 7},
                          {"/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "_call_impl", 1790},
                          {"train.py", "step", 30}};
const Stack kOptimizer = {{"/usr/lib/python3/dist-packages/torch/optim/adamw.py", "_multi_tensor_adamw", 500},
                          {"train.py", "step", 38}};

// One step of a job: build (4 x 64 MiB, kept), forward (n_forward x 64 MiB),
// then, in A, the optimizer's state (2 x 32 MiB), in B an attention buffer
// (96 MiB); the step's transients freed at the end. Each block is a segment
// of its own, so the reserved peak is the moment everything is live.
std::string Record(const std::string &name, int n_forward, bool optimizer, bool attention)
{
    Recorder r("sim_capacity:4GiB");
    for (int i = 0; i < 4; i++)
        r.Alloc(64 * MiB, kBuild);
    std::vector<void *> step;
    for (int i = 0; i < n_forward; i++)
        step.push_back(r.Alloc(64 * MiB, kForward));
    for (int i = 0; optimizer && i < 2; i++)
        r.Alloc(32 * MiB, kOptimizer);
    if (attention)
        step.push_back(r.Alloc(96 * MiB, kAttention));
    for (void *p : step)
        r.Free(p);
    return r.Write(name);
}

struct Result {
    int code = -1;
    std::string out, err;
};

// galloc replay ARGS..., in this process, its stdout and stderr captured.
Result Replay(std::vector<std::string> args)
{
    args.insert(args.begin(), "replay");
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string out = TmpPath("compare.out"), err = TmpPath("compare.err");
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
        fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fo, 1);
    dup2(fe, 2);
    Result r;
    r.code = ga_replay_main(static_cast<int>(args.size()), argv.data());
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    close(fo);
    close(fe);
    r.out = ReadAll(out);
    r.err = ReadAll(err);
    return r;
}

// The lines of s that contain what.
std::vector<std::string> Lines(const std::string &s, const std::string &what)
{
    std::vector<std::string> v;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find('\n', i);
        std::string line = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
        if (line.find(what) != std::string::npos)
            v.push_back(line);
        i = j == std::string::npos ? s.size() : j + 1;
    }
    return v;
}

// Whether python3 reads s as JSON (true where python3 is missing: nothing to check with).
bool ParsesAsJson(const std::string &s)
{
    if (std::system("command -v python3 >/dev/null 2>&1") != 0)
        return true;
    std::string p = Write("compare.json", s);
    return std::system(("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + p).c_str()) == 0;
}

class Compare : public ::testing::Test {
  protected:
    static void SetUpTestSuite()
    {
        a_ = new std::string(Record("a.pickle", 8, true, false));
        b_ = new std::string(Record("b.pickle", 10, false, true));
    }
    static void TearDownTestSuite()
    {
        delete a_;
        delete b_;
    }
    static std::string *a_, *b_;
};
std::string *Compare::a_ = nullptr;
std::string *Compare::b_ = nullptr;

TEST_F(Compare, TheTextListsTheSitesByChange)
{
    Result r = Replay({"--compare", *a_, *b_});
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_EQ(r.err, "");
    // both records' peaks: A 832 MiB (256 + 512 + 64), B 992 MiB (256 + 640 + 96)
    auto a = Lines(r.out, "A: ");
    ASSERT_EQ(a.size(), 1u) << r.out;
    EXPECT_NE(a[0].find("a.pickle"), std::string::npos) << a[0];
    EXPECT_NE(a[0].find("recorded): peak reserved 832.00 MiB, peak allocated 832.00 MiB, fits"), std::string::npos)
        << a[0];
    auto b = Lines(r.out, "B: ");
    ASSERT_EQ(b.size(), 1u);
    EXPECT_NE(b[0].find("peak reserved 992.00 MiB, peak allocated 992.00 MiB, fits"), std::string::npos) << b[0];
    EXPECT_NE(b[0].find("keyed by recorded stacks"), std::string::npos) << b[0];
    // the table, most change first
    size_t head = r.out.find("A bytes       B bytes         change  site\n");
    ASSERT_NE(head, std::string::npos) << r.out;
    std::string table = r.out.substr(head);
    const char *rows[] = {
        "    512.00 MiB    640.00 MiB    +128.00 MiB  model.py:20 forward\n",
        "       0 bytes     96.00 MiB     +96.00 MiB  attn.py:7 attention\n",
        "     64.00 MiB       0 bytes     -64.00 MiB  train.py:38 step\n",
        "    256.00 MiB    256.00 MiB        0 bytes  model.py:10 build\n",
    };
    size_t at = 0;
    for (const char *row : rows) {
        size_t k = table.find(row);
        EXPECT_NE(k, std::string::npos) << row << "\nin\n" << table;
        EXPECT_GT(k, at) << "in order: " << row;
        at = k;
    }
    EXPECT_NE(r.out.find("  phases: forward +224.00 MiB (512.00 MiB -> 736.00 MiB), backward 0 bytes (0 bytes -> 0 "
                         "bytes), optimizer -64.00 MiB (64.00 MiB -> 0 bytes), other 0 bytes (256.00 MiB -> 256.00 "
                         "MiB)\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("  total: allocated 832.00 MiB -> 992.00 MiB (+160.00 MiB), reserved 832.00 MiB -> 992.00 "
                         "MiB (+160.00 MiB), 4 sites\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("at the reserved peak (A after event 13, B after event 14)"), std::string::npos) << r.out;
}

TEST_F(Compare, TopCutsTheTableAndSumsTheRest)
{
    Result r = Replay({"--compare", "--top", "2", *a_, *b_});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("attn.py:7 attention\n"), std::string::npos);
    EXPECT_EQ(r.out.find("train.py:38 step\n"), std::string::npos);
    EXPECT_NE(r.out.find("    320.00 MiB    256.00 MiB     -64.00 MiB  ... 2 more sites (--top N; --json: all)\n"),
              std::string::npos)
        << r.out;
}

TEST_F(Compare, TheJsonHasEverySiteAtBothPeaks)
{
    Result r = Replay({"--compare", "--json", *a_, *b_});
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string &j = r.out;
    EXPECT_TRUE(ParsesAsJson(j)) << j;
    EXPECT_EQ(j.rfind("{\"tool\": \"galloc replay\", \"version\": 2, ", 0), 0u) << j.substr(0, 80);
    EXPECT_NE(j.find("\"peak_reserved_bytes\": 872415232, \"peak_allocated_bytes\": 872415232"), std::string::npos)
        << j; // A: 832 MiB
    EXPECT_NE(j.find("\"peak_reserved_bytes\": 1040187392, \"peak_allocated_bytes\": 1040187392"), std::string::npos)
        << j; // B: 992 MiB
    EXPECT_NE(j.find("\"keyed_by\": \"recorded stacks\""), std::string::npos);
    // every site at both moments (the two peaks are one moment here: the same figures twice)
    const char *sites[] = {
        "{\"name\": \"model.py:20 forward\", \"a_bytes\": 536870912, \"b_bytes\": 671088640, \"change_bytes\": "
        "134217728, \"a_blocks\": 8, \"b_blocks\": 10}",
        "{\"name\": \"attn.py:7 attention\", \"a_bytes\": 0, \"b_bytes\": 100663296, \"change_bytes\": 100663296, "
        "\"a_blocks\": 0, \"b_blocks\": 1}",
        "{\"name\": \"train.py:38 step\", \"a_bytes\": 67108864, \"b_bytes\": 0, \"change_bytes\": -67108864, "
        "\"a_blocks\": 2, \"b_blocks\": 0}",
        "{\"name\": \"model.py:10 build\", \"a_bytes\": 268435456, \"b_bytes\": 268435456, \"change_bytes\": 0, "
        "\"a_blocks\": 4, \"b_blocks\": 4}",
    };
    size_t reserved = j.find("\"peak_reserved\": "), allocated = j.find("\"peak_allocated\": ");
    ASSERT_NE(reserved, std::string::npos);
    ASSERT_NE(allocated, std::string::npos);
    for (const char *s : sites) {
        size_t k = j.find(s, reserved);
        EXPECT_LT(k, allocated) << "at the reserved peak: " << s;
        EXPECT_NE(j.find(s, allocated), std::string::npos) << "at the allocated peak: " << s;
    }
    EXPECT_NE(j.find("\"forward\": {\"a_bytes\": 536870912, \"b_bytes\": 771751936, \"change_bytes\": 234881024}"),
              std::string::npos)
        << j;
    EXPECT_NE(j.find("\"optimizer\": {\"a_bytes\": 67108864, \"b_bytes\": 0, \"change_bytes\": -67108864}"),
              std::string::npos);
    // the allocated peak's reserved figure is the one after its allocation (its own segment), not before it
    EXPECT_NE(j.find("\"reserved\": {\"a_bytes\": 872415232, \"b_bytes\": 1040187392", allocated), std::string::npos)
        << j.substr(allocated, 400);
    EXPECT_NE(j.find("\"other_devices\": [],\n  \"skipped\": [],\n  \"error\": null}"), std::string::npos) << j;
}

TEST_F(Compare, ARecordAgainstItselfChangesNothing)
{
    Result r = Replay({"--compare", *a_, *a_});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("  total: allocated 832.00 MiB -> 832.00 MiB (0 bytes), reserved 832.00 MiB -> 832.00 MiB "
                         "(0 bytes), 3 sites\n"),
              std::string::npos)
        << r.out;
}

TEST_F(Compare, AnOomIsReportedNotAnError)
{
    Result r = Replay({"--compare", "--device-memory", "900MiB", *a_, *b_});
    EXPECT_EQ(r.code, 0) << "both replays ran: " << r.err;
    auto b = Lines(r.out, "B: ");
    ASSERT_EQ(b.size(), 1u) << r.out;
    EXPECT_NE(b[0].find("OOM (genuine)"), std::string::npos) << b[0];
}

TEST_F(Compare, DevicesArePairedByLabelAndTheRestSkipped)
{
    // A records device 0; the example snapshot has devices 0 and 1: device 1 is named and skipped.
    Result r = Replay({"--compare", *a_, Example("torch_snapshot.pickle")});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(Lines(r.out, "== compare").size(), 1u) << r.out;
    EXPECT_NE(r.out.find("skipped: " + Example("torch_snapshot.pickle") + " device 1: not in " + *a_ + "\n"),
              std::string::npos)
        << r.out;
    r = Replay({"--compare", "--json", Example("torch_snapshot.pickle"), Example("torch_snapshot.pickle")});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(ParsesAsJson(r.out));
    EXPECT_NE(r.out.find("\"other_devices\": [\n  {"), std::string::npos) << "device 1 with device 1";
    EXPECT_NE(r.out.find("\"skipped\": [],"), std::string::npos);
}

TEST_F(Compare, BadUsageExitsTwo)
{
    for (const auto &args : std::vector<std::vector<std::string>>{
             {"--compare", *a_},
             {"--compare", *a_, *b_, *a_},
             {"--compare", "--verify", *a_, *b_},
             {"--compare", "--snapshot", TmpPath("x.pickle"), *a_, *b_},
             {"--compare", "--plot", TmpPath("x.png"), *a_, *b_},
             {"--compare", "--no-owners", *a_, *b_},
             {"--compare", "--conf", "", "--conf", "expandable_segments:True", *a_, *b_},
         }) {
        Result r = Replay(args);
        EXPECT_EQ(r.code, 2) << args[1] << ": " << r.out;
        EXPECT_NE(r.err.find("galloc replay: "), std::string::npos) << r.err;
        EXPECT_EQ(r.out, "");
    }
    Result r = Replay({"--compare", *a_, TmpPath("missing.pickle")});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("missing.pickle"), std::string::npos) << r.err;
    r = Replay({"--compare", "--conf", "no_such_key:1", *a_, *b_});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("no_such_key"), std::string::npos) << r.err;
    // One --conf applies to both.
    r = Replay({"--compare", "--conf", "expandable_segments:True", *a_, *b_});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(Lines(r.out, "expandable_segments:True): peak reserved").size(), 2u) << r.out;
}

} // namespace
