// user_allocator_test: a caller's own malloc/free wrapped by
// galloc_allocator_create_user (galloc_user.h): the stats galloc keeps around
// it (exact values), the hooks it forwards, what it refuses, the history and
// a snapshot loaded back by Debian's python3 (user_snapshot_check.py).
// Threads: device_concurrency_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}
#include "tests/util/python.h"

namespace {

constexpr int ALL = GALLOC_STAT_ALL, SMALL = GALLOC_STAT_SMALL_POOL, LARGE = GALLOC_STAT_LARGE_POOL;
constexpr size_t MiB = size_t(1) << 20;

// The caller's allocator: host memory, with a record of every hook call so
// the test can see exactly what galloc forwarded.
struct Host {
    std::map<void *, size_t> live;  // what the host allocator has handed out
    size_t limit = size_t(1) << 30; // larger requests fail (an OOM)
    void *repeat = nullptr;         // when set, malloc_fn returns it (a broken allocator)
    int mallocs = 0, frees = 0, record_streams = 0, empty_caches = 0;
    std::vector<size_t> freed_sizes;            // sizes free_fn was given
    std::vector<galloc_stream_t> freed_streams; // streams free_fn was given
    galloc_stream_t last_recorded = 0;          // record_stream_fn's stream
    int last_device = -1;                       // device passed to the hooks
};

void *host_malloc(void *ctx, size_t size, int device, galloc_stream_t)
{
    Host *h = static_cast<Host *>(ctx);
    h->mallocs++;
    h->last_device = device;
    if (h->repeat != nullptr)
        return h->repeat;
    if (size > h->limit)
        return nullptr;
    void *p = std::malloc(size);
    h->live[p] = size;
    return p;
}

void host_free(void *ctx, void *ptr, size_t size, int device, galloc_stream_t stream)
{
    Host *h = static_cast<Host *>(ctx);
    h->frees++;
    h->last_device = device;
    h->freed_sizes.push_back(size);
    h->freed_streams.push_back(stream);
    EXPECT_EQ(h->live.count(ptr), 1u) << "free_fn got a pointer the host never gave out";
    EXPECT_EQ(h->live[ptr], size) << "free_fn must get the size of the allocation";
    h->live.erase(ptr);
    std::free(ptr);
}

void host_record_stream(void *ctx, void *, galloc_stream_t stream)
{
    Host *h = static_cast<Host *>(ctx);
    h->record_streams++;
    h->last_recorded = stream;
}

void host_empty_cache(void *ctx, int device)
{
    Host *h = static_cast<Host *>(ctx);
    h->empty_caches++;
    h->last_device = device;
}

galloc_user_allocator_t Table(Host *h)
{
    galloc_user_allocator_t u = {};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.name = "host";
    u.ctx = h;
    u.malloc_fn = host_malloc;
    u.free_fn = host_free;
    u.record_stream_fn = host_record_stream;
    u.empty_cache_fn = host_empty_cache;
    return u;
}

std::string LastError(galloc_allocator_t *a)
{
    char msg[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, msg, sizeof msg);
    return msg;
}

class User : public ::testing::Test {
  protected:
    void Make(int device = 0)
    {
        galloc_user_allocator_t u = Table(&host_);
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create_user(&u, device, &a_, err, sizeof err), GALLOC_OK) << err;
    }
    void TearDown() override
    {
        if (a_ != nullptr) {
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
            galloc_allocator_destroy(a_);
        }
        EXPECT_TRUE(host_.live.empty()) << "destroy must hand every live pointer back";
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t s;
        s.struct_size = sizeof s;
        EXPECT_EQ(galloc_memory_stats(a_, &s), GALLOC_OK);
        return s;
    }
    Host host_;
    galloc_allocator_t *a_ = nullptr;
};

