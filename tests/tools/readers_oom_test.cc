// readers_oom_test.cc: the readers out of host memory, at every allocation
// they make. The linker routes the readers' malloc, calloc and realloc
// through the wrappers below (BUILD: -Wl,--wrap), which fail the Nth call
// (then, in a second pass, every call from the Nth on) while a read is under
// test, and track what is allocated and freed meanwhile. For N = 1, 2, ...
// until a read no longer meets a failure, each read must fail cleanly: -1
// with a message, and nothing of what it allocated still allocated once the
// reader is closed (the style guide's fault injection, SQLite's OOM testing).
// The traces exercise the stacks' memory: Kineto ranges and names, Umpire
// allocator names, the text reader's annotation.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/readers/trace_reader.h"
}

namespace {

struct Injector {
    bool on = false;                 // a read is under test
    bool every = false;              // fail every call from fail_at on, not only that one
    long calls = 0;                  // allocation calls during the read
    long fail_at = 0;                // the call that fails (1-based)
    bool failed = false;             // a call failed
    std::unordered_set<void *> live; // allocated during the read and not freed
};

// Never freed: the wrappers may run after static destructors, and before this
// initializer (nullptr until then: zero-initialized before any dynamic one).
Injector *inj = new Injector;

bool Fail()
{
    if (inj == nullptr || !inj->on)
        return false;
    inj->calls++;
    if (inj->calls == inj->fail_at || (inj->every && inj->calls > inj->fail_at)) {
        inj->failed = true;
        return true;
    }
    return false;
}

void Track(void *old, void *p)
{
    if (inj == nullptr || !inj->on)
        return;
    if (old != nullptr)
        inj->live.erase(old);
    if (p != nullptr)
        inj->live.insert(p); // the set allocates through operator new: libstdc++'s malloc, not wrapped
}

} // namespace

// The linker's names for the wrapped functions (ld --wrap): reserved
// identifiers, the only ones it accepts.
extern "C" {
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n)
{
    if (Fail())
        return nullptr;
    void *p = __real_malloc(n);
    Track(nullptr, p);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (Fail())
        return nullptr;
    void *p = __real_calloc(n, size);
    Track(nullptr, p);
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    if (Fail())
        return nullptr; // old stays allocated, as realloc leaves it
    void *p = __real_realloc(old, n);
    if (p != nullptr)
        Track(old, p);
    return p;
}

void __wrap_free(void *p)
{
    Track(p, nullptr);
    __real_free(p);
}
}

