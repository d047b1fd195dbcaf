// sleep_cases: sleep and wake (api/galloc_sleep.h) on the "cuda" and "hip"
// backends through the public API, on the strict fake drivers, written once
// over a Vendor (vendor_cases.h) and instantiated by cuda_sleep_test.cc and
// hip_sleep_test.cc, with and without expandable segments.
//
// The fake's device memory is host memory that holds bytes, and a new
// physical page reads FAKE_GPU_GARBAGE (tests/fake_cuda/fake_gpu.h), so the
// tests write patterns straight into the blocks and tell offloaded contents
// (restored byte for byte) from discarded ones (garbage after wake). The
// driver's own books say what sleep and wake did: physical bytes charged,
// pinned host bytes live, bytes copied each way, unmaps and maps.
//
// The sweeps fail the k-th driver call inside galloc_sleep (then inside
// galloc_wake), k = 1, 2, ... until a call completes unfaulted, and check the
// Failures paragraph of the contract: a clean status with a message, each tag
// fully awake (contents intact) or fully asleep (allocation refused, the
// offloaded bytes still held), galloc_check, then a retry that succeeds and a
// wake that restores the offloaded bytes exactly, and no leak in the driver.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/backend/vendor_cases.h"

extern "C" {
#include <galloc/galloc_sleep.h>
}

namespace cuda_test {

namespace {

constexpr size_t kWBig = 5 * kMiB, kWSmall = 3000, kKv = 3 * kMiB, kPlain = 1 * kMiB;
constexpr unsigned kWBigSeed = 1, kWSmallSeed = 2, kKvSeed = 3, kPlainSeed = 4;

// Each block's pattern, computed once (the sweeps check them hundreds of times).
const std::vector<unsigned char> &Pattern(size_t n, unsigned seed)
{
    static std::vector<unsigned char> cache[8];
    std::vector<unsigned char> &v = cache[seed];
    if (v.size() != n) {
        v.resize(n);
        for (size_t i = 0; i < n; i++)
            v[i] = (unsigned char)((i * 131 + seed * 17) ^ (i >> 12) ^ 0x5a);
    }
    return v;
}

void Fill(char *p, size_t n, unsigned seed)
{
    std::memcpy(p, Pattern(n, seed).data(), n);
}

// The first offset whose byte is not the pattern's, or -1.
long Mismatch(const char *p, size_t n, unsigned seed)
{
    const std::vector<unsigned char> &v = Pattern(n, seed);
    if (std::memcmp(p, v.data(), n) == 0)
        return -1;
    size_t i = 0;
    while ((unsigned char)p[i] == v[i])
        i++;
    return (long)i;
}

galloc_sleep_stats_t SleepStats(galloc_allocator_t *a)
{
    galloc_sleep_stats_t z = {};
    EXPECT_EQ(galloc_sleep_stats(a, &z), GALLOC_OK);
    return z;
}

int Asleep(galloc_allocator_t *a, const char *tag)
{
    int asleep = -1;
    EXPECT_EQ(galloc_tag_asleep(a, tag, &asleep), GALLOC_OK) << tag;
    return asleep;
}

// One block from tag's pool (nullptr and a failure if refused).
char *TagAlloc(galloc_allocator_t *a, const char *tag, size_t n)
{
    void *p = nullptr;
    EXPECT_EQ(galloc_tag_begin(a, tag), GALLOC_OK) << LastError(a);
    EXPECT_EQ(galloc_malloc(a, n, 0, &p), GALLOC_OK) << LastError(a);
    EXPECT_EQ(galloc_tag_end(a, tag), GALLOC_OK) << LastError(a);
    return static_cast<char *>(p);
}

// The tagged workload (vendor_cases.h), patterns written.
void MakeTagged(galloc_allocator_t *a, Tagged *t)
{
    t->w_big = TagAlloc(a, "weights", kWBig);
    t->w_small = TagAlloc(a, "weights", kWSmall);
    t->kv = TagAlloc(a, "kv", kKv);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a, kPlain, 0, &p), GALLOC_OK) << LastError(a);
    t->plain = static_cast<char *>(p);
    ASSERT_TRUE(t->w_big && t->w_small && t->kv && t->plain);
    Fill(t->w_big, kWBig, kWBigSeed);
    Fill(t->w_small, kWSmall, kWSmallSeed);
    Fill(t->kv, kKv, kKvSeed);
    Fill(t->plain, kPlain, kPlainSeed);
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
}

