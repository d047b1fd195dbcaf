// stack_test: stack capture, deduplication, symbolization, framework frames.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"

extern "C" {
#include "trace/stack.h"
#include "trace/trace.h"
}

namespace {

galloc_history_options_t opts(galloc_history_t enabled, galloc_context_t context, galloc_stacks_t stacks,
                              size_t max_entries)
{
    galloc_history_options_t o = {};
    o.struct_size = sizeof(o);
    o.enabled = enabled;
    o.context = context;
    o.stacks = stacks;
    o.max_entries = max_entries;
    return o;
}

std::string frame_name(const ga_trace_t *t, uint32_t fid)
{
    const ga_trace_frame_t *f = ga_trace_stacks_frame(&t->stacks, fid);
    return f != nullptr ? ga_trace_strtab_get(&t->strings, f->name, nullptr) : "";
}

class Stack : public ::testing::Test {
  protected:
    void SetUp() override { ga_trace_init(&t_, 0); }
    void TearDown() override { ga_trace_destroy(&t_); }
    ga_trace_t t_;
};

TEST_F(Stack, NativeCaptureReturnsFramesAndDedups)
{
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    uint32_t a[2], b[2];
    for (int i = 0; i < 2; i++) { // one call site each: the same return addresses
        a[i] = trace_test_native_site(&t_);
        b[i] = trace_test_other_site(&t_);
    }
    uint32_t a1 = a[0];
    ASSERT_NE(a1, 0u);
    EXPECT_EQ(a[0], a[1]); // same call path, same id
    EXPECT_EQ(b[0], b[1]);
    EXPECT_NE(a[0], b[0]);
    uint32_t n = 0;
    const uint32_t *ids = ga_trace_stacks_get(&t_.stacks, a1, &n);
    ASSERT_NE(ids, nullptr);
    EXPECT_GE(n, 3u); // the site, this test body, gtest's callers
    // The two stacks differ only in their innermost frame, which they do not share.
    uint32_t nb = 0;
    const uint32_t *idb = ga_trace_stacks_get(&t_.stacks, b[0], &nb);
    ASSERT_EQ(n, nb);
    EXPECT_NE(ids[0], idb[0]);
    EXPECT_NE(ids[1], idb[1]); // called from different lines of this test
    EXPECT_EQ(ids[2], idb[2]); // from there outwards, the same frames, stored once
}

TEST_F(Stack, SymbolizationNamesTheTestsFunction)
{
    auto o = opts(GALLOC_HISTORY_STATE, GALLOC_CONTEXT_STATE, GALLOC_STACKS_ALL, 0);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    uint32_t id = trace_test_native_site(&t_);
    ASSERT_NE(id, 0u);
    ASSERT_EQ(ga_trace_stacks_symbolize(&t_.stacks), GALLOC_OK);
    uint32_t n = 0;
    const uint32_t *ids = ga_trace_stacks_get(&t_.stacks, id, &n);
    ASSERT_GE(n, 2u);
    // Innermost first: the capture's caller, then this test's body (a C++
    // name, demangled when the C++ runtime's __cxa_demangle is there).
    EXPECT_EQ(frame_name(&t_, ids[0]), "trace_test_native_site");
    EXPECT_NE(frame_name(&t_, ids[1]).find("SymbolizationNamesTheTestsFunction"), std::string::npos)
        << frame_name(&t_, ids[1]);
    const ga_trace_frame_t *f = ga_trace_stacks_frame(&t_.stacks, ids[0]);
    std::string file = ga_trace_strtab_get(&t_.strings, f->filename, nullptr);
    for (uint32_t i = 0; i < n && i < 3; i++) {
        const ga_trace_frame_t *g = ga_trace_stacks_frame(&t_.stacks, ids[i]);
        printf("frame %u: %s:%lld:%s\n", i, ga_trace_strtab_get(&t_.strings, g->filename, nullptr), (long long)g->line,
               ga_trace_strtab_get(&t_.strings, g->name, nullptr));
    }
    // test_util.cc is built with -g: the file is the source and the line
    // the capture call's (libdw, from DWARF, at the return address - 1).
    EXPECT_NE(file.find("tests/trace/test_util.cc"), std::string::npos) << file;
    EXPECT_EQ(f->line, trace_test_native_site_line());
    // This test's body has no debug info (fastbuild): the module instead.
    const ga_trace_frame_t *body = ga_trace_stacks_frame(&t_.stacks, ids[1]);
    EXPECT_NE(std::string(ga_trace_strtab_get(&t_.strings, body->filename, nullptr)).find("trace_test"),
              std::string::npos);
    EXPECT_EQ(body->line, 0);
    // Symbolizing again does nothing new.
    uint32_t before = t_.strings.count;
    ASSERT_EQ(ga_trace_stacks_symbolize(&t_.stacks), GALLOC_OK);
    EXPECT_EQ(t_.strings.count, before);
}

TEST_F(Stack, FrameworkFramesAreCopiedAndInterned)
{
    int calls = 0;
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALLOC, GALLOC_STACKS_PYTHON, 16);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    ga_trace_set_frames_fn(&t_, trace_test_user_frames, &calls);
    uint32_t id = ga_trace_capture(&t_, 0);
    ASSERT_NE(id, 0u);
    EXPECT_EQ(calls, 1);
    uint32_t n = 0;
    const uint32_t *ids = ga_trace_stacks_get(&t_.stacks, id, &n);
    ASSERT_EQ(n, 3u); // python mode: the framework's frames only
    const ga_trace_frame_t *f0 = ga_trace_stacks_frame(&t_.stacks, ids[0]);
    EXPECT_EQ(f0->pc, 0u);
    EXPECT_STREQ(ga_trace_strtab_get(&t_.strings, f0->filename, nullptr), "/src/mod\xc3\xa8le.py");
    EXPECT_STREQ(ga_trace_strtab_get(&t_.strings, f0->name, nullptr), "forward");
    EXPECT_EQ(f0->line, 42);
    const ga_trace_frame_t *f2 = ga_trace_stacks_frame(&t_.stacks, ids[2]);
    EXPECT_STREQ(ga_trace_strtab_get(&t_.strings, f2->filename, nullptr), ""); // NULL filename
    EXPECT_EQ(f2->line, (int64_t)1 << 40);
    // Same frames again: the same id.
    EXPECT_EQ(ga_trace_capture(&t_, 0), id);
}

