// readers_util.h: helpers shared by the reader tests (readers_test.cc,
// readers_json_test.cc): tmpfiles.h, and Read, which
// drains every unit of a file, copies each event's stack out while it is
// valid, and checks that errors are sticky and that stacks keep their
// contract (trace_reader.h: NONE but for allocations and OOMs, equal keys
// for equal frames only).
#ifndef GA_TESTS_TOOLS_READERS_UTIL_H
#define GA_TESTS_TOOLS_READERS_UTIL_H

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/readers/trace_reader.h"
}

namespace {

// One frame of a recorded stack, copied out of the reader.
struct Frame {
    bool has_file = false; // file was not NULL
    std::string file, name;
    int64_t line = 0;
    bool operator==(const Frame &o) const
    {
        return has_file == o.has_file && file == o.file && name == o.name && line == o.line;
    }
    // "name", or "file:line name" for a frame with a file.
    std::string Text() const { return has_file ? file + ":" + std::to_string(line) + " " + name : name; }
};

struct Stack {
    ga_stack_kind_t kind = GA_STACK_NONE;
    std::vector<Frame> frames;
    std::vector<uintptr_t> keys; // each frame's key (0: none)
    // The frames' Text(), innermost first.
    std::vector<std::string> Names() const
    {
        std::vector<std::string> v;
        for (const Frame &f : frames)
            v.push_back(f.Text());
        return v;
    }
};

inline Frame ToFrame(const ga_frame_t &f)
{
    Frame c;
    c.has_file = f.file != nullptr;
    c.file.assign(f.file ? f.file : "", f.file_len);
    c.name.assign(f.name ? f.name : "", f.name_len);
    c.line = f.line;
    return c;
}

inline bool SameFrame(const Frame &c, const ga_frame_t &f)
{
    return c.has_file == (f.file != nullptr) && c.file.size() == f.file_len && c.name.size() == f.name_len &&
           c.line == f.line && (f.file_len == 0 || memcmp(c.file.data(), f.file, f.file_len) == 0) &&
           (f.name_len == 0 || memcmp(c.name.data(), f.name, f.name_len) == 0);
}

// Check x's stack against the contract; keys maps each key seen in this
// reader to its frame. Allocates only for a key not seen before, so that
// reading a large trace leaves the heap (and a forked child's RSS) as it was.
inline void CheckStack(const ga_event_t &x, std::map<uintptr_t, Frame> *keys)
{
    const ga_stack_t &st = x.stack;
    if (x.kind != GA_EV_ALLOC && x.kind != GA_EV_OOM) {
        EXPECT_EQ(st.kind, GA_STACK_NONE) << "event " << x.where << " of kind " << x.kind;
    }
    // A prologue block has a stack only where the record keeps its
    // allocation's: a snapshot's final block (its frames).
    if ((x.flags & GA_EVF_PROLOGUE) != 0 && st.kind != GA_STACK_NONE) {
        EXPECT_EQ(st.kind, GA_STACK_FRAMES) << "prologue event " << x.where;
    }
    if (st.kind == GA_STACK_NONE) {
        EXPECT_EQ(st.n, 0u) << "event " << x.where;
        return;
    }
    EXPECT_GT(st.n, 0u) << "event " << x.where;
    ASSERT_NE(st.frame, nullptr);
    for (size_t i = 0; i < st.n; i++) {
        ga_frame_t f;
        st.frame(st.data, i, &f);
        EXPECT_TRUE(f.name != nullptr || f.name_len == 0);
        EXPECT_TRUE(f.file != nullptr || f.file_len == 0);
        uintptr_t k = st.key ? st.key(st.data, i) : 0;
        if (k == 0)
            continue;
        auto it = keys->find(k);
        if (it == keys->end())
            keys->emplace(k, ToFrame(f));
        else
            EXPECT_TRUE(SameFrame(it->second, f))
                << "key " << k << " names both " << it->second.Text() << " and " << ToFrame(f).Text();
    }
}

// x's stack, copied out while it is valid (and checked).
inline Stack CopyStack(const ga_event_t &x, std::map<uintptr_t, Frame> *keys)
{
    CheckStack(x, keys);
    Stack out;
    out.kind = x.stack.kind;
    for (size_t i = 0; x.stack.frame != nullptr && i < x.stack.n; i++) {
        ga_frame_t f;
        x.stack.frame(x.stack.data, i, &f);
        out.frames.push_back(ToFrame(f));
        out.keys.push_back(x.stack.key ? x.stack.key(x.stack.data, i) : 0);
    }
    return out;
}

// Read every event of every unit; returns 0 or -1 (err holds the message).
struct Read {
    std::vector<ga_event_t> ev;
    std::vector<Stack> stacks;     // ev[i]'s stack, when asked for (keep_stacks)
    std::vector<std::string> text; // annotate texts
    std::vector<std::string> tags; // tag events' lists: "text" or "text offload text2"
    std::string err;
    int rc = 0;
    ga_format_t format = GA_FORMAT_AUTO;
    size_t units = 0;
    uint64_t device_memory = 0;
    ga_reader_notes_t notes = {};

    explicit Read(const std::string &path, ga_format_t fmt = GA_FORMAT_AUTO, bool keep_stacks = false)
    {
        char e[512] = "";
        ga_reader_t *r = nullptr;
        if (ga_reader_open(path.c_str(), fmt, &r, e, sizeof(e)) != 0) {
            EXPECT_EQ(r, nullptr);
            err = e;
            rc = -1;
            return;
        }
        format = ga_reader_format(r);
        units = ga_reader_units(r);
        device_memory = ga_reader_device_memory(r);
        for (size_t u = 0; u < units && rc == 0; u++) {
            if (ga_reader_begin(r, u, e, sizeof(e)) != 0) {
                err = e;
                rc = -1;
                break;
            }
            ga_event_t x;
            int k;
            std::map<uintptr_t, Frame> keys;
            while ((k = ga_reader_next(r, &x, e, sizeof(e))) == 1) {
                if (keep_stacks)
                    stacks.push_back(CopyStack(x, &keys));
                else
                    CheckStack(x, &keys);
                x.stack = ga_stack_t{};
                if (x.kind == GA_EV_ANNOTATE)
                    text.emplace_back(x.text, x.text_len);
                if (x.kind >= GA_EV_TAG_BEGIN)
                    tags.push_back(std::string(x.text, x.text_len) +
                                   (x.text2 ? " offload " + std::string(x.text2, x.text2_len) : ""));
                x.text = nullptr;
                x.text2 = nullptr;
                ev.push_back(x);
            }
            if (k < 0) {
                err = e;
                rc = -1;
                // The error is sticky.
                char e2[512];
                EXPECT_EQ(ga_reader_next(r, &x, e2, sizeof(e2)), -1);
                EXPECT_STREQ(e, e2);
            }
            ga_reader_notes(r, &notes);
        }
        ga_reader_close(r);
    }
};

inline void ExpectBad(const std::string &name, const std::string &content, const std::string &where,
                      const std::string &what, ga_format_t fmt = GA_FORMAT_AUTO)
{
    std::string p = Write(name, content);
    Read r(p, fmt);
    EXPECT_EQ(r.rc, -1) << name;
    EXPECT_NE(r.err.find(p + where), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

} // namespace

#endif // GA_TESTS_TOOLS_READERS_UTIL_H
