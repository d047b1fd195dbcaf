// snapshot_test: build a scripted snapshot (segments out of address order,
// blocks in every state, every trace action, frames shared between entries,
// an address above 2^63, unicode and characters to escape, an empty device
// list), write it as pickle and JSON, and have python3's own pickle and json
// modules check every field (check_snapshot.py, which also checks that only
// the opcodes MemoryViz.js reads are used). Also: a trace that wrapped, and
// the file errors.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>

#include "tests/trace/test_util.h"

extern "C" {
#include "trace/snapshot.h"
#include "trace/trace.h"
}

namespace {

const int64_t T0 = 1700000000000000; // check_snapshot.py's T0
const uint64_t MiB = 1 << 20, KiB = 1 << 10;

int64_t test_clock(void *ctx)
{
    return T0 + (*static_cast<int64_t *>(ctx))++;
}

std::string checker()
{
    return "tests/trace/check_snapshot.py"; // runfiles-relative: Bazel runs tests there
}

void write_both(ga_snapshot_t *s, const std::string &name)
{
    char err[256] = "";
    ASSERT_EQ(
        ga_snapshot_write_path(s, trace_test_tmp(name + ".pickle").c_str(), GALLOC_SNAPSHOT_PICKLE, err, sizeof(err)),
        GALLOC_OK)
        << err;
    ASSERT_EQ(ga_snapshot_write_path(s, trace_test_tmp(name + ".json").c_str(), GALLOC_SNAPSHOT_JSON, err, sizeof(err)),
              GALLOC_OK)
        << err;
}

void run_checker(const std::string &mode, const std::string &name)
{
    std::string out;
    int rc =
        trace_test_python({checker(), mode, trace_test_tmp(name + ".pickle"), trace_test_tmp(name + ".json")}, &out);
    EXPECT_EQ(rc, 0) << out;
    printf("%s", out.c_str());
}

class Snapshot : public ::testing::Test {
  protected:
    void SetUp() override
    {
        ga_trace_init(&t_, 1);
        ga_trace_set_clock(&t_, test_clock, &tick_);
    }
    void TearDown() override { ga_trace_destroy(&t_); }

    void configure(galloc_stacks_t stacks, size_t max_entries)
    {
        galloc_history_options_t o = {};
        o.struct_size = sizeof(o);
        o.enabled = GALLOC_HISTORY_ALL;
        o.context = GALLOC_CONTEXT_ALL;
        o.stacks = stacks;
        o.max_entries = max_entries;
        ASSERT_EQ(ga_trace_configure(&t_, &o), GALLOC_OK);
    }

