// trace_source_test: galloc_set_trace_source (galloc_trace.h) as a replayer
// uses it. Each call is named by a token the test sets first; the source's
// frames (200 frames of 10 KiB names for some tokens) and times (1000 *
// token) must come back whole in the snapshot, loaded by Debian's python3
// (trace_source_check.py), and no stack of galloc's own may be captured.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}
#include "tests/util/python.h"

namespace {

constexpr size_t KiB = 1 << 10, MiB = 1 << 20, GiB = 1ull << 30;
constexpr int BIG_FRAMES = 200;
constexpr size_t BIG_NAME = 10 * KiB;

// A replayer's records: token -> frames, made up from the token and action
// (trace_source_check.py makes the same): none for a multiple of 4; else
// BIG_FRAMES of BIG_NAME-byte names for a big token, token % 4 short ones.
struct Source {
    uint32_t token = 0;        // the event the current call replays
    std::vector<uint32_t> big; // tokens with big stacks
    std::vector<std::string> names, files;
    std::vector<galloc_frame_t> frames; // valid until the next call, as the API allows
    int frames_calls = 0;

    bool IsBig(uint32_t t) const
    {
        for (uint32_t b : big)
            if (b == t)
                return true;
        return false;
    }
};

uint32_t SourceToken(void *ctx)
{
    return static_cast<Source *>(ctx)->token;
}

int64_t SourceTime(void *, uint32_t token, const char *)
{
    return 1000 * static_cast<int64_t>(token);
}

size_t SourceFrames(void *ctx, uint32_t token, const char *action, const galloc_frame_t **out)
{
    Source *s = static_cast<Source *>(ctx);
    s->frames_calls++;
    size_t n = token % 4 == 0 ? 0 : s->IsBig(token) ? BIG_FRAMES : token % 4;
    s->names.assign(n, "");
    s->files.assign(n, "");
    s->frames.assign(n, galloc_frame_t{});
    for (size_t i = 0; i < n; i++) {
        s->names[i] = std::string(action) + "@" + std::to_string(token) + "#" + std::to_string(i) + ":";
        if (s->IsBig(token))
            s->names[i].resize(BIG_NAME, 'x');
        s->files[i] = "rec/" + std::to_string(token) + "/" + std::to_string(i) + ".py";
        s->frames[i] = {s->files[i].c_str(), s->names[i].c_str(), static_cast<int64_t>(token) * 1000 + (int64_t)i};
    }
    *out = s->frames.data();
    return n;
}

galloc_trace_source_t MakeSource(Source *s)
{
    galloc_trace_source_t src = {};
    src.struct_size = sizeof src;
    src.ctx = s;
    src.token = SourceToken;
    src.time_us = SourceTime;
    src.frames = SourceFrames;
    return src;
}

// galloc's own framework frames: must not be asked for while a source is set.
int g_callback_calls = 0;
size_t CallbackFrames(void *, galloc_frame_t *out, size_t max)
{
    g_callback_calls++;
    if (max < 1)
        return 0;
    out[0] = {"train.py", "forward", 42};
    return 1;
}

// What trace_source_check.py expects; frames: a token, 0 (none) or "cb".
struct Want {
    std::string pickle, json;
    std::vector<uint32_t> big;
    std::vector<std::string> entries, segments, blocks, annotations;

