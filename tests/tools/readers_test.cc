// readers_test.cc: the trace readers (RMM CSV, galloc text, PyTorch
// snapshot), format detection, and the helpers they use (numbers and sizes,
// the id map). Good files give exact events; truncated or garbled files give
// -1 with a message naming the file and the line or entry, never a crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "tools/idmap.h"
#include "tools/readers/trace_reader.h"
#include "tools/readers/units.h"
}

#include "tests/tools/readers_util.h"

namespace {

TEST(Units, Numbers)
{
    uint64_t v;
    EXPECT_TRUE(ga_units_parse_u64("0", 1, &v));
    EXPECT_TRUE(ga_units_parse_u64("18446744073709551615", 20, &v));
    EXPECT_EQ(v, UINT64_MAX);
    EXPECT_FALSE(ga_units_parse_u64("18446744073709551616", 20, &v));
    EXPECT_FALSE(ga_units_parse_u64("-1", 2, &v));
    EXPECT_FALSE(ga_units_parse_u64("", 0, &v));
    EXPECT_TRUE(ga_units_parse_hex("0x7F0000000000", 14, &v));
    EXPECT_EQ(v, 0x7f0000000000u);
    EXPECT_TRUE(ga_units_parse_hex("ff", 2, &v));
    EXPECT_EQ(v, 255u);
    EXPECT_FALSE(ga_units_parse_hex("0x", 2, &v));
    EXPECT_FALSE(ga_units_parse_hex("0x10000000000000000", 19, &v));
    EXPECT_TRUE(ga_units_parse_uint("0x10", 4, &v));
    EXPECT_EQ(v, 16u);
    EXPECT_TRUE(ga_units_parse_uint("10", 2, &v));
    EXPECT_EQ(v, 10u);
    double f;
    EXPECT_TRUE(ga_units_parse_fraction("0.8", 3, &f));
    EXPECT_DOUBLE_EQ(f, 0.8);
    EXPECT_FALSE(ga_units_parse_fraction("0.8x", 4, &f));
    EXPECT_FALSE(ga_units_parse_fraction(".", 1, &f));
}

TEST(Units, Sizes)
{
    struct {
        const char *s;
        uint64_t v;
    } ok[] = {{"80GiB", 80ull << 30},
              {"512MiB", 512ull << 20},
              {"1.5GB", 3ull << 29},
              {"4096", 4096},
              {"4k", 4096},
              {"2 MiB", 2ull << 20},
              {"0.5KiB", 512},
              {"1TB", 1ull << 40},
              {"7b", 7},
              {"1.25gib", 5ull << 28}};
    for (const auto &c : ok) {
        uint64_t v = 0;
        EXPECT_TRUE(ga_units_parse_size(c.s, strlen(c.s), &v)) << c.s;
        EXPECT_EQ(v, c.v) << c.s;
    }
    for (const char *bad : {"", "GiB", "12XB", "-5", "1.2.3", "99999999999999999999", "20000000000TiB"}) {
        uint64_t v;
        EXPECT_FALSE(ga_units_parse_size(bad, strlen(bad), &v)) << bad;
    }
    char b[32];
    ga_units_format_bytes(1024, b, sizeof(b));
    EXPECT_STREQ(b, "1024 bytes");
    ga_units_format_bytes(2 << 20, b, sizeof(b));
    EXPECT_STREQ(b, "2.00 MiB");
    ga_units_format_bytes(int64_t{80} << 30, b, sizeof(b));
    EXPECT_STREQ(b, "80.00 GiB");
    ga_units_format_bytes(-(int64_t{3} << 29), b, sizeof(b));
    EXPECT_STREQ(b, "-1.50 GiB");
    ga_units_format_count(1234567, b, sizeof(b));
    EXPECT_STREQ(b, "1,234,567");
    ga_units_format_count(999, b, sizeof(b));
    EXPECT_STREQ(b, "999");
}

TEST(IdMap, MatchesAReferenceModel)
{
    unsigned seed = 12345;
    std::mt19937_64 rng(seed);
    ga_idmap_t m;
    ga_idmap_init(&m);
    std::unordered_map<uint64_t, uint64_t> ref;
    // Keys like device pointers (shared high and low bits) plus 0 (the side slot) and UINT64_MAX.
    auto key = [&]() -> uint64_t {
        uint64_t r = rng() % 5000;
        return r == 0 ? 0 : r == 1 ? UINT64_MAX : 0x7f0000000000ull + (r << 9);
    };
    for (int i = 0; i < 200000; i++) {
        uint64_t k = key();
        int op = static_cast<int>(rng() % 3);
        ga_idmap_val_t v = {reinterpret_cast<void *>(static_cast<uintptr_t>(i)), static_cast<uint64_t>(i)}, out;
        if (op == 0) {
            bool replaced;
            ASSERT_EQ(ga_idmap_put(&m, k, v, &out, &replaced), 0);
            ASSERT_EQ(replaced, ref.count(k) == 1) << "seed " << seed << " step " << i;
            ref[k] = static_cast<uint64_t>(i);
        } else if (op == 1) {
            bool had = ga_idmap_remove(&m, k, &out);
            ASSERT_EQ(had, ref.count(k) == 1) << "seed " << seed << " step " << i;
            if (had) {
                ASSERT_EQ(out.stream, ref[k]);
                ref.erase(k);
            }
        } else {
            bool had = ga_idmap_get(&m, k, &out);
            ASSERT_EQ(had, ref.count(k) == 1) << "seed " << seed << " step " << i;
            if (had) {
                ASSERT_EQ(out.stream, ref[k]);
            }
        }
        ASSERT_EQ(ga_idmap_size(&m), ref.size());
    }
    for (const auto &kv : ref) {
        ga_idmap_val_t out;
        ASSERT_TRUE(ga_idmap_get(&m, kv.first, &out));
        ASSERT_EQ(out.stream, kv.second);
    }
    ga_idmap_free(&m);
    EXPECT_EQ(ga_idmap_size(&m), 0u);
}

// The format registry (formats.def): names, aliases, the --format list, and
// detection by probe score rather than by the order of the probes.
TEST(FormatRegistry, NamesAliasesAndDetection)
{
    char list[128];
    ga_reader_format_list(list, sizeof(list));
    EXPECT_STREQ(list, "rmm, torch, galloc, umpire, kineto");
    ga_format_t f;
    for (const char *name : {"rmm", "torch", "galloc", "umpire", "kineto"}) {
        ASSERT_TRUE(ga_reader_format_parse(name, &f)) << name;
        EXPECT_STREQ(ga_reader_format_name(f), name);
    }
    const std::pair<const char *, ga_format_t> aliases[] = {{"auto", GA_FORMAT_AUTO},
                                                            {"pytorch", GA_FORMAT_TORCH},
                                                            {"snapshot", GA_FORMAT_TORCH},
                                                            {"chrome", GA_FORMAT_KINETO},
                                                            {"profiler", GA_FORMAT_KINETO}};
    for (const auto &a : aliases) {
        ASSERT_TRUE(ga_reader_format_parse(a.first, &f)) << a.first;
        EXPECT_EQ(f, a.second) << a.first;
    }
    EXPECT_FALSE(ga_reader_format_parse("xml", &f));
    EXPECT_STREQ(ga_reader_format_name(GA_FORMAT_AUTO), "auto");
    // An Umpire line that also mentions traceEvents: the surer probe wins.
    Read u(Write("both.log", "{\"kind\":\"replay\",\"event\":\"version\",\"traceEvents\":1}\n"));
    EXPECT_EQ(u.rc, 0) << u.err;
    EXPECT_EQ(u.format, GA_FORMAT_UMPIRE);
    // A galloc header that looks like an RMM header too.
    Read g(Write("both.trace", "galloc-trace 1 # not Action,Pointer\n"));
    EXPECT_EQ(g.rc, 0) << g.err;
    EXPECT_EQ(g.format, GA_FORMAT_GALLOC);
}

TEST(RmmReader, GoodLog)
{
    std::string p = Write("good.csv", "Thread,Time,Action,Pointer,Size,Stream\n"
                                      "140573312345856,08:51:26:245621,allocate,0x7f8a40000000,1024,0x0\n"
                                      "\n"
                                      "140573312345856,08:51:26:245622,allocate,7f8a40000400,2048,0x7f8a38001020\r\n"
                                      "140573312345857,08:51:26:245623,free,0x7f8a40000000,1024,0x7f8a38001020\n"
                                      "140573312345857,08:51:26:245624,deallocate,0x7f8a40000400,2048,0x0\n"
                                      "140573312345857,08:51:26:245625,allocate failure,0x0,1099511627776,0x0");
    Read r(p, GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_RMM);
    ASSERT_EQ(r.ev.size(), 5u);
    // The stack is the thread that asked (the Thread column): allocations and failures only.
    using V = std::vector<std::string>;
    EXPECT_EQ(r.stacks[0].kind, GA_STACK_THREAD);
    EXPECT_EQ(r.stacks[0].Names(), V{"thread 140573312345856"});
    EXPECT_EQ(r.stacks[1].Names(), V{"thread 140573312345856"});
    EXPECT_EQ(r.stacks[0].keys, r.stacks[1].keys); // one thread, one key
    EXPECT_EQ(r.stacks[0].keys[0], 140573312345856u + 1);
    EXPECT_EQ(r.stacks[2].kind, GA_STACK_NONE); // free
    EXPECT_EQ(r.stacks[3].kind, GA_STACK_NONE); // deallocate
    EXPECT_EQ(r.stacks[4].kind, GA_STACK_THREAD);
    EXPECT_EQ(r.stacks[4].Names(), V{"thread 140573312345857"});
    EXPECT_FALSE(r.stacks[4].frames[0].has_file);
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[0].id, 0x7f8a40000000u);
    EXPECT_EQ(r.ev[0].size, 1024u);
    EXPECT_EQ(r.ev[0].stream, 0u);
    EXPECT_EQ(r.ev[0].where, 2u);
    EXPECT_EQ(r.ev[1].stream, 0x7f8a38001020u);
    EXPECT_EQ(r.ev[1].where, 4u);
    EXPECT_EQ(r.ev[2].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[2].stream, 0x7f8a38001020u);
    EXPECT_EQ(r.ev[3].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[4].kind, GA_EV_OOM);
    EXPECT_EQ(r.ev[4].size, 1ull << 40);
}

