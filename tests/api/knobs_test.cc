// knobs_test: throw_on_cudamalloc_oom through the public API, on the sim
// device: where the refusal happens, what it counts (exact stats), what it
// does not do (no device call, no cache flush, no retry, no num_ooms), its
// message, and the observer's arguments and thread. Then the expandable
// segment reserve: the per-stream class, a request larger than its reserve,
// and the OOM message's reserve hints.
//
// PyTorch source followed (c10/cuda/CUDACachingAllocator.cpp, main as
// mirrored by cyyever/pytorch at 78f3d0d6; no line numbers in the stored copy):
//   DeviceCachingAllocator::alloc_block: num_alloc_retries on a retry, then the
//     allowed_memory_maximum check (an ordinary failure), then the
//     throw_on_cudamalloc_oom check: total_allocated_memory + alloc_size >
//     (size_t)(per_process_memory_fraction() * totalGlobalMem) ->
//     num_oom_rejections++, oom_rejection_info, no device call;
//   DeviceCachingAllocator::malloc: a refusal by the first alloc_block skips
//     the retry chain; a refused malloc skips num_ooms, the OOM trace entry and
//     the OOM observers, and dispatches the rejection observers
//     (device, alloc_size, total_allocated, device_total);
//   NativeCachingAllocator::malloc: OutOfMemoryError "CUDA out of memory.
//     Allocation was preemptively rejected because it would exceed
//     per_process_memory_fraction limit. Requested size: " + format_size(size).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr size_t MiB = 1 << 20, GiB = 1ull << 30;

struct Seen {
    int calls = 0;
    int device = -1;
    size_t alloc_size = 0, total_allocated = 0, device_total = 0;
    std::thread::id thread;
    galloc_allocator_t *a = nullptr;
    int64_t reserved_inside = -1; // read from inside the observer: the lock is not held
};

void Observe(void *ctx, int device, size_t alloc_size, size_t total_allocated, size_t device_total)
{
    Seen *s = static_cast<Seen *>(ctx);
    s->calls++;
    s->device = device;
    s->alloc_size = alloc_size;
    s->total_allocated = total_allocated;
    s->device_total = device_total;
    s->thread = std::this_thread::get_id();
    galloc_stats_t st;
    st.struct_size = sizeof st;
    if (galloc_memory_stats(s->a, &st) == GALLOC_OK)
        s->reserved_inside = st.reserved_bytes[GALLOC_STAT_ALL].current;
}

class Knobs : public ::testing::Test {
  protected:
    void Make(const char *conf)
    {
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create_ex("sim", 0, conf, GALLOC_CREATE_NO_ENV, &a_, err, sizeof err), GALLOC_OK)
            << err;
        seen_.a = a_;
        ASSERT_EQ(galloc_set_oom_rejection_observer(a_, Observe, &seen_), GALLOC_OK);
    }
    void TearDown() override
    {
        for (void *p : live_)
            EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
        if (a_ != nullptr) {
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError();
            galloc_allocator_destroy(a_);
        }
    }
    void *Alloc(size_t n)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, 0, &p), GALLOC_OK) << LastError();
        live_.push_back(p);
        return p;
    }
    void Free(void *p)
    {
        EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
        live_.erase(std::find(live_.begin(), live_.end(), p));
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
    Seen seen_;
    std::vector<void *> live_;
};

const char kRejected[] = "CUDA out of memory. Allocation was preemptively rejected because it would exceed "
                         "per_process_memory_fraction limit. Requested size: ";

// throw_on_cudamalloc_oom alone (fraction 1.0, no cap set): a segment that
// would take reserved memory past the device's total is refused before the
// device is asked, and the 1 GiB cached segment is NOT flushed to make room
// (no release_cached_blocks, so no num_sync_all_streams / num_device_free /
// num_alloc_retries).
TEST_F(Knobs, RefusedBeforeTheDeviceWithoutTheRetryChain)
{
    Make("sim_capacity:8GiB,throw_on_cudamalloc_oom:True");
    Alloc(6 * GiB);
    Free(Alloc(1 * GiB)); // cached, whole: the OOM path would have released it
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 3 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(LastError(), std::string(kRejected) + "3.00 GiB");
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_oom_rejections, 1);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_alloc_retries, 0);
    EXPECT_EQ(st.num_sync_all_streams, 0);
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.num_device_free, 0);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 2);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(7 * GiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(6 * GiB));
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].allocated, 2);
    // The observer: once, on this thread, with (device, alloc_size, total_allocated, device_total).
    EXPECT_EQ(seen_.calls, 1);
    EXPECT_EQ(seen_.device, 0);
    EXPECT_EQ(seen_.alloc_size, 3 * GiB);
    EXPECT_EQ(seen_.total_allocated, 7 * GiB);
    EXPECT_EQ(seen_.device_total, 8 * GiB);
    EXPECT_EQ(seen_.thread, std::this_thread::get_id());
    EXPECT_EQ(seen_.reserved_inside, (int64_t)(7 * GiB)); // it could call galloc on this allocator
    // A cached block still serves a request of its size: only new segments are checked.
    Alloc(1 * GiB);
    EXPECT_EQ(Stats().num_oom_rejections, 1);
    // reset_accumulated zeroes it (DeviceCachingAllocator::resetAccumulatedStats).
    ASSERT_EQ(galloc_stats_reset_accumulated(a_), GALLOC_OK);
    EXPECT_EQ(Stats().num_oom_rejections, 0);
}

