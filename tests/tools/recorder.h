// recorder.h: snapshots recorded by galloc itself for the tools' tests, with
// a trace source that gives every call the stack and time the test chooses,
// so a replay's owners (tools/engine/owners.h) have exact figures. The same
// recorder as owners_test.cc's (which keeps its own copy until it moves here).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/tools/tmpfiles.h"

extern "C" {
#include <galloc/galloc.h>
}

namespace recorder {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr int64_t T0 = 1700000000000000; // the recording's clock: token t happens at T0 + 1000 t

using Stack = std::vector<galloc_frame_t>;

// A recording allocator whose every call has a token: its stack and time.
struct Recorder {
    galloc_allocator_t *a = nullptr;
    std::vector<Stack> stacks{Stack{}}; // token 0: none
    uint32_t cur = 0;

    explicit Recorder(const std::string &conf, size_t max_entries = 0)
    {
        char err[GALLOC_ERROR_MAX] = "";
        EXPECT_EQ(galloc_allocator_create("sim", 0, conf.c_str(), &a, err, sizeof err), GALLOC_OK) << err;
        galloc_trace_source_t src = {};
        src.struct_size = sizeof src;
        src.ctx = this;
        src.token = [](void *c) { return static_cast<Recorder *>(c)->cur; };
        src.time_us = [](void *, uint32_t t, const char *) { return T0 + 1000 * static_cast<int64_t>(t); };
        src.frames = [](void *c, uint32_t t, const char *, const galloc_frame_t **out) -> size_t {
            auto *r = static_cast<Recorder *>(c);
            *out = r->stacks[t].data();
            return r->stacks[t].size();
        };
        EXPECT_EQ(galloc_set_trace_source(a, &src), GALLOC_OK);
        galloc_history_options_t h = {sizeof h, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON,
                                      max_entries};
        EXPECT_EQ(galloc_record_memory_history(a, &h), GALLOC_OK);
    }
    ~Recorder() { galloc_allocator_destroy(a); }
    Recorder(const Recorder &) = delete;
    Recorder &operator=(const Recorder &) = delete;
    void Next(const Stack &s)
    {
        stacks.push_back(s);
        cur = static_cast<uint32_t>(stacks.size() - 1);
    }
    void *Alloc(uint64_t size, const Stack &s, galloc_status_t want = GALLOC_OK)
    {
        Next(s);
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a, size, 0, &p), want);
        return p;
    }
    void Free(void *p)
    {
        Next(Stack{{"train.py", "step", 99}});
        EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    }
    std::string Write(const std::string &name)
    {
        std::string p = TmpPath(name);
        EXPECT_EQ(galloc_snapshot_write(a, p.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
        return p;
    }
};

} // namespace recorder
