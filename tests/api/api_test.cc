// api_test: the public C API only (api/galloc.h): life cycle, errors and
// messages, stats through the public calls, configuration sources, threads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;

class Api : public ::testing::Test {
  protected:
    void Make(const char *conf, const char *backend = "sim")
    {
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create(backend, 0, conf, &a_, err, sizeof err), GALLOC_OK) << err;
    }
    void SetUp() override { Make(""); }
    void TearDown() override
    {
        if (a_ != nullptr) {
            char msg[GALLOC_ERROR_MAX];
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << (galloc_last_error(a_, msg, sizeof msg), msg);
            galloc_allocator_destroy(a_);
        }
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        EXPECT_EQ(galloc_memory_stats(a_, &st), GALLOC_OK);
        return st;
    }
    std::string LastError()
    {
        char msg[GALLOC_ERROR_MAX];
        galloc_last_error(a_, msg, sizeof msg);
        return msg;
    }
    galloc_allocator_t *a_ = nullptr;
};

TEST(Status, EveryCodeHasTextAndName)
{
    for (int s = 0; s < GALLOC_STATUS_COUNT_; s++) {
        EXPECT_STRNE(galloc_strerror((galloc_status_t)s), "unknown status") << s;
        EXPECT_STRNE(galloc_status_name((galloc_status_t)s), "UNKNOWN") << s;
    }
    EXPECT_STREQ(galloc_strerror(GALLOC_OK), "success");
    EXPECT_STREQ(galloc_status_name(GALLOC_E_OOM), "E_OOM");
    EXPECT_STREQ(galloc_strerror((galloc_status_t)999), "unknown status");
    EXPECT_STREQ(galloc_status_name((galloc_status_t)-1), "UNKNOWN");
}

