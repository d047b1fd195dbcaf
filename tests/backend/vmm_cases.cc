// vmm_cases: expandable_segments:True scenarios that run the same on the
// "cuda" and the "hip" backend, written once over a Vendor (vendor_cases.h)
// and compiled into cuda_vmm_test and hip_vmm_test, which instantiate Vmm and
// VmmSweep with their vendor. The figures are the sim suite's
// (tests/pool/expandable_test.cc: pages of 20 MiB for the large pool, 2 MiB
// for the small one; one num_device_alloc per mapping of a block, one
// num_device_free per unmapping; no segment count), and underneath them the
// calls PyTorch's ExpandableSegment makes, in either vendor's names: one
// address reserve per segment, per page one create + map + set-access, on
// shrinking unmap + release per page, the address range freed at the end.
// Where the two files asserted different parts of a scenario, the shared body
// asserts both.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/backend/gpu_sweeps.h"
#include "tests/backend/vendor_cases.h"

namespace cuda_test {

// The growth both page tests start from: a (5 MiB) maps one 20 MiB page, b
// (30 MiB) takes the 15 MiB left and one more page, contiguous after a.
void Vmm::GrowTwoPages(char **a, char **b)
{
    *a = static_cast<char *>(Alloc(5 * kMiB)); // maps one 20 MiB page
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(20 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.segment[ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(5 * kMiB));
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_reservations, 1u);
    EXPECT_EQ(fs.live_handles, 1u);
    EXPECT_EQ(fs.live_handle_bytes, 20 * kMiB);
    EXPECT_EQ(fs.live_mappings, 1u);
    EXPECT_EQ(fs.device_used[0], 20 * kMiB) << "reserving address space costs no memory";
    *b = static_cast<char *>(Alloc(30 * kMiB)); // 15 MiB free + one more page, then split
    EXPECT_EQ(*b, *a + 5 * kMiB);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(40 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(35 * kMiB));
    EXPECT_EQ(f_.Stats().live_mappings, 2u) << "one handle per page";
    EXPECT_EQ(f_.fake_cuda_calls(v().address_reserve), 1u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_create), 2u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_map), 2u);
    EXPECT_EQ(f_.fake_cuda_calls(v().set_access), 2u);
    std::memset(*b, 0x77, 30 * kMiB); // the whole range is mapped read-write, across the page boundary
}

// Both blocks freed: one empty_cache unmaps both pages and frees the range.
TEST_P(Vmm, GrowsByPagesAndStaysContiguous)
{
    char *a = nullptr, *b = nullptr;
    GrowTwoPages(&a, &b);
    Free(a);
    Free(b);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, (int64_t)(40 * kMiB)) << "cached until empty_cache";
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_device_free, 1) << "one unmapping of the block, two pages";
    EXPECT_EQ(st.num_sync_all_streams, 1);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_unmap), 2u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_release), 2u);
    EXPECT_EQ(f_.fake_cuda_calls(v().address_free), 1u) << "the VA range went back too";
    EXPECT_EQ(fs.live_handles + fs.live_mappings + fs.live_reservations, 0u);
    EXPECT_EQ(fs.device_used[0], 0u);
}

// b freed first: empty_cache unmaps only the page wholly free, then a's.
TEST_P(Vmm, GrowsByPagesAndShrinksPageExactly)
{
    char *a = nullptr, *b = nullptr;
    GrowTwoPages(&a, &b);
    Free(b); // free 5..40 MiB: page 0 still holds a, page 1 is entirely free
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * kMiB)) << "only the page wholly free went";
    EXPECT_EQ(st.num_device_free, 1);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_mapped_bytes, 20 * kMiB);
    EXPECT_EQ(fs.device_used[0], 20 * kMiB);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_unmap), 1u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_release), 1u);
    Free(a);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    fs = f_.Stats();
    EXPECT_EQ(fs.live_handles + fs.live_mappings + fs.live_reservations, 0u);
    EXPECT_EQ(f_.fake_cuda_calls(v().address_free), 1u) << "the VA range went back too";
    EXPECT_EQ(fs.device_used[0], 0u);
}

TEST_P(Vmm, SmallPoolUsesTwoMiBPages)
{
    char *a = static_cast<char *>(Alloc(1));
    char *b = static_cast<char *>(Alloc(4096));
    EXPECT_EQ(b, a + 512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(st.reserved_bytes[LARGE].current, 0);
    EXPECT_EQ(f_.Stats().live_handle_bytes, 2 * kMiB);
    Free(a);
    Free(b);
}

TEST_P(Vmm, AMapFailureIsAnOomThatMapsNothing)
{
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_create, 0, 1, kOutOfMemory), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 5 * kMiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    EXPECT_EQ(st.num_ooms, 1);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_handles + fs.live_mappings, 0u);
    f_.fake_cuda_fail_clear();
    Free(Alloc(5 * kMiB));
}

TEST_P(Vmm, ARefusedUndoIsReleasedBeforeTheNextMap)
{
    // Setting the access fails and so does the unmap undoing the map: the
    // page stays mapped in the driver while the pool believes it unmapped.
    ASSERT_EQ(f_.fake_cuda_fail(v().set_access, 1, 0, kUnknown), 0);
    ASSERT_EQ(f_.fake_cuda_fail(v().mem_unmap, 1, 0, kUnknown), 0);
    // The pool frees its (empty) cache and retries: the orphan is unmapped
    // and released before the page maps again at the same address.
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    std::memset(a, 1, 5 * kMiB);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_mappings, 1u);
    EXPECT_EQ(fs.live_handles, 1u);
    EXPECT_EQ(fs.violations, 0u) << f_.Violation();
    Free(a);
}

