// readers_kineto_test.cc: the PyTorch profiler (Kineto) Chrome-trace reader:
// memory events per device in time order, the ranges that make each event's
// stack, real traces' stacks, and truncated or garbled files giving -1 with a
// message naming the file and the byte, never a crash.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/tools/readers_util.h"
#include "tests/tools/shared_traces.h"

namespace {

// A Kineto-style trace: header fields, other events, CPU memory events, two
// CUDA devices, events out of time order, an id reused after its free.
std::string Kineto()
{
    auto mem = [](const char *ts, long long addr, long long bytes, int type, int dev) {
        return std::string("{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", "
                           "\"pid\": 7, \"tid\": 7, \"ts\": ") +
               ts + ", \"args\": {\"Total Reserved\": 2097152, \"Total Allocated\": 512, \"Bytes\": " +
               std::to_string(bytes) + ", \"Addr\": " + std::to_string(addr) +
               ", \"Device Type\": " + std::to_string(type) + ", \"Device Id\": " + std::to_string(dev) + "}}";
    };
    return "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"H100 \\u00e9\"}],\n"
           "  \"traceEvents\": [\n"
           "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"ts\": 100, \"dur\": 3, "
           "\"args\": {\"External id\": 1, \"Input Dims\": [[2, 3], []]}},\n  " +
           mem("100.5", 139872812433408, 512, 1, 0) + ",\n  " +   // [1]
           mem("101", 4096, 64, 0, -1) + ",\n  " +                // [2] CPU: skipped
           mem("103.25", 139872812433408, -512, 1, 0) + ",\n  " + // [3]
           mem("102", 139872812434432, 1048576, 1, 0) + ",\n  " + // [4] earlier than [3]
           mem("99", 1099511627776, 2048, 1, 1) + ",\n  " +       // [5] device 1
           mem("104", 139872812433408, 0, 1, 0) + ",\n  " +       // [6] zero bytes: skipped
           mem("105", 139872812433408, 256, 1, 0) +
           "\n  ],\n" // [7] reuse of the address
           "  \"traceName\": \"x.json\", \"displayTimeUnit\": \"ms\"\n}\n";
}

TEST(KinetoReader, MemoryEventsPerDeviceInTimeOrder)
{
    Read r(Write("k.json", Kineto()));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_KINETO);
    ASSERT_EQ(r.units, 2u);
    ASSERT_EQ(r.ev.size(), 5u);
    // Device 0, sorted by ts: [1] 100.5, [4] 102, [3] 103.25, [7] 105.
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[0].id, 139872812433408u);
    EXPECT_EQ(r.ev[0].size, 512u);
    EXPECT_EQ(r.ev[0].where, 1u);
    EXPECT_EQ(r.ev[1].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[1].size, 1048576u);
    EXPECT_EQ(r.ev[1].where, 4u);
    EXPECT_EQ(r.ev[2].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[2].id, 139872812433408u);
    EXPECT_EQ(r.ev[2].stream, GA_STREAM_NONE);
    EXPECT_EQ(r.ev[3].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[3].size, 256u);
    EXPECT_EQ(r.ev[3].where, 7u);
    // Device 1.
    EXPECT_EQ(r.ev[4].id, 1099511627776u);
    EXPECT_EQ(r.ev[4].size, 2048u);
    EXPECT_EQ(r.ev[4].where, 5u);
    EXPECT_EQ(r.notes.skipped, 0u); // unit 1's notes: the skips are counted with unit 0

    char err[512];
    ga_reader_t *rd = nullptr;
    std::string p = Write("k2.json", Kineto());
    ASSERT_EQ(ga_reader_open(p.c_str(), GA_FORMAT_AUTO, &rd, err, sizeof(err)), 0) << err;
    EXPECT_STREQ(ga_reader_unit_label(rd, 0), "device 0");
    EXPECT_STREQ(ga_reader_unit_label(rd, 1), "device 1");
    ga_reader_notes_t notes;
    ga_reader_notes(rd, &notes);
    EXPECT_EQ(notes.skipped, 3u); // the cpu_op, the CPU and the zero-byte memory events
    ga_reader_close(rd);
}

