// readers_json_test.cc: the Umpire replay-log reader and RMM's failure rows
// and streams (the Kineto reader: readers_kineto_test.cc). Good files give
// exact events; truncated or garbled files give -1 with a message naming the
// file and the line or byte, never a crash.
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/tools/readers_util.h"
#include "tests/tools/shared_traces.h"

namespace {

// A hand-made Umpire log in the shape UMPIRE_REPLAY writes (one object a line,
// each allocate logged at the call and again with its result).
const char *const kUmpire =
    "# comment header, as in Umpire's tutorial log\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":10, \"event\": \"version\", \"payload\": { \"major\":2 } }\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":11, \"event\": \"makeMemoryResource\", \"payload\": "
    "{ \"name\": \"DEVICE\" }, \"result\": \"0x101d79a0\" }\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":12, \"event\": \"allocate\", \"payload\": "
    "{ \"allocator_ref\": \"0x108a8730\", \"size\": 134 } }\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":13, \"event\": \"allocate\", \"payload\": "
    "{ \"allocator_ref\": \"0x108a8730\", \"size\": 134 }, \"result\": { \"memory_ptr\": \"0x200040000010\" } }\n"
    "\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":14, \"event\": \"allocate\", \"payload\": "
    "{ \"allocator_ref\": \"0x108a8730\", \"size\": 1048576 }, \"result\": { \"memory_ptr\": \"0x200040100000\" } }\r\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":15, \"event\": \"deallocate\", \"payload\": "
    "{ \"allocator_ref\": \"0x108a8730\", \"memory_ptr\": \"0x200040000010\" } }\n"
    "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":16, \"event\": \"deallocate\", \"payload\": "
    "{ \"allocator_ref\": \"0x108a8730\", \"memory_ptr\": \"0xdead0000\" } }\n";

TEST(UmpireReader, HandMadeLog)
{
    Read r(Write("u.log", kUmpire));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_UMPIRE);
    EXPECT_EQ(r.units, 1u);
    ASSERT_EQ(r.ev.size(), 4u);
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[0].id, 0x200040000010u);
    EXPECT_EQ(r.ev[0].size, 134u);
    EXPECT_EQ(r.ev[0].stream, 0u);
    EXPECT_EQ(r.ev[0].where, 5u);
    EXPECT_EQ(r.ev[1].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[1].size, 1048576u);
    EXPECT_EQ(r.ev[1].where, 7u);
    EXPECT_EQ(r.ev[2].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[2].id, 0x200040000010u);
    EXPECT_EQ(r.ev[2].stream, GA_STREAM_NONE);
    // A free of a pointer the log never allocated is passed on, as the other
    // readers do: the replay counts it as a trace anomaly.
    EXPECT_EQ(r.ev[3].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[3].id, 0xdead0000u);
    // version, makeMemoryResource and the call half of the first allocate.
    EXPECT_EQ(r.notes.skipped, 3u);
    EXPECT_STREQ(ga_reader_format_name(GA_FORMAT_UMPIRE), "umpire");
    ga_format_t f;
    ASSERT_TRUE(ga_reader_format_parse("umpire", &f));
    EXPECT_EQ(f, GA_FORMAT_UMPIRE);
}