TEST(Create, BadArgumentsAreReported)
{
    galloc_allocator_t *a = reinterpret_cast<galloc_allocator_t *>(1);
    char err[256] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, "", nullptr, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_allocator_create("sim", -1, "", &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_STREQ(err, "device index must be >= 0");
    EXPECT_EQ(galloc_allocator_create("nosuch", 0, "", &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(a, nullptr);
    EXPECT_NE(std::string(err).find("unknown device backend \"nosuch\""), std::string::npos) << err;
    EXPECT_EQ(galloc_allocator_create("sim", 0, "max_split_size_mb:abc", &a, err, sizeof err), GALLOC_E_CONFIG);
    EXPECT_NE(std::string(err).find("max_split_size_mb"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("abc"), std::string::npos) << err;
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, "device_backend:nosuch", &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(galloc_allocator_create("sim", 0, "backend:cudaMallocAsync", &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_NE(std::string(err).find("cudaMallocAsync"), std::string::npos) << err;
    // A NULL error buffer is allowed.
    EXPECT_EQ(galloc_allocator_create("nosuch", 0, "", &a, nullptr, 0), GALLOC_E_UNAVAILABLE);
}

TEST(Create, BackendComesFromConfigWhenNotNamed)
{
    galloc_allocator_t *a = nullptr;
    char err[256] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 3, "device_backend:sim,sim_capacity:24GiB", &a, err, sizeof err),
              GALLOC_OK)
        << err;
    EXPECT_STREQ(galloc_allocator_backend(a), "sim");
    size_t free_b = 0, total = 0;
    EXPECT_EQ(galloc_memory_info(a, &free_b, &total), GALLOC_OK);
    EXPECT_EQ(total, 24 * GiB);
    EXPECT_EQ(free_b, 24 * GiB);
    galloc_allocator_destroy(a);
    galloc_allocator_destroy(nullptr); // no-op
}

TEST_F(Api, NullArgumentsGetInval)
{
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(nullptr, 1, 0, &p), GALLOC_E_INVAL);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(galloc_malloc(a_, 1, 0, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_free(nullptr, p), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_empty_cache(nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_set_memory_fraction(nullptr, 0.5), GALLOC_E_INVAL);
    size_t f, t;
    EXPECT_EQ(galloc_memory_info(nullptr, &f, &t), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_memory_info(a_, nullptr, &t), GALLOC_E_INVAL);
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(nullptr, &st), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_memory_stats(a_, nullptr), GALLOC_E_INVAL);
    st.struct_size = 0;
    EXPECT_EQ(galloc_memory_stats(a_, &st), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_stats_reset_peak(nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_stats_reset_accumulated(nullptr), GALLOC_E_INVAL);
    char buf[8];
    EXPECT_EQ(galloc_last_error(nullptr, buf, sizeof buf), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_last_error(a_, nullptr, 8), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_check(nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_allocator_backend(nullptr), nullptr);
}

TEST_F(Api, OneByteThroughThePublicApi)
{
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_OK);
    EXPECT_NE(p, nullptr);
    galloc_stats_t st = Stats();
    int64_t v = 0;
    EXPECT_EQ(galloc_stats_lookup(&st, "allocated_bytes.all.current", &v), GALLOC_OK);
    EXPECT_EQ(v, 512);
    EXPECT_EQ(galloc_stats_lookup(&st, "reserved_bytes.small_pool.current", &v), GALLOC_OK);
    EXPECT_EQ(v, (int64_t)(2 * MiB));
    EXPECT_EQ(galloc_stats_lookup(&st, "requested_bytes.all.current", &v), GALLOC_OK);
    EXPECT_EQ(v, 1);
    EXPECT_EQ(galloc_stats_lookup(&st, "segment.small_pool.current", &v), GALLOC_OK);
    EXPECT_EQ(v, 1);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(2 * MiB)); // cached
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
}

TEST_F(Api, SettingsGivenAsStrings)
{
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    Make("roundup_power2_divisions:4,max_split_size_mb:2048");
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 1200 * MiB, 0, &p), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(1280 * MiB));
    EXPECT_EQ(st.max_split_size, (int64_t)(2048 * MiB));
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

TEST_F(Api, FractionHalfOf80GiBRefuses41GiB)
{
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 41 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(Stats().num_ooms, 1);
    char msg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_last_error(a_, msg, sizeof msg), GALLOC_E_OOM);
    EXPECT_EQ(std::string(msg).rfind("CUDA out of memory. Tried to allocate 41.00 GiB. GPU 0 has a total capacity "
                                     "of 80.00 GiB of which 80.00 GiB is free. 40.00 GiB allowed; ",
                                     0),
              0u)
        << msg;
    // A short buffer gets a truncated, terminated copy.
    char small[10];
    EXPECT_EQ(galloc_last_error(a_, small, sizeof small), GALLOC_E_OOM);
    EXPECT_STREQ(small, "CUDA out ");
    EXPECT_EQ(galloc_set_memory_fraction(a_, 2.0), GALLOC_E_INVAL);
    EXPECT_NE(LastError().find("Allowed range: 0~1"), std::string::npos);
}

TEST_F(Api, LastErrorStartsEmpty)
{
    char msg[16] = "x";
    EXPECT_EQ(galloc_last_error(a_, msg, sizeof msg), GALLOC_OK);
    EXPECT_STREQ(msg, "");
}

TEST_F(Api, ForeignAndDoubleFreesAreRefused)
{
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 100, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, static_cast<char *>(p) + 512), GALLOC_E_NOT_OWNED);
    EXPECT_NE(LastError().find("invalid device pointer"), std::string::npos);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_free(a_, nullptr), GALLOC_OK);
    EXPECT_EQ(Stats().allocation[GALLOC_STAT_ALL].current, 0);
}