// The older layout (PyTorch 1.9): Bytes without Addr. Each free is tied to
// the most recent live allocation of its size on its device (LIFO); one
// with none is counted and skipped. deviceProperties gives each device's size.
TEST(KinetoReader, OlderLayoutMatchesFreesBySize)
{
    auto mem = [](const char *ts, long long bytes, int type, int dev) {
        return std::string("{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 7, \"tid\": 7, \"ts\": ") + ts +
               ", \"args\": {\"Device Type\": " + std::to_string(type) + ", \"Device Id\": " + std::to_string(dev) +
               ", \"Bytes\": " + std::to_string(bytes) + "}}";
    };
    std::string t = "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"totalGlobalMem\": 17179869184}, "
                    "{\"id\": 1, \"name\": \"x\", \"totalGlobalMem\": 8589934592}],\n\"traceEvents\": [\n" +
                    mem("1", 512, 1, 0) + ",\n" +    // a: id 2 (place 1 in time order, + 1)
                    mem("2", 512, 1, 0) + ",\n" +    // b: id 3
                    mem("3", 1024, 1, 0) + ",\n" +   // c: id 4
                    mem("4", -512, 1, 0) + ",\n" +   // frees b, the most recent 512
                    mem("5", -1024, 1, 0) + ",\n" +  // frees c
                    mem("6", -2048, 1, 0) + ",\n" +  // no live 2048: skipped
                    mem("7", -512, 1, 0) + ",\n" +   // frees a
                    mem("8", -512, 1, 0) + ",\n" +   // none left: skipped
                    mem("8.5", 64, 0, -1) + ",\n" +  // CPU: skipped
                    mem("0.5", 4096, 1, 1) + ",\n" + // device 1: id 1
                    mem("9", -4096, 1, 1) + "\n]}\n";
    std::string p = Write("old.json", t);
    char err[512];
    ga_reader_t *rd = nullptr;
    ASSERT_EQ(ga_reader_open(p.c_str(), GA_FORMAT_AUTO, &rd, err, sizeof(err)), 0) << err;
    ASSERT_EQ(ga_reader_units(rd), 2u);
    const struct {
        ga_event_kind_t kind;
        uint64_t id, size;
    } want0[] = {{GA_EV_ALLOC, 2, 512}, {GA_EV_ALLOC, 3, 512}, {GA_EV_ALLOC, 4, 1024},
                 {GA_EV_FREE, 3, 0},    {GA_EV_FREE, 4, 0},    {GA_EV_FREE, 2, 0}};
    ga_event_t e;
    for (const auto &w : want0) {
        ASSERT_EQ(ga_reader_next(rd, &e, err, sizeof(err)), 1) << err;
        EXPECT_EQ(e.kind, w.kind);
        EXPECT_EQ(e.id, w.id);
        EXPECT_EQ(e.size, w.size);
    }
    EXPECT_EQ(ga_reader_next(rd, &e, err, sizeof(err)), 0);
    EXPECT_EQ(ga_reader_device_memory(rd), 17179869184u);
    ga_reader_notes_t n;
    ga_reader_notes(rd, &n);
    EXPECT_EQ(n.start.kind, GA_START_UNKNOWN);
    EXPECT_TRUE(n.start.by_size);
    EXPECT_EQ(n.start.unmatched_frees, 2u);
    EXPECT_EQ(n.skipped, 3u); // the CPU event and the two unmatched frees
    ASSERT_EQ(ga_reader_begin(rd, 1, err, sizeof(err)), 0) << err;
    EXPECT_STREQ(ga_reader_unit_label(rd, 1), "device 1");
    EXPECT_EQ(ga_reader_device_memory(rd), 8589934592u);
    ASSERT_EQ(ga_reader_next(rd, &e, err, sizeof(err)), 1) << err;
    EXPECT_EQ(e.kind, GA_EV_ALLOC);
    EXPECT_EQ(e.id, 1u);
    ASSERT_EQ(ga_reader_next(rd, &e, err, sizeof(err)), 1) << err;
    EXPECT_EQ(e.kind, GA_EV_FREE);
    EXPECT_EQ(e.id, 1u);
    EXPECT_EQ(ga_reader_next(rd, &e, err, sizeof(err)), 0);
    ga_reader_notes(rd, &n);
    EXPECT_EQ(n.start.unmatched_frees, 0u);
    EXPECT_EQ(n.skipped, 0u);
    ga_reader_close(rd);

    // The newer layout's trace records no size in its deviceProperties: 0.
    Read k(Write("k6.json", Kineto()));
    ASSERT_EQ(k.rc, 0) << k.err;
    EXPECT_EQ(k.device_memory, 0u);
    // Events with Addr and without in one file: refused, not half-guessed.
    ExpectBad("kmix.json",
              "{\"traceEvents\": [" + mem("1", 512, 1, 0) +
                  ", {\"name\": \"[memory]\", \"ts\": 2, \"args\": {\"Addr\": 16, \"Bytes\": -512, \"Device Type\": 1, "
                  "\"Device Id\": 0}}]}",
              ":", "1 CUDA [memory] events have Addr and 1 do not");
    // Without Addr but with totals: the start is seeded (1,024 bytes live:
    // one pinned block and one reserve) and the frees are still guessed.
    auto tot = [](int ts, int bytes, int total) {
        return "{\"name\": \"[memory]\", \"ts\": " + std::to_string(ts) +
               ", \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Bytes\": " + std::to_string(bytes) +
               ", \"Total Allocated\": " + std::to_string(total) + ", \"Total Reserved\": 2097152}}";
    };
    Read t2(Write("oldtot.json", "{\"traceEvents\": [" + tot(1, 512, 1536) + ", " + tot(2, -512, 1024) + "]}"));
    ASSERT_EQ(t2.rc, 0) << t2.err;
    ASSERT_EQ(t2.ev.size(), 4u);
    EXPECT_EQ(t2.notes.prologue, 2u);
    EXPECT_EQ(t2.notes.start.kind, GA_START_SEEDED);
    EXPECT_TRUE(t2.notes.start.by_size);
    EXPECT_EQ(t2.ev[2].kind, GA_EV_ALLOC);
    EXPECT_EQ(t2.ev[3].kind, GA_EV_FREE);
    EXPECT_EQ(t2.ev[3].id, t2.ev[2].id);
}