void ExpectWeightsExact(const Tagged &t)
{
    EXPECT_EQ(Mismatch(t.w_big, kWBig, kWBigSeed), -1) << "the 5 MiB weights block";
    EXPECT_EQ(Mismatch(t.w_small, kWSmall, kWSmallSeed), -1) << "the 3000-byte weights block";
}

void FreeTagged(galloc_allocator_t *a, const Tagged &t)
{
    for (char *p : {t.w_big, t.w_small, t.kv, t.plain}) {
        if (p != nullptr) {
            EXPECT_EQ(galloc_free(a, p), GALLOC_OK) << LastError(a);
        }
    }
}

// Allocating from a sleeping tag is refused with E_ASLEEP and the tag's name.
void ExpectRefused(galloc_allocator_t *a, const char *tag)
{
    void *p = nullptr;
    ASSERT_EQ(galloc_tag_begin(a, tag), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a, 4096, 0, &p), GALLOC_E_ASLEEP) << tag;
    EXPECT_NE(LastError(a).find(tag), std::string::npos) << LastError(a);
    EXPECT_EQ(galloc_tag_end(a, tag), GALLOC_OK);
}

} // namespace

void Sleep::RoundTrip(const char *conf)
{
    Make(conf);
    Tagged t;
    ASSERT_NO_FATAL_FAILURE(MakeTagged(a_, &t));
    galloc_stats_t s0 = Stats();
    fake_gpu_stats_t f0 = f_.Stats();
    uint64_t unmaps0 = f_.fake_cuda_calls(v().mem_unmap);

    ASSERT_EQ(galloc_sleep(a_, "weights,kv", "weights"), GALLOC_OK) << LastError(a_);
    galloc_sleep_stats_t z = SleepStats(a_);
    galloc_stats_t s1 = Stats();
    fake_gpu_stats_t f1 = f_.Stats();
    EXPECT_EQ(z.tags, 2u);
    EXPECT_EQ(z.tags_asleep, 2u);
    EXPECT_EQ(z.num_sleep, 1u);
    EXPECT_EQ(z.num_failed, 0u);
    EXPECT_GE(z.bytes_asleep, kWBig + kWSmall + kKv) << "every tagged block's pages went";
    EXPECT_EQ(z.bytes_slept, z.bytes_asleep);
    EXPECT_EQ(s0.reserved_bytes[ALL].current - s1.reserved_bytes[ALL].current, (int64_t)z.bytes_asleep);
    EXPECT_EQ(f0.device_used[0] - f1.device_used[0], z.bytes_asleep) << "the driver's physical memory went down";
    EXPECT_EQ(s1.allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current) << "the tensors still exist";
    EXPECT_EQ(s1.num_device_free - s0.num_device_free, (int64_t)(f_.fake_cuda_calls(v().mem_unmap) - unmaps0))
        << "one num_device_free per unmap";
    EXPECT_GE(z.bytes_offloaded, kWBig + kWSmall);
    EXPECT_EQ(z.peak_bytes_offloaded, z.bytes_offloaded);
    EXPECT_GE(f1.live_host_bytes, z.bytes_offloaded) << "the pinned memory holding them";
    EXPECT_GE(f1.copied_d2h_bytes, kWBig + kWSmall);
    EXPECT_EQ(Mismatch(t.plain, kPlain, kPlainSeed), -1) << "an untagged block is not touched";
    EXPECT_EQ(Asleep(a_, "weights"), 1);
    EXPECT_EQ(Asleep(a_, "kv"), 1);
    ExpectRefused(a_, "weights");
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(galloc_sleep(a_, "weights", "weights"), GALLOC_OK) << "already asleep: left so";
    EXPECT_EQ(SleepStats(a_).num_sleep, 1u);

    uint64_t maps0 = f_.fake_cuda_calls(v().mem_map);
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError(a_);
    galloc_sleep_stats_t w = SleepStats(a_);
    galloc_stats_t s2 = Stats();
    fake_gpu_stats_t f2 = f_.Stats();
    EXPECT_EQ(w.tags_asleep, 0u);
    EXPECT_EQ(w.bytes_asleep, 0u);
    EXPECT_EQ(w.bytes_offloaded, 0u);
    EXPECT_EQ(w.num_wake, 1u);
    EXPECT_EQ(w.bytes_woken, z.bytes_asleep);
    EXPECT_EQ(s2.reserved_bytes[ALL].current, s0.reserved_bytes[ALL].current);
    EXPECT_EQ(s2.num_device_alloc - s1.num_device_alloc, (int64_t)(f_.fake_cuda_calls(v().mem_map) - maps0))
        << "one num_device_alloc per map";
    EXPECT_EQ(f2.device_used[0], f0.device_used[0]);
    EXPECT_EQ(f2.live_host_blocks, 2u) << "the two weights' pinned blocks, kept for the next sleep";
    EXPECT_EQ(w.bytes_host_cached, z.bytes_offloaded);
    EXPECT_GE(f2.copied_h2d_bytes, kWBig + kWSmall);
    ExpectWeightsExact(t); // through the pointers taken before the sleep
    EXPECT_EQ((unsigned char)t.kv[0], FAKE_GPU_GARBAGE) << "kv was discarded: new memory, not its old bytes";
    EXPECT_EQ(Mismatch(t.plain, kPlain, kPlainSeed), -1);
    char *more = TagAlloc(a_, "weights", 1000); // awake: the tag allocates again
    EXPECT_NE(more, nullptr);
    if (more != nullptr)
        Free(more);
    FreeTagged(a_, t);
}