TEST_F(Stack, AllStacksPutNativeFramesBeforeFrameworkFrames)
{
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    ga_trace_set_frames_fn(&t_, trace_test_user_frames, nullptr);
    uint32_t id = trace_test_native_site(&t_);
    uint32_t n = 0;
    const uint32_t *ids = ga_trace_stacks_get(&t_.stacks, id, &n);
    ASSERT_GT(n, 3u);
    EXPECT_NE(ga_trace_stacks_frame(&t_.stacks, ids[0])->pc, 0u);
    for (uint32_t i = n - 3; i < n; i++)
        EXPECT_EQ(ga_trace_stacks_frame(&t_.stacks, ids[i])->pc, 0u);
}

TEST_F(Stack, WarmCapturesAllocateNothing)
{
    // Once a call path has been seen, capturing it again only looks it up:
    // no table, string or frame array grows or moves.
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    ga_trace_set_frames_fn(&t_, trace_test_user_frames, nullptr);
    uint32_t id = 0;
    ga_trace_stacks_t before = {};
    uint32_t strings = 0;
    for (int i = 0; i < 10001; i++) { // one call site: the first capture is the cold one
        uint32_t got = trace_test_native_site(&t_);
        if (i == 0) {
            id = got;
            before = t_.stacks;
            strings = t_.strings.count;
        }
        ASSERT_EQ(got, id);
    }
    EXPECT_EQ(t_.stacks.nstacks, before.nstacks);
    EXPECT_EQ(t_.stacks.nframes, before.nframes);
    EXPECT_EQ(t_.stacks.nids, before.nids);
    EXPECT_EQ(t_.stacks.frames, before.frames);
    EXPECT_EQ(t_.stacks.ids, before.ids);
    EXPECT_EQ(t_.stacks.stacks, before.stacks);
    EXPECT_EQ(t_.stacks.stack_index.slots, before.stack_index.slots);
    EXPECT_EQ(t_.stacks.frame_index.slots, before.frame_index.slots);
    EXPECT_EQ(t_.strings.count, strings);
    EXPECT_EQ(t_.stacks.failures, 0u);
}