TEST(RmmReader, ColumnsByNameAndNoStream)
{
    std::string p = Write("cols.csv", "Action,Size,Pointer\nallocate,10,0x10\nfree,10,0x10\n");
    Read r(p, GA_FORMAT_RMM, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 2u);
    EXPECT_EQ(r.ev[0].id, 16u);
    EXPECT_EQ(r.ev[1].stream, GA_STREAM_NONE);
    EXPECT_EQ(r.stacks[0].kind, GA_STACK_NONE); // no Thread column: nothing recorded
}

// A Thread column that is not a number is named as written (its first 64
// bytes), with no key; an empty one records nothing.
TEST(RmmReader, ThreadsThatAreNotNumbers)
{
    std::string p = Write("threads.csv", "Action,Pointer,Size,Thread\n"
                                         "allocate,0x10,16,worker-1\n"
                                         "allocate,0x20,16,\n"
                                         "allocate,0x30,16," +
                                             std::string(100, 'x') +
                                             "\n"
                                             "allocate,0x40,16,0018446744073709551615\n");
    Read r(p, GA_FORMAT_RMM, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.stacks.size(), 4u);
    using V = std::vector<std::string>;
    EXPECT_EQ(r.stacks[0].Names(), V{"thread worker-1"});
    EXPECT_EQ(r.stacks[0].keys[0], 0u);
    EXPECT_EQ(r.stacks[1].kind, GA_STACK_NONE);
    EXPECT_EQ(r.stacks[2].Names(), V{"thread " + std::string(64, 'x')});
    // Leading zeros: the same thread as 18446744073709551615, whose key (N + 1) wraps to "none".
    EXPECT_EQ(r.stacks[3].Names(), V{"thread 18446744073709551615"});
    EXPECT_EQ(r.stacks[3].keys[0], 0u);
}