namespace {

struct Outcome {
    int rc = 0;
    std::string err;
    size_t events = 0, frames = 0;
};

// Open path, read every event of every unit (and every frame of its stack),
// close it.
Outcome ReadTrace(const std::string &path)
{
    Outcome o;
    char err[512] = "";
    ga_reader_t *r = nullptr;
    if (ga_reader_open(path.c_str(), GA_FORMAT_AUTO, &r, err, sizeof(err)) != 0) {
        o.rc = -1;
        o.err = err;
        return o;
    }
    for (size_t u = 0; u < ga_reader_units(r) && o.rc == 0; u++) {
        if (ga_reader_begin(r, u, err, sizeof(err)) != 0) {
            o.rc = -1;
            break;
        }
        ga_event_t e;
        int k;
        while ((k = ga_reader_next(r, &e, err, sizeof(err))) == 1) {
            o.events++;
            for (size_t i = 0; i < e.stack.n; i++) {
                ga_frame_t f;
                e.stack.frame(e.stack.data, i, &f);
                o.frames++;
            }
        }
        if (k < 0)
            o.rc = -1;
    }
    if (o.rc != 0)
        o.err = err;
    ga_reader_close(r);
    return o;
}

// Every allocation of a read of path fails in turn (each alone, then each
// with all after it).
void EveryFailure(const std::string &path)
{
    Outcome whole = ReadTrace(path);
    ASSERT_EQ(whole.rc, 0) << whole.err;
    ASSERT_GT(whole.frames, 0u) << path << ": a trace whose stacks hold something";
    for (bool every : {false, true}) {
        long n = 1;
        for (; n < 100000; n++) {
            inj->live.clear();
            inj->every = every;
            inj->calls = 0;
            inj->fail_at = n;
            inj->failed = false;
            inj->on = true;
            Outcome o = ReadTrace(path);
            inj->on = false;
            ASSERT_TRUE(inj->live.empty()) << path << ": call " << n << (every ? " on" : "")
                                           << " failed: " << inj->live.size() << " blocks still allocated after close";
            if (!inj->failed) { // no call left to fail: the read is whole again
                EXPECT_EQ(o.rc, 0) << o.err;
                EXPECT_EQ(o.events, whole.events);
                EXPECT_EQ(o.frames, whole.frames);
                break;
            }
            ASSERT_EQ(o.rc, -1) << path << ": call " << n << " failed, yet the read went on";
            ASSERT_NE(o.err, "") << path << ": call " << n;
        }
        EXPECT_GT(n, 3) << path << ": the read allocates";
        testing::Test::RecordProperty(every ? "calls_every" : "calls", (int)n);
    }
}

TEST(ReadersOutOfMemory, Kineto)
{
    auto range = [](const char *cat, const char *name, int ts, int dur, int tid) {
        return std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
               "\", \"pid\": 7, \"tid\": " + std::to_string(tid) + ", \"ts\": " + std::to_string(ts) +
               ", \"dur\": " + std::to_string(dur) + "},\n";
    };
    auto mem = [](int ts, long long bytes, int dev, int tid) {
        return std::string("{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 7, \"tid\": ") + std::to_string(tid) +
               ", \"ts\": " + std::to_string(ts) +
               ", \"args\": {\"Total Reserved\": 4096, \"Total Allocated\": 1024, " +
               "\"Bytes\": " + std::to_string(bytes) + ", \"Addr\": " + std::to_string(4096 + ts) +
               ", \"Device Type\": 1, \"Device Id\": " + std::to_string(dev) + "}},\n";
    };
    // Enough ranges, names and threads that every array grows a few times.
    std::string t = "{\"traceEvents\": [\n";
    for (int i = 0; i < 300; i++) {
        int tid = 1 + i % 12;
        t += range("user_annotation", ("step " + std::to_string(i % 80)).c_str(), 100 * i, 90, tid);
        t += range("python_function", ("train.py(" + std::to_string(i % 70) + "): f").c_str(), 100 * i + 5, 50, tid);
        t += range("cpu_op", "aten::empty", 100 * i + 10, 20, tid);
        t += mem(100 * i + 20, 512, i % 3, tid);
    }
    t += mem(99999, 512, 0, 99) + "{}]}\n"; // a thread with no range
    EveryFailure(Write("oom.json", t));
}

TEST(ReadersOutOfMemory, Umpire)
{
    std::string t;
    for (int i = 0; i < 200; i++) {
        char ref[32], ptr[32];
        std::snprintf(ref, sizeof(ref), "0x%x", 0x1000 + i);
        std::snprintf(ptr, sizeof(ptr), "0x%x", 0x100000 + 64 * i);
        t += std::string("{\"category\":\"operation\",\"name\":\"make_allocator\",\"numeric_args\":{},"
                         "\"string_args\":{\"allocator_ref\":\"") +
             ref + "\"},\"tags\":{\"allocator_name\":\"pool " + std::to_string(i) + "\"}}\n";
        t += std::string("{\"category\":\"operation\",\"name\":\"named_allocate\",\"numeric_args\":{\"size\":64},"
                         "\"string_args\":{\"allocator_ref\":\"") +
             ref + "\",\"pointer\":\"" + ptr + "\",\"allocation_name\":\"x\"},\"tags\":{}}\n";
    }
    EveryFailure(Write("oom.replay", t));
}

TEST(ReadersOutOfMemory, TextAndRmm)
{
    EveryFailure(Write("oom.trace", "galloc-trace 1\nalloc 1 10\nannotate forward block 0\nalloc 2 10\n"
                                    "annotate backward block 0\noom 1TiB\n"));
    EveryFailure(Write("oom.csv", "Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x10,16,0\n"
                                  "2,t,allocate failure,0x0,16,0\n"));
}

} // namespace
