// sim_placement_test: where the simulated device puts segments and
// reservations: rising (the library default), descending (first fit from the
// top, freed ranges reused, as the CUDA driver shows in real snapshots) and
// recorded (the address galloc_sim_place gives). Part of //tests/backend:sim_test.
#include <gtest/gtest.h>

#include <cstdint>

#include "tests/backend/sim_fixture.h"

namespace sim_test {
namespace {

// sim_placement:descending: first fit from the top of the window, so addresses
// go down and a freed range is taken again before lower memory (the CUDA
// driver as real snapshots show it).
TEST(SimPlacement, DescendingGoesDownAndReusesFreedRanges)
{
    Dev d(OptionArgs("sim_placement:descending"));
    const uintptr_t top = GA_SIM_VA_BASE + GA_SIM_DEVICE_STRIDE;
    uintptr_t a = d.alloc_ok(20 * kMiB), b = d.alloc_ok(3 * kMiB), c = d.alloc_ok(20 * kMiB);
    EXPECT_EQ(a, top - 20 * kMiB);
    EXPECT_EQ(b, top - 24 * kMiB); // 3 MiB takes 4 MiB of addresses (2 MiB pages)
    EXPECT_EQ(c, top - 44 * kMiB);
    ASSERT_EQ(d.release(a, 20 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(2 * kMiB), top - 2 * kMiB);   // the freed top range, from its top
    EXPECT_EQ(d.alloc_ok(20 * kMiB), top - 64 * kMiB); // 18 MiB left up there: below c
    EXPECT_EQ(d.alloc_ok(18 * kMiB), top - 20 * kMiB); // fills the hole exactly
    uintptr_t r = d.reserve_ok(64 * kMiB);
    EXPECT_EQ(r, top - 128 * kMiB);
    EXPECT_EQ(d.counters().violations, 0u);
}

// sim_placement:recorded: a segment takes the address ga_sim_place set, once;
// a taken range, or no address, falls back to descending placement.
TEST(SimPlacement, RecordedTakesTheGivenAddressOnce)
{
    Dev d(OptionArgs("sim_placement:recorded"));
    const uintptr_t top = GA_SIM_VA_BASE + GA_SIM_DEVICE_STRIDE;
    const uintptr_t rec = 0x7f3a52000000; // an address a CUDA trace recorded: outside sim's window
    ASSERT_EQ(ga_sim_place(d.state(), rec), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(20 * kMiB), rec);
    EXPECT_EQ(d.alloc_ok(20 * kMiB), top - 20 * kMiB); // used once, then descending
    ASSERT_EQ(ga_sim_place(d.state(), rec - 2 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(2 * kMiB), rec - 2 * kMiB); // right below: no overlap
    ASSERT_EQ(ga_sim_place(d.state(), rec + 512), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(kPage), top - 22 * kMiB); // overlaps the first: placed by sim
    ASSERT_EQ(ga_sim_place(d.state(), rec + 20 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(1536), rec + 20 * kMiB); // a recorded range is its size rounded to 512 bytes
    ASSERT_EQ(ga_sim_place(d.state(), rec + 20 * kMiB + 1536), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(512), rec + 20 * kMiB + 1536);
    ASSERT_EQ(d.release(rec, 20 * kMiB), GALLOC_OK);
    ASSERT_EQ(ga_sim_place(d.state(), rec), GALLOC_OK);
    EXPECT_EQ(d.alloc_ok(20 * kMiB), rec); // a freed recorded range is free again
    EXPECT_EQ(d.counters().violations, 0u);
}

// Expandable segments under sim_placement:recorded: a reservation takes the
// address ga_sim_place set (the base its first segment_map recorded), whole,
// and pages map from there; an unaligned or taken address is placed by sim.
TEST(SimPlacement, RecordedPlacesReservations)
{
    Dev d(OptionArgs("sim_placement:recorded"));
    const uintptr_t top = GA_SIM_VA_BASE + GA_SIM_DEVICE_STRIDE;
    const uintptr_t rec = 0x7f3a52000000;
    ASSERT_EQ(ga_sim_place(d.state(), rec), GALLOC_OK);
    EXPECT_EQ(d.reserve_ok(240 * kMiB), rec);
    EXPECT_EQ(ga_backend_map(d.b(), rec + 20 * kMiB, 20 * kMiB), GALLOC_OK);
    ASSERT_EQ(ga_sim_place(d.state(), rec - 240 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.reserve_ok(240 * kMiB), rec - 240 * kMiB); // right below: no overlap
    ASSERT_EQ(ga_sim_place(d.state(), rec + 2 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.reserve_ok(kPage), top - kPage); // inside the first: placed by sim
    ASSERT_EQ(ga_sim_place(d.state(), rec + 240 * kMiB + 512), GALLOC_OK);
    EXPECT_EQ(d.reserve_ok(kPage), top - 2 * kPage); // not on a page: placed by sim
    EXPECT_EQ(ga_backend_unmap(d.b(), rec + 20 * kMiB, 20 * kMiB), GALLOC_OK);
    EXPECT_EQ(d.counters().violations, 0u);
}

TEST(SimPlacement, RisingIsTheDefaultAndBadNamesAreRefused)
{
    Dev d(OptionArgs("sim_placement:rising"));
    EXPECT_EQ(d.alloc_ok(kPage), GA_SIM_VA_BASE);
    EXPECT_EQ(ga_sim_place(d.state(), 0x7f3a52000000), GALLOC_E_UNSUPPORTED);
    ga_backend_t b = {};
    char err[256] = "";
    galloc_backend_args_t a = OptionArgs("sim_placement:upward");
    EXPECT_EQ(ga_backend_open(&b, "sim", &a, err, sizeof(err)), GALLOC_E_CONFIG);
    EXPECT_NE(std::string(err).find("sim_placement: 'upward' is not one of rising, descending, recorded"),
              std::string::npos)
        << err;
}

} // namespace
} // namespace sim_test