TEST(RmmReader, BadRowsNameTheLine)
{
    const std::string h = "Thread,Time,Action,Pointer,Size,Stream\n";
    ExpectBad("f1.csv", h + "1,t,allocate,0x10,16,0x0\n1,t,allocate,0x20\n", ":3:", "fields");
    ExpectBad("f2.csv", h + "1,t,alloc,0x10,16,0x0\n", ":2:", "unknown action");
    ExpectBad("f3.csv", h + "1,t,allocate,0xZZ,16,0x0\n", ":2:", "bad pointer");
    ExpectBad("f4.csv", h + "1,t,allocate,0x10,-16,0x0\n", ":2:", "bad size");
    ExpectBad("f5.csv", h + "1,t,allocate,0x10,16,stream\n", ":2:", "bad stream");
    ExpectBad("f6.csv", h + "1,t,allocate,0x10,16,0x0\n1,t,allocate,0x20,1", ":3:", "fields");
    static const char nul_row[] = "1,t,allocate,0x10,16,0x0\n1,t,all\0cate";
    ExpectBad("f7.csv", h + std::string(nul_row, sizeof(nul_row) - 1), ":3:", "NUL");
    ExpectBad("f8.csv", "Thread,Time,Verb\n", ":1:", "not an RMM log header", GA_FORMAT_RMM);
    ExpectBad("f9.csv", h + std::string(100000, 'x'), ":2:", "longer than");
}