TEST(KinetoReader, OneLineAndBareArray)
{
    // json.dump writes no newlines at all; Chrome also accepts a bare array.
    std::string one = "{\"traceEvents\":[{\"name\":\"[memory]\",\"ph\":\"i\",\"ts\":1,\"args\":{\"Addr\":16,"
                      "\"Bytes\":32,\"Device Type\":1,\"Device Id\":3}}]}";
    Read a(Write("k3.json", one));
    ASSERT_EQ(a.rc, 0) << a.err;
    EXPECT_EQ(a.format, GA_FORMAT_KINETO);
    ASSERT_EQ(a.ev.size(), 1u);
    EXPECT_EQ(a.ev[0].id, 16u);
    Read b(Write("k4.json", "[{\"name\":\"[memory]\",\"ts\":1,\"args\":{\"Addr\":16,\"Bytes\":32,\"Device Type\":1,"
                            "\"Device Id\":0}}]"),
           GA_FORMAT_KINETO);
    ASSERT_EQ(b.rc, 0) << b.err;
    ASSERT_EQ(b.ev.size(), 1u);
    Read c(Write("k5.json", "{\"traceEvents\": []}"));
    ASSERT_EQ(c.rc, 0) << c.err;
    EXPECT_EQ(c.units, 1u);
    EXPECT_EQ(c.ev.size(), 0u);
}

