// snapshot_fields_test: the trace-entry fields PyTorch added after 2.5,
// through the public API: user_metadata (galloc_set_memory_metadata, as
// torch.cuda.memory._set_memory_metadata: the calling thread's string on
// every entry it records) and skip_actions (galloc_history_options_t, as
// _record_memory_history(skip_actions=[...])). Each snapshot is loaded by
// Debian's python3 pickle and its entries compared with what PyTorch's
// builder writes (docs/trace-format.md, "Trace-entry fields").
#include <gtest/gtest.h>

#include <string>
#include <thread>

extern "C" {
#include <galloc/galloc.h>
}
#include "tests/util/python.h"

namespace {

class SnapshotFields : public ::testing::Test {
  protected:
    void SetUp() override
    {
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:1GiB", &a, err, sizeof err), GALLOC_OK) << err;
    }
    void TearDown() override
    {
        EXPECT_EQ(galloc_set_memory_metadata(nullptr), GALLOC_OK); // the thread's, for the next test
        if (a != nullptr) {
            EXPECT_EQ(galloc_check(a), GALLOC_OK);
            galloc_allocator_destroy(a);
        }
    }
    galloc_status_t record(uint32_t skip, uint32_t struct_size = sizeof(galloc_history_options_t))
    {
        galloc_history_options_t opt = {};
        opt.struct_size = struct_size;
        opt.enabled = GALLOC_HISTORY_ALL;
        opt.context = GALLOC_CONTEXT_NONE;
        opt.stacks = GALLOC_STACKS_PYTHON;
        opt.skip_actions = skip;
        return galloc_record_memory_history(a, &opt);
    }
    // The entries as "action:size:user_metadata" lines, by python3 from the pickle.
    std::string entries(const char *name)
    {
        std::string path = test_tmp_path(name), out;
        EXPECT_EQ(galloc_snapshot_write(a, path.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
        int rc = test_run_python({"-c", R"(
import pickle, sys
s = pickle.load(open(sys.argv[1], 'rb'))
for e in s['device_traces'][0]:
    # PyTorch's builder writes these keys and no device or pool id
    keys = {'action', 'size', 'stream', 'compile_context', 'user_metadata', 'frames', 'time_us'}
    keys.add('device_free' if e['action'] == 'oom' else 'addr')
    assert set(e) == keys, sorted(e)
    assert e['compile_context'] == 'N/A' and type(e['user_metadata']) is str, e
    print('%s:%d:%s' % (e['action'], e['size'], e['user_metadata']))
)",
                                  path},
                                 &out);
        EXPECT_EQ(rc, 0) << out;
        return out;
    }
    galloc_allocator_t *a = nullptr;
};

TEST_F(SnapshotFields, MetadataIsTheRecordingThreadsUntilChanged)
{
    ASSERT_EQ(record(0), GALLOC_OK);
    void *p = nullptr, *q = nullptr, *r = nullptr;
    ASSERT_EQ(galloc_set_memory_metadata("step 1"), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &p), GALLOC_OK);                             // segment_alloc, alloc: "step 1"
    std::thread other([&] { EXPECT_EQ(galloc_malloc(a, 2000, 0, &q), GALLOC_OK); }); // its own: ""
    other.join();
    ASSERT_EQ(galloc_set_memory_metadata("step 2 {\"rank\": 0}"), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    ASSERT_EQ(galloc_set_memory_metadata(""), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 3000, 0, &r), GALLOC_OK);
    ASSERT_EQ(galloc_set_memory_metadata("step 3"), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, q), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, r), GALLOC_OK);
    // The write's own "snapshot" entry (size: the active bytes, none) is "step 3"'s too.
    EXPECT_EQ(entries("metadata.pickle"), "segment_alloc:2097152:step 1\n"
                                          "alloc:1000:step 1\n"
                                          "alloc:2000:\n"
                                          "free_requested:1000:step 2 {\"rank\": 0}\n"
                                          "free_completed:1000:step 2 {\"rank\": 0}\n"
                                          "alloc:3000:\n"
                                          "free_requested:2000:step 3\n"
                                          "free_completed:2000:step 3\n"
                                          "free_requested:3000:step 3\n"
                                          "free_completed:3000:step 3\n"
                                          "snapshot:0:step 3\n");
}