TEST_P(Sleep, OffloadAndWakeOnPlainSegments)
{
    RoundTrip("");
}

TEST_P(Sleep, OffloadAndWakeOnExpandableSegments)
{
    RoundTrip("expandable_segments:True");
}

// Pinned memory refused: the offloaded tag cannot sleep without losing its
// bytes, so it stays awake and intact; the retry then succeeds.
TEST_P(Sleep, RefusedPinnedMemoryKeepsTheTagAwake)
{
    Make();
    Tagged t;
    ASSERT_NO_FATAL_FAILURE(MakeTagged(a_, &t));
    int64_t reserved = Stats().reserved_bytes[ALL].current;
    ASSERT_EQ(f_.fake_cuda_fail(v().host_alloc, 0, 1, kOutOfMemory), 0);
    EXPECT_EQ(galloc_sleep(a_, "weights", "weights"), GALLOC_E_NOMEM);
    EXPECT_NE(LastError(a_).find("\"weights\""), std::string::npos) << LastError(a_);
    EXPECT_EQ(Asleep(a_, "weights"), 0);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, reserved);
    EXPECT_EQ(f_.Stats().live_host_blocks, 0u);
    EXPECT_EQ(SleepStats(a_).num_failed, 1u);
    ExpectWeightsExact(t);
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(galloc_sleep(a_, "weights", "weights"), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_wake(a_, "weights"), GALLOC_OK) << LastError(a_);
    ExpectWeightsExact(t);
    FreeTagged(a_, t);
}

// A device without the memory on wake: OOM, the tags stay asleep with every
// offloaded byte held, and a later wake restores them.
TEST_P(Sleep, AWakeWithoutDeviceMemoryStaysAsleep)
{
    Make("expandable_segments:True");
    Tagged t;
    ASSERT_NO_FATAL_FAILURE(MakeTagged(a_, &t));
    ASSERT_EQ(galloc_sleep(a_, "weights,kv", "weights"), GALLOC_OK) << LastError(a_);
    uint64_t offloaded = SleepStats(a_).bytes_offloaded;
    uint64_t handles = f_.Stats().live_handles; // the untagged block's page
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_create, 0, 1, kOutOfMemory), 0);
    EXPECT_EQ(galloc_wake(a_, "weights"), GALLOC_E_OOM);
    EXPECT_FALSE(LastError(a_).empty());
    EXPECT_EQ(Asleep(a_, "weights"), 1);
    EXPECT_EQ(SleepStats(a_).bytes_offloaded, offloaded) << "nothing lost";
    EXPECT_EQ(f_.Stats().live_handles, handles) << "nothing half-mapped is left";
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError(a_);
    ExpectWeightsExact(t);
    FreeTagged(a_, t);
}

