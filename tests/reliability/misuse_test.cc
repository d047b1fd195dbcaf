// misuse_test: caller mistakes through the public API. Each returns the status
// its header documents and leaves the allocator intact: galloc_check passes,
// and every stat is bit for bit what it was (a refused call changes nothing).
// Complements tests/api/api_test.cc (NULL allocator for the core calls, one
// interior pointer, one double free, fraction 2.0) and mempool_test.cc
// (private pool misuse), which are not repeated here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint64_t kOneEB = uint64_t(1) << 60;

std::string LastError(galloc_allocator_t *a)
{
    char m[GALLOC_ERROR_MAX];
    galloc_last_error(a, m, sizeof m);
    return m;
}

galloc_stats_t Stats(galloc_allocator_t *a)
{
    galloc_stats_t s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    EXPECT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    return s;
}

// Whether two snapshots hold the same value in every stat.
bool SameStats(const galloc_stats_t &x, const galloc_stats_t &y)
{
    return std::memcmp(&x, &y, sizeof x) == 0;
}

class Misuse : public ::testing::Test {
  protected:
    void Make(const char *conf)
    {
        Drop();
        ASSERT_EQ(simwatch_register(), GALLOC_OK);
        char err[GALLOC_ERROR_MAX] = "";
        std::string c = std::string("sim_capacity:256MiB,sim_manual_events:True,") + conf;
        ASSERT_EQ(galloc_allocator_create("simwatch", 0, c.c_str(), &a_, err, sizeof err), GALLOC_OK) << err;
        sim_ = simwatch_last_state();
    }
    void Drop()
    {
        if (a_ == nullptr)
            return;
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
        galloc_allocator_destroy(a_);
        a_ = nullptr;
        ga_sim_counters_t c{};
        ASSERT_TRUE(simwatch_last_close(&c));
        EXPECT_TRUE(simwatch_counters_clean(&c)) << c.live_segments << " segments, " << c.live_mapped_bytes
                                                 << " mapped bytes, " << c.live_events << " events left at destroy";
        EXPECT_EQ(c.violations, 0u);
    }
    void SetUp() override { Make(""); }
    void TearDown() override { Drop(); }

    void *Alloc(size_t n, galloc_stream_t s = 0)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << LastError(a_);
        return p;
    }
    uint64_t DeviceCalls()
    {
        ga_sim_counters_t c{};
        EXPECT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        return c.alloc_calls;
    }
    // A refused call: the status expected, the allocator consistent, no stat moved.
    void Refused(galloc_status_t got, galloc_status_t want, const galloc_stats_t &before, const char *what)
    {
        EXPECT_EQ(got, want) << what << ": " << LastError(a_);
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << what << ": " << LastError(a_);
        EXPECT_TRUE(SameStats(before, Stats(a_))) << what << " changed a stat";
    }

    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
};

char *At(void *p, size_t off)
{
    return static_cast<char *>(p) + off;
}

TEST_F(Misuse, FreeingWhatIsNotALiveBlockStartIsRefused)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        Make(conf);
        void *small = Alloc(100);     // small pool: 512 B block, the rest of its 2 MiB free
        void *large = Alloc(3 * MiB); // large pool: 3 MiB block, a free remainder right after it
        void *gone = Alloc(4 * MiB);
        ASSERT_EQ(galloc_free(a_, gone), GALLOC_OK); // cached: a free block starts at `gone`
        int local = 0;
        galloc_stats_t before = Stats(a_);
        void *bad[] = {
            reinterpret_cast<void *>(1), // never a device address
            &local,                      // a host address
            At(small, 1),
            At(small, 511), // inside the 512 B block
            At(large, 1),
            At(large, 3 * MiB - 1),
            At(large, 3 * MiB),  // where the free remainder starts
            gone,                // start of a cached free block
            At(large, 64 * MiB), // past every segment
        };
        for (void *p : bad) {
            Refused(galloc_free(a_, p), GALLOC_E_NOT_OWNED, before, "free");
            EXPECT_NE(LastError(a_).find("invalid device pointer"), std::string::npos) << LastError(a_);
            Refused(galloc_record_stream(a_, p, 1), GALLOC_E_NOT_OWNED, before, "record_stream");
        }
        EXPECT_EQ(galloc_free(a_, small), GALLOC_OK);
        EXPECT_EQ(galloc_free(a_, large), GALLOC_OK);
    }
}

