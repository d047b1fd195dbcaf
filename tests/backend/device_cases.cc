// device_cases: the CUDA suites that run on the real driver and on the fake
// standing in for it (device_fixture.h), for the three allocator layers:
// the backend conformance suite (conformance.cc), the layers' figures and
// bytes, streams and events, a device OOM, sleep / wake and device-memory hooks. Instantiated by
// cuda_device_gpu_test.cc (libcuda.so.1, tagged gpu) and
// cuda_device_fake_test.cc (the fake, in CI).
//
// Suites: Backend (per driver), Device (every layer), Pool (the caching pool:
// native and expandable segments), DriverPool (backend:cudaMallocAsync).
// Figures are PyTorch's where both layers of the caching pool produce them
// exactly (the sim and fake suites assert the same); the driver pool's are
// the driver's own, so only their relations are asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/backend/conformance.h"
#include "tests/backend/device_fixture.h"
#include "tests/util/hook_ledger.h"

extern "C" {
#include <galloc/galloc_sleep.h>
}

namespace device_test {

// Device memory the real driver may take for itself between two readings of
// cuMemGetInfo (staging for copies, pinning host memory: 2 MiB per GiB on an
// H200), allowed wherever free memory is compared.
constexpr size_t kSlack = 8 * kMiB;

TEST_P(Backend, Conformance)
{
    DriverHandle d(GetParam());
    if (d.fake()) {
        ASSERT_TRUE(d.f().ok()) << d.f().error();
    }
    galloc_backend_args_t args = {};
    args.struct_size = sizeof args;
    args.options = d.options().c_str();
    ga_test_backend_conformance("cuda", args); // skips when the driver is missing
    if (d.fake()) {
        EXPECT_EQ(d.f().Stats().leaks, 0u);
    }
}

TEST_P(Device, OneByte)
{
    void *p = Alloc(1);
    ASSERT_NE(p, nullptr);
    Write(p, 1, 1);
    EXPECT_EQ(Mismatch(p, 1, 1), -1);
    galloc_stats_t st = Stats();
    if (caching()) {
        EXPECT_EQ(st.allocated_bytes[ALL].current, 512);
        EXPECT_EQ(st.requested_bytes[ALL].current, 1);
        EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * kMiB)) << "one 2 MiB segment or page";
        EXPECT_EQ(st.num_device_alloc, 1);
        EXPECT_EQ(st.segment[SMALL].current, layer() == Layer::kNative ? 1 : 0) << "expandable: no segment count";
    } else {
        EXPECT_GE(st.allocated_bytes[ALL].current, 1) << "the driver pool's used memory";
        EXPECT_GE(st.reserved_bytes[ALL].current, st.allocated_bytes[ALL].current);
        EXPECT_EQ(st.num_device_alloc, 0) << "native-only counters stay 0";
    }
    Free(p);
    ASSERT_EQ(galloc_stream_synchronize(a_, 0), GALLOC_OK) << LastError();
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    EXPECT_GT(st.reserved_bytes[ALL].current, 0) << "cached";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    if (caching()) {
        EXPECT_EQ(st.num_device_free, 1);
        EXPECT_EQ(st.num_sync_all_streams, 1);
    }
}

TEST_P(Device, SegmentSizesAsPyTorch)
{
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    char *b = static_cast<char *>(Alloc(30 * kMiB)); // >= 10 MiB: rounded to 2 MiB, exactly 30 MiB
    ASSERT_TRUE(a != nullptr && b != nullptr);
    galloc_stats_t st = Stats();
    switch (layer()) {
    case Layer::kNative: // a 20 MiB segment (kLargeBuffer) for a, one of 30 MiB for b
        EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(50 * kMiB));
        EXPECT_EQ(st.segment[LARGE].current, 2);
        break;
    case Layer::kExpandable: // 20 MiB pages: b takes the 15 MiB after a and one more page
        EXPECT_EQ(b, a + 5 * kMiB);
        EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(40 * kMiB));
        EXPECT_EQ(st.num_device_alloc, 2);
        break;
    case Layer::kAsync: EXPECT_GE(st.reserved_bytes[ALL].current, (int64_t)(35 * kMiB)); break;
    }
    if (caching()) {
        EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(35 * kMiB));
    } else {
        EXPECT_GE(st.allocated_bytes[ALL].current, (int64_t)(35 * kMiB));
    }
    Write(b, 30 * kMiB, 2); // across the page boundary of an expandable segment
    Write(a, 5 * kMiB, 3);
    EXPECT_EQ(Mismatch(b, 30 * kMiB, 2), -1);
    EXPECT_EQ(Mismatch(a, 5 * kMiB, 3), -1);
    Free(a);
    Free(b);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
}