// Freeing a sleeping block is allowed: its copy is dropped, it is free on wake.
TEST_P(Sleep, AFreeWhileAsleepDropsTheCopy)
{
    Make();
    Tagged t;
    ASSERT_NO_FATAL_FAILURE(MakeTagged(a_, &t));
    ASSERT_EQ(galloc_sleep(a_, "weights", "weights"), GALLOC_OK) << LastError(a_);
    uint64_t offloaded = SleepStats(a_).bytes_offloaded;
    Free(t.w_big);
    t.w_big = nullptr;
    EXPECT_LE(SleepStats(a_).bytes_offloaded, offloaded - kWBig);
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(Mismatch(t.w_small, kWSmall, kWSmallSeed), -1);
    EXPECT_EQ(f_.Stats().live_host_blocks, 2u) << "both pinned blocks kept: the freed one's and the woken one's";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.Stats().live_host_blocks, 0u) << "empty_cache gives them back";
    FreeTagged(a_, t);
}

// A library without cuMemHostAlloc / hipHostMalloc: a tag with nothing to
// offload sleeps; one to offload is refused and stays awake and intact, and
// sleeps when its contents are discarded.
TEST_P(SleepPlain, WithoutPinnedMemoryOnlyDiscardingSleeps)
{
    FakeCuda f(v().Fake("_nohost"), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f).c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    Tagged t;
    MakeTagged(a, &t);
    if (HasFatalFailure()) {
        galloc_allocator_destroy(a);
        return;
    }
    EXPECT_EQ(galloc_sleep(a, "kv", "weights"), GALLOC_OK) << LastError(a);
    // The backend's own status (E_UNSUPPORTED: the library has no pinned
    // memory) and its reason, naming the missing symbol; nothing was done.
    EXPECT_EQ(galloc_sleep(a, "weights", "weights"), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(LastError(a).find("\"weights\""), std::string::npos) << LastError(a);
    EXPECT_NE(LastError(a).find(v().host_alloc), std::string::npos) << LastError(a);
    EXPECT_EQ(Asleep(a, "weights"), 0);
    ExpectWeightsExact(t);
    // Discarding needs no host memory: offload_tags NULL is none.
    EXPECT_EQ(galloc_sleep(a, "weights", nullptr), GALLOC_OK) << LastError(a);
    EXPECT_EQ(Asleep(a, "weights"), 1);
    EXPECT_EQ(galloc_wake(a, nullptr), GALLOC_OK) << LastError(a);
    EXPECT_EQ((unsigned char)t.w_big[0], FAKE_GPU_GARBAGE) << "discarded: new memory";
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
    EXPECT_EQ(f.fake_cuda_calls(v().copy_d2h), 0u);
    FreeTagged(a, t);
    galloc_allocator_destroy(a);
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

namespace {

// One run of a sweep: the k-th driver call inside sleep (or wake) fails with
// code, or (from) every call from the k-th on until it returns. Returns
// whether a fault was injected (false: the call ran clean).
bool SweepRun(FakeCuda &f, const std::string &conf, bool in_wake, uint64_t k, int code, bool from)
{
    f.fake_cuda_reset();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, conf.c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    if (a == nullptr)
        return false;
    Tagged t;
    MakeTagged(a, &t);
    if (::testing::Test::HasFatalFailure()) {
        galloc_allocator_destroy(a);
        return false;
    }
    int64_t reserved = Stats(a).reserved_bytes[ALL].current;
    if (in_wake) {
        EXPECT_EQ(galloc_sleep(a, "weights,kv", "weights"), GALLOC_OK) << LastError(a);
    }
    f.fake_cuda_fail("*", from ? 0 : k, from ? k : 0, code);
    galloc_status_t st = in_wake ? galloc_wake(a, nullptr) : galloc_sleep(a, "weights,kv", "weights");
    bool faulted = f.Stats().faults > 0;
    f.fake_cuda_fail_clear();
    if (st != GALLOC_OK) {
        EXPECT_TRUE(st == GALLOC_E_DEVICE || st == GALLOC_E_NOMEM || st == GALLOC_E_OOM) << galloc_status_name(st);
        EXPECT_FALSE(LastError(a).empty());
    }
    if (!faulted) {
        EXPECT_EQ(st, GALLOC_OK) << LastError(a);
    }
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
    // Each tag fully awake (contents intact) or fully asleep (refused, bytes held).
    if (Asleep(a, "weights") == 0) {
        ExpectWeightsExact(t);
    } else {
        ExpectRefused(a, "weights");
        EXPECT_GE(SleepStats(a).bytes_offloaded, kWBig + kWSmall) << "every offloaded byte still held";
    }
    if (Asleep(a, "kv") == 0 && !in_wake) {
        EXPECT_EQ(Mismatch(t.kv, kKv, kKvSeed), -1) << "kv stayed awake: intact";
    } else if (Asleep(a, "kv") == 1)
        ExpectRefused(a, "kv");
    EXPECT_EQ(Mismatch(t.plain, kPlain, kPlainSeed), -1);
    // Then the pair completes, and the offloaded bytes survive it exactly.
    if (!in_wake) {
        EXPECT_EQ(galloc_sleep(a, "weights,kv", "weights"), GALLOC_OK) << LastError(a);
    }
    EXPECT_EQ(galloc_wake(a, nullptr), GALLOC_OK) << LastError(a);
    ExpectWeightsExact(t);
    EXPECT_EQ(Stats(a).reserved_bytes[ALL].current, reserved);
    galloc_sleep_stats_t z = SleepStats(a);
    EXPECT_EQ(z.tags_asleep, 0u);
    EXPECT_EQ(z.bytes_offloaded, 0u);
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
    FreeTagged(a, t);
    galloc_allocator_destroy(a);
    fake_gpu_stats_t fs = f.Stats();
    EXPECT_EQ(fs.leaks, 0u);
    EXPECT_EQ(fs.live_host_blocks, 0u);
    EXPECT_EQ(fs.violations, 0u) << f.Violation();
    return faulted;
}

// Runs k = 1, 2, ... until the call runs clean; returns the faulted runs.
// from: every call from the k-th on fails (a device that stays broken: the
// undo paths' own calls fail too).
uint64_t SweepCalls(FakeCuda &f, const std::string &conf, bool in_wake, int code, bool from = false)
{
    uint64_t k = 1;
    for (; k < 10000; k++) {
        SCOPED_TRACE(std::string(in_wake ? "wake" : "sleep") +
                     (from ? ": failing every driver call from #" : ": failing its driver call #") + std::to_string(k) +
                     " with " + std::to_string(code));
        if (!SweepRun(f, conf, in_wake, k, code, from) || ::testing::Test::HasFailure())
            break;
    }
    return k - 1;
}

} // namespace

TEST_P(SleepPlain, EveryDriverCallInsideSleepFailingOnce)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    for (const char *extra : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(extra);
        uint64_t runs = SweepCalls(f, CudaConf(f, extra), false, kUnknown);
        EXPECT_GE(runs, 10u) << "sleep with offload makes copies, unmaps and releases";
        RecordProperty(std::string("sleep_calls_failed") + (*extra ? "_expandable" : ""), (int)runs);
    }
}

TEST_P(SleepPlain, EveryDriverCallInsideWakeFailingOnce)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    for (const char *extra : {"", "expandable_segments:True"}) {
        for (int code : {kUnknown, kOutOfMemory}) {
            SCOPED_TRACE(extra);
            uint64_t runs = SweepCalls(f, CudaConf(f, extra), true, code);
            EXPECT_GE(runs, 10u) << "wake creates, maps, sets access and copies back";
        }
    }
}