// A framework that tears down in the wrong order calls through a destroyed
// handle: every call says so, none touches freed memory (ASan would stop the
// test), and a new allocator is unaffected.
TEST(Destroyed, EveryCallThroughADestroyedHandleSaysSo)
{
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &a, nullptr, 0), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 4096, 0, &p), GALLOC_OK);
    galloc_allocator_destroy(a);

    void *q = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a, 4096, 0, &q), GALLOC_E_DESTROYED);
    EXPECT_EQ(q, nullptr);
    EXPECT_EQ(galloc_free(a, p), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_record_stream(a, p, 1), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_stream_synchronize(a, 0), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_empty_cache(a), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_set_memory_fraction(a, 0.5), GALLOC_E_DESTROYED);
    size_t f = 0, t = 0;
    EXPECT_EQ(galloc_memory_info(a, &f, &t), GALLOC_E_DESTROYED);
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_stats_reset_peak(a), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_stats_reset_accumulated(a), GALLOC_E_DESTROYED);
    char buf[64];
    EXPECT_EQ(galloc_last_error(a, buf, sizeof buf), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_check(a), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_allocator_backend(a), nullptr);
    galloc_mempool_id_t id{};
    EXPECT_EQ(galloc_mempool_create(a, &id), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_snapshot_write(a, "/dev/null", GALLOC_SNAPSHOT_PICKLE), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_memory_summary(a, false, buf, sizeof buf, nullptr), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_settings_string(a, buf, sizeof buf, nullptr), GALLOC_E_DESTROYED);
    galloc_settings_t s;
    s.struct_size = sizeof s;
    EXPECT_EQ(galloc_settings_get(a, &s), GALLOC_E_DESTROYED);
    galloc_allocator_destroy(a); // a second destroy changes nothing
    EXPECT_STREQ(galloc_status_name(GALLOC_E_DESTROYED), "E_DESTROYED");

    galloc_allocator_t *b = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &b, nullptr, 0), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(b, 4096, 0, &q), GALLOC_OK);
    EXPECT_EQ(galloc_free(b, q), GALLOC_OK);
    EXPECT_EQ(galloc_check(b), GALLOC_OK);
    galloc_allocator_destroy(b);
}

// More create/destroy cycles than galloc keeps headers for: the oldest are
// freed (LeakSanitizer under --config=asan sees nothing lost) and the newest
// destroyed handle is still recognized.
TEST(Destroyed, ManyCyclesKeepOnlyABoundedNumberOfHeaders)
{
    galloc_allocator_t *last = nullptr;
    for (int i = 0; i < 200; i++) {
        ASSERT_EQ(galloc_allocator_create("sim", 0, "", &last, nullptr, 0), GALLOC_OK);
        galloc_allocator_destroy(last);
    }
    EXPECT_EQ(galloc_empty_cache(last), GALLOC_E_DESTROYED);
}

TEST_F(Api, ResetsThroughThePublicApi)
{
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4096, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    ASSERT_EQ(galloc_stats_reset_peak(a_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, 0);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].peak, (int64_t)(2 * MiB));
    ASSERT_EQ(galloc_stats_reset_accumulated(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 0);
    EXPECT_EQ(st.num_device_alloc, 0);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 1);
}

TEST_F(Api, BackedSimMemoryIsWritable)
{
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    Make("sim_backed:True,sim_capacity:64MiB");
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 3 * MiB, 0, &p), GALLOC_OK);
    std::memset(p, 0x5a, 3 * MiB);
    EXPECT_EQ(static_cast<unsigned char *>(p)[3 * MiB - 1], 0x5a);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