TEST_P(Device, BytesSurviveAndBlocksDoNotOverlap)
{
    size_t free0 = FreeBytes();
    const size_t sizes[] = {1, 512, 4096, 1 * kMiB, 1 * kMiB + 1, 3 * kMiB, 12 * kMiB, 700, 2 * kMiB, 24 * kMiB};
    std::vector<std::pair<char *, size_t>> blocks;
    int64_t rounded = 0;
    for (size_t n : sizes) {
        blocks.emplace_back(static_cast<char *>(Alloc(n)), n);
        ASSERT_NE(blocks.back().first, nullptr);
        rounded += (int64_t)((n + 511) / 512 * 512);
    }
    for (size_t i = 0; i < blocks.size(); i++)
        Write(blocks[i].first, blocks[i].second, (unsigned)(10 + i));
    for (size_t i = 0; i < blocks.size(); i++)
        EXPECT_EQ(Mismatch(blocks[i].first, blocks[i].second, (unsigned)(10 + i)), -1)
            << "block " << i << " was overwritten by a neighbour";
    std::vector<std::pair<char *, size_t>> sorted = blocks;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 1; i < sorted.size(); i++)
        EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first) << "blocks overlap";
    galloc_stats_t st = Stats();
    if (caching()) {
        EXPECT_EQ(st.allocated_bytes[ALL].current, rounded);
        EXPECT_EQ(st.allocation[ALL].current, (int64_t)blocks.size());
    } else {
        EXPECT_GE(st.allocated_bytes[ALL].current, rounded - 512 * (int64_t)blocks.size());
    }
    EXPECT_LE(FreeBytes() + (size_t)st.reserved_bytes[ALL].current, free0 + kSlack)
        << "cuMemGetInfo: the device lost at least what galloc reserved";
    for (auto &b : blocks)
        Free(b.first);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    EXPECT_GE(FreeBytes() + kSlack, free0) << "and got it back";
}

// ---- Streams and events. ----

// A free recorded on another stream waits for an event on that stream: the
// block stays active (not reused) until the stream has done the work queued
// before the free; the next malloc polls the event and reuses the block.
TEST_P(Pool, ACrossStreamFreeWaitsForItsEvent)
{
    uintptr_t s1 = d_->NewStream();
    ASSERT_NE(s1, 0u);
    void *a = Alloc(4096);
    ASSERT_EQ(galloc_record_stream(a_, a, s1), GALLOC_OK) << LastError();
    d_->Hold(s1);
    Free(a);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 0);
    EXPECT_EQ(st.active[ALL].current, 1) << "active until the event on s1 completes";
    void *b = Alloc(4096);
    EXPECT_NE(b, a);
    d_->Release(s1);
    void *c = Alloc(4096); // polls the event and reuses a
    EXPECT_EQ(c, a);
    EXPECT_EQ(Stats().active[ALL].current, 2);
    EXPECT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK) << LastError();
    Free(b);
    Free(c);
}