// A device that stays broken from the k-th call on: the undo paths fail too,
// and still each tag ends whole, nothing leaks, and a later pair succeeds.
TEST_P(SleepPlain, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    for (const char *extra : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(extra);
        EXPECT_GE(SweepCalls(f, CudaConf(f, extra), false, kUnknown, true), 10u);
        EXPECT_GE(SweepCalls(f, CudaConf(f, extra), true, kUnknown, true), 10u);
    }
}

} // namespace cuda_test

namespace cuda_test {

// galloc_sleep_prepare on the driver: it pins what the sleep will copy into
// (one block per offloaded block, none for the discarded tag), leaves device
// memory and copies alone, and the sleep after it pins nothing.
TEST_P(Sleep, APreparedSleepPinsNothing)
{
    Make();
    Tagged t;
    ASSERT_NO_FATAL_FAILURE(MakeTagged(a_, &t));
    fake_gpu_stats_t f0 = f_.Stats();
    uint64_t pins0 = f_.fake_cuda_calls(v().host_alloc);
    ASSERT_EQ(galloc_sleep_prepare(a_, "weights,kv", "weights"), GALLOC_OK) << LastError(a_);
    fake_gpu_stats_t f1 = f_.Stats();
    EXPECT_EQ(f_.fake_cuda_calls(v().host_alloc) - pins0, 2u);
    EXPECT_EQ(f1.live_host_blocks, 2u);
    EXPECT_EQ(f1.device_used[0], f0.device_used[0]);
    EXPECT_EQ(f1.copied_d2h_bytes, f0.copied_d2h_bytes);
    EXPECT_EQ(SleepStats(a_).bytes_host_cached, f1.live_host_bytes);
    ASSERT_EQ(galloc_sleep(a_, "weights,kv", "weights"), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls(v().host_alloc) - pins0, 2u) << "the sleep pinned nothing";
    EXPECT_EQ(SleepStats(a_).bytes_host_cached, 0u);
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError(a_);
    ExpectWeightsExact(t);
    FreeTagged(a_, t);
}

namespace {

// One run of the prepare sweep: the k-th driver call inside
// galloc_sleep_prepare fails (or every call from the k-th on). The call fails
// cleanly with nothing pinned left in the store; then a prepare, a sleep that
// pins nothing and a wake restore the weights; nothing leaks.
bool PrepareRun(FakeCuda &f, const std::string &conf, uint64_t k, bool from, const char *host_alloc)
{
    f.fake_cuda_reset();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, conf.c_str(), &a, err, sizeof err), GALLOC_OK) << err;
    if (a == nullptr)
        return false;
    Tagged t;
    MakeTagged(a, &t);
    f.fake_cuda_fail("*", from ? 0 : k, from ? k : 0, kUnknown);
    galloc_status_t st = galloc_sleep_prepare(a, "weights,kv", "weights");
    bool faulted = f.Stats().faults > 0;
    f.fake_cuda_fail_clear();
    if (st != GALLOC_OK) { // a fault galloc tolerates (restoring the context) fails nothing
        EXPECT_TRUE(st == GALLOC_E_NOMEM || st == GALLOC_E_DEVICE) << galloc_status_name(st);
        EXPECT_NE(LastError(a).find("sleep_prepare: tag \"weights\""), std::string::npos) << LastError(a);
        EXPECT_EQ(SleepStats(a).bytes_host_cached, 0u) << "what it pinned was given back";
    }
    if (!faulted) {
        EXPECT_EQ(st, GALLOC_OK) << LastError(a);
    }
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
    EXPECT_EQ(Asleep(a, "weights"), 0);
    ExpectWeightsExact(t);
    EXPECT_EQ(galloc_sleep_prepare(a, "weights,kv", "weights"), GALLOC_OK) << LastError(a);
    uint64_t pins = f.fake_cuda_calls(host_alloc);
    EXPECT_EQ(galloc_sleep(a, "weights,kv", "weights"), GALLOC_OK) << LastError(a);
    EXPECT_EQ(f.fake_cuda_calls(host_alloc), pins);
    EXPECT_EQ(galloc_wake(a, nullptr), GALLOC_OK) << LastError(a);
    ExpectWeightsExact(t);
    EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
    FreeTagged(a, t);
    galloc_allocator_destroy(a);
    fake_gpu_stats_t fs = f.Stats();
    EXPECT_EQ(fs.leaks, 0u);
    EXPECT_EQ(fs.live_host_blocks, 0u);
    EXPECT_EQ(fs.violations, 0u) << f.Violation();
    return faulted;
}

} // namespace

TEST_P(SleepPlain, EveryDriverCallInsidePrepare)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    for (bool from : {false, true}) {
        uint64_t k = 1;
        for (; k < 100; k++) {
            SCOPED_TRACE(std::string(from ? "failing every driver call from #" : "failing driver call #") +
                         std::to_string(k) + " of the prepare");
            if (!PrepareRun(f, CudaConf(f), k, from, v().host_alloc) || ::testing::Test::HasFailure())
                break;
        }
        EXPECT_GE(k - 1, 2u) << "two pins at least";
    }
}

} // namespace cuda_test