    static std::string Frames(const std::string &f) { return f == "cb" ? "\"cb\"" : f; }
    void Entry(const char *action, uint32_t time_token, const std::string &frames)
    {
        entries.push_back("[\"" + std::string(action) + "\", " + std::to_string(time_token) + ", " + Frames(frames) +
                          "]");
    }
    void Segment(const void *addr, const std::string &frames)
    {
        segments.push_back("[" + std::to_string(reinterpret_cast<uintptr_t>(addr)) + ", " + Frames(frames) + "]");
    }
    void Block(const void *addr, const char *state, const std::string &frames)
    {
        blocks.push_back("[" + std::to_string(reinterpret_cast<uintptr_t>(addr)) + ", \"" + state + "\", " +
                         Frames(frames) + "]");
    }
    static std::string List(const std::vector<std::string> &v)
    {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); i++)
            s += (i ? ", " : "") + v[i];
        return s + "]";
    }
    // Writes the file and runs the checker; returns its output, "" when it passed.
    std::string Check(const std::string &name) const
    {
        std::string path = test_tmp_path(name);
        {
            std::ofstream o(path);
            std::vector<std::string> b;
            for (uint32_t t : big)
                b.push_back(std::to_string(t));
            o << "{\"pickle\": " << (pickle.empty() ? "null" : "\"" + pickle + "\"") << ", \"json\": \"" << json
              << "\", \"big\": " << List(b) << ", \"entries\": " << List(entries)
              << ", \"segments\": " << List(segments) << ", \"blocks\": " << List(blocks)
              << ", \"annotations\": " << List(annotations) << "}";
        }
        std::string out;
        return test_run_python({"tests/api/trace_source_check.py", path}, &out) == 0 ? "" : out;
    }
};

std::string T(uint32_t token)
{
    return std::to_string(token);
}

std::string LastError(galloc_allocator_t *a)
{
    char err[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, err, sizeof err);
    return err;
}

class TraceSource : public ::testing::Test {
  protected:
    void SetUp() override
    {
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:1GiB,sim_manual_events:True", &a_, err, sizeof err),
                  GALLOC_OK)
            << err;
        galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 0};
        ASSERT_EQ(galloc_record_memory_history(a_, &opt), GALLOC_OK);
        g_callback_calls = 0;
        ASSERT_EQ(galloc_set_frames_callback(a_, CallbackFrames, nullptr), GALLOC_OK);
    }
    void TearDown() override
    {
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
        galloc_allocator_destroy(a_);
    }
    galloc_allocator_t *a_ = nullptr;
};