TEST(RmmReader, EveryTruncationOfTheExample)
{
    std::string full = ReadAll(Example("rmm_small.csv"));
    ASSERT_GT(full.size(), 100u);
    Read whole(Example("rmm_small.csv"));
    ASSERT_EQ(whole.rc, 0) << whole.err;
    for (size_t n = 0; n < full.size(); n += 7) {
        std::string p = Write("trunc.csv", full.substr(0, n));
        Read r(p);
        // A cut at a line boundary is a shorter valid log; anywhere else is a
        // garbled last row, reported with its line (or no header at all).
        if (r.rc != 0) {
            EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
        } else
            EXPECT_LE(r.ev.size(), whole.ev.size());
    }
}

TEST(TextReader, GoodTrace)
{
    std::string p = Write("good.trace", "# made by hand\n"
                                        "galloc-trace 1 device_memory 8GiB   # an 8 GiB device\n"
                                        "alloc 1 4096\n"
                                        "alloc 0x2 1MiB 7\n"
                                        "annotate step 8847 # kept verbatim\n"
                                        "record_stream 2 9\n"
                                        "free 1\n"
                                        "free 2 9\n"
                                        "stream_sync 9\n"
                                        "\n"
                                        "empty_cache\n"
                                        "set_fraction 0.5\n"
                                        "oom 20GiB 3\n"
                                        "free_requested 5\n"
                                        "free_completed 5\n");
    Read r(p, GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_GALLOC);
    EXPECT_EQ(r.device_memory, 8ull << 30);
    ASSERT_EQ(r.ev.size(), 12u);
    EXPECT_EQ(r.stacks[0].kind, GA_STACK_NONE); // before any annotate
    EXPECT_EQ(r.stacks[9].kind, GA_STACK_ANNOTATION);
    EXPECT_EQ(r.stacks[9].Names(), std::vector<std::string>{"step 8847 # kept verbatim"});
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[0].size, 4096u);
    EXPECT_EQ(r.ev[0].where, 3u);
    EXPECT_EQ(r.ev[1].id, 2u);
    EXPECT_EQ(r.ev[1].size, 1u << 20);
    EXPECT_EQ(r.ev[1].stream, 7u);
    EXPECT_EQ(r.ev[2].kind, GA_EV_ANNOTATE);
    ASSERT_EQ(r.text.size(), 1u);
    EXPECT_EQ(r.text[0], "step 8847 # kept verbatim");
    EXPECT_EQ(r.ev[3].kind, GA_EV_RECORD_STREAM);
    EXPECT_EQ(r.ev[3].stream, 9u);
    EXPECT_EQ(r.ev[4].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[4].stream, GA_STREAM_NONE);
    EXPECT_EQ(r.ev[5].stream, 9u);
    EXPECT_EQ(r.ev[6].kind, GA_EV_STREAM_SYNC);
    EXPECT_EQ(r.ev[7].kind, GA_EV_EMPTY_CACHE);
    EXPECT_EQ(r.ev[8].kind, GA_EV_SET_FRACTION);
    EXPECT_DOUBLE_EQ(r.ev[8].fraction, 0.5);
    EXPECT_EQ(r.ev[9].kind, GA_EV_OOM);
    EXPECT_EQ(r.ev[9].size, 20ull << 30);
    EXPECT_EQ(r.ev[10].kind, GA_EV_FREE_PENDING);
    EXPECT_EQ(r.ev[11].kind, GA_EV_FREE_COMPLETED);
}