TEST_F(Misuse, DoubleFreeWhileTheFirstFreeIsPending)
{
    void *p = Alloc(3 * MiB);
    ASSERT_EQ(galloc_record_stream(a_, p, 5), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK); // waits for stream 5: the block stays active
    galloc_stats_t pending = Stats(a_);
    EXPECT_EQ(pending.active[GALLOC_STAT_ALL].current, 1);
    Refused(galloc_free(a_, p), GALLOC_E_NOT_OWNED, pending, "second free");
    Refused(galloc_record_stream(a_, p, 6), GALLOC_E_NOT_OWNED, pending, "record_stream after free");
    ASSERT_EQ(galloc_stream_synchronize(a_, 5), GALLOC_OK);
    void *q = Alloc(512); // polls the event: the block returns to its pool
    EXPECT_EQ(Stats(a_).active[GALLOC_STAT_LARGE_POOL].current, 0);
    galloc_stats_t done = Stats(a_);
    Refused(galloc_free(a_, p), GALLOC_E_NOT_OWNED, done, "free after the block came back");
    EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
}

TEST_F(Misuse, RecordStreamOnItsOwnStreamOrNullIsHarmless)
{
    void *p = Alloc(1 * MiB, 3);
    galloc_stats_t before = Stats(a_);
    Refused(galloc_record_stream(a_, p, 3), GALLOC_OK, before, "record_stream on the allocation stream");
    Refused(galloc_record_stream(a_, nullptr, 3), GALLOC_E_INVAL, before, "record_stream(NULL)");
    EXPECT_EQ(galloc_record_stream(nullptr, p, 1), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    // No event was recorded, so the free completed at once.
    EXPECT_EQ(Stats(a_).active[GALLOC_STAT_ALL].current, 0);
}

// Two unbacked sim allocators on the same device index hand out the same
// addresses (each starts at that index's window), so a pointer of A may be a
// live block of B by value; backed devices hand out distinct host mappings and
// show the refusal. Different device indices: tests/api/device_test.cc.
TEST(MisuseTwoAllocators, APointerOfAnotherAllocatorIsRefused)
{
    galloc_allocator_t *a = nullptr, *b = nullptr;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_backed:True,sim_capacity:64MiB", &a, nullptr, 0), GALLOC_OK);
    ASSERT_EQ(galloc_allocator_create("sim", 0, "sim_backed:True,sim_capacity:64MiB", &b, nullptr, 0), GALLOC_OK);
    void *pa = nullptr, *pb = nullptr;
    ASSERT_EQ(galloc_malloc(a, 3 * MiB, 0, &pa), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(b, 3 * MiB, 0, &pb), GALLOC_OK);
    ASSERT_NE(pa, pb);
    galloc_stats_t sa = Stats(a), sb = Stats(b);
    EXPECT_EQ(galloc_free(b, pa), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_record_stream(b, pa, 1), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_free(a, pb), GALLOC_E_NOT_OWNED);
    EXPECT_TRUE(SameStats(sa, Stats(a)));
    EXPECT_TRUE(SameStats(sb, Stats(b)));
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    EXPECT_EQ(galloc_check(b), GALLOC_OK);
    // Each still frees its own.
    EXPECT_EQ(galloc_free(a, pa), GALLOC_OK);
    EXPECT_EQ(galloc_free(b, pb), GALLOC_OK);
    EXPECT_EQ(Stats(a).allocation[GALLOC_STAT_ALL].current, 0);
    galloc_allocator_destroy(a);
    galloc_allocator_destroy(b);
}

TEST_F(Misuse, SizeZeroAllocatesNothing)
{
    galloc_stats_t before = Stats(a_);
    uint64_t calls = DeviceCalls();
    void *p = reinterpret_cast<void *>(1);
    Refused(galloc_malloc(a_, 0, 0, &p), GALLOC_OK, before, "malloc(0)");
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(DeviceCalls(), calls);
    Refused(galloc_free(a_, p), GALLOC_OK, before, "free(NULL)");
}

// Requests of 1 EB or more fail before the device is asked, without overflow in
// rounding; just below, the device is asked and refuses. Either way: an OOM, a
// NULL pointer, no block stat moved.
TEST_F(Misuse, HugeRequestsAreCleanOOMs)
{
    const char *confs[] = {"", "expandable_segments:True", "roundup_power2_divisions:[>:16]",
                           "max_split_size_mb:40,roundup_power2_divisions:4"};
    const uint64_t sizes[] = {SIZE_MAX,       SIZE_MAX - 511,    kOneEB,   kOneEB + 1, kOneEB - 1,
                              kOneEB / 2 + 1, uint64_t(1) << 40, 257 * MiB};
    for (const char *conf : confs) {
        SCOPED_TRACE(conf);
        Make(conf);
        void *keep = Alloc(5 * MiB); // something live, so a stat change would show
        for (uint64_t size : sizes) {
            SCOPED_TRACE(size);
            galloc_stats_t before = Stats(a_);
            uint64_t calls = DeviceCalls();
            void *p = reinterpret_cast<void *>(1);
            EXPECT_EQ(galloc_malloc(a_, (size_t)size, 0, &p), GALLOC_E_OOM);
            EXPECT_EQ(p, nullptr);
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
            galloc_stats_t after = Stats(a_);
            EXPECT_EQ(after.allocation[GALLOC_STAT_ALL].current, before.allocation[GALLOC_STAT_ALL].current);
            EXPECT_EQ(after.allocated_bytes[GALLOC_STAT_ALL].current, before.allocated_bytes[GALLOC_STAT_ALL].current);
            std::string msg = LastError(a_);
            if (size >= kOneEB) {
                EXPECT_EQ(msg, "CUDA out of memory. Tried to allocate more than 1EB memory.");
                EXPECT_EQ(DeviceCalls(), calls) << "the device was asked for >= 1 EB";
            } else {
                EXPECT_EQ(msg.rfind("CUDA out of memory. Tried to allocate ", 0), 0u) << msg;
                EXPECT_EQ(after.num_ooms, before.num_ooms + 1);
            }
        }
        EXPECT_EQ(galloc_free(a_, keep), GALLOC_OK);
    }
}

TEST_F(Misuse, FractionOutsideZeroToOneKeepsTheCap)
{
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK); // 128 MiB of 256 MiB
    const double bad[] = {std::nan(""),
                          -std::nan(""),
                          -1.0,
                          -1e-300,
                          std::nextafter(1.0, 2.0),
                          2.0,
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::denorm_min() * -1.0};
    galloc_stats_t before = Stats(a_);
    for (double f : bad) {
        SCOPED_TRACE(f);
        Refused(galloc_set_memory_fraction(a_, f), GALLOC_E_INVAL, before, "set_memory_fraction");
        EXPECT_NE(LastError(a_).find("Allowed range: 0~1"), std::string::npos) << LastError(a_);
    }
    // Still 128 MiB: 100 MiB fits, 40 MiB more does not.
    void *p = Alloc(100 * MiB);
    void *q = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 40 * MiB, 0, &q), GALLOC_E_OOM);
    EXPECT_NE(LastError(a_).find("128.00 MiB allowed"), std::string::npos) << LastError(a_);
    // The bounds themselves are valid; at 0 only cached blocks can serve.
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_set_memory_fraction(a_, -0.0), GALLOC_OK);
    EXPECT_EQ(galloc_set_memory_fraction(a_, 0.0), GALLOC_OK);
    void *cached = Alloc(100 * MiB);                      // the freed 100 MiB segment
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &q), GALLOC_E_OOM); // a new 2 MiB segment is over the cap
    EXPECT_EQ(galloc_set_memory_fraction(a_, 1.0), GALLOC_OK);
    void *r = Alloc(1);
    EXPECT_EQ(galloc_free(a_, cached), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, r), GALLOC_OK);
}