// expandable_segments_reserve(_by_class) and the stream's reserve class reach
// the driver as the size of the address reservation (PyTorch's ExpandableSegment
// constructor: reserve = clamp_reserve_bytes(expandable_segments_reserve_decision(
// class, totalGlobalMem), total + total / 8), rounded up to whole pages by
// numSegments, then cuMemAddressReserve / hipMemAddressReserve of
// segment_size * max_handles). The fake device holds 80 GiB; pages are 20 MiB
// (large pool) and 2 MiB (small pool).
TEST_P(Vmm, ReserveClassSizesTheAddressRange)
{
    void *d = Alloc(5 * kMiB); // the fixture's defaults: the historical 9/8 reserve
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 90 * kGiB);
    Free(d);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    Make("expandable_segments:True,expandable_segments_reserve:0.5,"
         "expandable_segments_reserve_by_class:[capture:0.25,ws:1G]");
    uintptr_t s[3] = {0, 0, 0};
    for (uintptr_t &x : s)
        ASSERT_EQ(f_.fake_cuda_stream_create(0, &x), 0);
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, s[0], "capture"), GALLOC_OK);
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, s[1], "ws"), GALLOC_OK);
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, s[2], "unlisted"), GALLOC_OK);
    std::vector<void *> live;
    live.push_back(Alloc(5 * kMiB)); // untagged: the global 0.5 of 80 GiB, 2048 pages
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 40 * kGiB);
    live.push_back(Alloc(5 * kMiB, s[0])); // "capture": 0.25 of 80 GiB
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 20 * kGiB);
    live.push_back(Alloc(5 * kMiB, s[1])); // "ws": 1 GiB is 51.2 pages of 20 MiB: 52
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 52 * 20 * kMiB);
    live.push_back(Alloc(4096, s[1])); // its small pool: 512 pages of 2 MiB
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 1 * kGiB);
    live.push_back(Alloc(5 * kMiB, s[2])); // a class the config does not list: the global reserve
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 40 * kGiB);
    EXPECT_EQ(f_.Stats().live_reserved_bytes, (40 + 20 + 1 + 40) * kGiB + 52 * 20 * kMiB);
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, s[0], ""), GALLOC_OK); // cleared: the global reserve
    live.push_back(Alloc(4096, s[0]));
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 40 * kGiB);
    EXPECT_EQ(galloc_set_expandable_reserve_class(a_, s[0], "a,b"), GALLOC_E_INVAL);
    for (void *p : live)
        Free(p);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(f_.Stats().live_reserved_bytes, 0u);
    for (uintptr_t x : s)
        EXPECT_EQ(f_.fake_cuda_stream_destroy(x), 0);
}

// A request larger than its stream's reserve (a single allocation cannot span
// segments): find_expandable_block reserves the new range, sees it is too
// small, frees it and reports no block; malloc fails as on an exhausted
// device, through the retry chain (a second reserve + free after the cache
// flush), no page created, the OOM counted and worded with the reserve.
// (PyTorch's CUDACachingAllocatorReserveDeviceTest,
// DownsizedReserveAllocLargerThanReserve: a 5% class, 4x that requested.)
TEST_P(Vmm, RequestLargerThanTheReserveFails)
{
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    Make("expandable_segments:True,expandable_segments_reserve_by_class:[tiny:0.05]");
    uintptr_t s1 = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    ASSERT_EQ(galloc_set_expandable_reserve_class(a_, s1, "tiny"), GALLOC_OK);
    const size_t reserve = (size_t)(0.05 * (double)(80 * kGiB)); // 4 GiB
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, reserve * 4, s1, &p), GALLOC_E_OOM);
    EXPECT_EQ(f_.fake_cuda_calls(v().address_reserve), 2u);
    EXPECT_EQ(f_.fake_cuda_calls(v().address_free), 2u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_create), 0u);
    EXPECT_EQ(f_.Stats().last_reserved_bytes, 205 * 20 * kMiB); // 4 GiB is 204.8 pages
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_alloc, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
    std::string m = LastError(a_);
    EXPECT_NE(m.find(" This allocation exceeds the expandable-segment reserve of 4.00 GiB for stream reserve class "
                     "'tiny', and a single allocation cannot span expandable segments. Raise PYTORCH_" +
                     std::string(v().name == std::string("hip") ? "HIP" : "CUDA") +
                     "_ALLOC_CONF expandable_segments_reserve or expandable_segments_reserve_by_class (or unset it) "
                     "so that a segment is at least 16.00 GiB."),
              std::string::npos)
        << m;
    p = Alloc(3 * kGiB, s1); // within the reserve
    Free(p);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
}

// The fault sweeps: workloads and recounts in gpu_sweeps.h.
TEST_P(VmmSweep, EveryDriverCallFailingOnce)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kExpandable, 40u));
}

TEST_P(VmmSweep, EveryDriverCallFailingFromTheNthOn)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kExpandable, 20u);
}

} // namespace cuda_test