// An allocation's stack is the annotation in force: one frame, the text of
// the last annotate; its key changes when the text does, and stays when the
// same text is annotated again at once.
TEST(TextReader, TheAnnotationInForceIsTheStack)
{
    std::string p = Write("notes.trace", "galloc-trace 1\n"
                                         "alloc 1 4096\n"              // [0] none yet
                                         "annotate forward block 0\n"  // [1]
                                         "alloc 2 4096\n"              // [2]
                                         "record_stream 2 7\n"         // [3] no stack
                                         "alloc 3 4096\n"              // [4]
                                         "annotate backward block 0\n" // [5]
                                         "free 2\n"                    // [6] no stack
                                         "alloc 4 4096\n"              // [7]
                                         "annotate backward block 0\n" // [8] the same text again
                                         "oom 1TiB\n"                  // [9]
                                         "annotate forward block 0\n"  // [10]
                                         "alloc 5 4096\n"              // [11]
                                         "annotate \n"                 // [12] an empty text
                                         "alloc 6 4096\n");            // [13]
    Read r(p, GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 14u);
    using V = std::vector<std::string>;
    EXPECT_EQ(r.stacks[0].kind, GA_STACK_NONE);
    EXPECT_EQ(r.stacks[2].kind, GA_STACK_ANNOTATION);
    EXPECT_EQ(r.stacks[2].Names(), V{"forward block 0"});
    EXPECT_EQ(r.stacks[3].kind, GA_STACK_NONE);
    EXPECT_EQ(r.stacks[4].Names(), V{"forward block 0"});
    EXPECT_EQ(r.stacks[4].keys, r.stacks[2].keys);
    EXPECT_EQ(r.stacks[6].kind, GA_STACK_NONE);
    EXPECT_EQ(r.stacks[7].Names(), V{"backward block 0"});
    EXPECT_NE(r.stacks[7].keys, r.stacks[2].keys);
    EXPECT_EQ(r.stacks[9].kind, GA_STACK_ANNOTATION); // an oom too
    EXPECT_EQ(r.stacks[9].Names(), V{"backward block 0"});
    EXPECT_EQ(r.stacks[9].keys, r.stacks[7].keys);
    EXPECT_EQ(r.stacks[11].Names(), V{"forward block 0"});
    EXPECT_NE(r.stacks[11].keys[0], 0u);
    EXPECT_EQ(r.stacks[13].kind, GA_STACK_ANNOTATION);
    EXPECT_EQ(r.stacks[13].Names(), V{""});
    for (size_t i : {1, 5, 8, 10, 12})
        EXPECT_EQ(r.stacks[i].kind, GA_STACK_NONE) << i; // the annotations themselves
}

// Sleep and wake (galloc_sleep.h): the lists as written, "*" kept for the engine.
TEST(TextReader, TagEvents)
{
    std::string p = Write("tags.trace", "galloc-trace 1\n"
                                        "tag_begin train # weights\n"
                                        "alloc 1 4096\n"
                                        "tag_end train\n"
                                        "sleep train,kv.cache-2 offload train\n"
                                        "sleep *\n"
                                        "wake *\n");
    Read r(p);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 6u);
    EXPECT_EQ(r.ev[0].kind, GA_EV_TAG_BEGIN);
    EXPECT_EQ(r.ev[0].where, 2u);
    EXPECT_EQ(r.ev[2].kind, GA_EV_TAG_END);
    EXPECT_EQ(r.ev[3].kind, GA_EV_SLEEP);
    EXPECT_EQ(r.ev[4].kind, GA_EV_SLEEP);
    EXPECT_EQ(r.ev[5].kind, GA_EV_WAKE);
    EXPECT_EQ(r.ev[5].where, 7u);
    std::vector<std::string> want = {"train", "train", "train,kv.cache-2 offload train", "*", "*"};
    EXPECT_EQ(r.tags, want);
    ExpectBad("tags1.trace", "galloc-trace 1\nsleep a,,b\n", ":2:", "bad tag list");
    ExpectBad("tags2.trace", "galloc-trace 1\ntag_begin " + std::string(32, 'x') + "\n", ":2:", "bad tag");
    ExpectBad("tags3.trace", "galloc-trace 1\nwake a offload b\n", ":2:", "usage: wake <tags>");
}