// Blocks are cached per stream (PyTorch's pools are keyed by stream): a block
// freed on s1 serves s1 again, never s2.
TEST_P(Pool, BlocksAreCachedPerStream)
{
    uintptr_t s1 = d_->NewStream(), s2 = d_->NewStream();
    ASSERT_TRUE(s1 != 0 && s2 != 0);
    void *a = Alloc(1 * kMiB, s1);
    Write(a, 1 * kMiB, 4);
    Free(a);
    void *b = Alloc(1 * kMiB, s2);
    EXPECT_NE(b, a) << "s1's cached block is not s2's";
    EXPECT_EQ(Stats().num_device_alloc, 2) << "a segment or page for each stream";
    void *c = Alloc(1 * kMiB, s1);
    EXPECT_EQ(c, a);
    EXPECT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK) << LastError();
    EXPECT_EQ(galloc_stream_synchronize(a_, s2), GALLOC_OK) << LastError();
    Free(b);
    Free(c);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
}

// The driver's pool frees on the creation stream after waiting on the host
// for every other stream recorded.
TEST_P(DriverPool, RecordedStreamsAreWaitedForBeforeTheFree)
{
    uintptr_t s1 = d_->NewStream(), s2 = d_->NewStream();
    ASSERT_TRUE(s1 != 0 && s2 != 0);
    void *a = Alloc(4096, s1);
    ASSERT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK) << "the allocation is ordered on s1: wait before copying";
    Write(a, 4096, 5);
    ASSERT_EQ(galloc_record_stream(a_, a, s1), GALLOC_OK) << "the creation stream: no effect";
    ASSERT_EQ(galloc_record_stream(a_, a, s2), GALLOC_OK) << LastError();
    Free(a);
    ASSERT_EQ(galloc_stream_synchronize(a_, s1), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, 0);
    void *p = reinterpret_cast<void *>(0x1234);
    EXPECT_EQ(galloc_record_stream(a_, p, s1), GALLOC_E_NOT_OWNED);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
}

// ---- Out of memory: a real refusal by the driver. ----

