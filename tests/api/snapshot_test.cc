// snapshot_test: a scripted workload that produces every trace action (alloc,
// free_requested, free_completed, segment_alloc/free, segment_map/unmap, oom,
// snapshot) and every block state, written through the public API as pickle
// and as JSON, then loaded by Debian's python3 (pickle, json) and checked field
// by field against the allocator's own stats (snapshot_check.py).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

extern "C" {
#include <galloc/galloc.h>
}
#include "tests/util/python.h"

namespace {

constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;

size_t frames(void *, galloc_frame_t *out, size_t max)
{
    if (max < 1)
        return 0;
    out[0] = {"train.py", "forward", 42};
    return 1;
}

TEST(Snapshot, EveryActionRoundTripsThroughPythonPickleAndJson)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    const char *conf = "expandable_segments:True,sim_capacity:1GiB,sim_manual_events:True";
    ASSERT_EQ(galloc_allocator_create("sim", 0, conf, &a, err, sizeof err), GALLOC_OK) << err;
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a, &opt), GALLOC_OK);
    ASSERT_EQ(galloc_set_frames_callback(a, frames, nullptr), GALLOC_OK);
    ASSERT_EQ(galloc_record_annotation(a, "START", "step"), GALLOC_OK);

    void *big = nullptr, *small = nullptr, *priv = nullptr, *pending = nullptr, *huge = nullptr;
    ASSERT_EQ(galloc_malloc(a, 5 * MiB, 0, &big), GALLOC_OK); // segment_map + alloc
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &small), GALLOC_OK);  // small-pool page
    galloc_mempool_id_t pool;
    ASSERT_EQ(galloc_mempool_create(a, &pool), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a, pool, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 3 * MiB, 0, &priv), GALLOC_OK); // a private pool's plain segment
    ASSERT_EQ(galloc_mempool_end_allocate(a, pool), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, priv), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_release(a, pool), GALLOC_OK);
    ASSERT_EQ(galloc_record_stream(a, small, 7), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, small), GALLOC_OK); // free_requested; completes at the flush below
    // Too big: the flush waits for stream 7, unmaps free pages, frees the
    // released pool's segment, and the retry still fails.
    EXPECT_EQ(galloc_malloc(a, 2 * GiB, 0, &huge), GALLOC_E_OOM);
    size_t free_at_oom = 0, total = 0;
    ASSERT_EQ(galloc_memory_info(a, &free_at_oom, &total), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 4096, 0, &pending), GALLOC_OK);
    ASSERT_EQ(galloc_record_stream(a, pending, 7), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, pending), GALLOC_OK); // stays active_pending_free
    ASSERT_EQ(galloc_record_annotation(a, "END", "step"), GALLOC_OK);

    galloc_stats_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    char settings[1024];
    ASSERT_EQ(galloc_settings_string(a, settings, sizeof settings, nullptr), GALLOC_OK);
    // galloc's own string keeps the sim's options; the snapshot records PyTorch's keys only (checked below)
    EXPECT_NE(std::string(settings).find("sim_capacity:1GiB"), std::string::npos) << settings;

    std::string pkl = test_tmp_path("snap.pickle"), js = test_tmp_path("snap.json"), want = test_tmp_path("want.json");
    ASSERT_EQ(galloc_snapshot_write(a, pkl.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
    ASSERT_EQ(galloc_snapshot_write(a, js.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK);
    {
        const int ALL = GALLOC_STAT_ALL;
        std::ofstream o(want);
        o << "{\"reserved\": " << st.reserved_bytes[ALL].current
          << ", \"allocated\": " << st.allocated_bytes[ALL].current << ", \"active\": " << st.active_bytes[ALL].current
          << ", \"requested\": " << st.requested_bytes[ALL].current
          << ", \"segments\": 2, \"expandable_segments\": 2, \"private_segments\": 0"
          << ", \"states\": {\"active_allocated\": 1, \"active_pending_free\": 1, \"inactive\": 2}"
          << ", \"actions\": [\"alloc\", \"free_completed\", \"free_requested\", \"oom\", \"segment_alloc\", "
             "\"segment_free\", \"segment_map\", \"segment_unmap\", \"snapshot\"]"
          << ", \"oom_device_free\": " << free_at_oom << ", \"alloc_sizes\": [" << 5 * MiB << ", 1000, " << 3 * MiB
          << ", 4096]"
          << ", \"expandable\": true, \"max_split_size\": -1, \"conf\": \"expandable_segments:True\""
          << ", \"annotations\": [[\"START\", \"step\"], [\"END\", \"step\"]]}";
    }
    std::string out;
    EXPECT_EQ(test_run_python({"tests/api/snapshot_check.py", pkl, js, want}, &out), 0) << out;
    EXPECT_EQ(galloc_check(a), GALLOC_OK);

    // A bad path is an I/O error naming the path; the allocator stays usable.
    EXPECT_EQ(galloc_snapshot_write(a, "/nonexistent/dir/x.pickle", GALLOC_SNAPSHOT_PICKLE), GALLOC_E_IO);
    galloc_last_error(a, err, sizeof err);
    EXPECT_NE(std::string(err).find("/nonexistent/dir/x.pickle"), std::string::npos) << err;
    EXPECT_EQ(galloc_snapshot_write(a, nullptr, GALLOC_SNAPSHOT_PICKLE), GALLOC_E_INVAL);
    galloc_allocator_destroy(a);
}

// PyTorch's free_block keeps a block's requested_size and its snapshot writes
// it for inactive blocks; a merge keeps the freed block's (try_merge_blocks
// keeps dst's); a segment's fresh remainder has none. Three steps of one
// 20 MiB segment, exact figures.
TEST(Snapshot, InactiveBlocksKeepTheirRequestedSize)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:1GiB", &a, err, sizeof err), GALLOC_OK) << err;
    void *A = nullptr, *B = nullptr;
    ASSERT_EQ(galloc_malloc(a, 3000000, 0, &A), GALLOC_OK); // 3,000,320 bytes, then B's 5,000,192
    ASSERT_EQ(galloc_malloc(a, 5000000, 0, &B), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, A), GALLOC_OK);
    std::string one = test_tmp_path("requested_one.pickle"), two = test_tmp_path("requested_two.pickle");
    ASSERT_EQ(galloc_snapshot_write(a, one.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, B), GALLOC_OK); // merges with A's block and the tail: one block, B's request
    ASSERT_EQ(galloc_snapshot_write(a, two.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
    std::string out;
    int rc = test_run_python({"-c", R"(
import pickle, sys
def blocks(path):
    (seg,) = pickle.load(open(path, 'rb'))['segments']
    return seg['requested_size'], [(b['size'], b['requested_size'], b['state']) for b in seg['blocks']]
assert blocks(sys.argv[1]) == (5000000, [(3000320, 3000000, 'inactive'), (5000192, 5000000, 'active_allocated'),
                                         (20971520 - 3000320 - 5000192, 0, 'inactive')]), blocks(sys.argv[1])
assert blocks(sys.argv[2]) == (0, [(20971520, 5000000, 'inactive')]), blocks(sys.argv[2])
)",
                              one, two},
                             &out);
    EXPECT_EQ(rc, 0) << out;
}

// galloc_record_snapshot_entry: the "snapshot" entry taking a snapshot
// records, without writing one (a replay of a recording's _snapshot() call):
// size = the active bytes then, allocated and pending free.
TEST(Snapshot, ASnapshotEntryIsRecordedWithoutWriting)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_capacity:1GiB,sim_manual_events:True", &a, err, sizeof err),
              GALLOC_OK)
        << err;
    EXPECT_EQ(galloc_record_snapshot_entry(a), GALLOC_OK); // not recording: nothing
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a, &opt), GALLOC_OK);
    void *p = nullptr, *q = nullptr;
    ASSERT_EQ(galloc_malloc(a, 3000000, 0, &p), GALLOC_OK); // 3,000,320 bytes
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &q), GALLOC_OK);    // 1,024
    ASSERT_EQ(galloc_record_snapshot_entry(a), GALLOC_OK);
    ASSERT_EQ(galloc_record_stream(a, q, 7), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, q), GALLOC_OK); // pending on stream 7: still active
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    ASSERT_EQ(galloc_record_snapshot_entry(a), GALLOC_OK);
    std::string path = test_tmp_path("marks.pickle");
    ASSERT_EQ(galloc_snapshot_write(a, path.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK);
    ASSERT_EQ(galloc_stream_synchronize(a, 7), GALLOC_OK);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
    EXPECT_EQ(galloc_record_snapshot_entry(nullptr), GALLOC_E_INVAL);
    std::string out;
    int rc = test_run_python({"-c", R"(
import pickle, sys
trace = pickle.load(open(sys.argv[1], 'rb'))['device_traces'][0]
got = [(e['action'], e['addr'], e['size']) for e in trace if e['action'] == 'snapshot']
# two recorded, then the write's own (as PyTorch's _snapshot() records one)
assert got == [('snapshot', 0, 3000320 + 1024), ('snapshot', 0, 1024), ('snapshot', 0, 1024)], got
assert [e['action'] for e in trace].index('snapshot') == 4, [e['action'] for e in trace]
)",
                              path},
                             &out);
    EXPECT_EQ(rc, 0) << out;
}