TEST(KinetoReader, LargeFileStreamsThroughTheBuffer)
{
    // Several MiB of other events around the memory events: tokens cross the
    // input buffer's refills.
    std::string s = "{\"traceEvents\": [";
    int mem = 0;
    for (int i = 0; i < 40000; i++) {
        if (i % 100 == 0) {
            s += "{\"name\":\"[memory]\",\"ts\":" + std::to_string(i) +
                 ",\"args\":{\"Addr\":" + std::to_string(4096 + i) +
                 ",\"Bytes\":8,\"Device Type\":1,\"Device Id\":0}},";
            mem++;
        }
        s += "{\"name\":\"aten::add_" + std::string(i % 97, 'x') + "\",\"ph\":\"X\",\"ts\":" + std::to_string(i) +
             ",\"args\":{\"Sequence number\":" + std::to_string(i) + "}},";
    }
    s.back() = ']';
    s += "}";
    ASSERT_GT(s.size(), 3u << 20);
    Read r(Write("big.json", s));
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), (size_t)mem);
    EXPECT_EQ(r.ev.back().id, 4096u + 39900u);
}

TEST(KinetoReader, BadFilesNameTheByte)
{
    const std::string h = "{\"traceEvents\": [";
    ExpectBad("kb1.json", h + "{\"name\": \"[memory]\", \"ts\": 1, \"args\": {\"Addr\": 1, \"Bytes\"", ": byte ",
              "truncated");
    ExpectBad("kb2.json",
              h + "{\"name\": \"[memory]\", \"ts\": 1, \"args\": {\"Addr\": 1, \"Bytes\": 8, "
                  "\"Device Type\": 1}}]}",
              ": byte 17: traceEvents[0]", "Device Id");
    ExpectBad("kb3.json",
              h + "{\"name\": \"[memory]\", \"ts\": 1, \"args\": {\"Addr\": \"0x10\", \"Bytes\": 8, "
                  "\"Device Type\": 1, \"Device Id\": 0}}]}",
              ": byte 17:", "integer args");
    ExpectBad("kb4.json",
              h + "{\"name\": \"[memory]\", \"ts\": 1, \"args\": {\"Addr\": 1, \"Bytes\": 8, "
                  "\"Device Type\": 1, \"Device Id\": 5000}}]}",
              ":", "Device Id");
    ExpectBad("kb5.json", h + "1 2]}", ": byte 19:", "expected ',' or ']'");
    ExpectBad("kb6.json", h + "]} x", ": byte 20:", "text after the end");
    ExpectBad("kb7.json", "{\"traceEvents\": 5, \"x\": 1}", ":", "no \"traceEvents\" array");
    ExpectBad("kb8.json", "{\"traceEvents\": [\"\x01\"]}", ": byte 18:", "control character");
    ExpectBad("kb9.json", "{\"a\": 1}", ":", "neither", GA_FORMAT_AUTO); // JSON but no known format
}

// Ranges for the stacks: a CUDA memory event's stack is the cpu_op,
// user_annotation and python_function ranges on its pid and tid that hold
// its ts (kineto_ranges.c's rules), innermost first.
std::string Range(const char *cat, const char *name, const char *ts, const char *dur, const char *tid = "7")
{
    return std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
           "\", \"pid\": 7, \"tid\": " + tid + ", \"ts\": " + ts + (dur ? std::string(", \"dur\": ") + dur : "") +
           ", \"args\": {\"External id\": 3}}";
}

std::string Mem(const char *ts, long long bytes, int dev = 0, const char *tid = "7")
{
    return std::string("{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", "
                       "\"pid\": 7, \"tid\": ") +
           tid + ", \"ts\": " + ts +
           ", \"args\": {\"Total Reserved\": 2097152, \"Total Allocated\": 0, \"Bytes\": " + std::to_string(bytes) +
           ", \"Addr\": 4096, \"Device Type\": 1, \"Device Id\": " + std::to_string(dev) + "}}";
}

