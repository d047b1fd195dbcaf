// readers_fields_test.cc: the snapshot reader on trace entries with the
// fields PyTorch added after 2.5 (data/snapshot_fields.pickle, written by
// data/make_snapshot_fields.py): user_metadata becomes an annotation where
// it changes, compile_context is read and not replayed, an entry's device
// must be its list's index and its pool_id goes with its event, and a trace
// recorded with skip_actions=["free_requested"] replays its free_completed
// entries as the frees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include "tools/readers/trace_reader.h"
}

#include "tests/tools/readers_util.h"

namespace {

const char *kFields = "tests/tools/data/snapshot_fields.pickle";
constexpr uint64_t X = 0x7F5A00000000ull, Y = 0x7F6A00000000ull;

TEST(TorchFields, MetadataChangesBecomeAnnotations)
{
    Read r(kFields);
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.units, 2u);
    std::vector<std::string> want_text = {"step 1", "step 2", "step 2", "rank 1"};
    EXPECT_EQ(r.text, want_text);
    // device 0: annotate, alloc, alloc, annotate, free, free, annotate, alloc;
    // device 1: annotate, alloc, free (free_requested + free_completed).
    std::vector<ga_event_kind_t> kinds;
    for (const ga_event_t &e : r.ev)
        kinds.push_back(e.kind);
    std::vector<ga_event_kind_t> want = {GA_EV_ANNOTATE, GA_EV_ALLOC, GA_EV_ALLOC,    GA_EV_ANNOTATE,
                                         GA_EV_FREE,     GA_EV_FREE,  GA_EV_ANNOTATE, GA_EV_ALLOC,
                                         GA_EV_ANNOTATE, GA_EV_ALLOC, GA_EV_FREE};
    ASSERT_EQ(kinds, want);
    // An annotation stands at its entry's place, just before the entry's event.
    EXPECT_EQ(r.ev[0].where, 1u);
    EXPECT_EQ(r.ev[1].where, 1u);
    EXPECT_EQ(r.ev[3].where, 3u);
    EXPECT_EQ(r.ev[6].where, 5u);
    EXPECT_EQ(r.ev[1].id, X);
    EXPECT_EQ(r.ev[4].id, X); // free_completed alone is the free (free_requested was skipped)
    EXPECT_EQ(r.ev[4].stream, GA_STREAM_NONE);
    EXPECT_EQ(r.ev[10].id, Y);
    EXPECT_EQ(r.notes.prologue, 0u); // every freed block was allocated in the trace
    // pool_id goes with the event; (0, 0) is the default pools'.
    EXPECT_EQ(r.ev[1].pool_id[0], 0);
    EXPECT_EQ(r.ev[2].pool_id[0], 1);
    EXPECT_EQ(r.ev[2].pool_id[1], 2);
}

// An entry in device 1's list that names device 0: refused, the entry named.
TEST(TorchFields, AnEntrysDeviceMustBeItsListsIndex)
{
    Read r("tests/tools/data/snapshot_bad_device.pickle");
    EXPECT_EQ(r.rc, -1);
    EXPECT_NE(r.err.find("device_traces[1][1]: 'device' is not the index of its list"), std::string::npos) << r.err;
}

} // namespace