TEST(Snapshot, MemorySummaryPrintsPyTorchsTable)
{
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &a, nullptr, 0), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 1, 0, &p), GALLOC_OK);
    char buf[8192];
    size_t needed = 0;
    ASSERT_EQ(galloc_memory_summary(a, false, buf, sizeof buf, &needed), GALLOC_OK);
    std::string s(buf);
    EXPECT_EQ(needed, s.size());
    EXPECT_EQ(s.rfind("|===========================================================================|\n"
                      "|                  PyTorch CUDA memory summary, device ID 0                 |\n",
                      0),
              0u)
        << s;
    EXPECT_NE(s.find("| Allocated memory      |    512 B   |    512 B   |    512 B   |      0 B   |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| GPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |"),
              std::string::npos)
        << s;
    galloc_free(a, p);
    galloc_allocator_destroy(a);
}

TEST(Snapshot, SettingsStringParsesBack)
{
    galloc_allocator_t *a = nullptr, *b = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,>:4]", &a,
                                      nullptr, 0),
              GALLOC_OK);
    char s1[1024], s2[1024];
    ASSERT_EQ(galloc_settings_string(a, s1, sizeof s1, nullptr), GALLOC_OK);
    ASSERT_EQ(galloc_allocator_create("sim", 0, s1, &b, nullptr, 0), GALLOC_OK) << s1;
    ASSERT_EQ(galloc_settings_string(b, s2, sizeof s2, nullptr), GALLOC_OK);
    EXPECT_STREQ(s1, s2);
    EXPECT_NE(std::string(s1).find("max_split_size_mb:512"), std::string::npos) << s1;
    galloc_settings_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_settings_get(b, &st), GALLOC_OK);
    EXPECT_EQ(st.max_split_size, 512ull << 20);
    EXPECT_EQ(st.roundup_power2_divisions[0], 1u);  // the first entry also fills the intervals below it
    EXPECT_EQ(st.roundup_power2_divisions[8], 1u);  // 256 MiB
    EXPECT_EQ(st.roundup_power2_divisions[9], 2u);  // 512 MiB
    EXPECT_EQ(st.roundup_power2_divisions[10], 4u); // '>' fills after the last entry
    EXPECT_EQ(st.roundup_power2_divisions[15], 4u);
    EXPECT_FALSE(st.expandable_segments);
    EXPECT_STREQ(st.device_backend, "sim");
    EXPECT_STREQ(st.backend_options, ""); // sim's defaults: nothing passed, an 80 GiB device
    st.struct_size = 0;
    EXPECT_EQ(galloc_settings_get(b, &st), GALLOC_E_INVAL);
    galloc_allocator_destroy(a);
    galloc_allocator_destroy(b);
}

} // namespace