    ga_trace_t t_;
    int64_t tick_ = 0;
};

TEST_F(Snapshot, ScriptedModelReadsBackInPython)
{
    configure(GALLOC_STACKS_ALL, 100);
    ga_trace_set_frames_fn(&t_, trace_test_user_frames, nullptr);
    uint32_t native = trace_test_native_site(&t_); // native frames, then the framework's
    configure(GALLOC_STACKS_PYTHON, 100);          // same max: recording continues
    uint32_t user = ga_trace_capture(&t_, 0);      // the framework's frames only
    ASSERT_NE(native, 0u);
    ASSERT_NE(user, 0u);

    const uint64_t base = 0x7f0000200000ull;
    ga_trace_record(&t_, GA_TRACE_SEGMENT_ALLOC, base, 2 * MiB, 0, nullptr, user);
    ga_trace_record(&t_, GA_TRACE_ALLOC, base, MiB, 0, nullptr, user);
    ga_trace_record(&t_, GA_TRACE_FREE_REQUESTED, base, MiB, 7, nullptr, user);
    ga_trace_record(&t_, GA_TRACE_FREE_COMPLETED, base, MiB, 7, nullptr, 0);
    ga_trace_record(&t_, GA_TRACE_SEGMENT_MAP, base + 2 * MiB, 2 * MiB, 0, nullptr, 0);
    ga_trace_record(&t_, GA_TRACE_SEGMENT_UNMAP, base + 2 * MiB, 2 * MiB, 0, nullptr, 0);
    ga_trace_record(&t_, GA_TRACE_SEGMENT_FREE, base, 2 * MiB, 0, nullptr, 0);
    ga_trace_record_oom(&t_, 3ull << 30, 0, 12345678901ull, nullptr, user);

    ga_snapshot_t s;
    ga_snapshot_init(&s, &t_, 1);
    // Added out of address order: written sorted.
    ga_snapshot_segment_info_t large = {};
    large.device = 1;
    large.address = base;
    large.is_large = true;
    large.stack_id = native;
    ASSERT_EQ(ga_snapshot_segment(&s, &large), GALLOC_OK);
    ASSERT_EQ(ga_snapshot_block(&s, MiB, 1000000, GA_SNAPSHOT_ACTIVE_ALLOCATED, user), GALLOC_OK);
    ASSERT_EQ(ga_snapshot_block(&s, 512 * KiB, 0, GA_SNAPSHOT_INACTIVE, 0), GALLOC_OK);
    ASSERT_EQ(ga_snapshot_block(&s, 512 * KiB, 500000, GA_SNAPSHOT_ACTIVE_PENDING_FREE, user), GALLOC_OK);
    ga_snapshot_segment_info_t high = {};
    high.device = 1;
    high.address = 0xFFFF000000000000ull;
    high.stream = 1ull << 40;
    ASSERT_EQ(ga_snapshot_segment(&s, &high), GALLOC_OK);
    ASSERT_EQ(ga_snapshot_block(&s, 512, 100, GA_SNAPSHOT_INACTIVE, 0), GALLOC_OK);
    ga_snapshot_segment_info_t small = {};
    small.device = 1;
    small.address = 0x7f0000000000ull;
    small.stream = 0x1234;
    small.is_expandable = true;
    small.pool_id[0] = 1;
    small.pool_id[1] = 2;
    ASSERT_EQ(ga_snapshot_segment(&s, &small), GALLOC_OK);
    ASSERT_EQ(ga_snapshot_block(&s, 2 * MiB, 2 * MiB - 3, GA_SNAPSHOT_ACTIVE_ALLOCATED, 0), GALLOC_OK);
    EXPECT_EQ(ga_snapshot_block(&s, 1, 1, (ga_snapshot_block_state_t)5, 0), GALLOC_E_INVAL);

    ga_snapshot_settings_t st = {};
    st.alloc_conf = "max_split_size_mb:512,roundup_power2_divisions:4";
    st.max_split_size = 512 * MiB;
    st.garbage_collection_threshold = 0.8;
    st.pinned_num_register_threads = 1;
    st.pinned_use_cuda_host_register = true;
    st.roundup_count = 16;
    st.roundup_power2_divisions[0] = st.roundup_power2_divisions[1] = st.roundup_power2_divisions[2] = 4;
    ASSERT_EQ(ga_snapshot_settings(&s, &st), GALLOC_OK);

    // As the pool does: a "snapshot" entry with the active bytes, then write.
    EXPECT_EQ(ga_snapshot_total_active(&s), 3 * MiB + 512 * KiB);
    ga_trace_record(&t_, GA_TRACE_SNAPSHOT, 0, ga_snapshot_total_active(&s), 0, nullptr, 0);
    ga_trace_record(&t_, GA_TRACE_ALLOC, 0xFFFF000000000000ull, 512, 1ull << 40, nullptr, 0);
    tick_ = 100;
    ASSERT_EQ(ga_trace_annotate(&t_, "START", "forward \xe2\x9c\x93"), GALLOC_OK);
    ASSERT_EQ(ga_trace_annotate(&t_, "END", "forward \xe2\x9c\x93"), GALLOC_OK);

    write_both(&s, "scripted");
    run_checker("scripted", "scripted");
    ga_snapshot_destroy(&s);
}

TEST_F(Snapshot, WrappedTraceKeepsTheNewestOldestFirst)
{
    configure(GALLOC_STACKS_PYTHON, 3000);
    for (int n = 0; n < 10000; n++)
        ga_trace_record(&t_, n % 2 == 0 ? GA_TRACE_ALLOC : GA_TRACE_FREE_REQUESTED, 0x10000 + (n / 2) * 512, 512, 0,
                        nullptr, 0);
    t_.device = 0;
    ga_snapshot_t s;
    ga_snapshot_init(&s, &t_, 0);
    write_both(&s, "wrapped");
    run_checker("wrapped", "wrapped");
    ga_snapshot_destroy(&s);
}

TEST_F(Snapshot, WithoutRecorderWritesEmptyTraces)
{
    ga_snapshot_t s;
    ga_snapshot_init(&s, nullptr, 0);
    ga_snapshot_segment_info_t seg = {};
    seg.address = 4096;
    ASSERT_EQ(ga_snapshot_segment(&s, &seg), GALLOC_OK);
    ASSERT_EQ(ga_snapshot_block(&s, 4096, 4000, GA_SNAPSHOT_ACTIVE_ALLOCATED, 7), GALLOC_OK);
    std::string path = trace_test_tmp("bare.json");
    ASSERT_EQ(ga_snapshot_write_path(&s, path.c_str(), GALLOC_SNAPSHOT_JSON, nullptr, 0), GALLOC_OK);
    std::string out;
    std::string code = "import json, sys\nv = json.load(open(sys.argv[1]))\nassert v == {'segments': [{"
                       "'device': 0, 'address': 4096, 'total_size': 4096, 'allocated_size': 4096, 'active_size': "
                       "4096, 'requested_size': 4000, 'stream': 0, 'segment_type': 'small', 'segment_pool_id': "
                       "[0, 0], 'is_expandable': False, 'frames': [], 'blocks': [{'address': 4096, 'size': 4096, "
                       "'requested_size': 4000, 'state': 'active_allocated', 'frames': []}]}], "
                       "'device_traces': [[]], 'allocator_settings': {}, 'external_annotations': []}, v\n";
    EXPECT_EQ(trace_test_python({"-c", code, path}, &out), 0) << out;
    ga_snapshot_destroy(&s);
}

TEST_F(Snapshot, FileErrors)
{
    ga_snapshot_t s;
    ga_snapshot_init(&s, nullptr, 0);
    EXPECT_EQ(ga_snapshot_block(&s, 1, 1, GA_SNAPSHOT_INACTIVE, 0), GALLOC_E_INVAL); // no segment yet
    char err[256] = "";
    for (galloc_snapshot_format_t fmt : {GALLOC_SNAPSHOT_PICKLE, GALLOC_SNAPSHOT_JSON}) {
        EXPECT_EQ(ga_snapshot_write_path(&s, "/dev/full", fmt, err, sizeof(err)), GALLOC_E_IO);
        EXPECT_NE(std::string(err).find("/dev/full"), std::string::npos) << err;
        EXPECT_NE(std::string(err).find("No space left on device"), std::string::npos) << err;
    }
    struct stat st;
    EXPECT_EQ(stat("/dev/full", &st), 0); // a device is never removed after a failure
    std::string missing = trace_test_tmp("no/such/dir/snap.pickle");
    EXPECT_EQ(ga_snapshot_write_path(&s, missing.c_str(), GALLOC_SNAPSHOT_PICKLE, err, sizeof(err)), GALLOC_E_IO);
    EXPECT_NE(std::string(err).find("No such file or directory"), std::string::npos) << err;
    EXPECT_EQ(ga_snapshot_write_path(&s, trace_test_tmp("x").c_str(), (galloc_snapshot_format_t)9, err, sizeof(err)),
              GALLOC_E_INVAL);
    EXPECT_EQ(ga_snapshot_write(&s, nullptr, GALLOC_SNAPSHOT_PICKLE), GALLOC_E_INVAL);
    ga_snapshot_settings_t bad = {};
    bad.roundup_count = GA_SNAPSHOT_ROUNDUP_MAX + 1;
    EXPECT_EQ(ga_snapshot_settings(&s, &bad), GALLOC_E_INVAL);
    ga_snapshot_destroy(&s);
}

} // namespace