TEST(Env, SourcesApplyInPrecedenceOrder)
{
    // PYTORCH_CUDA_ALLOC_CONF < PYTORCH_ALLOC_CONF (which hides it) < GALLOC_CONF < create string.
    setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:100", 1);
    galloc_allocator_t *a = nullptr;
    galloc_stats_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_allocator_create("sim", 0, nullptr, &a, nullptr, 0), GALLOC_OK);
    galloc_memory_stats(a, &st);
    EXPECT_EQ(st.max_split_size, (int64_t)(100 * MiB));
    galloc_allocator_destroy(a);

    setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:200", 1);
    ASSERT_EQ(galloc_allocator_create("sim", 0, nullptr, &a, nullptr, 0), GALLOC_OK);
    galloc_memory_stats(a, &st);
    EXPECT_EQ(st.max_split_size, (int64_t)(200 * MiB));
    galloc_allocator_destroy(a);

    setenv("GALLOC_CONF", "max_split_size_mb:300", 1);
    ASSERT_EQ(galloc_allocator_create("sim", 0, nullptr, &a, nullptr, 0), GALLOC_OK);
    galloc_memory_stats(a, &st);
    EXPECT_EQ(st.max_split_size, (int64_t)(300 * MiB));
    galloc_allocator_destroy(a);

    ASSERT_EQ(galloc_allocator_create("sim", 0, "max_split_size_mb:400", &a, nullptr, 0), GALLOC_OK);
    galloc_memory_stats(a, &st);
    EXPECT_EQ(st.max_split_size, (int64_t)(400 * MiB));
    galloc_allocator_destroy(a);

    char err[512] = "";
    setenv("GALLOC_CONF", "bogus_key:1", 1);
    EXPECT_EQ(galloc_allocator_create("sim", 0, nullptr, &a, err, sizeof err), GALLOC_E_CONFIG);
    EXPECT_NE(std::string(err).find("GALLOC_CONF"), std::string::npos) << err;
    unsetenv("GALLOC_CONF");
    unsetenv("PYTORCH_ALLOC_CONF");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
}

TEST(Env, CreateExWithNoEnvReadsNoVariable)
{
    // The variables are set (a bad GALLOC_CONF too): GALLOC_CREATE_NO_ENV
    // ignores them all, the create string alone applies; flags 0 is create.
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:200", 1);
    setenv("GALLOC_CONF", "bogus_key:1", 1);
    galloc_allocator_t *a = nullptr;
    galloc_stats_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, nullptr, GALLOC_CREATE_NO_ENV, &a, nullptr, 0), GALLOC_OK);
    galloc_settings_t set = {};
    set.struct_size = sizeof set;
    ASSERT_EQ(galloc_settings_get(a, &set), GALLOC_OK);
    EXPECT_EQ(set.max_split_size, UINT64_MAX); // PyTorch's default: unlimited
    EXPECT_FALSE(set.expandable_segments);
    galloc_allocator_destroy(a);
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, "max_split_size_mb:400", GALLOC_CREATE_NO_ENV, &a, nullptr, 0),
              GALLOC_OK);
    galloc_memory_stats(a, &st);
    EXPECT_EQ(st.max_split_size, (int64_t)(400 * MiB));
    galloc_allocator_destroy(a);
    char err[512] = "";
    EXPECT_EQ(galloc_allocator_create_ex("sim", 0, nullptr, 0, &a, err, sizeof err), GALLOC_E_CONFIG);
    EXPECT_NE(std::string(err).find("GALLOC_CONF"), std::string::npos) << err;
    EXPECT_EQ(galloc_allocator_create_ex("sim", 0, nullptr, 0x80, &a, err, sizeof err), GALLOC_E_INVAL);
    EXPECT_EQ(a, nullptr);
    unsetenv("GALLOC_CONF");
    unsetenv("PYTORCH_ALLOC_CONF");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
}