TEST_F(User, EachAllocationCountsAsItsOwnSegment)
{
    Make(2);
    EXPECT_STREQ(galloc_allocator_backend(a_), "user");
    void *small = nullptr, *large = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 100, 5, &small), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a_, 3 * MiB, 6, &large), GALLOC_OK);
    EXPECT_EQ(host_.mallocs, 2);
    EXPECT_EQ(host_.last_device, 2);
    galloc_stats_t s = Stats();
    // The size asked for, unrounded: galloc does not know the host's rounding.
    EXPECT_EQ(s.allocated_bytes[ALL].current, int64_t(100 + 3 * MiB));
    EXPECT_EQ(s.allocated_bytes[SMALL].current, 100);
    EXPECT_EQ(s.allocated_bytes[LARGE].current, int64_t(3 * MiB));
    EXPECT_EQ(s.reserved_bytes[ALL].current, s.allocated_bytes[ALL].current);
    EXPECT_EQ(s.requested_bytes[ALL].current, s.allocated_bytes[ALL].current);
    EXPECT_EQ(s.active_bytes[ALL].current, s.allocated_bytes[ALL].current);
    EXPECT_EQ(s.segment[SMALL].current, 1);
    EXPECT_EQ(s.segment[LARGE].current, 1);
    EXPECT_EQ(s.allocation[ALL].current, 2);
    EXPECT_EQ(s.active[ALL].current, 2);
    EXPECT_EQ(s.num_device_alloc, 2);
    EXPECT_EQ(s.inactive_split_bytes[ALL].current, 0);
    EXPECT_EQ(s.max_split_size, -1);

    ASSERT_EQ(galloc_free(a_, large), GALLOC_OK);
    ASSERT_EQ(host_.freed_sizes.size(), 1u);
    EXPECT_EQ(host_.freed_sizes[0], 3 * MiB);
    EXPECT_EQ(host_.freed_streams[0], galloc_stream_t(6)); // the allocation's stream
    s = Stats();
    EXPECT_EQ(s.allocated_bytes[ALL].current, 100);
    EXPECT_EQ(s.reserved_bytes[ALL].current, 100); // nothing cached: reserved follows allocated
    EXPECT_EQ(s.reserved_bytes[ALL].peak, int64_t(100 + 3 * MiB));
    EXPECT_EQ(s.segment[LARGE].current, 0);
    EXPECT_EQ(s.segment[LARGE].freed, 1);
    EXPECT_EQ(s.num_device_free, 1);

    ASSERT_EQ(galloc_stats_reset_peak(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[ALL].peak, 100);
    ASSERT_EQ(galloc_stats_reset_accumulated(a_), GALLOC_OK);
    s = Stats();
    EXPECT_EQ(s.num_device_alloc, 0);
    EXPECT_EQ(s.allocation[ALL].allocated, 0);
    EXPECT_EQ(s.allocation[ALL].current, 1);
    ASSERT_EQ(galloc_free(a_, small), GALLOC_OK);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, 0);
}

