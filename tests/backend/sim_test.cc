// sim_test: the simulated device, through the registry and the ga_backend_*
// wrappers as the pool uses it: capacity, addresses, backed memory, fault
// injection, contract checks and virtual memory. Events are in
// sim_events_test.cc, placement policies in sim_placement_test.cc, registry
// and conformance tests in registry_test.cc.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/backend/sim_fixture.h"

namespace sim_test {
namespace {

TEST(SimOpen, DefaultsToAn80GiBDevice)
{
    Dev d(Args());
    size_t f = 0, t = 0, g = 0;
    ASSERT_EQ(ga_backend_mem_info(d.b(), &f, &t), GALLOC_OK);
    EXPECT_EQ(t, 85899345920u);
    EXPECT_EQ(f, 85899345920u);
    ASSERT_EQ(ga_backend_granularity(d.b(), &g), GALLOC_OK);
    EXPECT_EQ(g, 2 * kMiB);
    ga_sim_counters_t c = d.counters();
    EXPECT_EQ(c.alloc_calls + c.faults_injected + c.live_segments + c.used_bytes + c.violations, 0u);
    EXPECT_EQ(d.error(), "");
}

TEST(SimOpen, RejectsBadArguments)
{
    ga_backend_t b = {};
    char err[256] = "";
    galloc_backend_args_t a = Args();
    a.device = -1;
    EXPECT_EQ(ga_backend_open(&b, "sim", &a, err, sizeof(err)), GALLOC_E_INVAL);
    EXPECT_STREQ(err, "device backend \"sim\" could not open device -1: device index -1 is negative");
    EXPECT_EQ(b.ops, nullptr);

    void *state = nullptr;
    EXPECT_EQ(ga_backend_sim.open(nullptr, &state, err, sizeof(err)), GALLOC_E_INVAL);
    a = Args();
    a.struct_size = 2; // does not even cover device
    EXPECT_EQ(ga_backend_sim.open(&a, &state, err, sizeof(err)), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_sim.open(&a, &state, nullptr, 0), GALLOC_E_INVAL); // no message buffer is fine
    EXPECT_EQ(state, nullptr);
}

TEST(SimOpen, ReadsOnlyTheFieldsStructSizeCovers)
{
    galloc_backend_args_t a = OptionArgs("sim_capacity:1GiB,sim_fail_nth:1");
    a.struct_size = offsetof(galloc_backend_args_t, options); // an older caller's struct: options not read
    Dev d(a);
    d.release(d.alloc_ok(kPage), kPage);
    EXPECT_EQ(d.counters().faults_injected, 0u);
    EXPECT_EQ(d.free_bytes(), 80 * kGiB);
}

TEST(SimOptions, ReadAtOpen)
{
    Dev d(OptionArgs(" sim_capacity : 1GiB,sim_backed:True,sim_fail_nth:2,sim_manual_events:False"));
    EXPECT_EQ(d.free_bytes(), 1 * kGiB);
    uintptr_t a = d.alloc_ok(kPage), x = 0;
    std::memset(reinterpret_cast<void *>(a), 0x5a, kPage); // backed: real memory
    EXPECT_EQ(d.alloc(kPage, &x), GALLOC_E_OOM);           // the 2nd allocation fails on purpose
    EXPECT_EQ(d.counters().faults_injected, 1u);
    EXPECT_EQ(d.release(a, kPage), GALLOC_OK);

    Dev last(OptionArgs("sim_capacity:1GiB,sim_capacity:3GiB")); // a key given twice: its last value
    EXPECT_EQ(last.free_bytes(), 3 * kGiB);
    Dev none(OptionArgs(""));
    EXPECT_EQ(none.free_bytes(), 80 * kGiB);
}

// Every spelling of a size conf/ reads, as sim_capacity (moved here with the key).
TEST(SimOptions, CapacitiesAndCounts)
{
    const struct {
        const char *options;
        uint64_t total;
    } cases[] = {
        {"sim_capacity:80GiB", 85899345920u},
        {"sim_capacity:24576MiB", 25769803776u},
        {"sim_capacity:1073741824", 1073741824u},
        {"sim_capacity:1.5GB", 1500000000u},
        {"sim_capacity:1.5GiB", 1610612736u},
        {"sim_capacity:0.5KiB", 512},
        {"sim_capacity:1kb", 1000},
        {"sim_capacity:2KIB", 2048},
        {"sim_capacity:3mB", 3000000},
        {"sim_capacity:3tb", 3000000000000u},
        {"sim_capacity:1TiB", 1099511627776u},
        {"sim_capacity:7B", 7},
        {"sim_capacity:1", 1},
        {"sim_capacity:9223372036854775807", 9223372036854775807u},
        {"sim_backed:False,sim_manual_events:True,sim_manual_events:False", 80 * kGiB},
        {"sim_fail_nth:18446744073709551615,sim_fail_from:0,sim_fail_above:0", 80 * kGiB},
        {"sim_fail_nth:3,sim_fail_from:7,sim_fail_above:2MiB", 80 * kGiB},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.options);
        Dev d(OptionArgs(k.options));
        EXPECT_EQ(d.free_bytes(), k.total);
    }
}

// sim's keys are read and refused as conf/ reads the allocator's: same words,
// offsets into the options string, no "could not open device" around them.
TEST(SimOptions, RefusalsNameKeyValueAndOffset)
{
    const std::string units = "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB";
    const std::string cap = "sim_capacity: expected a size from 1 to 9223372036854775807 bytes: bytes, or a number "
                            "with unit " +
                            units;
    const struct {
        std::string in, msg;
    } cases[] = {
        {"sim_capacity:0", cap + ", got \"0\" (offset 13)"},
        {"sim_capacity:80 G", cap + ", got \"80 G\" (offset 13)"},
        {"sim_capacity:1.5", cap + " (this one is not a whole number of bytes), got \"1.5\" (offset 13)"},
        {"sim_capacity:16777216TiB", cap + " (this one does not fit in 64 bits), got \"16777216TiB\" (offset 13)"},
        {"sim_capacity:8EiB", cap + ", got \"8EiB\" (offset 13)"},
        {"sim_capacity:9223372036854775808", cap + ", got \"9223372036854775808\" (offset 13)"},
        {"sim_backed:yes", "sim_backed: expected True or False, got \"yes\" (offset 11)"},
        {"sim_manual_events:1", "sim_manual_events: expected True or False, got \"1\" (offset 18)"},
        {"sim_fail_nth:-1", "sim_fail_nth: expected a whole number (0 = off), got \"-1\" (offset 13)"},
        {"sim_fail_from:18446744073709551616", "sim_fail_from: expected a whole number (0 = off) (this one does not "
                                               "fit in 64 bits), got \"18446744073709551616\" (offset 14)"},
        {"sim_fail_above:1x", "sim_fail_above: expected a size (0 = off): bytes, or a number with unit " + units +
                                  ", got \"1x\" (offset 15)"},
        {"sim_backed:True,driver_path:/x.so", "Unrecognized key 'driver_path' in CUDA allocator config (offset 16)"},
        {"Sim_capacity:1GiB", "Unrecognized key 'Sim_capacity' in CUDA allocator config (offset 0)"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.in);
        ga_backend_t b = {};
        char err[512] = "";
        galloc_backend_args_t a = OptionArgs(k.in.c_str());
        EXPECT_EQ(ga_backend_open(&b, "sim", &a, err, sizeof(err)), GALLOC_E_CONFIG);
        EXPECT_EQ(err, k.msg);
        EXPECT_EQ(b.ops, nullptr);
    }
}

TEST(SimCapacity, MemInfoFollowsAllocsAndFrees)
{
    Dev d(Args(10 * kGiB));
    uintptr_t a = d.alloc_ok(2 * kMiB), b = d.alloc_ok(20 * kMiB), c = d.alloc_ok(1 * kGiB + 512);
    EXPECT_EQ(d.free_bytes(), 10 * kGiB - 22 * kMiB - 1 * kGiB - 512);
    EXPECT_EQ(d.counters().used_bytes, 22 * kMiB + 1 * kGiB + 512);
    EXPECT_EQ(d.counters().live_segments, 3u);
    EXPECT_EQ(d.release(b, 20 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.free_bytes(), 10 * kGiB - 2 * kMiB - 1 * kGiB - 512);
    EXPECT_EQ(d.release(a, 2 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.release(c, 1 * kGiB + 512), GALLOC_OK);
    EXPECT_EQ(d.free_bytes(), 10 * kGiB);
    EXPECT_EQ(d.counters().live_segments, 0u);
    EXPECT_EQ(d.counters().alloc_calls, 3u);
}

TEST(SimCapacity, OomAtTheExactBoundary)
{
    Dev d(Args(64 * kMiB + 7));
    uintptr_t a = d.alloc_ok(32 * kMiB), b = d.alloc_ok(32 * kMiB + 7); // used + bytes == capacity
    EXPECT_EQ(d.free_bytes(), 0u);
    EXPECT_EQ(d.release(b, 32 * kMiB + 7), GALLOC_OK);
    uintptr_t x = 0;
    EXPECT_EQ(d.alloc(32 * kMiB + 8, &x), GALLOC_E_OOM); // one byte more
    EXPECT_EQ(x, 0u);
    EXPECT_EQ(d.error(), "out of memory: 32.00 MiB requested, 32.00 MiB free (device 0, 64.00 MiB total)");
    EXPECT_EQ(d.counters().used_bytes, 32 * kMiB);
    EXPECT_EQ(d.counters().faults_injected, 0u);
    EXPECT_EQ(d.release(a, 32 * kMiB), GALLOC_OK);

    Dev big(Args(50 * kGiB));
    big.alloc_ok(40 * kGiB);
    EXPECT_EQ(big.alloc(40 * kGiB, &x), GALLOC_E_OOM);
    EXPECT_EQ(big.error(), "out of memory: 40.00 GiB requested, 10.00 GiB free (device 0, 50.00 GiB total)");
}

std::vector<uintptr_t> AddressSequence()
{
    Dev d(Args());
    std::vector<uintptr_t> v;
    for (uint64_t n : {uint64_t{1}, 2 * kMiB, 2 * kMiB + 1, uint64_t{512}, 20 * kMiB})
        v.push_back(d.alloc_ok(n));
    EXPECT_EQ(d.release(v[1], 2 * kMiB), GALLOC_OK);
    v.push_back(d.alloc_ok(2 * kMiB)); // a fresh address: freed ones are never reused
    v.push_back(d.reserve_ok(3 * kMiB));
    v.push_back(d.alloc_ok(512));
    return v;
}

TEST(SimAddress, AlignedDeterministicAndNeverReused)
{
    const uintptr_t base = GA_SIM_VA_BASE;
    const std::vector<uintptr_t> want = {base,
                                         base + 2 * kMiB,
                                         base + 4 * kMiB,
                                         base + 8 * kMiB,
                                         base + 10 * kMiB,
                                         base + 30 * kMiB,
                                         base + 32 * kMiB,
                                         base + 36 * kMiB};
    EXPECT_EQ(AddressSequence(), want);
    EXPECT_EQ(AddressSequence(), want); // a second fresh device: the same addresses
}

TEST(SimAddress, ExhaustingTheAddressSpaceIsOom)
{
    Dev d(Args(uint64_t{INT64_MAX}));
    const uint64_t half = GA_SIM_DEVICE_STRIDE / 2;
    uintptr_t a = d.alloc_ok(half);
    EXPECT_EQ(a, GA_SIM_VA_BASE);
    EXPECT_EQ(d.release(a, half), GALLOC_OK);
    EXPECT_EQ(d.alloc(half + 1, &a), GALLOC_E_OOM); // capacity is free, addresses are not
    EXPECT_EQ(d.error().rfind("simulated address space exhausted", 0), 0u) << d.error();
    EXPECT_EQ(d.alloc_ok(half), GA_SIM_VA_BASE + half); // exactly the rest of the window
    EXPECT_EQ(d.alloc(kPage, &a), GALLOC_E_OOM);
    uintptr_t r = 0;
    EXPECT_EQ(ga_backend_va_reserve(d.b(), GA_SIM_MAX_RESERVATION + 1, &r), GALLOC_E_OOM);
    EXPECT_EQ(d.counters().violations, 0u);
}

galloc_backend_args_t DeviceArgs(int device, uint64_t capacity = 0, uint32_t flags = 0)
{
    return Args(capacity, flags, device);
}

// Each device index has its own window, so two devices never hand out equal or
// overlapping ranges (a free on the wrong device then finds nothing to free).
TEST(SimAddress, DevicesHaveDisjointWindows)
{
    struct Range {
        uintptr_t lo, hi;
    };
    std::vector<Range> ranges;
    for (int dev : {0, 1, 2, 7, GA_SIM_MAX_DEVICES - 1}) {
        Dev d(DeviceArgs(dev));
        const uintptr_t window = GA_SIM_VA_BASE + uint64_t(dev) * GA_SIM_DEVICE_STRIDE;
        uintptr_t a = d.alloc_ok(3 * kMiB), r = d.reserve_ok(64 * kMiB), b = d.alloc_ok(512);
        EXPECT_EQ(a, window) << "device " << dev;
        EXPECT_EQ(r, window + 4 * kMiB) << "device " << dev;
        EXPECT_EQ(b, window + 68 * kMiB) << "device " << dev;
        ranges.push_back({a, a + 3 * kMiB});
        ranges.push_back({r, r + 64 * kMiB});
        ranges.push_back({b, b + 512});
        EXPECT_LE(b + 512, uint64_t{INT64_MAX});
    }
    for (size_t i = 0; i < ranges.size(); i++)
        for (size_t j = i + 1; j < ranges.size(); j++)
            EXPECT_TRUE(ranges[i].hi <= ranges[j].lo || ranges[j].hi <= ranges[i].lo)
                << "ranges " << i << " and " << j << " overlap";
}

// A device that fills its window runs out of addresses; it never spills into
// the next device's window.
TEST(SimAddress, AWindowEndsBeforeTheNextDevice)
{
    Dev d1(DeviceArgs(1, uint64_t{INT64_MAX}));
    EXPECT_EQ(d1.alloc_ok(GA_SIM_DEVICE_STRIDE), GA_SIM_VA_BASE + GA_SIM_DEVICE_STRIDE);
    uintptr_t a = 0;
    EXPECT_EQ(d1.alloc(kPage, &a), GALLOC_E_OOM);
    EXPECT_EQ(a, 0u);
    Dev last(DeviceArgs(GA_SIM_MAX_DEVICES - 1, uint64_t{INT64_MAX}));
    EXPECT_EQ(last.alloc_ok(GA_SIM_DEVICE_STRIDE), GA_SIM_VA_BASE + (GA_SIM_MAX_DEVICES - 1) * GA_SIM_DEVICE_STRIDE);
    EXPECT_EQ(last.alloc(kPage, &a), GALLOC_E_OOM);
}

TEST(SimAddress, DeviceIndexBeyondTheWindowsIsRefused)
{
    ga_backend_t b = {};
    char err[256] = "";
    galloc_backend_args_t a = DeviceArgs(GA_SIM_MAX_DEVICES);
    EXPECT_EQ(ga_backend_open(&b, "sim", &a, err, sizeof(err)), GALLOC_E_INVAL);
    EXPECT_STREQ(err, "device backend \"sim\" could not open device 256: device index 256 is out of range (sim has "
                      "devices 0 to 255)");
    EXPECT_EQ(b.ops, nullptr);
}

// Backed devices get the kernel's mappings: live ones never overlap either.
TEST(SimAddress, BackedDevicesDoNotOverlap)
{
    Dev d0(DeviceArgs(0, 64 * kMiB, kBacked)), d1(DeviceArgs(1, 64 * kMiB, kBacked));
    uintptr_t a = d0.alloc_ok(6 * kMiB), b = d1.alloc_ok(6 * kMiB);
    EXPECT_TRUE(a + 6 * kMiB <= b || b + 6 * kMiB <= a);
    EXPECT_EQ(d0.release(a, 6 * kMiB), GALLOC_OK);
    EXPECT_EQ(d1.release(b, 6 * kMiB), GALLOC_OK);
}

TEST(SimBacked, SegmentsAndMappingsAreWritable)
{
    Dev d(Args(64 * kMiB, kBacked));
    const uint64_t n = 4 * kMiB + 100;
    uintptr_t a = d.alloc_ok(n), b = d.alloc_ok(512);
    EXPECT_EQ(a % kPage, 0u);
    EXPECT_EQ(b % kPage, 0u);
    std::memset(reinterpret_cast<void *>(a), 0xab, n);
    std::memset(reinterpret_cast<void *>(b), 0xcd, 512);
    EXPECT_EQ(reinterpret_cast<unsigned char *>(a)[n - 1], 0xab);
    EXPECT_EQ(d.free_bytes(), 64 * kMiB - n - 512);

    uintptr_t r = d.reserve_ok(8 * kMiB);
    EXPECT_EQ(r % kPage, 0u);
    ASSERT_EQ(d.map(r + kPage, 2 * kPage), GALLOC_OK) << d.error();
    std::memset(reinterpret_cast<void *>(r + kPage), 0x5a, 2 * kPage);
    EXPECT_EQ(reinterpret_cast<unsigned char *>(r + kPage)[2 * kPage - 1], 0x5a);
    EXPECT_EQ(d.free_bytes(), 64 * kMiB - n - 512 - 2 * kPage);
    EXPECT_EQ(d.unmap(r + kPage, 2 * kPage), GALLOC_OK) << d.error();
    ASSERT_EQ(d.map(r + kPage, kPage), GALLOC_OK); // remapped memory is usable again
    std::memset(reinterpret_cast<void *>(r + kPage), 0x11, kPage);
    EXPECT_EQ(d.unmap(r + kPage, kPage), GALLOC_OK);
    EXPECT_EQ(ga_backend_va_release(d.b(), r, 8 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.release(a, n), GALLOC_OK);
    EXPECT_EQ(d.release(b, 512), GALLOC_OK);
    EXPECT_EQ(d.free_bytes(), 64 * kMiB);
}

TEST(SimFaults, NthFailsOnlyThatAllocation)
{
    Dev d(OptionArgs("sim_fail_nth:2"));
    uintptr_t x = 0;
    d.alloc_ok(kPage);
    EXPECT_EQ(d.alloc(kPage, &x), GALLOC_E_OOM);
    EXPECT_EQ(d.error(), "injected fault on device allocation #2 (segment_alloc of 2.00 MiB)");
    d.alloc_ok(kPage);
    ga_sim_counters_t c = d.counters();
    EXPECT_EQ(c.alloc_calls, 3u);
    EXPECT_EQ(c.faults_injected, 1u);
    EXPECT_EQ(c.live_segments, 2u);
    EXPECT_EQ(c.used_bytes, 2 * kPage);
}

TEST(SimFaults, FromFailsEveryLaterAllocation)
{
    Dev d(OptionArgs("sim_fail_from:3"));
    uintptr_t x = 0;
    d.alloc_ok(kPage);
    d.alloc_ok(kPage);
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(d.alloc(kPage, &x), GALLOC_E_OOM);
    EXPECT_EQ(d.counters().faults_injected, 3u);
    EXPECT_EQ(d.counters().used_bytes, 2 * kPage);
}

TEST(SimFaults, AboveFailsLargerAllocations)
{
    Dev d(OptionArgs("sim_fail_above:4MiB"));
    uintptr_t x = 0;
    d.alloc_ok(4 * kMiB);
    EXPECT_EQ(d.alloc(4 * kMiB + 1, &x), GALLOC_E_OOM);
    d.alloc_ok(512);
    EXPECT_EQ(d.counters().faults_injected, 1u);
    EXPECT_EQ(d.counters().used_bytes, 4 * kMiB + 512);
}

TEST(SimFaults, MapIsCountedWithSegmentAllocAndSetAtRunTime)
{
    Dev d(OptionArgs("sim_fail_nth:2"));
    d.alloc_ok(kPage);                        // allocation #1
    uintptr_t r = d.reserve_ok(8 * kMiB);     // not a device allocation
    EXPECT_EQ(d.map(r, kPage), GALLOC_E_OOM); // #2
    EXPECT_EQ(d.counters().live_mapped_bytes, 0u);
    EXPECT_EQ(d.map(r, kPage), GALLOC_OK); // #3: the failed map left the page unmapped

    ASSERT_EQ(ga_sim_set_faults(d.state(), 0, 0, kPage), GALLOC_OK); // above one page
    EXPECT_EQ(d.map(r + kPage, 2 * kPage), GALLOC_E_OOM);
    EXPECT_EQ(d.map(r + kPage, kPage), GALLOC_OK);
    ASSERT_EQ(ga_sim_set_faults(d.state(), 0, d.counters().alloc_calls + 1, 0), GALLOC_OK); // from the next one
    uintptr_t x = 0;
    EXPECT_EQ(d.map(r + 2 * kPage, kPage), GALLOC_E_OOM);
    EXPECT_EQ(d.alloc(512, &x), GALLOC_E_OOM);
    ASSERT_EQ(ga_sim_set_faults(d.state(), 0, 0, 0), GALLOC_OK);
    EXPECT_EQ(d.map(r + 2 * kPage, kPage), GALLOC_OK);
    ga_sim_counters_t c = d.counters();
    EXPECT_EQ(c.alloc_calls, 8u);
    EXPECT_EQ(c.faults_injected, 4u);
    EXPECT_EQ(c.live_mapped_bytes, 3 * kPage);
    EXPECT_EQ(c.used_bytes, 4 * kPage);

    int not_sim = 0;
    EXPECT_EQ(ga_sim_set_faults(nullptr, 1, 0, 0), GALLOC_E_INVAL);
    EXPECT_EQ(ga_sim_set_faults(&not_sim, 1, 0, 0), GALLOC_E_INVAL);
    EXPECT_EQ(ga_sim_counters(d.state(), nullptr), GALLOC_E_INVAL);
}

// An operation of four device allocations that undoes itself on failure.
galloc_status_t FourAllocations(Dev &d)
{
    uintptr_t a = 0, b = 0, r = d.reserve_ok(8 * kMiB);
    galloc_status_t st = d.alloc(kPage, &a);
    if (st != GALLOC_OK)
        goto out_release;
    if ((st = d.map(r, kPage)) != GALLOC_OK)
        goto out_free_a;
    if ((st = d.map(r + kPage, 2 * kPage)) != GALLOC_OK)
        goto out_unmap;
    if ((st = d.alloc(20 * kMiB, &b)) == GALLOC_OK)
        return st;
    d.unmap(r + kPage, 2 * kPage);
out_unmap:
    d.unmap(r, kPage);
out_free_a:
    d.release(a, kPage);
out_release:
    ga_backend_va_release(d.b(), r, 8 * kMiB);
    return st;
}

TEST(SimFaults, FailingEachAllocationInTurn)
{
    for (int from = 0; from < 2; from++) {
        uint64_t n = 1;
        for (;; n++) {
            const std::string faults = (from ? "sim_fail_from:" : "sim_fail_nth:") + std::to_string(n);
            Dev d(OptionArgs(faults.c_str()));
            galloc_status_t st = FourAllocations(d);
            ga_sim_counters_t c = d.counters();
            if (st == GALLOC_OK)
                break;
            EXPECT_EQ(st, GALLOC_E_OOM);
            EXPECT_EQ(c.alloc_calls, n) << "the operation stops at the failed allocation";
            EXPECT_EQ(c.used_bytes + c.live_segments + c.live_reservations + c.violations, 0u) << "n=" << n;
        }
        EXPECT_EQ(n, 5u);
    }
}

TEST(SimContract, ViolationsAreRefusedCountedAndChangeNothing)
{
    Dev d(Args(1 * kGiB));
    uintptr_t a = d.alloc_ok(4 * kMiB), r = d.reserve_ok(8 * kMiB), x = 0;
    ASSERT_EQ(d.map(r, kPage), GALLOC_OK);
    const ga_sim_counters_t before = d.counters();
    uint64_t n = 0, used = before.used_bytes;
    auto refused = [&](galloc_status_t st, const char *what) {
        EXPECT_EQ(st, GALLOC_E_INVAL) << what;
        EXPECT_EQ(d.counters().violations, ++n) << what;
        EXPECT_EQ(d.counters().used_bytes, used) << what;
        EXPECT_NE(d.error(), "") << what;
    };
    refused(d.release(a, 4 * kMiB - 1), "wrong size");
    refused(d.release(a + kPage, 2 * kMiB), "inside a segment");
    refused(d.release(12345, 512), "unknown address");
    refused(d.release(0, 512), "null address");
    refused(d.release(r, kPage), "a reservation is not a segment");
    refused(d.alloc(0, &x), "zero bytes");
    refused(ga_backend_segment_alloc(d.b(), 512, 0, nullptr), "no output");
    refused(d.map(r - kPage, kPage), "below the reservation");
    refused(d.map(r + 8 * kMiB, kPage), "above the reservation");
    refused(d.map(r + 6 * kMiB, 2 * kPage), "across its end");
    refused(d.map(a, kPage), "a segment is not a reservation");
    refused(d.map(r, 2 * kPage), "overlapping a mapped page");
    refused(d.map(r + kPage + 4096, kPage), "unaligned address");
    refused(d.map(r + kPage, kMiB), "unaligned size");
    refused(d.map(r + kPage, 0), "empty");
    refused(d.unmap(r + kPage, kPage), "unmapping an unmapped page");
    refused(d.unmap(r, 2 * kPage), "unmapping a partly mapped range");
    refused(ga_backend_va_release(d.b(), r, 8 * kMiB), "release with a mapped page");
    refused(ga_backend_va_release(d.b(), r + kPage, 6 * kMiB), "release of part of a range");
    refused(ga_backend_va_release(d.b(), r, 4 * kMiB), "release with the wrong size");
    refused(ga_backend_event_query(d.b(), 0), "event 0");
    refused(ga_backend_mem_info(d.b(), nullptr, nullptr), "mem_info without outputs");
    EXPECT_EQ(d.error(), "mem_info: NULL output");

    EXPECT_EQ(d.release(a, 4 * kMiB), GALLOC_OK);
    used -= 4 * kMiB;
    refused(d.release(a, 4 * kMiB), "double free");
    EXPECT_EQ(d.error(), "segment_free(0x7f0000000000, 4194304): not a live segment");
    EXPECT_EQ(d.unmap(r, kPage), GALLOC_OK);
    EXPECT_EQ(ga_backend_va_release(d.b(), r, 8 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.counters().alloc_calls, before.alloc_calls) << "refused calls are not device allocations";
}

TEST(SimVmm, PagesAreChargedAndReservationsAreNot)
{
    Dev d(Args(1 * kGiB));
    uintptr_t r = d.reserve_ok(10 * kMiB + 1); // rounds up to 6 pages
    EXPECT_EQ(d.free_bytes(), 1 * kGiB);
    EXPECT_EQ(d.counters().live_reservations, 1u);
    EXPECT_EQ(d.alloc_ok(512), r + 12 * kMiB) << "one address space for segments and reservations";
    EXPECT_EQ(d.map(r, 3 * kPage), GALLOC_OK);
    EXPECT_EQ(d.map(r + 4 * kPage, kPage), GALLOC_OK);
    EXPECT_EQ(d.free_bytes(), 1 * kGiB - 512 - 8 * kMiB);
    EXPECT_EQ(d.counters().live_mapped_bytes, 8 * kMiB);
    EXPECT_EQ(d.unmap(r + kPage, kPage), GALLOC_OK); // the middle of one map call
    EXPECT_EQ(d.counters().live_mapped_bytes, 6 * kMiB);
    EXPECT_EQ(d.map(r + kPage, kPage), GALLOC_OK);
    EXPECT_EQ(d.unmap(r, 3 * kPage), GALLOC_OK);
    EXPECT_EQ(d.map(r + 5 * kPage, kPage), GALLOC_OK);
    EXPECT_EQ(d.unmap(r + 4 * kPage, 2 * kPage), GALLOC_OK); // two map calls at once
    EXPECT_EQ(d.counters().live_mapped_bytes, 0u);
    EXPECT_EQ(ga_backend_va_release(d.b(), r, 10 * kMiB + 1), GALLOC_OK); // the size given to reserve
    EXPECT_EQ(d.counters().live_reservations, 0u);
    EXPECT_EQ(d.free_bytes(), 1 * kGiB - 512);

    Dev small(Args(8 * kMiB)); // segments and pages share the capacity
    uintptr_t s = small.alloc_ok(4 * kMiB), q = small.reserve_ok(16 * kMiB);
    EXPECT_EQ(small.map(q, 2 * kPage), GALLOC_OK);
    EXPECT_EQ(small.map(q + 2 * kPage, kPage), GALLOC_E_OOM);
    EXPECT_EQ(small.error(), "out of memory: 2.00 MiB requested, 0 bytes free (device 0, 8.00 MiB total)");
    EXPECT_EQ(small.release(s, 4 * kMiB), GALLOC_OK);
    EXPECT_EQ(small.map(q + 2 * kPage, 2 * kPage), GALLOC_OK);
    EXPECT_EQ(small.free_bytes(), 0u);
}

TEST(SimSegments, RandomChurnMatchesAModel)
{
    const char *env = std::getenv("GA_TEST_SEED");
    const unsigned seed = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 20261123u;
    SCOPED_TRACE("seed " + std::to_string(seed) + " (set GA_TEST_SEED to replay)");
    std::mt19937_64 rng(seed);
    Dev d(Args());
    std::vector<std::pair<uintptr_t, uint64_t>> live; // address, size
    uint64_t used = 0, violations = 0;
    uintptr_t last = 0;
    for (int step = 0; step < 30000; step++) {
        bool grow = live.empty() || (step < 15000 ? rng() % 4 != 0 : rng() % 4 == 0);
        if (grow) {
            uint64_t n = 512 * (1 + rng() % 8192);
            uintptr_t a = d.alloc_ok(n);
            ASSERT_GT(a, last) << "step " << step << ": addresses only grow";
            last = a;
            live.emplace_back(a, n);
            used += n;
        } else {
            size_t i = rng() % live.size();
            auto [a, n] = live[i];
            if (rng() % 16 == 0) {
                ASSERT_EQ(d.release(a, n + 512), GALLOC_E_INVAL) << "step " << step;
                violations++;
            }
            ASSERT_EQ(d.release(a, n), GALLOC_OK) << "step " << step << ": " << d.error();
            used -= n;
            live[i] = live.back();
            live.pop_back();
        }
        if (step % 97 == 0) {
            ga_sim_counters_t c = d.counters();
            ASSERT_EQ(c.used_bytes, used) << "step " << step;
            ASSERT_EQ(c.live_segments, live.size()) << "step " << step;
            ASSERT_EQ(c.violations, violations) << "step " << step;
        }
    }
    for (auto &[a, n] : live)
        ASSERT_EQ(d.release(a, n), GALLOC_OK);
    for (auto &[a, n] : live)
        ASSERT_EQ(d.release(a, n), GALLOC_E_INVAL) << "double free";
    EXPECT_EQ(d.counters().used_bytes, 0u);
    EXPECT_EQ(d.counters().live_segments, 0u);
}

TEST(SimClose, LeaksShowInTheCountersAndCloseFreesThem)
{
    for (uint32_t flags : {0u, kBacked}) {
        Dev d(Args(1 * kGiB, flags));
        d.alloc_ok(kPage);
        d.alloc_ok(512);
        uintptr_t r = d.reserve_ok(8 * kMiB), e = 0;
        ASSERT_EQ(d.map(r + kPage, kPage), GALLOC_OK);
        ASSERT_EQ(ga_backend_event_create(d.b(), &e), GALLOC_OK);
        ga_sim_counters_t c = d.counters();
        EXPECT_EQ(c.live_segments, 2u);
        EXPECT_EQ(c.live_mapped_bytes, kPage);
        EXPECT_EQ(c.used_bytes, 2 * kPage + 512);
        EXPECT_EQ(c.live_reservations, 1u);
        EXPECT_EQ(c.live_events, 1u);
    } // close releases all of it (ASan's leak check confirms)
}

} // namespace
} // namespace sim_test