// galloc gen writes the device size on its own line after the header.
TEST(TextReader, DeviceMemoryOnItsOwnLine)
{
    std::string p = Write("dm.trace", "galloc-trace 1\ndevice_memory 17179869184\n# setup\n\nalloc 1 10\n");
    Read r(p);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.device_memory, 16ull << 30);
    ASSERT_EQ(r.ev.size(), 1u);
    EXPECT_EQ(r.ev[0].where, 5u);
    ExpectBad("dm2.trace", "galloc-trace 1\ndevice_memory\n", ":2:", "usage: device_memory <size>");
    ExpectBad("dm3.trace", "galloc-trace 1\ndevice_memory 0\n", ":2:", "bad device_memory");
}

TEST(TextReader, BadLinesNameTheLine)
{
    const std::string h = "galloc-trace 1\n";
    ExpectBad("t1.trace", h + "alloc 1\n", ":2:", "usage: alloc <id> <size> [stream]");
    ExpectBad("t2.trace", h + "allocate 1 2\n", ":2:", "unknown event");
    ExpectBad("t3.trace", h + "alloc x 2\n", ":2:", "bad id");
    ExpectBad("t4.trace", h + "alloc 1 2QB\n", ":2:", "bad size");
    ExpectBad("t5.trace", h + "set_fraction 1.5\n", ":2:", "bad fraction");
    ExpectBad("t6.trace", h + "free 1 2 3\n", ":2:", "wrong number");
    ExpectBad("t7.trace", "galloc-trace 2\n", ":1:", "unsupported galloc-trace version", GA_FORMAT_GALLOC);
    ExpectBad("t8.trace", "galloc-trace 1 memory 5\n", ":1:", "unknown header field", GA_FORMAT_GALLOC);
    ExpectBad("t9.trace", "alloc 1 2\n", ":1:", "expected the header", GA_FORMAT_GALLOC);
    ExpectBad("t10.trace", "hello world\n", ":1:", "cannot tell the trace format");
    ExpectBad("t11.trace", "", "", "empty file");
    ExpectBad("t12.trace", "{\"segments\": []}", "", "JSON");
}

TEST(TextReader, EveryTruncationOfTheExample)
{
    std::string full = ReadAll(Example("fragmentation.trace"));
    ASSERT_GT(full.size(), 100u);
    size_t step = full.size() / 500 + 1;
    for (size_t n = 0; n < full.size(); n += step) {
        std::string p = Write("trunc.trace", full.substr(0, n));
        Read r(p);
        if (r.rc != 0) {
            EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
        }
    }
}

TEST(TorchReader, ExampleSnapshot)
{
    Read r(Example("torch_snapshot.pickle"));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_TORCH);
    EXPECT_EQ(r.units, 2u);
    size_t allocs = 0, frees = 0, pending = 0, completed = 0, prologue = 0, annotations = 0;
    for (const auto &e : r.ev) {
        allocs += e.kind == GA_EV_ALLOC;
        frees += e.kind == GA_EV_FREE;
        pending += e.kind == GA_EV_FREE_PENDING;
        completed += e.kind == GA_EV_FREE_COMPLETED;
        prologue += (e.flags & GA_EVF_PROLOGUE) != 0;
        annotations += e.kind == GA_EV_ANNOTATE;
    }
    EXPECT_GT(allocs, 90u);
    EXPECT_GT(frees, 80u);
    EXPECT_GT(pending, 0u);
    EXPECT_GT(completed, 0u);   // the deferred frees of the side stream
    EXPECT_GT(prologue, 5u);    // the weights, allocated before the 300-entry window
    EXPECT_EQ(annotations, 3u); // "step 3", "step 7", "step 11"
    EXPECT_EQ(r.text[0], "step 3");
}