namespace {

size_t RoundUp(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

// More than the device has free, cache included, and less than the virtual
// range an expandable segment reserves (1 1/8 of the device).
size_t TooMuch(size_t free_bytes, size_t cached, size_t total)
{
    return RoundUp(free_bytes + cached + std::max(total / 16, 64 * kMiB), 20 * kMiB);
}

} // namespace

// With blocks cached, a request bigger than the device's free memory: the
// driver refuses, galloc frees its cache, retries once, and reports PyTorch's
// message; the cache is empty afterwards and the pool works on.
TEST_P(Pool, ADeviceOomFreesTheCacheRetriesAndReportsPyTorchsMessage)
{
    void *x = Alloc(30 * kMiB), *y = Alloc(50 * kMiB);
    Free(x);
    Free(y);
    galloc_stats_t s0 = Stats();
    const int64_t cached = s0.reserved_bytes[ALL].current;
    EXPECT_EQ(cached, (int64_t)(80 * kMiB));
    size_t total = 0, free_bytes = FreeBytes(&total);
    const size_t want = TooMuch(free_bytes, (size_t)cached, total);
    void *p = reinterpret_cast<void *>(1);
    ASSERT_EQ(galloc_malloc(a_, want, 0, &p), GALLOC_E_OOM) << want << " bytes of " << total;
    EXPECT_EQ(p, nullptr);
    const std::string e = LastError();
    const std::string head = "CUDA out of memory. Tried to allocate " + FormatSize(want) +
                             ". GPU 0 has a total capacity of " + FormatSize(total) + " of which ";
    EXPECT_EQ(e.rfind(head, 0), 0u) << e;
    const std::string tail = " is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is "
                             "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
                             "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
    EXPECT_NE(e.find(tail), std::string::npos) << e;
    if (fake()) { // on an idle device: the free figure is the driver's after the cache went back
        EXPECT_EQ(e.find(head + FormatSize(FreeBytes()) + tail), 0u) << e;
    }
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, s0.num_ooms + 1);
    EXPECT_EQ(st.num_alloc_retries, s0.num_alloc_retries + 1) << "the cache was freed and the request retried";
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0) << "the cache is empty";
    EXPECT_EQ(st.segment[ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    if (layer() == Layer::kNative) {
        EXPECT_EQ(st.num_device_free - s0.num_device_free, 2) << "both cached segments were freed";
    } else {
        EXPECT_GE(st.num_device_free - s0.num_device_free, 1) << "the cached pages were unmapped";
    }
    EXPECT_GE(FreeBytes() + kSlack, free_bytes + (size_t)cached) << "the device got the cache back";
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError();
    void *q = Alloc(1 * kMiB); // and the pool works on
    Write(q, 1 * kMiB, 6);
    EXPECT_EQ(Mismatch(q, 1 * kMiB, 6), -1);
    Free(q);
}

// The driver's pool: PyTorch's mallocAsync report (no memory fraction set:
// the limit is UINT64_MAX bytes, printed as c10's format_size prints it).
TEST_P(DriverPool, ADeviceOomIsReportedInMallocAsyncsWords)
{
    Free(Alloc(30 * kMiB)); // kept by the pool's raised release threshold
    const int64_t cached = Stats().reserved_bytes[ALL].current;
    EXPECT_GE(cached, (int64_t)(30 * kMiB));
    size_t total = 0, free_bytes = FreeBytes(&total);
    const size_t want = TooMuch(free_bytes, (size_t)cached, total);
    void *p = reinterpret_cast<void *>(1);
    ASSERT_EQ(galloc_malloc(a_, want, 0, &p), GALLOC_E_OOM) << want << " bytes of " << total;
    EXPECT_EQ(p, nullptr);
    const std::string e = LastError();
    EXPECT_EQ(e.rfind("Allocation on device 0 would exceed allowed memory. (out of memory)\n"
                      "Currently allocated     : 0 bytes\n"
                      "Requested               : " +
                          FormatSize(want) +
                          "\n"
                          "Device limit            : " +
                          FormatSize(total) + "\nFree (according to CUDA): ",
                      0),
              0u)
        << e;
    EXPECT_NE(e.find("\nPyTorch limit (set by user-supplied memory fraction)\n                        : "
                     "17179869184.00 GiB"),
              std::string::npos)
        << e;
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0) << "empty_cache trims the pool";
    void *q = Alloc(1 * kMiB);
    Write(q, 1 * kMiB, 6);
    EXPECT_EQ(Mismatch(q, 1 * kMiB, 6), -1);
    Free(q);
}

// ---- Sleep and wake. ----

namespace {

constexpr size_t kWBig = 5 * kMiB + 4096 * 3, kWSmall = 3000, kKv = 3 * kMiB, kPlain = 1 * kMiB;

galloc_sleep_stats_t SleepStats(galloc_allocator_t *a)
{
    galloc_sleep_stats_t z = {};
    EXPECT_EQ(galloc_sleep_stats(a, &z), GALLOC_OK);
    return z;
}

char *TagAlloc(galloc_allocator_t *a, const char *tag, size_t n)
{
    void *p = nullptr;
    EXPECT_EQ(galloc_tag_begin(a, tag), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a, n, 0, &p), GALLOC_OK) << tag;
    EXPECT_EQ(galloc_tag_end(a, tag), GALLOC_OK);
    return static_cast<char *>(p);
}

} // namespace