int CountKey(void *ctx, const char *, int64_t)
{
    ++*static_cast<size_t *>(ctx);
    return 0;
}

// NULL arguments not covered by api_test and mempool_test: each is refused
// (or, where documented, harmless) and the allocator's stats do not move.
TEST_F(Misuse, NullArgumentsEverywhereElse)
{
    void *p = Alloc(1000);
    galloc_stats_t before = Stats(a_);
    galloc_mempool_id_t id = {0, 1};
    char buf[64];
    size_t needed = 0, f = 0;
    EXPECT_EQ(galloc_stream_synchronize(nullptr, 0), GALLOC_E_INVAL);
    Refused(galloc_memory_info(a_, &f, nullptr), GALLOC_E_INVAL, before, "memory_info(total NULL)");
    Refused(galloc_last_error(a_, buf, 0), GALLOC_E_INVAL, before, "last_error(len 0)");
    Refused(galloc_settings_string(a_, nullptr, 5, nullptr), GALLOC_E_INVAL, before, "settings_string(NULL, 5)");
    Refused(galloc_settings_string(a_, nullptr, 0, &needed), GALLOC_OK, before, "settings_string(NULL, 0)");
    EXPECT_GT(needed, 0u); // "sim_capacity:256MiB,sim_manual_events:True" at least
    EXPECT_EQ(galloc_settings_string(nullptr, buf, sizeof buf, &needed), GALLOC_E_INVAL);
    Refused(galloc_memory_summary(a_, false, nullptr, 5, nullptr), GALLOC_E_INVAL, before, "memory_summary(NULL, 5)");
    Refused(galloc_memory_summary(a_, true, nullptr, 0, &needed), GALLOC_OK, before, "memory_summary(NULL, 0)");
    EXPECT_GT(needed, 0u);
    EXPECT_EQ(galloc_memory_summary(nullptr, false, buf, sizeof buf, nullptr), GALLOC_E_INVAL);
    Refused(galloc_snapshot_write(a_, nullptr, GALLOC_SNAPSHOT_PICKLE), GALLOC_E_INVAL, before, "snapshot(NULL)");
    EXPECT_EQ(galloc_snapshot_write(nullptr, "/dev/null", GALLOC_SNAPSHOT_JSON), GALLOC_E_INVAL);
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_ALL, GALLOC_STACKS_PYTHON, 16};
    EXPECT_EQ(galloc_record_memory_history(nullptr, &opt), GALLOC_E_INVAL);
    opt.struct_size = 0;
    Refused(galloc_record_memory_history(a_, &opt), GALLOC_E_INVAL, before, "record_memory_history(size 0)");
    Refused(galloc_record_annotation(a_, nullptr, "x"), GALLOC_E_INVAL, before, "record_annotation(NULL stage)");
    Refused(galloc_record_annotation(a_, "START", nullptr), GALLOC_E_INVAL, before, "record_annotation(NULL)");
    EXPECT_EQ(galloc_record_annotation(nullptr, "START", "x"), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_set_frames_callback(nullptr, nullptr, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_begin_allocate(nullptr, id, GALLOC_ROUTE_THREAD, 0), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_end_allocate(nullptr, id), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_create(nullptr, &id), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_backend_register(nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_backend_find(nullptr), nullptr);
    size_t n = 0;
    EXPECT_EQ(galloc_stats_foreach(nullptr, CountKey, &n), 0u);
    EXPECT_EQ(galloc_stats_foreach(&before, nullptr, &n), 0u);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(galloc_stats_foreach(&before, CountKey, &n), (size_t)GALLOC_STATS_KEY_COUNT);
    EXPECT_TRUE(SameStats(before, Stats(a_)));
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

TEST(MisuseBackend, BadRegistrationsAreRefused)
{
    galloc_backend_ops_t ops = ga_backend_sim; // sim's members under another name
    static const char long_name[] = "a-backend-name-of-thirty-two-chars";
    ops.name = "sim";
    EXPECT_EQ(galloc_backend_register(&ops), GALLOC_E_CONFIG); // taken
    ops.name = long_name;
    EXPECT_EQ(galloc_backend_register(&ops), GALLOC_E_INVAL);
    ops.name = "";
    EXPECT_EQ(galloc_backend_register(&ops), GALLOC_E_INVAL);
    ops.name = "misuse-no-close";
    ops.close = nullptr;
    EXPECT_EQ(galloc_backend_register(&ops), GALLOC_E_INVAL);
    ops.close = ga_backend_sim.close;
    ops.version = GALLOC_BACKEND_OPS_V1 + 1;
    EXPECT_EQ(galloc_backend_register(&ops), GALLOC_E_INVAL);
    ops.version = GALLOC_BACKEND_OPS_V1;
    ops.struct_size = 8;
    EXPECT_EQ(galloc_backend_register(&ops), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_backend_find("misuse-no-close"), nullptr);
}

TEST(MisuseCreate, BadStringsAndShortErrorBuffers)
{
    galloc_allocator_t *a = reinterpret_cast<galloc_allocator_t *>(1);
    std::string junk(100000, 'x'); // a long unknown key: the message is cut, never overrun
    char err[8];
    std::memset(err, 'Z', sizeof err);
    EXPECT_EQ(galloc_allocator_create("sim", 0, junk.c_str(), &a, err, sizeof err), GALLOC_E_CONFIG);
    EXPECT_EQ(a, nullptr);
    EXPECT_EQ(std::strlen(err), sizeof err - 1);
    char untouched[4] = {'Z', 'Z', 'Z', 'Z'};
    EXPECT_EQ(galloc_allocator_create("", 0, "", &a, untouched, 0), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(untouched[0], 'Z');                                                       // errlen 0: nothing written
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, nullptr, &a, nullptr, 0), GALLOC_OK); // all defaults
    EXPECT_STREQ(galloc_allocator_backend(a), "sim");
    galloc_allocator_destroy(a);
}

// Destroying with everything outstanding (live blocks, frees pending on other
// streams, a private pool still routed to, mapped expandable pages) gives the
// whole device back: Drop() checks the sim counters at close.
TEST_F(Misuse, DestroyWithEverythingOutstanding)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        Make(conf);
        Alloc(100);
        Alloc(30 * MiB, 1);
        void *p = Alloc(3 * MiB);
        ASSERT_EQ(galloc_record_stream(a_, p, 7), GALLOC_OK);
        ASSERT_EQ(galloc_free(a_, p), GALLOC_OK); // pending on stream 7
        galloc_mempool_id_t id;
        ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
        ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
        Alloc(2 * MiB);
        Alloc(64 * KiB);
        ga_sim_counters_t c{};
        ASSERT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        EXPECT_GT(c.used_bytes, 0u);
        EXPECT_GT(c.live_events, 0u);
        Drop(); // destroy with all of it outstanding; checks the device is empty
    }
}

} // namespace