TEST_F(Stack, ManyDistinctStacksGrowTheStore)
{
    // Distinct framework stacks (line numbers differ) force every table to
    // grow and rehash; each stack keeps its id and frames.
    auto o = opts(GALLOC_HISTORY_STATE, GALLOC_CONTEXT_STATE, GALLOC_STACKS_PYTHON, 0);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    std::vector<uint32_t> ids;
    for (int i = 0; i < 3000; i++) {
        ga_trace_raw_stack_t raw = {};
        raw.nuser = 2;
        memcpy(raw.text, "f.pyg", 5);
        raw.user[0] = {0, 4, 4, 1, i};
        raw.user[1] = {0, 4, 4, 1, -1};
        ids.push_back(ga_trace_intern(&t_, &raw));
    }
    for (int i = 0; i < 3000; i++) {
        ga_trace_raw_stack_t raw = {};
        raw.nuser = 2;
        memcpy(raw.text, "f.pyg", 5);
        raw.user[0] = {0, 4, 4, 1, i};
        raw.user[1] = {0, 4, 4, 1, -1};
        ASSERT_EQ(ga_trace_intern(&t_, &raw), ids[i]);
        uint32_t n = 0;
        const uint32_t *f = ga_trace_stacks_get(&t_.stacks, ids[i], &n);
        ASSERT_EQ(n, 2u);
        ASSERT_EQ(ga_trace_stacks_frame(&t_.stacks, f[0])->line, i);
        ASSERT_EQ(f[1], ga_trace_stacks_get(&t_.stacks, ids[0], &n)[1]); // the shared outer frame, stored once
    }
    EXPECT_EQ(t_.stacks.nstacks, 3001u);
    EXPECT_EQ(t_.stacks.nframes, 3002u);
    EXPECT_EQ(t_.strings.count, 3u); // "", "f.py", "g"
}

// A trace source's frames, interned by a snapshot writer: every frame and
// every byte (200 frames, a 100,000-byte name), equal stacks one id, the
// shared frames and strings stored once.
TEST_F(Stack, SourceFramesAreInternedWhole)
{
    std::string big(100000, 'n');
    std::vector<galloc_frame_t> a(200), b(200);
    for (size_t i = 0; i < a.size(); i++) {
        a[i] = {"model.py", i == 7 ? big.c_str() : "forward", static_cast<int64_t>(i)};
        b[i] = a[i];
    }
    b[199].line = -1; // one frame differs
    uint32_t ia = 0, ia2 = 0, ib = 0, ie = 99;
    ASSERT_EQ(ga_trace_stacks_intern_frames(&t_.stacks, a.data(), a.size(), &ia), GALLOC_OK);
    ASSERT_EQ(ga_trace_stacks_intern_frames(&t_.stacks, a.data(), a.size(), &ia2), GALLOC_OK);
    ASSERT_EQ(ga_trace_stacks_intern_frames(&t_.stacks, b.data(), b.size(), &ib), GALLOC_OK);
    ASSERT_EQ(ga_trace_stacks_intern_frames(&t_.stacks, nullptr, 0, &ie), GALLOC_OK);
    EXPECT_NE(ia, 0u);
    EXPECT_EQ(ia2, ia);
    EXPECT_NE(ib, ia);
    EXPECT_EQ(ie, 0u);
    uint32_t n = 0;
    const uint32_t *f = ga_trace_stacks_get(&t_.stacks, ia, &n);
    ASSERT_EQ(n, 200u);
    size_t len = 0;
    const ga_trace_frame_t *f7 = ga_trace_stacks_frame(&t_.stacks, f[7]);
    EXPECT_EQ(ga_trace_strtab_get(&t_.strings, f7->name, &len), std::string(big));
    EXPECT_EQ(len, big.size());
    EXPECT_EQ(f7->line, 7);
    EXPECT_EQ(t_.stacks.nstacks, 3u);   // 0, a, b
    EXPECT_EQ(t_.stacks.nframes, 202u); // 0, 200 of a, b's last
    EXPECT_EQ(t_.strings.count, 4u);    // "", "model.py", "forward", big
    // A cut capture of the same name is another string: its first 4095 bytes.
    uint32_t cut = 0;
    ASSERT_EQ(ga_trace_strtab_intern(&t_.strings, big.c_str(), big.size(), &cut), GALLOC_OK);
    EXPECT_EQ(strlen(ga_trace_strtab_get(&t_.strings, cut, nullptr)), GA_TRACE_STRTAB_MAX_LEN);
    EXPECT_EQ(t_.strings.count, 5u);
}

} // namespace