// Every truncation and random byte flips of the snapshot through the whole
// reader (pickle + snapshot layout): a clean error naming the file, or, for a
// flip that still decodes, a successful read. Never a crash (ASan checks).
TEST(TorchReader, TruncatedAndFlippedSnapshots)
{
    std::string full = ReadAll(Example("torch_snapshot.pickle"));
    ASSERT_GT(full.size(), 1000u);
    for (size_t n = 0; n < full.size(); n += 13) {
        std::string p = Write("trunc.pickle", full.substr(0, n));
        Read r(p, GA_FORMAT_TORCH);
        ASSERT_EQ(r.rc, -1) << n;
        EXPECT_NE(r.err.find(p + ": "), std::string::npos) << r.err;
    }
    unsigned seed = 4242;
    std::mt19937 rng(seed);
    int ok = 0;
    for (int it = 0; it < 600; it++) {
        std::string m = full;
        for (int k = 0; k < 3; k++)
            m[rng() % m.size()] = static_cast<char>(rng());
        std::string p = Write("flip.pickle", m);
        Read r(p, GA_FORMAT_TORCH);
        if (r.rc == 0)
            ok++;
        else
            EXPECT_NE(r.err.find(p), std::string::npos) << "seed " << seed << " it " << it << ": " << r.err;
    }
    RecordProperty("flipped_snapshots_still_read", ok);
}

// A snapshot built by hand: free_requested + free_completed pairs become one
// free; a lone free_requested is a deferred free; a free of a block never
// allocated in the trace recreates it in the prologue; segment entries are
// skipped; bad entries are named by index.
std::string Pickle(const std::string &body)
{
    return std::string("\x80\x04", 2) + body + ".";
}
std::string Str(const std::string &s)
{
    return std::string("\x8c", 1) + static_cast<char>(s.size()) + s;
}
std::string Int(int v)
{
    return std::string("J", 1) + std::string(reinterpret_cast<const char *>(&v), 4); // little-endian host
}
std::string Entry(const std::string &action, int addr, int size)
{
    return "}(" + Str("action") + Str(action) + Str("addr") + Int(addr) + Str("size") + Int(size) + Str("stream") +
           Int(0) + "u";
}

TEST(TorchReader, PairsPendingFreesAndPrologue)
{
    std::string traces = "](" + Entry("free_requested", 4096, 100) + Entry("free_completed", 4096, 100) +
                         Entry("segment_alloc", 8192, 2097152) + Entry("alloc", 8192, 512) +
                         Entry("free_requested", 8192, 512) + Entry("alloc", 16384, 512) +
                         Entry("free_completed", 8192, 512) + Entry("oom", 0, 1 << 30) + "e";
    std::string body = "}(" + Str("segments") + "]" + Str("device_traces") + "](" + traces + "e" + "u";
    std::string p = Write("hand.pickle", Pickle(body));
    Read r(p);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 7u);
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC); // prologue: the block freed first
    EXPECT_TRUE(r.ev[0].flags & GA_EVF_PROLOGUE);
    EXPECT_EQ(r.ev[0].id, 4096u);
    EXPECT_EQ(r.ev[0].size, 100u);
    EXPECT_EQ(r.ev[1].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[2].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[2].where, 3u);
    EXPECT_EQ(r.ev[3].kind, GA_EV_FREE_PENDING);
    EXPECT_EQ(r.ev[4].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[5].kind, GA_EV_FREE_COMPLETED);
    EXPECT_EQ(r.ev[6].kind, GA_EV_OOM);
    EXPECT_EQ(r.ev[6].size, 1u << 30);
    EXPECT_EQ(r.notes.skipped, 1u);

    std::string bad = "}(" + Str("device_traces") + "](](" + Entry("alloc", 1, 1) + "}" + Str("action") + Str("alloc") +
                      "se" + "e" + "u";
    p = Write("bad_entry.pickle", Pickle(bad));
    Read b(p);
    EXPECT_EQ(b.rc, -1);
    EXPECT_NE(b.err.find("device_traces[0][1]"), std::string::npos) << b.err;

    p = Write("old.pickle", Pickle("]"));
    Read old(p);
    EXPECT_NE(old.err.find("1.13"), std::string::npos) << old.err;
    p = Write("notdict.pickle", Pickle("N"));
    Read nd(p);
    EXPECT_NE(nd.err.find("the pickle holds a None"), std::string::npos) << nd.err;
    p = Write("nokeys.pickle", Pickle("}"));
    Read nk(p);
    EXPECT_NE(nk.err.find("neither"), std::string::npos) << nk.err;
}

} // namespace