// Without the key the same request takes PyTorch's ordinary path: the cache
// is flushed, the device refuses again, num_ooms counts it.
TEST_F(Knobs, WithoutTheKeyTheOrdinaryPath)
{
    Make("sim_capacity:8GiB");
    Alloc(6 * GiB);
    Free(Alloc(1 * GiB));
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 3 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(LastError().rfind("CUDA out of memory. Tried to allocate 3.00 GiB.", 0), 0u) << LastError();
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_oom_rejections, 0);
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(6 * GiB));
    EXPECT_EQ(seen_.calls, 0);
}

// With the configured fraction also capping the pool (applied at create, as
// DeviceCachingAllocator's constructor calls setMemoryFraction with
// CUDAAllocatorConfig::per_process_memory_fraction()), alloc_block's cap check
// comes first: the ordinary OOM path, "4.00 GiB allowed;", no rejection.
TEST_F(Knobs, TheCapChecksFirst)
{
    Make("sim_capacity:8GiB,per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True");
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 5 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(LastError().rfind("CUDA out of memory. Tried to allocate 5.00 GiB. GPU 0 has a total capacity of 8.00 "
                                "GiB of which 8.00 GiB is free. 4.00 GiB allowed; ",
                                0),
              0u)
        << LastError();
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_oom_rejections, 0);
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(seen_.calls, 0);
}

// A cap above the configured fraction (set_per_process_memory_fraction after
// start) passes the first check; the configured fraction then refuses.
// Equal is allowed (strictly greater refuses).
TEST_F(Knobs, ConfiguredFractionBelowTheCapRefuses)
{
    Make("sim_capacity:8GiB,per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True");
    ASSERT_EQ(galloc_set_memory_fraction(a_, 1.0), GALLOC_OK);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 5 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(LastError(), std::string(kRejected) + "5.00 GiB");
    EXPECT_EQ(seen_.calls, 1);
    EXPECT_EQ(seen_.alloc_size, 5 * GiB);
    EXPECT_EQ(seen_.total_allocated, 0u);
    EXPECT_EQ(seen_.device_total, 8 * GiB);
    Alloc(4 * GiB); // 0 + 4 GiB is not past 4 GiB
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_oom_rejections, 1);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_device_alloc, 1);
    // "Requested size" is the caller's bytes; the observer gets the segment size.
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_E_OOM); // a 2 MiB small segment: 4 GiB + 2 MiB > 4 GiB
    EXPECT_EQ(LastError(), std::string(kRejected) + "1 bytes");
    EXPECT_EQ(seen_.alloc_size, 2 * MiB);
    EXPECT_EQ(seen_.total_allocated, 4 * GiB);
    EXPECT_EQ(Stats().num_oom_rejections, 2);
}

// Only the native caching allocator refuses; the observer can be removed.
TEST_F(Knobs, ObserverReplacedAndRemoved)
{
    Make("sim_capacity:1GiB,throw_on_cudamalloc_oom:True");
    ASSERT_EQ(galloc_set_oom_rejection_observer(a_, nullptr, nullptr), GALLOC_OK);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 2 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(seen_.calls, 0);
    EXPECT_EQ(Stats().num_oom_rejections, 1);
    ASSERT_EQ(galloc_set_oom_rejection_observer(a_, Observe, &seen_), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a_, 2 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(seen_.calls, 1); // the earlier refusal is not reported late
    EXPECT_EQ(galloc_set_oom_rejection_observer(nullptr, Observe, &seen_), GALLOC_E_INVAL);
}

// ---- expandable_segments_reserve(_by_class) ----
//
// PyTorch source (c10/cuda/CUDACachingAllocator.cpp, as above):
//   ExpandableSegment's constructor: reserve = clamp_reserve_bytes(
//     expandable_segments_reserve_decision(class of the stream, totalGlobalMem),
//     total + total / 8); max_handles_ = numSegments(reserve) (whole pages);
//   find_expandable_block: a fresh segment smaller than the request is deleted
//     and no block returned ("fail the same way an exhausted device does");
//   DeviceCachingAllocator::malloc's OOM branch: with expandable_segments, if
//     alloc_size <= totalGlobalMem and the stream's reserve < alloc_size, the
//     "exceeds the expandable-segment reserve" sentence, else the VSZ hint;
//   CUDACachingAllocatorReserveDeviceTest: GlobalReserveUntaggedStream,
//     DownsizedReserveAllocLargerThanReserve, OversizedAllocNotifiesOomObserver.

// 0.05 of 8 GiB is 429496729 bytes (409.60 MiB); in 20 MiB pages the range is
// 21 pages, 420 MiB: a 415 MiB request fits, a 421 MiB one can never.
TEST_F(Knobs, GlobalReserveUntaggedStream)
{
    Make("sim_capacity:8GiB,expandable_segments:True,expandable_segments_reserve:0.05");
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 421 * MiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(LastError(), "CUDA out of memory. Tried to allocate 422.00 MiB. GPU 0 has a total capacity of 8.00 GiB "
                           "of which 8.00 GiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 "
                           "bytes is reserved by PyTorch but unallocated. This allocation exceeds the "
                           "expandable-segment reserve of 409.60 MiB for this stream, and a single allocation cannot "
                           "span expandable segments. Raise PYTORCH_CUDA_ALLOC_CONF expandable_segments_reserve or "
                           "expandable_segments_reserve_by_class (or unset it) so that a segment is at least 422.00 "
                           "MiB.");
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1); // the ordinary OOM path: observers, counter, release-and-retry
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_oom_rejections, 0);
    EXPECT_EQ(st.num_device_alloc, 0);
    EXPECT_EQ(seen_.calls, 0);
    Alloc(415 * MiB); // above the 409.60 MiB reserve, inside its 21 pages
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(420 * MiB));
}

