// tools_lib_test.cc: the command as a library (tools/lib, galloc_tools.h):
// galloc_tools_run gives the command's exit status, its --json on *out and
// its messages on *messages, restores the process's stdio streams, and runs
// again in the same process; galloc_tools_trace_info counts a trace's events
// through the readers; galloc_tools_main runs the whole command on the
// process's own stdout and stderr. Exact figures from the README's example.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tools/tmpfiles.h"
#include "tools/version.h" // GA_TOOLS_VERSION, from packaging/VERSION

extern "C" {
#include <galloc/galloc_tools.h>
}

namespace {

struct Outcome {
    int rc = -1;
    std::string out, messages;
    std::vector<std::pair<double, uint64_t>> progress;
};

void OnProgress(void *ctx, double fraction, uint64_t events)
{
    static_cast<Outcome *>(ctx)->progress.emplace_back(fraction, events);
}

Outcome Galloc(std::vector<std::string> args)
{
    std::vector<const char *> argv;
    for (const auto &a : args)
        argv.push_back(a.c_str());
    Outcome r;
    char *out = nullptr, *messages = nullptr;
    r.rc = galloc_tools_run((int)argv.size(), argv.data(), OnProgress, &r, &out, &messages);
    if (out != nullptr)
        r.out = out;
    if (messages != nullptr)
        r.messages = messages;
    galloc_tools_free(out);
    galloc_tools_free(messages);
    return r;
}

TEST(ToolsLib, ReplayJsonIsTheCommands)
{
    FILE *out = stdout, *err = stderr;
    Outcome r = Galloc(
        {"replay", "--json", "--conf", "", "--conf", "expandable_segments:True", Example("fragmentation.trace")});
    EXPECT_EQ(stdout, out) << "stdout restored";
    EXPECT_EQ(stderr, err) << "stderr restored";
    EXPECT_EQ(r.rc, 1) << r.messages; // README: the defaults OOM
    EXPECT_EQ(r.messages, "");
    EXPECT_EQ(r.out.rfind("{\"tool\": \"galloc replay\"", 0), 0u) << r.out.substr(0, 200);
    EXPECT_NE(r.out.find("{\"event\": 1601, \"size\": 2147483648"), std::string::npos);
    EXPECT_NE(r.out.find("7.96 GiB is reserved by PyTorch but unallocated"), std::string::npos);
    EXPECT_NE(r.out.find("\"verdict\": \"fits\""), std::string::npos);
    ASSERT_FALSE(r.progress.empty());
    EXPECT_LE(r.progress.back().second, 1720u);
    // The command's globals (getopt) start afresh: the same call again agrees.
    Outcome again = Galloc(
        {"replay", "--json", "--conf", "", "--conf", "expandable_segments:True", Example("fragmentation.trace")});
    EXPECT_EQ(again.rc, 1);
    EXPECT_NE(again.out.find("{\"event\": 1601, \"size\": 2147483648"), std::string::npos);
    EXPECT_EQ(again.messages, "");
}

TEST(ToolsLib, BadInputIsExitTwoWithTheMessage)
{
    Outcome r = Galloc({"replay", "--json", TmpPath("no-such.trace")});
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.messages.find("no-such.trace: cannot open"), std::string::npos) << r.messages;
    Outcome u = Galloc({"fit", "--jobs", "0", Example("fragmentation.trace")});
    EXPECT_EQ(u.rc, 2);
    EXPECT_NE(u.messages.find("bad --jobs"), std::string::npos) << u.messages;
    const char *argv[] = {"gen"};
    char *out = nullptr, *messages = nullptr;
    EXPECT_EQ(galloc_tools_run(1, argv, nullptr, nullptr, &out, &messages), -1) << "only replay and fit";
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(messages, nullptr);
}

TEST(ToolsLib, FitJson)
{
    Outcome r =
        Galloc({"fit", "--json", "--jobs", "2", "--max-configs", "4", "--bisect", "0", Example("fragmentation.trace")});
    EXPECT_EQ(r.rc, 0) << r.messages;
    EXPECT_EQ(r.out.rfind("{\"tool\": \"galloc fit\"", 0), 0u) << r.out.substr(0, 200);
    EXPECT_NE(r.out.find("\"events\": 1720"), std::string::npos);
}