TEST(KinetoReader, RangesMakeTheStack)
{
    const std::vector<std::string> evs = {
        Mem("1500", 512), // [0] before its ranges in the file
        Range("user_annotation", "ProfilerStep#3", "1000", "1000"), Range("cpu_op", "aten::linear", "1400", "200"),
        Range("cpu_op", "aten::empty", "1500", "0"),                         // holds its own instant only
        Range("gpu_user_annotation", "on the GPU", "1000", "1000"),          // not a host range
        Range("cuda_runtime", "cudaMalloc", "1450", "100"),                  // the CUDA API, not code
        Range("python_function", "a (2)/train.py(35): step", "1300", "500"), // parentheses in the path
        Range("python_function", "<built-in method conv2d of type object at 0x7f>", "1450", "100"),
        Range("cpu_op", "other thread", "1000", "1000", "8"), Range("cpu_op", "no dur", "1000", nullptr),
        Range("cpu_op", "negative dur", "1000", "-5"), Mem("1550", -512), // [11] a free: no stack
        Mem("1600", 256),                                                 // [12] at aten::linear's end: inside
        Mem("1600.001", 128),                                             // [13] a nanosecond later: outside
        // Ties: identical ranges (the later in the file is inner), the shorter of two starting together.
        Range("cpu_op", "outer twin", "3000", "100"), Range("cpu_op", "inner twin", "3000", "100"),
        Range("cpu_op", "shorter", "3000", "50"), Mem("3010", 64), // [17]
        // A partial overlap: both while both hold the time, the later start inner.
        Range("user_annotation", "A", "4000", "200"), Range("user_annotation", "B", "4150", "100"), Mem("4175", 64),
        Mem("4225", 64), // [20], [21]
        // A tid written as a string of digits is the same thread; one that is no number has none.
        Range("cpu_op", "string tid", "5000", "10", "\"9\""), Mem("5005", 64, 0, "9"), // [23]
        Mem("5005", 64, 0, "\"main\""),                                                // [24]
        Mem("6000", 64),                                                               // [25] nothing encloses it
        // The same text as a cpu_op and as a python_function: two different frames.
        Range("cpu_op", "x.py(1): f", "7000", "10"), Range("python_function", "x.py(1): f", "7000", "5"),
        Mem("7002", 64), // [28]
        // Times to the nanosecond: digits past the third decimal are dropped.
        Range("cpu_op", "frac", "8000.0015", "0.001"), // [8000001, 8000002] ns
        Mem("8000.0029", 64), Mem("8000.003", 64),     // [30] 8000002 ns: inside; [31] outside
        Mem("1500", 512, 1),                           // [32] device 1: its unit sweeps from the start again
    };
    std::string t = "{\"traceEvents\": [\n";
    for (size_t i = 0; i < evs.size(); i++)
        t += evs[i] + (i + 1 < evs.size() ? ",\n" : "\n");
    t += "]}\n";
    Read r(Write("ranges.json", t), GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.units, 2u);
    std::map<uint64_t, Stack> by; // by traceEvents index
    for (size_t i = 0; i < r.ev.size(); i++)
        ASSERT_TRUE(by.emplace(r.ev[i].where, r.stacks[i]).second) << "event " << r.ev[i].where << " twice";
    using V = std::vector<std::string>;
    const std::pair<uint64_t, V> want[] = {
        {0,
         {"aten::empty", "<built-in method conv2d of type object at 0x7f>", "aten::linear", "a (2)/train.py:35 step",
          "ProfilerStep#3"}},
        {11, {}},
        {12, {"aten::linear", "a (2)/train.py:35 step", "ProfilerStep#3"}},
        {13, {"a (2)/train.py:35 step", "ProfilerStep#3"}},
        {17, {"shorter", "inner twin", "outer twin"}},
        {20, {"B", "A"}},
        {21, {"B"}},
        {23, {"string tid"}},
        {24, {}},
        {25, {}},
        {28, {"x.py:1 f", "x.py(1): f"}},
        {30, {"frac"}},
        {31, {}},
        {32,
         {"aten::empty", "<built-in method conv2d of type object at 0x7f>", "aten::linear", "a (2)/train.py:35 step",
          "ProfilerStep#3"}},
    };
    for (const auto &w : want) {
        auto it = by.find(w.first);
        ASSERT_NE(it, by.end()) << "event " << w.first;
        EXPECT_EQ(it->second.Names(), w.second) << "event " << w.first;
        EXPECT_EQ(it->second.kind, w.second.empty() ? GA_STACK_NONE : GA_STACK_RANGES) << "event " << w.first;
    }
    EXPECT_EQ(r.ev.size(), sizeof(want) / sizeof(want[0]));
    // A python_function frame: file, line and function apart; every other range: its name only.
    const Frame &py = by[0].frames[3];
    EXPECT_TRUE(py.has_file);
    EXPECT_EQ(py.file, "a (2)/train.py");
    EXPECT_EQ(py.line, 35);
    EXPECT_EQ(py.name, "step");
    EXPECT_FALSE(by[0].frames[1].has_file); // "<built-in method ...>" is not FILE(LINE): NAME
    EXPECT_FALSE(by[0].frames[0].has_file);
    EXPECT_EQ(by[0].frames[0].line, 0);
}