TEST(Threads, ConcurrentCallsKeepTheAllocatorConsistent)
{
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &a, nullptr, 0), GALLOC_OK);
    const int threads = 4, ops = 20000;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([a, t] {
            std::vector<void *> live;
            unsigned x = 12345u + (unsigned)t;
            for (int i = 0; i < ops; i++) {
                x = x * 1103515245u + 12345u;
                if (live.size() < 32 && (x >> 16) % 3 != 0) {
                    void *p = nullptr;
                    if (galloc_malloc(a, 1 + (x >> 8) % (3 * MiB), (galloc_stream_t)t, &p) == GALLOC_OK)
                        live.push_back(p);
                } else if (!live.empty()) {
                    galloc_free(a, live.back());
                    live.pop_back();
                }
                if (i % 5000 == 0) {
                    galloc_stats_t st;
                    st.struct_size = sizeof st;
                    galloc_memory_stats(a, &st);
                    galloc_empty_cache(a);
                }
            }
            for (void *p : live)
                galloc_free(a, p);
        });
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_stats_t st;
    st.struct_size = sizeof st;
    galloc_memory_stats(a, &st);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, st.allocation[GALLOC_STAT_ALL].freed);
    galloc_allocator_destroy(a);
}

} // namespace

namespace {

TEST(Fragmentation, MetricsOfAKnownLayout)
{
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &a, nullptr, 0), GALLOC_OK);
    // One 20 MiB segment: x (5 MiB) live, y (5 MiB) freed, the 10 MiB tail free; and
    // one 30 MiB segment freed whole.
    void *x, *y, *z;
    ASSERT_EQ(galloc_malloc(a, 5 * MiB, 0, &x), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 5 * MiB, 0, &y), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 30 * MiB, 0, &z), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, y), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, z), GALLOC_OK);
    galloc_fragmentation_t f;
    f.struct_size = sizeof f;
    ASSERT_EQ(galloc_fragmentation(a, &f), GALLOC_OK);
    const galloc_pool_fragmentation_t &l = f.pool[GALLOC_STAT_LARGE_POOL];
    EXPECT_EQ(l.reserved_bytes, (int64_t)(50 * MiB));
    EXPECT_EQ(l.active_bytes, (int64_t)(5 * MiB));
    EXPECT_EQ(l.free_bytes, (int64_t)(45 * MiB));
    EXPECT_EQ(l.inactive_split_bytes, (int64_t)(15 * MiB)); // y merged with the tail, next to live x
    EXPECT_EQ(l.largest_free_block, (int64_t)(30 * MiB));
    EXPECT_EQ(l.free_blocks, 2);
    EXPECT_DOUBLE_EQ(l.external_fragmentation, 1.0 - 30.0 / 45.0);
    EXPECT_EQ(f.pool[GALLOC_STAT_ALL].reserved_bytes, (int64_t)(50 * MiB));
    EXPECT_EQ(f.pool[GALLOC_STAT_SMALL_POOL].reserved_bytes, 0);
    galloc_stats_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    EXPECT_EQ(l.inactive_split_bytes, st.inactive_split_bytes[GALLOC_STAT_LARGE_POOL].current);
    f.struct_size = 0;
    EXPECT_EQ(galloc_fragmentation(a, &f), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_fragmentation(nullptr, &f), GALLOC_E_INVAL);
    galloc_free(a, x);
    galloc_allocator_destroy(a);
}

TEST(Fragmentation, ExpandableSegmentsCountInactiveSplitToo)
{
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "expandable_segments:True", &a, nullptr, 0), GALLOC_OK);
    void *x, *y;
    ASSERT_EQ(galloc_malloc(a, 5 * MiB, 0, &x), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 5 * MiB, 0, &y), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, y), GALLOC_OK);
    galloc_fragmentation_t f;
    f.struct_size = sizeof f;
    ASSERT_EQ(galloc_fragmentation(a, &f), GALLOC_OK);
    EXPECT_EQ(f.pool[GALLOC_STAT_ALL].reserved_bytes, (int64_t)(20 * MiB));
    EXPECT_EQ(f.pool[GALLOC_STAT_ALL].inactive_split_bytes, (int64_t)(15 * MiB));
    galloc_stats_t st;
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    EXPECT_EQ(st.inactive_split_bytes[GALLOC_STAT_ALL].current, 0); // what PyTorch reports
    galloc_free(a, x);
    galloc_allocator_destroy(a);
}

} // namespace