// galloc_tools_main on argv as main() gets it; (status, stdout, stderr) as
// the process's file descriptors saw them.
Outcome Main(std::vector<std::string> args)
{
    std::vector<const char *> argv;
    for (const auto &a : args)
        argv.push_back(a.c_str());
    Outcome r;
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    r.rc = galloc_tools_main((int)argv.size(), argv.data());
    r.out = testing::internal::GetCapturedStdout();
    r.messages = testing::internal::GetCapturedStderr();
    return r;
}

TEST(ToolsLib, MainIsTheWholeCommandOnTheProcesssStdio)
{
    Outcome v = Main({"galloc", "--version"});
    EXPECT_EQ(v.rc, 0);
    EXPECT_EQ(v.out, "galloc " GA_TOOLS_VERSION "\n");
    EXPECT_EQ(v.messages, "");
    Outcome h = Main({"galloc", "help"});
    EXPECT_EQ(h.rc, 0);
    EXPECT_EQ(h.out.rfind("usage: galloc <command> [options]\n", 0), 0u) << h.out;
    EXPECT_NE(h.out.find("  budget   estimate a training step's memory budget"), std::string::npos) << h.out;
    Outcome r = Main({"galloc", "replay", "--json", Example("fragmentation.trace")});
    EXPECT_EQ(r.rc, 1) << r.messages; // the defaults OOM
    EXPECT_EQ(r.out.rfind("{\"tool\": \"galloc replay\"", 0), 0u) << r.out.substr(0, 200);
    Outcome bad = Main({"galloc", "nonsense"});
    EXPECT_EQ(bad.rc, 2);
    EXPECT_EQ(bad.out, "");
    EXPECT_EQ(bad.messages.rfind("galloc: unknown command \"nonsense\"\nusage:", 0), 0u) << bad.messages;
    Outcome none = Main({"galloc"});
    EXPECT_EQ(none.rc, 2);
    EXPECT_EQ(none.messages.rfind("usage: galloc", 0), 0u) << none.messages;
    testing::internal::CaptureStderr();
    EXPECT_EQ(galloc_tools_main(0, nullptr), 2) << "no argv";
    EXPECT_EQ(testing::internal::GetCapturedStderr().rfind("usage: galloc", 0), 0u);
    // The captured run goes on working after, with the same figures.
    Outcome captured = Galloc({"replay", "--json", Example("fragmentation.trace")});
    EXPECT_EQ(captured.rc, 1);
    const char *oom = "{\"event\": 1601, \"size\": 2147483648";
    EXPECT_NE(r.out.find(oom), std::string::npos);
    EXPECT_NE(captured.out.find(oom), std::string::npos);
}

TEST(ToolsLib, TraceInfo)
{
    char *json = nullptr, *messages = nullptr;
    ASSERT_EQ(galloc_tools_trace_info(Example("fragmentation.trace").c_str(), "auto", &json, &messages), 0) << messages;
    std::string j = json;
    EXPECT_NE(j.find("\"format\": \"galloc\", \"device_memory\": 85899345920"), std::string::npos) << j;
    EXPECT_NE(j.find("\"allocs\": 880, \"frees\": 720, \"ooms\": 0, \"annotations\": 120"), std::string::npos) << j;
    EXPECT_NE(j.find("\"events\": 1720"), std::string::npos) << j;
    // what the commands say about the file: its device and where the size comes from
    EXPECT_NE(j.find("\"device_memory_source\": \"header\""), std::string::npos) << j;
    EXPECT_STREQ(messages, "");
    galloc_tools_free(json);
    galloc_tools_free(messages);
    std::string bad = Write("bad.trace", "galloc-trace 1\nalloc nonsense\n");
    EXPECT_EQ(galloc_tools_trace_info(bad.c_str(), nullptr, &json, &messages), 2);
    EXPECT_EQ(json, nullptr);
    EXPECT_NE(std::string(messages).find("bad.trace:2"), std::string::npos) << messages;
    galloc_tools_free(messages);
    EXPECT_EQ(galloc_tools_trace_info(bad.c_str(), "nope", &json, &messages), 2);
    EXPECT_NE(std::string(messages).find("unknown format \"nope\""), std::string::npos) << messages;
    galloc_tools_free(messages);
}

} // namespace