// The class is the stream's: the same request fits on an untagged stream (9/8
// of 8 GiB) and fails on the tagged one, whose message names the class.
TEST_F(Knobs, ReserveClassOfTheStream)
{
    Make("sim_capacity:8GiB,expandable_segments:True,expandable_segments_reserve_by_class:[tiny:0.05]");
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, 7, "tiny"), GALLOC_OK);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 1 * GiB, 7, &p), GALLOC_E_OOM);
    EXPECT_NE(LastError().find(" This allocation exceeds the expandable-segment reserve of 409.60 MiB for stream "
                               "reserve class 'tiny', and a single allocation cannot span expandable segments."),
              std::string::npos)
        << LastError();
    EXPECT_EQ(Stats().num_ooms, 1);
    ASSERT_EQ(galloc_malloc(a_, 1 * GiB, 0, &p), GALLOC_OK); // untagged: the full reserve
    live_.push_back(p);
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, 7, nullptr), GALLOC_OK); // cleared
    ASSERT_EQ(galloc_malloc(a_, 1 * GiB, 7, &p), GALLOC_OK);
    live_.push_back(p);
    EXPECT_EQ(Stats().num_ooms, 1);
    // Names the config list could not write are refused; the tag is unchanged.
    for (const char *bad : {"a:b", "a,b", "[x]", "sp ace", "q\"uote", "0123456789012345678901234567890123"})
        EXPECT_EQ(galloc_set_expandable_reserve_class(a_, 7, bad), GALLOC_E_INVAL) << bad;
    EXPECT_EQ(galloc_set_expandable_reserve_class(nullptr, 7, "tiny"), GALLOC_E_INVAL);
}

// With a reserve key set, an OOM that the reserve does not explain ends with
// main's VSZ hint instead of the expandable_segments:True advice; without
// one, the released wording stays (tests/tools/data/h200: PyTorch 2.11 prints
// the classic hint under expandable_segments:True).
TEST_F(Knobs, ReserveHintsInTheOomMessage)
{
    const std::string vsz =
        " expandable_segments is enabled. If instead the process is running out of virtual "
        "address space (VSZ), expandable segments may be over-reserving VA (each segment reserves "
        "~9/8 of device memory, times the number of streams); reduce it via "
        "PYTORCH_CUDA_ALLOC_CONF expandable_segments_reserve / expandable_segments_reserve_by_class.";
    Make("sim_capacity:1GiB,expandable_segments:True,expandable_segments_reserve:0.9");
    Alloc(600 * MiB);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 600 * MiB, 0, &p), GALLOC_E_OOM); // the device is out, not the reserve
    std::string m = LastError();
    ASSERT_GE(m.size(), vsz.size());
    EXPECT_EQ(m.substr(m.size() - vsz.size()), vsz) << m;
    EXPECT_EQ(m.find("expandable-segment reserve"), std::string::npos) << m;
    // Larger than the device: the reserve is not the problem (OversizedAllocNotifiesOomObserver).
    EXPECT_EQ(galloc_malloc(a_, 2 * GiB, 0, &p), GALLOC_E_OOM);
    m = LastError();
    EXPECT_EQ(m.find("expandable-segment reserve"), std::string::npos) << m;
    EXPECT_EQ(m.substr(m.size() - vsz.size()), vsz) << m;
    EXPECT_EQ(Stats().num_ooms, 2);
}

TEST_F(Knobs, NoReserveKeyKeepsTheReleasedWording)
{
    Make("sim_capacity:1GiB,expandable_segments:True");
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 2 * GiB, 0, &p), GALLOC_E_OOM);
    EXPECT_NE(LastError().find(" If reserved but unallocated memory is large try setting "
                               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."),
              std::string::npos)
        << LastError();
}

} // namespace
