// trace_test: the recorder (trace.h): which options record what, with which
// stack; oom and annotation entries; what recording an event costs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

extern "C" {
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

// Stores v in an enum field as a C caller could, without C++ ever loading an
// out-of-range enum value (undefined in C++; clang's -fsanitize=enum stops it).
template <class E> void SetRaw(E *field, int v)
{
    static_assert(sizeof(E) == sizeof(int), "an enum field is an int");
    std::memcpy(field, &v, sizeof(v));
}

class Trace : public ::testing::Test {
  protected:
    void SetUp() override { ga_trace_init(&t_, 0); }
    void TearDown() override { ga_trace_destroy(&t_); }
    ga_trace_t t_;
};

TEST_F(Trace, ContextDecidesWhichEntriesKeepStacks)
{
    // PyTorch: malloc gathers at context >= STATE, free at ALL; record_trace
    // keeps the stack only at context >= ALLOC.
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_STATE, GALLOC_STACKS_PYTHON, 16);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    EXPECT_TRUE(ga_trace_wants_stack(&t_, false));
    EXPECT_FALSE(ga_trace_wants_stack(&t_, true));
    ga_trace_record(&t_, GA_TRACE_ALLOC, 0x1000, 512, 0, nullptr, 5);
    EXPECT_EQ(ga_trace_ring_at(&t_.events, 0)->stack_id, 0u);

    o.context = GALLOC_CONTEXT_ALLOC;
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK); // same max: entries kept
    ASSERT_EQ(ga_trace_ring_size(&t_.events), 1u);
    EXPECT_FALSE(ga_trace_wants_stack(&t_, true));
    int64_t pool[2] = {3, 4};
    ga_trace_record(&t_, GA_TRACE_ALLOC, 0x2000, 512, 9, pool, 5);
    const ga_trace_entry_t *e = ga_trace_ring_at(&t_.events, 1);
    EXPECT_EQ(e->stack_id, 5u);
    EXPECT_EQ(e->mempool_id[0], 3);
    EXPECT_EQ(e->mempool_id[1], 4);
    EXPECT_EQ(e->stream, 9u);
    EXPECT_EQ(e->action, GA_TRACE_ALLOC);

    o.context = GALLOC_CONTEXT_ALL;
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    EXPECT_TRUE(ga_trace_wants_stack(&t_, true));

    o.max_entries = 32; // a new size starts a new trace
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    EXPECT_EQ(ga_trace_ring_size(&t_.events), 0u);
}

TEST_F(Trace, StateRecordsNoTraceAndNoneStops)
{
    auto o = opts(GALLOC_HISTORY_STATE, GALLOC_CONTEXT_STATE, GALLOC_STACKS_PYTHON, 16);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    EXPECT_FALSE(ga_trace_recording(&t_));
    ga_trace_record(&t_, GA_TRACE_ALLOC, 0x1000, 512, 0, nullptr, 0);
    EXPECT_EQ(ga_trace_ring_size(&t_.events), 0u);
    EXPECT_EQ(ga_trace_annotate(&t_, "START", "x"), GALLOC_OK);
    EXPECT_EQ(ga_trace_ring_size(&t_.annotations), 0u);

    o.enabled = GALLOC_HISTORY_ALL;
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    ga_trace_record(&t_, GA_TRACE_ALLOC, 0x1000, 512, 0, nullptr, 0);
    ga_trace_record_oom(&t_, 1 << 30, 0, 12345, nullptr, 0);
    ASSERT_EQ(ga_trace_ring_size(&t_.events), 2u);
    EXPECT_EQ(ga_trace_ring_at(&t_.events, 1)->extra.device_free, 12345u);
    EXPECT_EQ(ga_trace_annotate(&t_, "START", "x"), GALLOC_OK);
    EXPECT_EQ(ga_trace_ring_size(&t_.annotations), 1u);

    ASSERT_EQ(ga_trace_configure(&t_, nullptr), GALLOC_OK); // stop: the trace is dropped
    EXPECT_EQ(t_.enabled, GALLOC_HISTORY_NONE);
    EXPECT_EQ(ga_trace_ring_size(&t_.events), 0u);
    EXPECT_EQ(ga_trace_capture(&t_, 0), 0u);
}

TEST_F(Trace, ConfigureRejectsBadOptions)
{
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    o.struct_size = 4;
    EXPECT_EQ(ga_trace_configure(&t_, &o), GALLOC_E_INVAL);
    o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    SetRaw(&o.enabled, 7);
    EXPECT_EQ(ga_trace_configure(&t_, &o), GALLOC_E_INVAL);
    o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    SetRaw(&o.context, 9);
    EXPECT_EQ(ga_trace_configure(&t_, &o), GALLOC_E_INVAL);
    o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_ALL, 16);
    SetRaw(&o.stacks, 2);
    EXPECT_EQ(ga_trace_configure(&t_, &o), GALLOC_E_INVAL);
    EXPECT_EQ(t_.enabled, GALLOC_HISTORY_NONE); // untouched
}

TEST_F(Trace, ClearDropsEntriesAndKeepsRecording)
{
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 0); // 0 = unbounded
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    EXPECT_EQ(t_.max_entries, SIZE_MAX);
    ga_trace_record(&t_, GA_TRACE_SEGMENT_ALLOC, 0x1000, 2 << 20, 0, nullptr, 0);
    ASSERT_EQ(ga_trace_annotate(&t_, "START", "step"), GALLOC_OK);
    ga_trace_clear(&t_);
    EXPECT_EQ(ga_trace_ring_size(&t_.events), 0u);
    EXPECT_EQ(ga_trace_ring_size(&t_.annotations), 0u);
    ga_trace_record(&t_, GA_TRACE_SEGMENT_FREE, 0x1000, 2 << 20, 0, nullptr, 0);
    EXPECT_EQ(ga_trace_ring_size(&t_.events), 1u);
    EXPECT_EQ(ga_trace_capture(&t_, 0), 0u); // context NONE: no stacks
}

TEST_F(Trace, TimeComesFromTheClock)
{
    auto o = opts(GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 4);
    ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    int64_t before = ga_trace_now_us();
    ga_trace_record(&t_, GA_TRACE_ALLOC, 1, 1, 0, nullptr, 0);
    int64_t after = ga_trace_now_us();
    EXPECT_GE(ga_trace_ring_at(&t_.events, 0)->time_us, before);
    EXPECT_LE(ga_trace_ring_at(&t_.events, 0)->time_us, after);
    EXPECT_GT(before, 1600000000000000); // microseconds since the epoch (after 2020)
    static int64_t fake = 42;
    ga_trace_set_clock(
        &t_, [](void *ctx) { return *static_cast<int64_t *>(ctx); }, &fake);
    ga_trace_record(&t_, GA_TRACE_ALLOC, 2, 1, 0, nullptr, 0);
    EXPECT_EQ(ga_trace_ring_at(&t_.events, 1)->time_us, 42);
}

} // namespace