// Tag "weights" offloaded, tag "kv" discarded, an untagged block left awake:
// the slept pages go back to the device (cuMemGetInfo), the offloaded bytes
// come back exactly at the same addresses, and the tags allocate again.
TEST_P(Pool, SleepOffloadsAndDiscardsAndWakeRestores)
{
    char *w_big = TagAlloc(a_, "weights", kWBig), *w_small = TagAlloc(a_, "weights", kWSmall);
    char *kv = TagAlloc(a_, "kv", kKv);
    char *plain = static_cast<char *>(Alloc(kPlain));
    ASSERT_TRUE(w_big && w_small && kv && plain);
    Write(w_big, kWBig, 21);
    Write(w_small, kWSmall, 22);
    Write(kv, kKv, 23);
    Write(plain, kPlain, 24);
    galloc_stats_t s0 = Stats();
    size_t free0 = FreeBytes();

    ASSERT_EQ(galloc_sleep(a_, "weights,kv", "weights"), GALLOC_OK) << LastError();
    galloc_sleep_stats_t z = SleepStats(a_);
    galloc_stats_t s1 = Stats();
    EXPECT_EQ(z.tags, 2u);
    EXPECT_EQ(z.tags_asleep, 2u);
    EXPECT_EQ(z.num_sleep, 1u);
    EXPECT_GE(z.bytes_asleep, kWBig + kWSmall + kKv) << "every tagged block's pages went";
    EXPECT_GE(z.bytes_offloaded, kWBig + kWSmall);
    EXPECT_EQ(s0.reserved_bytes[ALL].current - s1.reserved_bytes[ALL].current, (int64_t)z.bytes_asleep);
    EXPECT_EQ(s1.allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current) << "the tensors still exist";
    EXPECT_GE(FreeBytes() + kSlack, free0 + z.bytes_asleep) << "cuMemGetInfo: the pages went back to the device";
    int asleep = -1;
    EXPECT_EQ(galloc_tag_asleep(a_, "weights", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 1);
    void *refused = nullptr;
    ASSERT_EQ(galloc_tag_begin(a_, "weights"), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a_, 4096, 0, &refused), GALLOC_E_ASLEEP);
    EXPECT_NE(LastError().find("weights"), std::string::npos) << LastError();
    ASSERT_EQ(galloc_tag_end(a_, "weights"), GALLOC_OK);
    EXPECT_EQ(Mismatch(plain, kPlain, 24), -1) << "an untagged block is not touched";

    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError();
    galloc_sleep_stats_t w = SleepStats(a_);
    EXPECT_EQ(w.tags_asleep, 0u);
    EXPECT_EQ(w.bytes_asleep, 0u);
    EXPECT_EQ(w.bytes_offloaded, 0u);
    EXPECT_EQ(w.num_wake, 1u);
    EXPECT_EQ(w.bytes_woken, z.bytes_asleep);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, s0.reserved_bytes[ALL].current);
    EXPECT_LE(FreeBytes(), free0 + kSlack) << "and came back";
    EXPECT_EQ(Mismatch(w_big, kWBig, 21), -1) << "the offloaded bytes came back exactly";
    EXPECT_EQ(Mismatch(w_small, kWSmall, 22), -1);
    EXPECT_EQ(Mismatch(plain, kPlain, 24), -1);
    Write(kv, kKv, 25); // discarded: undefined contents, but the pages are there
    EXPECT_EQ(Mismatch(kv, kKv, 25), -1);
    Free(w_big);
    char *again = TagAlloc(a_, "weights", kWBig); // the same addresses serve the tag again
    EXPECT_EQ(again, w_big);
    Free(again);
    Free(w_small);
    Free(kv);
    Free(plain);
}

// Freeing a sleeping block is allowed: its copy is dropped, it is free on
// wake; the pinned blocks kept by the wake go back with empty_cache.
TEST_P(Pool, AFreeWhileAsleepDropsTheCopy)
{
    char *w_big = TagAlloc(a_, "weights", kWBig), *w_small = TagAlloc(a_, "weights", kWSmall);
    ASSERT_TRUE(w_big && w_small);
    Write(w_big, kWBig, 31);
    Write(w_small, kWSmall, 32);
    ASSERT_EQ(galloc_sleep(a_, "weights", "weights"), GALLOC_OK) << LastError();
    uint64_t offloaded = SleepStats(a_).bytes_offloaded;
    Free(w_big);
    EXPECT_LE(SleepStats(a_).bytes_offloaded, offloaded - kWBig);
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError();
    EXPECT_EQ(Mismatch(w_small, kWSmall, 32), -1);
    EXPECT_GT(SleepStats(a_).bytes_host_cached, 0u) << "pinned blocks kept for the next sleep";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(SleepStats(a_).bytes_host_cached, 0u) << "empty_cache gives them back";
    Free(w_small);
}