// A replay of every kind of event; each entry must carry its call's time and
// the recorded frames PyTorch would have given it.
TEST_F(TraceSource, EveryEntryBlockAndSegmentCarriesItsTokensFramesAndTime)
{
    Source s;
    s.big = {3, 7};
    galloc_trace_source_t src = MakeSource(&s);
    ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
    Want w;
    w.big = s.big;
    void *A = nullptr, *B = nullptr, *C = nullptr, *D = nullptr, *huge = nullptr;

    s.token = 1;
    ASSERT_EQ(galloc_malloc(a_, 3 * MiB, 0, &A), GALLOC_OK); // a new 20 MiB segment first
    w.Entry("segment_alloc", 1, T(1));
    w.Entry("alloc", 1, T(1));
    s.token = 2;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &B), GALLOC_OK); // a new 2 MiB small segment
    w.Entry("segment_alloc", 2, T(2));
    w.Entry("alloc", 2, T(2));
    s.token = 3;
    ASSERT_EQ(galloc_free(a_, A), GALLOC_OK); // completes at once, under the free's token
    w.Entry("free_requested", 3, T(3));
    w.Entry("free_completed", 3, T(3));
    s.token = 4;
    ASSERT_EQ(galloc_record_stream(a_, B, 7), GALLOC_OK);
    s.token = 5;
    ASSERT_EQ(galloc_free(a_, B), GALLOC_OK); // waits for stream 7
    w.Entry("free_requested", 5, T(5));
    s.token = 6;
    ASSERT_EQ(galloc_stream_synchronize(a_, 7), GALLOC_OK);
    s.token = 7;
    // The next allocation sees B's event done: B completes during this call
    // (its time), under its allocation's token (PyTorch's free_block with no context).
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &C), GALLOC_OK);
    EXPECT_EQ(C, B);
    w.Entry("free_completed", 7, T(2));
    w.Entry("alloc", 7, T(7));
    s.token = 0; // a call the replayer names no event for: galloc's clock
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    w.Entry("segment_free", 0, T(1)); // the segment keeps its allocation's token
    s.token = 8;
    ASSERT_EQ(galloc_malloc(a_, 5 * MiB, 0, &D), GALLOC_OK);
    w.Entry("segment_alloc", 8, T(8));
    w.Entry("alloc", 8, T(8));
    s.token = 9;
    ASSERT_EQ(galloc_free(a_, D), GALLOC_OK);
    w.Entry("free_requested", 9, T(9));
    w.Entry("free_completed", 9, T(9));
    s.token = 10;
    // Past the device: the flush frees D's cached segment during this call, then it fails.
    EXPECT_EQ(galloc_malloc(a_, 2 * GiB, 0, &huge), GALLOC_E_OOM);
    w.Entry("segment_free", 10, T(8));
    w.Entry("oom", 10, T(10));
    s.token = 11;
    ASSERT_EQ(galloc_record_annotation(a_, "START", "step"), GALLOC_OK);
    w.annotations.push_back("[\"START\", \"step\", 11]");
    s.token = 12;
    ASSERT_EQ(galloc_record_stream(a_, C, 7), GALLOC_OK);
    s.token = 13;
    ASSERT_EQ(galloc_free(a_, C), GALLOC_OK); // stays active_pending_free, with its allocation's frames
    w.Entry("free_requested", 13, T(13));
    w.Segment(B, T(2));
    w.Block(C, "active_pending_free", T(7));

    EXPECT_EQ(s.frames_calls, 0) << "frames are asked for only when a snapshot is written";
    s.token = 14;
    w.pickle = test_tmp_path("source.pickle");
    w.json = test_tmp_path("source.json");
    ASSERT_EQ(galloc_snapshot_write(a_, w.pickle.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK) << LastError(a_);
    int pickle_calls = s.frames_calls;
    ASSERT_EQ(galloc_snapshot_write(a_, w.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    // 17 entries, one block, one segment, each (token, action) asked for
    // once: no pair repeats here, so the pickle's memo saves no call.
    EXPECT_EQ(pickle_calls, 19);
    EXPECT_EQ(s.frames_calls - pickle_calls, 19);
    EXPECT_EQ(g_callback_calls, 0) << "no framework stack is captured while a source is set";
    std::string out = w.Check("source_want.json");
    EXPECT_EQ(out, "") << out;

    s.token = 15;
    ASSERT_EQ(galloc_stream_synchronize(a_, 7), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
}

// A pickle writes a repeated (token, action) once and refers to it after.
TEST_F(TraceSource, PickleWritesARepeatedTokenAndActionOnce)
{
    Source s;
    s.big = {1};
    galloc_trace_source_t src = MakeSource(&s);
    ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
    std::vector<void *> ptrs(8, nullptr);
    s.token = 1; // every allocation names the same event: eight identical alloc entries
    for (void *&p : ptrs)
        ASSERT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_OK);
    Want w;
    w.big = s.big;
    w.pickle = test_tmp_path("repeat.pickle");
    w.json = test_tmp_path("repeat.json");
    ASSERT_EQ(galloc_snapshot_write(a_, w.pickle.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK) << LastError(a_);
    // segment_alloc, alloc, block, segment: four lists of 2 MB, written once each.
    EXPECT_EQ(s.frames_calls, 4);
    std::ifstream f(w.pickle, std::ios::binary | std::ios::ate);
    EXPECT_LT(static_cast<size_t>(f.tellg()), 5 * BIG_FRAMES * BIG_NAME);
    ASSERT_EQ(galloc_snapshot_write(a_, w.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    // The writer asks for each (token, action) once in either format; JSON
    // then repeats the text in its 9 entries, 8 blocks and 1 segment.
    EXPECT_EQ(s.frames_calls, 4 + 4);
    w.Entry("segment_alloc", 1, T(1));
    for (void *p : ptrs) {
        w.Entry("alloc", 1, T(1));
        w.Block(p, "active_allocated", T(1));
    }
    w.Segment(ptrs[0], T(1));
    std::string out = w.Check("repeat_want.json");
    EXPECT_EQ(out, "") << out;
    for (void *p : ptrs)
        ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// What a replay's tokens are: one per recorded event, thousands of them,
// whose recorded stacks repeat a few. Equal frames lists of different tokens
// are one object in the pickle, as in PyTorch's own (each frame dict and
// frame string too): 64 allocations of 3 stacks make 3 lists of 2 frames.
size_t SharedFrames(void *ctx, uint32_t token, const char *, const galloc_frame_t **out)
{
    static const galloc_frame_t stacks[3][2] = {
        {{"model.py", "forward", 10}, {"train.py", "step", 5}},
        {{"model.py", "backward", 20}, {"train.py", "step", 5}},
        {{"optim.py", "step", 30}, {"train.py", "step", 6}},
    };
    static_cast<Source *>(ctx)->frames_calls++;
    *out = stacks[token % 3];
    return 2;
}

TEST_F(TraceSource, EqualStacksOfDifferentTokensAreWrittenOnce)
{
    Source s;
    galloc_trace_source_t src = MakeSource(&s);
    src.frames = SharedFrames;
    ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
    std::vector<void *> ptrs(64, nullptr);
    for (size_t i = 0; i < ptrs.size(); i++) {
        s.token = static_cast<uint32_t>(i + 1);
        ASSERT_EQ(galloc_malloc(a_, 4096, 0, &ptrs[i]), GALLOC_OK);
    }
    std::string pickle = test_tmp_path("shared.pickle"), json = test_tmp_path("shared.json");
    ASSERT_EQ(galloc_snapshot_write(a_, pickle.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_snapshot_write(a_, json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    // 64 allocs, 64 blocks, the segment and its segment_alloc: 130 pairs, each asked for once per file.
    EXPECT_EQ(s.frames_calls, 2 * 130);
    std::string out;
    int rc = test_run_python({"-c", R"(
import json, pickle, sys
snap = pickle.load(open(sys.argv[1], 'rb'))
entries = snap['device_traces'][0]
allocs = [e for e in entries if e['action'] == 'alloc']
assert len(allocs) == 64, len(allocs)
lists = {id(e['frames']) for e in entries} | {id(b['frames']) for g in snap['segments'] for b in g['blocks']
                                              if b['state'] != 'inactive'}
assert len(lists) == 3, len(lists)
frames = {id(f) for e in entries for f in e['frames']}
assert len(frames) == 5, len(frames)  # train.py:step:5 is one frame of two stacks
names = {id(f['filename']) for e in entries for f in e['frames']}
assert len(names) == 3, len(names)
want = [[('model.py', 'forward', 10), ('train.py', 'step', 5)], [('model.py', 'backward', 20), ('train.py', 'step', 5)],
        [('optim.py', 'step', 30), ('train.py', 'step', 6)]]
for i, e in enumerate(allocs):
    got = [(f['filename'], f['name'], f['line']) for f in e['frames']]
    assert got == want[(i + 1) % 3], (i, got)
assert json.load(open(sys.argv[2])) == json.loads(json.dumps(snap)), 'JSON and pickle differ'
)",
                              pickle, json},
                             &out);
    EXPECT_EQ(rc, 0) << out;
    for (void *p : ptrs)
        ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// A source that names single entries (galloc_trace_source_t.entry): the
// segments one empty_cache releases each take their own token's time and
// frames; a source whose struct_size stops before entry keeps the call's.
struct EntrySource : Source {
    void *first = nullptr, *second = nullptr; // the segments' addresses
    int entry_calls = 0;
};

uint32_t EntryToken(void *ctx, const char *action, uint64_t addr, uint64_t)
{
    EntrySource *s = static_cast<EntrySource *>(ctx);
    s->entry_calls++;
    if (std::string(action) != "segment_free")
        return 0;
    return addr == reinterpret_cast<uintptr_t>(s->first)    ? 101
           : addr == reinterpret_cast<uintptr_t>(s->second) ? 102
                                                            : 0;
}

TEST_F(TraceSource, AnEntryNamedApartTakesItsOwnTokensTimeAndFrames)
{
    for (bool with_entry : {true, false}) {
        SCOPED_TRACE(with_entry ? "with entry" : "struct_size before entry");
        EntrySource s;
        galloc_trace_source_t src = MakeSource(&s);
        src.entry = EntryToken;
        if (!with_entry)
            src.struct_size = offsetof(galloc_trace_source_t, entry);
        ASSERT_EQ(galloc_set_trace_source(a_, nullptr), GALLOC_OK); // a fresh trace each round
        ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
        s.token = 1;
        ASSERT_EQ(galloc_malloc(a_, 3 * MiB, 0, &s.first), GALLOC_OK); // a 20 MiB segment
        s.token = 2;
        ASSERT_EQ(galloc_malloc(a_, 30 * MiB, 0, &s.second), GALLOC_OK); // one of 30 MiB
        s.token = 3;
        ASSERT_EQ(galloc_free(a_, s.first), GALLOC_OK);
        ASSERT_EQ(galloc_free(a_, s.second), GALLOC_OK);
        s.token = 5;
        ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK); // releases both, smaller first
        Want w;
        w.json = test_tmp_path(with_entry ? "entry.json" : "noentry.json");
        ASSERT_EQ(galloc_snapshot_write(a_, w.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
        w.Entry("segment_alloc", 1, T(1));
        w.Entry("alloc", 1, T(1));
        w.Entry("segment_alloc", 2, T(2));
        w.Entry("alloc", 2, T(2));
        for (int k = 0; k < 2; k++) {
            w.Entry("free_requested", 3, T(3));
            w.Entry("free_completed", 3, T(3));
        }
        if (with_entry) {
            w.Entry("segment_free", 101, T(101));
            w.Entry("segment_free", 102, T(102));
        } else { // the call's time; the segment's allocation's frames, as galloc records it
            w.Entry("segment_free", 5, T(1));
            w.Entry("segment_free", 5, T(2));
        }
        EXPECT_EQ(s.entry_calls, with_entry ? 10 : 0); // every entry recorded, only while entry is there
        std::string out = w.Check(with_entry ? "entry_want.json" : "noentry_want.json");
        EXPECT_EQ(out, "") << out;
    }
}

// Setting or removing a source clears the trace and the frames of live
// blocks and segments (their ids change meaning); replacing one keeps them.
TEST_F(TraceSource, SettingOrRemovingClearsTheTraceAndLiveFramesReplacingKeepsThem)
{
    void *X = nullptr, *Y = nullptr, *Z = nullptr, *V = nullptr, *W = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &X), GALLOC_OK); // galloc's own stack: the callback's frame
    EXPECT_EQ(g_callback_calls, 1);
    ASSERT_EQ(galloc_record_annotation(a_, "START", "before"), GALLOC_OK);

    Source s;
    galloc_trace_source_t src = MakeSource(&s);
    ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
    s.token = 21;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &Y), GALLOC_OK);
    Want w1;
    w1.json = test_tmp_path("modes1.json");
    ASSERT_EQ(galloc_snapshot_write(a_, w1.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    w1.Entry("alloc", 21, T(21));
    w1.Segment(X, "0"); // its stack id was dropped with the mode
    w1.Block(X, "active_allocated", "0");
    w1.Block(Y, "active_allocated", T(21));
    std::string out = w1.Check("modes1_want.json");
    EXPECT_EQ(out, "") << out;
    EXPECT_EQ(g_callback_calls, 1);

    ASSERT_EQ(galloc_set_trace_source(a_, nullptr), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &Z), GALLOC_OK);
    EXPECT_EQ(g_callback_calls, 2);
    Want w2;
    w2.json = test_tmp_path("modes2.json");
    ASSERT_EQ(galloc_snapshot_write(a_, w2.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    w2.Entry("alloc", 0, "cb");
    w2.Entry("snapshot", 0, "0"); // galloc's own snapshots record one again
    w2.Segment(X, "0");
    w2.Block(X, "active_allocated", "0");
    w2.Block(Y, "active_allocated", "0"); // a token is never read as a stack id
    w2.Block(Z, "active_allocated", "cb");
    out = w2.Check("modes2_want.json");
    EXPECT_EQ(out, "") << out;

    ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
    s.token = 30;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &V), GALLOC_OK);
    Source s2; // another replayer's records, no times: galloc's clock
    galloc_trace_source_t src2 = MakeSource(&s2);
    src2.time_us = nullptr;
    ASSERT_EQ(galloc_set_trace_source(a_, &src2), GALLOC_OK);
    s2.token = 31;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &W), GALLOC_OK);
    Want w3;
    w3.json = test_tmp_path("modes3.json");
    ASSERT_EQ(galloc_snapshot_write(a_, w3.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    w3.Entry("alloc", 30, T(30));
    w3.Entry("alloc", 0, T(31));
    w3.Segment(X, "0");
    for (void *p : {X, Y, Z})
        w3.Block(p, "active_allocated", "0");
    w3.Block(V, "active_allocated", T(30));
    w3.Block(W, "active_allocated", T(31));
    out = w3.Check("modes3_want.json");
    EXPECT_EQ(out, "") << out;
    EXPECT_EQ(s.frames_calls, 2); // modes1's (alloc, block); the replacement resolves the rest
    EXPECT_EQ(g_callback_calls, 2);

    for (void *p : {X, Y, Z, V, W})
        ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

TEST_F(TraceSource, RefusesAnIncompleteSource)
{
    Source s;
    galloc_trace_source_t src = MakeSource(&s);
    src.struct_size = offsetof(galloc_trace_source_t, frames);
    EXPECT_EQ(galloc_set_trace_source(a_, &src), GALLOC_E_INVAL);
    EXPECT_NE(LastError(a_).find("set_trace_source"), std::string::npos) << LastError(a_);
    src = MakeSource(&s);
    src.token = nullptr;
    EXPECT_EQ(galloc_set_trace_source(a_, &src), GALLOC_E_INVAL);
    src = MakeSource(&s);
    src.frames = nullptr;
    EXPECT_EQ(galloc_set_trace_source(a_, &src), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_set_trace_source(nullptr, &src), GALLOC_E_INVAL);
    // Nothing changed: galloc's own stacks are still captured.
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_OK);
    EXPECT_EQ(g_callback_calls, 1);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// The user allocator keeps history too: its entries take tokens the same way.
struct Host {
    static void *Malloc(void *, size_t size, int, galloc_stream_t) { return std::malloc(size); }
    static void Free(void *, void *ptr, size_t, int, galloc_stream_t) { std::free(ptr); }
};

TEST(TraceSourceUser, UserAllocatorEntriesCarryTokens)
{
    galloc_user_allocator_t u = {};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.malloc_fn = Host::Malloc;
    u.free_fn = Host::Free;
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a, nullptr, 0), GALLOC_OK);
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a, &opt), GALLOC_OK);
    Source s;
    galloc_trace_source_t src = MakeSource(&s);
    ASSERT_EQ(galloc_set_trace_source(a, &src), GALLOC_OK);
    void *p = nullptr, *q = nullptr;
    s.token = 5;
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &p), GALLOC_OK);
    s.token = 6;
    ASSERT_EQ(galloc_malloc(a, 2000, 0, &q), GALLOC_OK);
    s.token = 7;
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    Want w;
    w.json = test_tmp_path("user.json");
    ASSERT_EQ(galloc_snapshot_write(a, w.json.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a);
    w.Entry("segment_alloc", 5, T(5));
    w.Entry("alloc", 5, T(5));
    w.Entry("segment_alloc", 6, T(6));
    w.Entry("alloc", 6, T(6));
    w.Entry("free_requested", 7, T(7));
    w.Entry("free_completed", 7, T(7));
    w.Entry("segment_free", 7, T(7));
    w.Segment(q, T(6));
    w.Block(q, "active_allocated", T(6));
    std::string out = w.Check("user_want.json");
    EXPECT_EQ(out, "") << out;
    ASSERT_EQ(galloc_free(a, q), GALLOC_OK);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