// The 2022 layout (category/name/numeric_args/string_args), every
// reallocate case as Umpire logs it: with its own allocate/copy/deallocate
// between the call and result lines (nothing added), from a null pointer,
// and by a resource that reallocates itself, moving or in place.
const char *const kUmpire2022 =
    "{\"category\":\"metadata\",\"name\":\"version\",\"numeric_args\":{\"major\":2022,\"minor\":3,\"patch\":1},"
    "\"string_args\":{\"rc\":\"5d67af28\"},\"tags\":{},\"timestamp\":1}\n"
    "{\"category\":\"operation\",\"name\":\"make_memory_resource\",\"numeric_args\":{\"introspection\":1},"
    "\"string_args\":{\"allocator_ref\":\"0x10379980\"},\"tags\":{\"allocator_name\":\"HOST\"},\"timestamp\":2}\n"
    // 3: allocate
    "{\"category\":\"operation\",\"name\":\"allocate\",\"numeric_args\":{\"size\":128},"
    "\"string_args\":{\"allocator_ref\":\"0x10379980\",\"pointer\":\"0x1037a4e0\"},\"tags\":{},\"timestamp\":3}\n"
    // 4-8: a reallocate through allocate, copy, deallocate
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{\"size\":256},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"current_ptr\":\"0x1037a4e0\"},\"tags\":{},\"timestamp\":4}\n"
    "{\"category\":\"operation\",\"name\":\"allocate\",\"numeric_args\":{\"size\":256},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"pointer\":\"0x2000\"},\"tags\":{},\"timestamp\":5}\n"
    "{\"category\":\"operation\",\"name\":\"copy\",\"numeric_args\":{\"dst_offset\":0,\"size\":128,\"src_offset\":0},"
    "\"string_args\":{\"dst\":\"0x2000\",\"src\":\"0x1037a4e0\"},\"tags\":{},\"timestamp\":6}\n"
    "{\"category\":\"operation\",\"name\":\"deallocate\","
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"pointer\":\"0x1037a4e0\"},\"tags\":{},\"timestamp\":7}\n"
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"new_ptr\":\"0x2000\"},\"tags\":{},\"timestamp\":8}\n"
    // 9-10: a resource's own realloc that moves the block: alloc new, free old
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{\"size\":36},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"current_ptr\":\"0x2000\"},\"tags\":{},\"timestamp\":9}\n"
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"new_ptr\":\"0x3000\"},\"tags\":{},\"timestamp\":10}\n"
    // 11-12: in place: free, then alloc of the new size
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{\"size\":4},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"current_ptr\":\"0x3000\"},\"tags\":{},\"timestamp\":11}\n"
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"new_ptr\":\"0x3000\"},\"tags\":{},\"timestamp\":12}\n"
    // 13-14: from a null pointer, by the resource itself: alloc only
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{\"size\":8},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"current_ptr\":\"0\"},\"tags\":{},\"timestamp\":13}\n"
    "{\"category\":\"operation\",\"name\":\"reallocate\",\"numeric_args\":{},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"new_ptr\":\"0x4000\"},\"tags\":{},\"timestamp\":14}\n"
    // 15: memory Umpire did not allocate: skipped
    "{\"category\":\"operation\",\"name\":\"register_external_allocation\",\"numeric_args\":{\"size\":64},"
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"pointer\":\"0x9000\"},\"tags\":{},\"timestamp\":15}\n"
    "{\"category\":\"operation\",\"name\":\"deallocate\","
    "\"string_args\":{\"allocator_ref\":\"0x1\",\"pointer\":\"0x3000\"},\"tags\":{},\"timestamp\":16}\n";

TEST(UmpireReader, Layout2022AndReallocate)
{
    Read r(Write("u2022.replay", kUmpire2022));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_UMPIRE);
    struct Want {
        ga_event_kind_t kind;
        uint64_t id, size, where;
    };
    const Want want[] = {
        {GA_EV_ALLOC, 0x1037a4e0, 128, 3}, {GA_EV_ALLOC, 0x2000, 256, 5}, {GA_EV_FREE, 0x1037a4e0, 0, 7},
        {GA_EV_ALLOC, 0x3000, 36, 10},     {GA_EV_FREE, 0x2000, 0, 10},   {GA_EV_FREE, 0x3000, 0, 12},
        {GA_EV_ALLOC, 0x3000, 4, 12},      {GA_EV_ALLOC, 0x4000, 8, 14},  {GA_EV_FREE, 0x3000, 0, 16},
    };
    ASSERT_EQ(r.ev.size(), sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < r.ev.size(); i++) {
        EXPECT_EQ(r.ev[i].kind, want[i].kind) << i;
        EXPECT_EQ(r.ev[i].id, want[i].id) << i;
        if (want[i].kind == GA_EV_ALLOC)
            EXPECT_EQ(r.ev[i].size, want[i].size) << i;
        else
            EXPECT_EQ(r.ev[i].stream, GA_STREAM_NONE) << i;
        EXPECT_EQ(r.ev[i].where, want[i].where) << i;
    }
    // version, make_memory_resource, copy, the 4 call lines of a reallocate,
    // the result line of the one replayed through its own lines, and
    // register_external_allocation.
    EXPECT_EQ(r.notes.skipped, 9u);

    std::string p = Write("u2022bad.replay", "{\"category\":\"operation\",\"name\":\"allocate\","
                                             "\"string_args\":{\"pointer\":\"0x10\"}}\n");
    Read b(p);
    EXPECT_EQ(b.rc, -1);
    EXPECT_EQ(b.err, p + ":1: allocate without string_args.pointer and numeric_args.size");
}

// The real log of shared/traces (Umpire's replay test program, 2022.3.1:
// allocate 1,642, deallocate 1,642, reallocate 672 lines). 309 of its 336
// reallocates go through logged allocate/deallocate lines; 27 are done by a
// resource itself (8 moves, 19 in place), each replayed as one allocation and
// one free. All allocators together: no pointer is allocated twice while
// live, every free matches, nothing is live at the end, and the requested
// bytes peak at 496.
TEST(UmpireReader, RealLog2022)
{
    GA_SHARED_TRACE(path, "umpire-devices.replay");
    Read r(path, GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_UMPIRE);
    EXPECT_EQ(r.units, 1u);
    ASSERT_EQ(r.ev.size(), 3338u);
    size_t allocs = 0, frees = 0, reallocs = 0, anomalies = 0;
    std::unordered_map<uint64_t, uint64_t> live;
    uint64_t cur = 0, peak = 0;
    for (const ga_event_t &e : r.ev) {
        if (e.kind == GA_EV_ALLOC) {
            allocs++;
            anomalies += !live.emplace(e.id, e.size).second;
            cur += e.size;
            peak = cur > peak ? cur : peak;
        } else if (e.kind == GA_EV_FREE) {
            frees++;
            auto it = live.find(e.id);
            if (it == live.end()) {
                anomalies++;
                continue;
            }
            cur -= it->second;
            live.erase(it);
        }
    }
    for (size_t i = 1; i < r.ev.size(); i++)
        reallocs += r.ev[i].where == r.ev[i - 1].where; // the two events of one result line
    EXPECT_EQ(allocs, 1642u + 27u);
    EXPECT_EQ(frees, 1642u + 27u);
    EXPECT_EQ(reallocs, 27u);
    EXPECT_EQ(anomalies, 0u);
    EXPECT_TRUE(live.empty());
    EXPECT_EQ(peak, 496u);
    EXPECT_EQ(r.notes.skipped, 4828u - 1642u - 1642u - 27u);

    // Every allocation's allocator is named by its make line (7 resources and
    // 394 allocators, each serving some): the stacks, as an independent
    // python count of the log gives them.
    std::map<std::string, size_t> by;
    size_t named = 0;
    for (size_t i = 0; i < r.ev.size(); i++) {
        if (r.ev[i].kind != GA_EV_ALLOC) {
            EXPECT_EQ(r.stacks[i].kind, GA_STACK_NONE);
            continue;
        }
        EXPECT_EQ(r.stacks[i].kind, GA_STACK_ALLOCATOR) << r.ev[i].where;
        ASSERT_EQ(r.stacks[i].frames.size(), 1u) << r.ev[i].where;
        named++;
        by[r.stacks[i].frames[0].name]++;
    }
    EXPECT_EQ(named, 1669u);
    EXPECT_EQ(by.size(), 401u);
    EXPECT_EQ(by["DEVICE"], 118u);
    EXPECT_EQ(by["HOST"], 74u);
    EXPECT_EQ(by["DEVICE::1"], 59u);
    EXPECT_EQ(by["UM"], 59u);
    EXPECT_EQ(r.stacks[0].Names(), std::vector<std::string>{"HOST"}); // line 3
    EXPECT_EQ(r.stacks.back().kind, GA_STACK_NONE);                   // the last line frees
    size_t last = r.ev.size();
    while (r.ev[--last].kind != GA_EV_ALLOC) {
    }
    EXPECT_EQ(r.ev[last].where, 4825u);
    EXPECT_EQ(r.stacks[last].Names(), std::vector<std::string>{"PINNED_FixedPool_no_instrospection_spec_2"});
}

// An allocation's stack names its allocator: the line's own
// tags.allocator_name, else the name a make line gave its allocator_ref (the
// last one: an address reused by a new allocator); named_allocate adds the
// allocation's name. An allocator never named has no stack.
TEST(UmpireReader, AllocatorStacks2022)
{
    auto op = [](const std::string &name, const std::string &numeric, const std::string &strings,
                 const std::string &tags) {
        return "{\"category\":\"operation\",\"name\":\"" + name + "\",\"numeric_args\":{" + numeric +
               "},\"string_args\":{" + strings + "},\"tags\":{" + tags + "},\"timestamp\":1}\n";
    };
    std::string log =
        op("make_memory_resource", "\"introspection\":1", "\"allocator_ref\":\"0xa0\"",
           "\"allocator_name\":\"DEVICE\",\"replay\":\"true\"") +
        op("make_allocator", "\"introspection\":1",
           "\"allocator_ref\":\"0xb0\",\"arg0\":\"DEVICE\",\"type\":\"N6umpire8strategy9QuickPoolE\"",
           "\"allocator_name\":\"pool\",\"replay\":\"true\"") +
        op("allocate", "\"size\":128", "\"allocator_ref\":\"0xb0\",\"pointer\":\"0x1000\"",
           "\"replay\":\"true\"") + // [0] line 3
        op("named_allocate", "\"size\":64",
           "\"allocator_ref\":\"0xb0\",\"pointer\":\"0x2000\",\"allocation_name\":\"weights\"",
           "\"replay\":\"true\"") + // [1] line 4
        op("allocate", "\"size\":32", "\"allocator_ref\":\"0xb0\",\"pointer\":\"0x3000\"",
           "\"allocator_name\":\"tagged\"") + // [2] line 5: the line's own name first
        op("deallocate", "", "\"allocator_ref\":\"0xb0\",\"pointer\":\"0x1000\"", "") + // [3]
        op("make_allocator", "", "\"allocator_ref\":\"0xb0\"", "\"allocator_name\":\"pool2\"") +
        op("allocate", "\"size\":16", "\"allocator_ref\":\"0xb0\",\"pointer\":\"0x4000\"", "") + // [4] line 8
        op("allocate", "\"size\":16", "\"allocator_ref\":\"0xc0\",\"pointer\":\"0x5000\"", "") + // [5] never named
        // A resource that reallocates itself: the new block's allocator is the result line's.
        op("reallocate", "\"size\":48", "\"allocator_ref\":\"0xa0\",\"current_ptr\":\"0x2000\"", "") +
        op("reallocate", "", "\"allocator_ref\":\"0xa0\",\"new_ptr\":\"0x6000\"", "") + // [6] alloc, [7] free
        op("named_allocate", "\"size\":8",
           "\"allocator_ref\":\"0xa0\",\"pointer\":\"0x7000\",\"allocation_name\":\"kv cache\"",
           ""); // [8]
    Read r(Write("names.replay", log), GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 9u);
    using V = std::vector<std::string>;
    EXPECT_EQ(r.ev[0].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.stacks[0].kind, GA_STACK_ALLOCATOR);
    EXPECT_EQ(r.stacks[0].Names(), V{"pool"});
    EXPECT_EQ(r.ev[1].kind, GA_EV_ALLOC); // named_allocate is an allocation
    EXPECT_EQ(r.ev[1].id, 0x2000u);
    EXPECT_EQ(r.ev[1].size, 64u);
    EXPECT_EQ(r.stacks[1].Names(), (V{"pool", "weights"}));
    EXPECT_EQ(r.stacks[1].keys[0], r.stacks[0].keys[0]);
    EXPECT_EQ(r.stacks[1].keys[1], 0u);
    EXPECT_EQ(r.stacks[2].Names(), V{"tagged"});
    EXPECT_EQ(r.stacks[3].kind, GA_STACK_NONE);
    EXPECT_EQ(r.stacks[4].Names(), V{"pool2"});
    EXPECT_EQ(r.stacks[5].kind, GA_STACK_NONE);
    EXPECT_EQ(r.ev[6].kind, GA_EV_ALLOC);
    EXPECT_EQ(r.ev[6].id, 0x6000u);
    EXPECT_EQ(r.stacks[6].Names(), V{"DEVICE"});
    EXPECT_EQ(r.ev[7].kind, GA_EV_FREE);
    EXPECT_EQ(r.stacks[7].kind, GA_STACK_NONE);
    EXPECT_EQ(r.stacks[8].Names(), (V{"DEVICE", "kv cache"}));
    EXPECT_EQ(r.notes.skipped, 4u); // three make lines and the reallocate's call
}

// The older layout names resources by makeMemoryResource (payload.name, the
// address as its result) and allocators by makeAllocator's second line
// (payload.allocator_name, result.allocator_ref), as Umpire's tutorial log.
TEST(UmpireReader, AllocatorStacksOlderLayout)
{
    const std::string log =
        "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":11, \"event\": \"makeMemoryResource\", \"payload\": "
        "{ \"name\": \"DEVICE\" }, \"result\": \"0x101d79a0\" }\n"
        "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":12, \"event\": \"makeAllocator\", \"payload\": "
        "{ \"type\":\"umpire::strategy::DynamicPool\", \"with_introspection\":true, \"allocator_name\":\"pool\", "
        "\"args\": [ \"DEVICE\" ] } }\n"
        "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":13, \"event\": \"makeAllocator\", \"payload\": "
        "{ \"type\":\"umpire::strategy::DynamicPool\", \"with_introspection\":true, \"allocator_name\":\"pool\", "
        "\"args\": [ \"DEVICE\" ] }, \"result\": { \"allocator_ref\":\"0x108a8730\" } }\n"
        "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":14, \"event\": \"allocate\", \"payload\": "
        "{ \"allocator_ref\": \"0x108a8730\", \"size\": 134 }, \"result\": { \"memory_ptr\": \"0x200040000010\" } }\n"
        "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":15, \"event\": \"allocate\", \"payload\": "
        "{ \"allocator_ref\": \"0x101d79a0\", \"size\": 64 }, \"result\": { \"memory_ptr\": \"0x7f0000000000\" } }\n"
        "{ \"kind\":\"replay\", \"uid\":1, \"timestamp\":16, \"event\": \"allocate\", \"payload\": "
        "{ \"allocator_ref\": \"0x99\", \"size\": 64 }, \"result\": { \"memory_ptr\": \"0x7f0000001000\" } }\n";
    Read r(Write("old_names.log", log), GA_FORMAT_AUTO, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 3u);
    using V = std::vector<std::string>;
    EXPECT_EQ(r.stacks[0].kind, GA_STACK_ALLOCATOR);
    EXPECT_EQ(r.stacks[0].Names(), V{"pool"});
    EXPECT_EQ(r.stacks[1].Names(), V{"DEVICE"});
    EXPECT_EQ(r.stacks[2].kind, GA_STACK_NONE); // 0x99 was never made
    // The hand-made log above has no make line for its allocator: no stacks.
    Read u(Write("u_none.log", kUmpire), GA_FORMAT_AUTO, true);
    ASSERT_EQ(u.rc, 0) << u.err;
    for (const Stack &st : u.stacks)
        EXPECT_EQ(st.kind, GA_STACK_NONE);
}

// A forced format that yields nothing is refused, not replayed as "fits".
TEST(UmpireReader, ForcedFormatWithNoEvents)
{
    std::string p = Write("nothing.jsonl", "{\"foo\":1}\n{\"bar\":2}\n");
    Read r(p, GA_FORMAT_UMPIRE);
    EXPECT_EQ(r.rc, -1);
    EXPECT_EQ(r.err, p + ": no events found reading it as --format umpire (2 entries skipped): not a trace of that "
                         "format, or one without allocations");
}

TEST(UmpireReader, BadLinesNameTheLineAndColumn)
{
    const std::string h = "{\"kind\":\"replay\",\"event\":\"version\"}\n";
    ExpectBad("u1.log", h + "{\"kind\":\"replay\",\"event\":\"allocate\",\"payload\":{\"size\":", ":2:", "truncated");
    ExpectBad("u2.log", h + "{\"kind\":\"replay\" \"event\":\"x\"}\n", ":2: column 18:", "expected ',' or '}'");
    ExpectBad("u3.log", h + "{\"kind\":\"replay\",\"event\":\"deallocate\",\"payload\":{\"memory_ptr\":\"zz\"}}\n",
              ":2:", "not a hex pointer");
    ExpectBad("u4.log", h + "{\"kind\":\"replay\",\"event\":\"deallocate\",\"payload\":{}}\n",
              ":2:", "without payload.memory_ptr");
    ExpectBad("u5.log",
              h + "{\"kind\":\"replay\",\"event\":\"allocate\",\"payload\":{\"size\":-1},"
                  "\"result\":{\"memory_ptr\":\"0x10\"}}\n",
              ":2:", "non-negative integer");
    ExpectBad("u6.log", h + "{\"kind\":\"replay\",\"event\":\"allocate\",\"result\":{\"memory_ptr\":\"0x10\"}}\n",
              ":2:", "no payload.size");
    ExpectBad("u7.log", h + "{\"kind\":\"replay\"} {}\n", ":2:", "text after the end");
    ExpectBad("u8.log", h + "[1, 2]\n", ":2:", "not a JSON object");
    ExpectBad("u9.log", h + "{\"kind\":\"replay\",\"event\":\"a\\qb\"}\n", ":2:", "bad escape");
    ExpectBad("u10.log", h + "{\"kind\":\"replay\",\"n\":01}\n", ":2:", "bad number");
    ExpectBad("u11.log", h + "{\"kind\":\"replay\",\"n\":" + std::string(100, '[') + "}\n", ":2:", "too deep");
    ExpectBad("u12.log", "not json\n", ":1:", "not a JSON object", GA_FORMAT_UMPIRE);
}

TEST(UmpireReader, EveryTruncation)
{
    std::string full = kUmpire;
    Read whole(Write("uw.log", full));
    ASSERT_EQ(whole.rc, 0) << whole.err;
    for (size_t n = 0; n < full.size(); n += 3) {
        std::string p = Write("ut.log", full.substr(0, n));
        Read r(p, GA_FORMAT_UMPIRE);
        // A cut at a line boundary is a shorter log; anywhere else a bad line.
        if (r.rc != 0)
            EXPECT_NE(r.err.find(p + ":"), std::string::npos) << r.err;
        else
            EXPECT_LE(r.ev.size(), whole.ev.size());
    }
}

TEST(RmmReader, FailureRowsAndStreams)
{
    // allocate failure: an expected OOM point with its size and stream, the
    // pointer ignored (RMM logs a null one); every stream kept as traced.
    std::string p = Write("fail.csv", "Thread,Time,Action,Pointer,Size,Stream\n"
                                      "1,t,allocate,0x10,256,0x5555aaaa0000\n"
                                      "1,t,allocate failure,0x0,85899345920,0x5555aaaa0000\n"
                                      "1,t,allocate failure,nullptr,4096,0x0\n"
                                      "2,t,free,0x10,256,0x5555bbbb0000\n");
    Read r(p);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.ev.size(), 4u);
    EXPECT_EQ(r.ev[0].stream, 0x5555aaaa0000u);
    EXPECT_EQ(r.ev[1].kind, GA_EV_OOM);
    EXPECT_EQ(r.ev[1].size, 80ull << 30);
    EXPECT_EQ(r.ev[1].stream, 0x5555aaaa0000u);
    EXPECT_EQ(r.ev[1].where, 3u);
    EXPECT_EQ(r.ev[2].kind, GA_EV_OOM);
    EXPECT_EQ(r.ev[2].stream, 0u);
    EXPECT_EQ(r.ev[3].kind, GA_EV_FREE);
    EXPECT_EQ(r.ev[3].stream, 0x5555bbbb0000u); // a cross-stream free stays one
}

} // namespace