TEST_F(SnapshotFields, MetadataGetSetAndLimits)
{
    char buf[8];
    size_t needed = 99;
    EXPECT_EQ(galloc_get_memory_metadata(buf, sizeof buf, &needed), GALLOC_OK);
    EXPECT_STREQ(buf, "");
    EXPECT_EQ(needed, 0u);
    ASSERT_EQ(galloc_set_memory_metadata("a longer string"), GALLOC_OK);
    EXPECT_EQ(galloc_get_memory_metadata(buf, sizeof buf, &needed), GALLOC_OK);
    EXPECT_STREQ(buf, "a longe"); // truncated, NUL-terminated
    EXPECT_EQ(needed, 15u);
    buf[0] = '\0';
    EXPECT_EQ(galloc_get_memory_metadata(buf, sizeof buf, nullptr), GALLOC_OK); // needed is optional
    EXPECT_STREQ(buf, "a longe");
    EXPECT_EQ(galloc_get_memory_metadata(nullptr, 0, &needed), GALLOC_OK);
    EXPECT_EQ(galloc_get_memory_metadata(nullptr, 4, &needed), GALLOC_E_INVAL);
    std::string longest(GALLOC_MEMORY_METADATA_MAX, 'x');
    EXPECT_EQ(galloc_set_memory_metadata(longest.c_str()), GALLOC_OK);
    EXPECT_EQ(galloc_set_memory_metadata((longest + "y").c_str()), GALLOC_E_INVAL); // unchanged
    EXPECT_EQ(galloc_get_memory_metadata(nullptr, 0, &needed), GALLOC_OK);
    EXPECT_EQ(needed, (size_t)GALLOC_MEMORY_METADATA_MAX);
    std::thread([] {
        size_t n = 99;
        EXPECT_EQ(galloc_get_memory_metadata(nullptr, 0, &n), GALLOC_OK);
        EXPECT_EQ(n, 0u); // another thread's is its own
    }).join();
}

TEST_F(SnapshotFields, SkippedActionsAreNotRecorded)
{
    ASSERT_EQ(record(GALLOC_SKIP_FREE_REQUESTED | GALLOC_SKIP_SEGMENT_ALLOC), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    // A bit PyTorch has no name for (segment_map) is refused; recording goes on as it was.
    EXPECT_EQ(record(1u << 5), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_malloc(a, 2000, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    // A new call replaces the set; the entries kept so far stay.
    ASSERT_EQ(record(GALLOC_SKIP_ALLOC | GALLOC_SKIP_SNAPSHOT), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 3000, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    EXPECT_EQ(galloc_empty_cache(a), GALLOC_OK);
    EXPECT_EQ(entries("skip.pickle"), "alloc:1000:\n"
                                      "free_completed:1000:\n"
                                      "alloc:2000:\n"
                                      "free_completed:2000:\n"
                                      "free_requested:3000:\n"
                                      "free_completed:3000:\n"
                                      "segment_free:2097152:\n");
}

// A caller compiled before skip_actions existed passes a shorter struct: nothing is skipped.
TEST_F(SnapshotFields, AnOlderOptionsStructSkipsNothing)
{
    ASSERT_EQ(record(GALLOC_SKIP_ALL, offsetof(galloc_history_options_t, skip_actions)), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    EXPECT_EQ(entries("older.pickle"), "segment_alloc:2097152:\n"
                                       "alloc:1000:\n"
                                       "free_requested:1000:\n"
                                       "free_completed:1000:\n"
                                       "snapshot:0:\n");
}

} // namespace