TEST_F(User, NullFromTheHostIsAnOomThatChangesNothingElse)
{
    Make();
    host_.limit = 4096;
    void *keep = nullptr, *p = reinterpret_cast<void *>(1);
    ASSERT_EQ(galloc_malloc(a_, 64, 0, &keep), GALLOC_OK);
    galloc_stats_t before = Stats();
    EXPECT_EQ(galloc_malloc(a_, 8192, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(LastError(a_), "user allocator 'host' could not allocate 8192 bytes on device 0");
    galloc_stats_t s = Stats();
    EXPECT_EQ(s.num_ooms, 1);
    s.num_ooms = before.num_ooms;
    EXPECT_EQ(std::memcmp(&s, &before, sizeof s), 0) << "only num_ooms may change";
    // Size 0: NULL and OK, as PyTorch; the host is not asked.
    int asked = host_.mallocs;
    EXPECT_EQ(galloc_malloc(a_, 0, 0, &p), GALLOC_OK);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(host_.mallocs, asked);
    ASSERT_EQ(galloc_free(a_, keep), GALLOC_OK);
}

TEST_F(User, HooksAreForwardedAndDeviceCallsRefused)
{
    Make(1);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 1000, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_record_stream(a_, p, 9), GALLOC_OK);
    EXPECT_EQ(host_.record_streams, 1);
    EXPECT_EQ(host_.last_recorded, galloc_stream_t(9));
    int local = 0;
    EXPECT_EQ(galloc_record_stream(a_, &local, 9), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(host_.record_streams, 1);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(host_.empty_caches, 1);
    EXPECT_EQ(host_.last_device, 1);

    size_t f = 0, t = 0;
    EXPECT_EQ(galloc_memory_info(a_, &f, &t), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_stream_synchronize(a_, 0), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_set_memory_fraction(a_, 1.5), GALLOC_E_INVAL);
    EXPECT_NE(LastError(a_).find("1.5"), std::string::npos) << LastError(a_);
    galloc_fragmentation_t frag;
    frag.struct_size = sizeof frag;
    EXPECT_EQ(galloc_fragmentation(a_, &frag), GALLOC_E_UNSUPPORTED);
    galloc_mempool_id_t id;
    EXPECT_EQ(galloc_mempool_create(a_, &id), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_mempool_set_flags(a_, galloc_mempool_id_t{0, 1}, GALLOC_MEMPOOL_NO_SPLIT), GALLOC_E_UNSUPPORTED);
    // No pool, so no tags to sleep: every sleep call says so.
    galloc_sleep_stats_t ss;
    int asleep = -1;
    EXPECT_EQ(galloc_tag_begin(a_, "w"), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_tag_end(a_, "w"), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_mempool_set_tag(a_, galloc_mempool_id_t{0, 1}, "w"), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_sleep(a_, nullptr, nullptr), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_wake(a_, nullptr), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_sleep_prepare(a_, nullptr, "w"), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_sleep_stats(a_, &ss), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_tag_asleep(a_, "w", &asleep), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(asleep, -1);
    // The caller's memory: galloc cannot make it reachable from a peer.
    EXPECT_EQ(galloc_enable_peer_access(a_, 0), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(LastError(a_).find("has no peer access"), std::string::npos) << LastError(a_);

    // Foreign and double frees are refused and reach neither the host nor the stats.
    EXPECT_EQ(galloc_free(a_, &local), GALLOC_E_NOT_OWNED);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(host_.frees, 1);
    EXPECT_EQ(Stats().num_device_free, 1);
    EXPECT_EQ(galloc_free(a_, nullptr), GALLOC_OK);
}

TEST_F(User, AnOlderTableLeavesTheLaterHooksUnset)
{
    // A caller compiled when the table ended at free_fn: the members after it
    // are garbage in its memory and must never be called.
    galloc_user_allocator_t u = Table(&host_);
    u.struct_size = offsetof(galloc_user_allocator_t, record_stream_fn);
    u.record_stream_fn = reinterpret_cast<void (*)(void *, void *, galloc_stream_t)>(0x1);
    u.empty_cache_fn = reinterpret_cast<void (*)(void *, int)>(0x1);
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a_, nullptr, 0), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 10, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_record_stream(a_, p, 3), GALLOC_OK);
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(host_.record_streams, 0);
    EXPECT_EQ(host_.empty_caches, 0);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// PyTorch's CUDAPluggableAllocator::attachOomRejectionObserver raises
// (TORCH_CHECK_NOT_IMPLEMENTED): a caller's allocator never refuses ahead of
// its device either, so galloc has no observer to attach.
TEST_F(User, NoOomRejectionObserver)
{
    Make();
    auto fn = [](void *, int, size_t, size_t, size_t) {};
    EXPECT_EQ(galloc_set_oom_rejection_observer(a_, fn, nullptr), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(LastError(a_).find("no OOM-rejection observer"), std::string::npos) << LastError(a_);
    EXPECT_EQ(galloc_set_expandable_reserve_class(a_, 1, "capture"), GALLOC_E_UNSUPPORTED);
}

TEST_F(User, BadTablesAreRefused)
{
    galloc_allocator_t *a = reinterpret_cast<galloc_allocator_t *>(1);
    char err[GALLOC_ERROR_MAX];
    galloc_user_allocator_t u = Table(&host_);
    EXPECT_EQ(galloc_allocator_create_user(nullptr, 0, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_EQ(a, nullptr);
    EXPECT_EQ(galloc_allocator_create_user(&u, 0, nullptr, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_allocator_create_user(&u, -1, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_STREQ(err, "device index must be >= 0");
    galloc_user_allocator_t bad = u;
    bad.version = 2;
    EXPECT_EQ(galloc_allocator_create_user(&bad, 0, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_NE(std::string(err).find("version"), std::string::npos) << err;
    bad = u;
    bad.struct_size = offsetof(galloc_user_allocator_t, free_fn);
    EXPECT_EQ(galloc_allocator_create_user(&bad, 0, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_NE(std::string(err).find("struct_size"), std::string::npos) << err;
    bad = u;
    bad.free_fn = nullptr;
    EXPECT_EQ(galloc_allocator_create_user(&bad, 0, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_NE(std::string(err).find("required"), std::string::npos) << err;
    EXPECT_EQ(a, nullptr);
    EXPECT_EQ(host_.mallocs, 0);
}

TEST_F(User, APointerAlreadyLiveIsCorruptionAndIsLeftAlone)
{
    Make();
    void *p = nullptr, *q = reinterpret_cast<void *>(1);
    ASSERT_EQ(galloc_malloc(a_, 32, 0, &p), GALLOC_OK);
    host_.repeat = p; // the host hands out p a second time
    EXPECT_EQ(galloc_malloc(a_, 32, 0, &q), GALLOC_E_CORRUPT);
    EXPECT_EQ(q, nullptr);
    EXPECT_EQ(Stats().allocation[ALL].current, 1);
    host_.repeat = nullptr;
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(host_.frees, 1);
}

TEST_F(User, DestroyHandsBackLivePointers)
{
    Make();
    std::vector<void *> ps(5);
    for (size_t i = 0; i < ps.size(); i++)
        ASSERT_EQ(galloc_malloc(a_, 100 * (i + 1), galloc_stream_t(i), &ps[i]), GALLOC_OK);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    EXPECT_EQ(host_.frees, 5);
    std::vector<size_t> sizes = host_.freed_sizes;
    std::sort(sizes.begin(), sizes.end());
    EXPECT_EQ(sizes, (std::vector<size_t>{100, 200, 300, 400, 500}));
}

// Thousands of live pointers in a scrambled order: the live map grows and
// shifts entries on removal; galloc_check recounts the stats from it.
TEST_F(User, ManyLivePointersStayExact)
{
    Make();
    const int n = 3000;
    std::vector<void *> ps(n);
    int64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(galloc_malloc(a_, size_t(1 + i % 700), 0, &ps[i]), GALLOC_OK);
        bytes += 1 + i % 700;
    }
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, bytes);
    unsigned seed = 12345;
    for (int i = n - 1; i > 0; i--) { // Fisher-Yates, fixed seed
        seed = seed * 1103515245u + 12345u;
        std::swap(ps[i], ps[(seed >> 8) % unsigned(i + 1)]);
    }
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(galloc_free(a_, ps[i]), GALLOC_OK) << "step " << i;
        if (i % 500 == 0) {
            ASSERT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_) << " at step " << i;
        }
    }
    galloc_stats_t s = Stats();
    EXPECT_EQ(s.allocated_bytes[ALL].current, 0);
    EXPECT_EQ(s.allocation[ALL].freed, n);
}

TEST_F(User, HistoryAndSnapshotRoundTripThroughPython)
{
    Make();
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a_, &opt), GALLOC_OK);
    void *a = nullptr, *b = nullptr, *c = nullptr, *big = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 100, 0, &a), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a_, 3 * MiB, 0, &b), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a_, 200, 0, &c), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, c), GALLOC_OK);
    host_.limit = 1 << 20;
    EXPECT_EQ(galloc_malloc(a_, 2 * MiB, 0, &big), GALLOC_E_OOM);

    std::string pkl = test_tmp_path("user.pickle"), js = test_tmp_path("user.json"),
                want = test_tmp_path("user_want.json");
    ASSERT_EQ(galloc_snapshot_write(a_, pkl.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_snapshot_write(a_, js.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    struct Seg {
        uintptr_t addr;
        size_t size;
        const char *type;
    };
    std::vector<Seg> segs = {{reinterpret_cast<uintptr_t>(a), 100, "small"},
                             {reinterpret_cast<uintptr_t>(b), 3 * MiB, "large"}};
    std::sort(segs.begin(), segs.end(), [](const Seg &x, const Seg &y) { return x.addr < y.addr; });
    {
        std::ofstream o(want);
        o << "{\"segments\": [";
        for (size_t i = 0; i < segs.size(); i++)
            o << (i ? ", " : "") << "[" << segs[i].addr << ", " << segs[i].size << ", \"" << segs[i].type << "\"]";
        o << "], \"actions\": [\"segment_alloc\", \"alloc\", \"segment_alloc\", \"alloc\", \"segment_alloc\", "
             "\"alloc\", \"free_requested\", \"free_completed\", \"segment_free\", \"oom\", \"snapshot\"]}";
    }
    std::string out;
    EXPECT_EQ(test_run_python({"tests/api/user_snapshot_check.py", pkl, js, want}, &out), 0) << out;
    EXPECT_EQ(galloc_snapshot_write(a_, "/nonexistent/dir/u.pickle", GALLOC_SNAPSHOT_PICKLE), GALLOC_E_IO);
    EXPECT_NE(LastError(a_).find("/nonexistent/dir/u.pickle"), std::string::npos) << LastError(a_);
    ASSERT_EQ(galloc_free(a_, a), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, b), GALLOC_OK);
}

// galloc_record_snapshot_entry: nothing while no history is recorded; with
// one, a "snapshot" entry per call, in order with the others.
TEST_F(User, ASnapshotEntryIsRecordedOnlyWithHistory)
{
    Make();
    void *a = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 100, 0, &a), GALLOC_OK);
    EXPECT_EQ(galloc_record_snapshot_entry(a_), GALLOC_OK); // no history: nothing to record
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a_, &opt), GALLOC_OK);
    EXPECT_EQ(galloc_record_snapshot_entry(a_), GALLOC_OK);
    EXPECT_EQ(galloc_record_snapshot_entry(a_), GALLOC_OK);
    std::string js = test_tmp_path("user_entries.json");
    ASSERT_EQ(galloc_snapshot_write(a_, js.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << LastError(a_);
    std::ifstream in(js);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t n = 0;
    for (size_t at = text.find("\"snapshot\""); at != std::string::npos; at = text.find("\"snapshot\"", at + 1))
        n++;
    // The two recorded with history on, the write's own (as PyTorch's snapshot() records
    // one), none from before.
    EXPECT_EQ(n, 3u) << text.substr(0, 400);
    ASSERT_EQ(galloc_free(a_, a), GALLOC_OK);
}

// Annotations and framework frames reach the history; a trace source set
// while pointers are live drops their old stack ids, which would otherwise be
// read as the new source's tokens.
size_t g_frames_calls = 0;
size_t Frames(void *, galloc_frame_t *frames, size_t max)
{
    g_frames_calls++;
    if (max == 0)
        return 0;
    frames[0] = {"train.py", "step", 7};
    return 1;
}
std::vector<uint32_t> g_tokens_asked;
uint32_t NoToken(void *)
{
    return 0;
}
size_t SourceFrames(void *, uint32_t token, const char *, const galloc_frame_t **out)
{
    g_tokens_asked.push_back(token);
    *out = nullptr;
    return 0;
}

TEST_F(User, AnnotationsFramesAndATraceSourceReachTheHistory)
{
    Make();
    galloc_history_options_t bad = {0, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 0};
    EXPECT_EQ(galloc_record_memory_history(a_, &bad), GALLOC_E_INVAL);
    EXPECT_NE(LastError(a_).find("record_memory_history"), std::string::npos) << LastError(a_);
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a_, &opt), GALLOC_OK);
    ASSERT_EQ(galloc_set_frames_callback(a_, Frames, nullptr), GALLOC_OK);
    ASSERT_EQ(galloc_record_annotation(a_, "START", "step"), GALLOC_OK);
    g_frames_calls = 0;
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_OK);
    EXPECT_EQ(g_frames_calls, 1u); // the allocation's stack: the framework's frames
    ASSERT_EQ(galloc_set_frames_callback(a_, nullptr, nullptr), GALLOC_OK);

    galloc_trace_source_t src = {};
    EXPECT_EQ(galloc_set_trace_source(a_, &src), GALLOC_E_INVAL); // struct_size 0
    EXPECT_NE(LastError(a_).find("set_trace_source"), std::string::npos) << LastError(a_);
    src.struct_size = sizeof src;
    src.token = NoToken;
    src.frames = SourceFrames;
    ASSERT_EQ(galloc_set_trace_source(a_, &src), GALLOC_OK);
    g_tokens_asked.clear();
    std::string pkl = test_tmp_path("user_source.pickle");
    ASSERT_EQ(galloc_snapshot_write(a_, pkl.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK) << LastError(a_);
    EXPECT_TRUE(g_tokens_asked.empty()) << "the live block's old stack id was passed as token " << g_tokens_asked[0];
    ASSERT_EQ(galloc_set_trace_source(a_, nullptr), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

TEST_F(User, ABadFractionOrAMissingMallocIsRefused)
{
    Make();
    EXPECT_EQ(galloc_set_memory_fraction(a_, std::nan("")), GALLOC_E_INVAL);
    galloc_user_allocator_t u = Table(&host_);
    u.malloc_fn = nullptr;
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_allocator_create_user(&u, 0, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_NE(std::string(err).find("malloc_fn and free_fn are required"), std::string::npos) << err;
    EXPECT_EQ(a, nullptr);
}

} // namespace