// Times before the trace's zero: Kineto writes ts relative to a base, and a
// range may start before it. A negative start with a long range is kept
// whole (its end is start + dur, without overflow: a fuzzer found the
// overflow), and so is a range whose end would pass INT64_MAX nanoseconds.
TEST(KinetoReader, NegativeTimesAndEndlessRanges)
{
    const std::vector<std::string> evs = {
        Range("cpu_op", "before zero", "-450", "1000"), Mem("-449.5", 64), // [1]
        Mem("550.001", 64),                                                // [2] after its end
        // [9e18, 18e18] ns: past INT64_MAX, it ends there.
        Range("cpu_op", "to the end of time", "9000000000000000", "9000000000000000"),
        Mem("9223372036854000", 64), // [4]
    };
    std::string t = "{\"traceEvents\": [\n";
    for (size_t i = 0; i < evs.size(); i++)
        t += evs[i] + (i + 1 < evs.size() ? ",\n" : "\n");
    t += "]}\n";
    Read r(Write("negative.json", t), GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    std::map<uint64_t, std::vector<std::string>> by;
    for (size_t i = 0; i < r.ev.size(); i++)
        by[r.ev[i].where] = r.stacks[i].Names();
    using V = std::vector<std::string>;
    EXPECT_EQ(by[1], V{"before zero"});
    EXPECT_EQ(by[2], V{});
    EXPECT_EQ(by[4], V{"to the end of time"});
    EXPECT_EQ(r.ev.size(), 3u);
}

// The stacks of a real trace, counted: every allocation's depth, its exact
// stack where asked, and one key per distinct frame.
struct StackCensus {
    size_t allocs = 0, with_stack = 0;
    std::map<size_t, size_t> depth; // frames -> allocations
    std::map<uint64_t, Stack> at;   // traceEvents index -> stack, for the allocations in `want`
    std::set<std::vector<std::string>> distinct;
    std::map<uintptr_t, std::string> names; // key -> frame
    std::set<std::string> texts;

    StackCensus(const std::string &path, const std::set<uint64_t> &want)
    {
        char err[512];
        ga_reader_t *rd = nullptr;
        EXPECT_EQ(ga_reader_open(path.c_str(), GA_FORMAT_AUTO, &rd, err, sizeof(err)), 0) << err;
        if (rd == nullptr)
            return;
        std::map<uintptr_t, Frame> keys;
        ga_event_t e;
        int k;
        while ((k = ga_reader_next(rd, &e, err, sizeof(err))) == 1) {
            Stack s = CopyStack(e, &keys);
            if (e.kind != GA_EV_ALLOC || (e.flags & GA_EVF_PROLOGUE))
                continue;
            allocs++;
            with_stack += s.kind == GA_STACK_RANGES;
            depth[s.frames.size()]++;
            distinct.insert(s.Names());
            if (want.count(e.where))
                at[e.where] = s;
            for (size_t i = 0; i < s.frames.size(); i++) {
                names[e.stack.key(e.stack.data, i)] = s.frames[i].Text();
                texts.insert(s.frames[i].Text());
            }
        }
        EXPECT_EQ(k, 0) << err;
        ga_reader_close(rd);
    }
};

// The HolisticTraceAnalysis trace (PyTorch 1.13 era): its memory events sit
// inside cpu_op and user_annotation ranges on two threads (the main thread:
// forward, ProfilerStep#2; autograd's: backward). Every allocation has a
// stack, 3 to 6 ranges deep, 111 distinct ones over 37 names; figures
// computed from the JSON by an independent script (python3 json: the ranges
// of the allocation's pid and tid holding its ts, sorted by start, length,
// file order).
TEST(KinetoReader, RealTraceStacks)
{
    GA_SHARED_TRACE(path, "kineto-hta-rank1-memory.json.gz");
    StackCensus c(path, {79095, 44388, 42070, 61727});
    EXPECT_EQ(c.allocs, 13385u);
    EXPECT_EQ(c.with_stack, 13385u); // 100% of the CUDA allocations
    EXPECT_EQ(c.depth, (std::map<size_t, size_t>{{3, 9905}, {4, 1155}, {5, 2320}, {6, 5}}));
    EXPECT_EQ(c.distinct.size(), 111u);
    EXPECT_EQ(c.texts.size(), 37u);
    EXPECT_EQ(c.names.size(), 37u); // one key per distinct name
    using V = std::vector<std::string>;
    // The first allocation in time (traceEvents[79095], 25,165,824 bytes).
    EXPECT_EQ(c.at[79095].Names(),
              (V{"aten::empty_strided", "aten::empty_like", "aten::clone", "CompiledFunction", "ProfilerStep#2"}));
    // The largest (98,566,144 bytes), in backward.
    EXPECT_EQ(c.at[44388].Names(), (V{"aten::mm", "CompiledFunctionBackward",
                                      "autograd::engine::evaluate_function: CompiledFunctionBackward"}));
    // The first of the five deepest.
    EXPECT_EQ(c.at[42070].Names(),
              (V{"aten::empty", "aten::empty_like", "aten::clone", "aten::contiguous", "CompiledFunctionBackward",
                 "autograd::engine::evaluate_function: CompiledFunctionBackward"}));
    // The last.
    EXPECT_EQ(c.at[61727].Names(), (V{"aten::empty", "aten::empty_like", "aten::clone", "CompiledFunctionBackward",
                                      "autograd::engine::evaluate_function: CompiledFunctionBackward"}));
    EXPECT_EQ(c.at[61727].kind, GA_STACK_RANGES);
}

// The older layout (PyTorch 1.9): ranges of category "Operator" whose tid is
// a string ("25738") while the memory events' is a number (25738): the same
// thread. Every allocation has a stack, 1 to 6 deep.
TEST(KinetoReader, RealOlderTraceStacks)
{
    GA_SHARED_TRACE(path, "kineto-resnet50-memory.pt.trace.json.gz");
    StackCensus c(path, {23976, 25282, 23981});
    EXPECT_EQ(c.allocs, 4110u);
    EXPECT_EQ(c.with_stack, 4110u);
    EXPECT_EQ(c.depth, (std::map<size_t, size_t>{{1, 96}, {2, 642}, {3, 1302}, {4, 630}, {5, 966}, {6, 474}}));
    EXPECT_EQ(c.distinct.size(), 84u);
    EXPECT_EQ(c.texts.size(), 50u);
    EXPECT_EQ(c.names.size(), 50u);
    using V = std::vector<std::string>;
    EXPECT_EQ(c.at[23976].Names(), (V{"aten::empty_strided", "aten::to", "ProfilerStep#5"}));
    EXPECT_EQ(c.at[25282].Names(), (V{"aten::empty", "aten::cudnn_convolution_backward_weight",
                                      "aten::cudnn_convolution_backward", "CudnnConvolutionBackward"}));
    EXPECT_EQ(c.at[23981].Names(), (V{"aten::empty", "aten::cudnn_convolution", "aten::_convolution",
                                      "aten::convolution", "aten::conv2d", "ProfilerStep#5"}));
}

TEST(KinetoReader, EveryTruncation)
{
    std::string full = Kineto();
    for (size_t n = 0; n + 2 < full.size(); n += 5) {
        std::string p = Write("kt.json", full.substr(0, n));
        Read r(p, GA_FORMAT_KINETO);
        // The document is one value: every cut before its end is an error.
        EXPECT_EQ(r.rc, -1) << n;
        EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
    }
}

} // namespace