// Device-memory hooks (galloc_hooks.h) on the driver: every range told is
// device memory the driver made (a copy into its last bytes succeeds), the
// ledger follows reserved_bytes, empty_cache tells it all away, a refused
// segment goes straight back to the driver, and an OOM is told with its
// figures (under a memory fraction: nothing is asked of the device).
TEST_P(Pool, HooksSeeEverySegmentAndPageTheDriverMakes)
{
    hook_test::Ledger l;
    ASSERT_EQ(l.Add(a_), GALLOC_OK) << LastError();
    void *p = Alloc(5 * kMiB), *q = Alloc(30 * kMiB), *s = Alloc(1);
    EXPECT_EQ(l.Bytes(), Stats().reserved_bytes[ALL].current);
    EXPECT_EQ(l.errors(), "");
    const bool pages = layer() == Layer::kExpandable;
    auto added = l.Of(pages ? GALLOC_HOOK_SEGMENT_MAP : GALLOC_HOOK_SEGMENT_ALLOC);
    ASSERT_EQ(added.size(), 3u) << "native: three segments; expandable: two large pages and a small one";
    EXPECT_EQ(l.events().size(), 3u);
    EXPECT_EQ(added[0].addr, (uintptr_t)p);
    EXPECT_EQ(added[0].size, 20 * kMiB);
    EXPECT_EQ(added[1].addr, pages ? (uintptr_t)p + 20 * kMiB : (uintptr_t)q);
    EXPECT_EQ(added[1].size, pages ? 20 * kMiB : 30 * kMiB);
    EXPECT_EQ(added[2].addr, (uintptr_t)s);
    EXPECT_EQ(added[2].size, 2 * kMiB);
    for (const auto &e : added) { // the last 4 KiB of every range told is the driver's memory
        void *end = reinterpret_cast<void *>(e.addr + e.size - 4096);
        Write(end, 4096, 11);
        EXPECT_EQ(Mismatch(end, 4096, 11), -1) << hook_test::Describe(e);
    }
    Free(p);
    Free(q);
    Free(s);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    EXPECT_EQ(l.Bytes(), 0);
    EXPECT_EQ(l.Of(pages ? GALLOC_HOOK_SEGMENT_UNMAP : GALLOC_HOOK_SEGMENT_FREE).size(), 3u);
    // A refused segment goes back to the driver at once.
    size_t free_before = FreeBytes();
    l.RefuseAll(true);
    void *r = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 50 * kMiB, 0, &r), GALLOC_E_HOOK);
    EXPECT_EQ(r, nullptr);
    EXPECT_NE(LastError().find("refused"), std::string::npos) << LastError();
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    EXPECT_GE(FreeBytes() + kSlack, free_before) << "the driver has the memory back";
    l.RefuseAll(false);
    // An OOM under a memory fraction: told with the cap.
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.001), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a_, 200 * kMiB, 0, &r), GALLOC_E_OOM);
    ASSERT_EQ(l.events().back().kind, (uint32_t)GALLOC_HOOK_OOM);
    size_t total = 0;
    (void)FreeBytes(&total);
    EXPECT_EQ(l.events().back().oom_allowed, (size_t)(0.001 * (double)total));
    EXPECT_EQ(l.events().back().oom_device_total, total);
    EXPECT_EQ(l.errors(), "");
}

// The driver's pool owns its memory: hooks are not offered (PyTorch's
// cudaMallocAsync refuses attachAllocatorTraceTracker too).
TEST_P(DriverPool, HooksAreUnsupported)
{
    hook_test::Ledger l;
    EXPECT_EQ(l.Add(a_), GALLOC_E_UNSUPPORTED);
}

// The driver's pool has no tags: sleep is not offered, and says so.
TEST_P(DriverPool, SleepIsUnsupported)
{
    EXPECT_EQ(galloc_tag_begin(a_, "weights"), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_sleep(a_, "weights", "weights"), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_wake(a_, nullptr), GALLOC_E_UNSUPPORTED);
}

} // namespace device_test
