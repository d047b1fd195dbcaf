// sim_host_test: the sim device's host memory, registered ranges, copies,
// device_synchronize and op faults (sim.h: "Host memory and copies",
// ga_sim_set_op_faults).
#include <cstring>

#include "tests/backend/sim_fixture.h"

namespace sim_test {
namespace {

TEST(SimHost, HostBlocksAreCountedAndCheckedAtFree)
{
    Dev d(Args(64 * kMiB));
    void *h = nullptr, *g = nullptr;
    ASSERT_EQ(ga_backend_host_alloc(d.b(), 3000, &h), GALLOC_OK);
    ASSERT_EQ(ga_backend_host_alloc(d.b(), 5000, &g), GALLOC_OK);
    EXPECT_EQ(d.counters().live_host_allocs, 2u);
    EXPECT_EQ(d.counters().live_host_bytes, 8000u);
    EXPECT_EQ(d.free_bytes(), 64 * kMiB);                            // host memory is not the device's
    EXPECT_EQ(ga_backend_host_free(d.b(), h, 2999), GALLOC_E_INVAL); // not its size
    EXPECT_EQ(ga_backend_host_free(d.b(), (char *)h + 8, 3000), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_host_alloc(d.b(), 0, &h), GALLOC_E_INVAL);
    EXPECT_EQ(d.counters().violations, 3u);
    ASSERT_EQ(ga_backend_host_free(d.b(), h, 3000), GALLOC_OK);
    EXPECT_EQ(ga_backend_host_free(d.b(), h, 3000), GALLOC_E_INVAL); // twice
    EXPECT_EQ(d.counters().live_host_bytes, 5000u);
    // g is left for close, which frees it silently
}

TEST(SimHost, BackedCopiesMoveBytesOnlyWithinMappedMemory)
{
    Dev d(Args(64 * kMiB, kBacked));
    uintptr_t seg = d.alloc_ok(kPage);
    uintptr_t r = d.reserve_ok(4 * kPage);
    ASSERT_EQ(d.map(r, kPage), GALLOC_OK);
    char h[4096], back[4096];
    for (size_t i = 0; i < sizeof h; i++)
        h[i] = (char)(i * 7 + 1);
    for (uintptr_t dev : {seg + 100, r + kPage - sizeof h}) {
        ASSERT_EQ(ga_backend_copy_h2d(d.b(), dev, h, sizeof h), GALLOC_OK) << d.error();
        EXPECT_EQ(memcmp((const void *)dev, h, sizeof h), 0);
        memset(back, 0, sizeof back);
        ASSERT_EQ(ga_backend_copy_d2h(d.b(), back, dev, sizeof back), GALLOC_OK) << d.error();
        EXPECT_EQ(memcmp(back, h, sizeof h), 0);
    }
    // Crossing into an unmapped page, past a segment's end, or nowhere: refused.
    EXPECT_EQ(ga_backend_copy_h2d(d.b(), r + kPage - 8, h, 16), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_copy_d2h(d.b(), back, seg + kPage - 8, 16), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_copy_d2h(d.b(), back, 0x1000, 16), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_copy_d2h(d.b(), nullptr, seg, 16), GALLOC_E_INVAL);
    EXPECT_EQ(d.counters().violations, 4u);
    ASSERT_EQ(d.unmap(r, kPage), GALLOC_OK);
    EXPECT_EQ(ga_backend_copy_d2h(d.b(), back, r, 16), GALLOC_E_INVAL); // unmapped again
}

TEST(SimHost, UnbackedCopiesAreCheckedAndCopyNothing)
{
    Dev d(Args(64 * kMiB));
    uintptr_t seg = d.alloc_ok(kPage);
    char h[64];
    memset(h, 0x5a, sizeof h);
    EXPECT_EQ(ga_backend_copy_d2h(d.b(), h, seg, sizeof h), GALLOC_OK);
    EXPECT_EQ(h[0], 0x5a); // no contents to copy
    EXPECT_EQ(ga_backend_copy_h2d(d.b(), seg + kPage, h, 1), GALLOC_E_INVAL);
    EXPECT_TRUE(ga_backend_can_offload(d.b()));
}

TEST(SimHost, OpFaultsNumberEveryMemoryCallAndChangeNothing)
{
    Dev d(OptionArgs("sim_capacity:64MiB,sim_fail_op_nth:3"));
    uintptr_t r = d.reserve_ok(2 * kPage);            // op 1
    ASSERT_EQ(d.map(r, kPage), GALLOC_OK);            // op 2
    EXPECT_EQ(d.unmap(r, kPage), GALLOC_E_DEVICE);    // op 3: injected
    EXPECT_EQ(d.counters().live_mapped_bytes, kPage); // still mapped
    EXPECT_EQ(d.counters().op_calls, 3u);
    EXPECT_EQ(d.counters().faults_injected, 1u);
    EXPECT_NE(d.error().find("injected fault on device op #3 (unmap)"), std::string::npos) << d.error();
    // Each op in turn, with its driver-like status.
    struct {
        const char *what;
        galloc_status_t want;
    } cases[] = {{"map", GALLOC_E_OOM},
                 {"unmap", GALLOC_E_DEVICE},
                 {"va_reserve", GALLOC_E_OOM},
                 {"segment_alloc", GALLOC_E_OOM},
                 {"host_alloc", GALLOC_E_NOMEM},
                 {"copy_d2h", GALLOC_E_DEVICE},
                 {"device_synchronize", GALLOC_E_DEVICE}};
    uintptr_t seg = d.alloc_ok(kPage);
    void *h = nullptr;
    ASSERT_EQ(ga_backend_host_alloc(d.b(), 512, &h), GALLOC_OK);
    for (const auto &c : cases) {
        ASSERT_EQ(ga_sim_set_op_faults(d.state(), d.counters().op_calls + 1, 0), GALLOC_OK);
        uintptr_t a = 0;
        void *p = nullptr;
        galloc_status_t st = GALLOC_OK;
        std::string w = c.what;
        if (w == "map")
            st = d.map(r + kPage, kPage);
        else if (w == "unmap")
            st = d.unmap(r, kPage);
        else if (w == "va_reserve")
            st = ga_backend_va_reserve(d.b(), kPage, &a);
        else if (w == "segment_alloc")
            st = d.alloc(kPage, &a);
        else if (w == "host_alloc")
            st = ga_backend_host_alloc(d.b(), 512, &p);
        else if (w == "copy_d2h")
            st = ga_backend_copy_d2h(d.b(), h, seg, 512);
        else
            st = ga_backend_device_synchronize(d.b());
        EXPECT_EQ(st, c.want) << w;
        EXPECT_NE(d.error().find("(" + w + ")"), std::string::npos) << d.error();
    }
    EXPECT_EQ(d.counters().live_reservations, 1u);
    EXPECT_EQ(d.counters().live_segments, 1u);
    EXPECT_EQ(d.counters().live_host_allocs, 1u);
    EXPECT_EQ(d.counters().live_mapped_bytes, kPage);
    // from: every call from then on.
    ASSERT_EQ(ga_sim_set_op_faults(d.state(), 0, d.counters().op_calls + 2), GALLOC_OK);
    EXPECT_EQ(ga_backend_host_free(d.b(), h, 512), GALLOC_OK);
    EXPECT_EQ(d.release(seg, kPage), GALLOC_E_DEVICE);
    EXPECT_EQ(d.release(seg, kPage), GALLOC_E_DEVICE);
    ASSERT_EQ(ga_sim_set_op_faults(d.state(), 0, 0), GALLOC_OK);
    EXPECT_EQ(d.release(seg, kPage), GALLOC_OK);
    EXPECT_EQ(d.unmap(r, kPage), GALLOC_OK);
    EXPECT_EQ(ga_backend_va_release(d.b(), r, 2 * kPage), GALLOC_OK);
    EXPECT_EQ(d.counters().violations, 0u);
}

TEST(SimHost, RegisteredRangesAreCountedCheckedAndFaultable)
{
    Dev d(Args(64 * kMiB));
    char mem[16384];
    ASSERT_EQ(ga_backend_host_register(d.b(), mem, 8192), GALLOC_OK) << d.error();
    EXPECT_EQ(d.counters().live_host_registered, 1u);
    EXPECT_EQ(d.counters().live_registered_bytes, 8192u);
    EXPECT_EQ(d.counters().live_host_allocs, 0u); // the memory is the caller's, not a host block
    // Overlaps, empty and NULL ranges, unregistering what is not a live range with its size: violations.
    EXPECT_EQ(ga_backend_host_register(d.b(), mem + 4096, 8192), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_host_register(d.b(), mem + 8192, 0), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_host_register(d.b(), nullptr, 64), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_host_unregister(d.b(), mem, 4096), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_host_unregister(d.b(), mem + 8192, 8192), GALLOC_E_INVAL);
    EXPECT_EQ(d.counters().violations, 5u);
    // Op faults number register and unregister with the other memory ops:
    // register fails as host_alloc does (NOMEM), unregister as host_free (DEVICE).
    ASSERT_EQ(ga_sim_set_op_faults(d.state(), d.counters().op_calls + 1, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_host_register(d.b(), mem + 8192, 8192), GALLOC_E_NOMEM);
    EXPECT_EQ(d.counters().live_host_registered, 1u);
    ASSERT_EQ(ga_backend_host_register(d.b(), mem + 8192, 8192), GALLOC_OK) << d.error();
    ASSERT_EQ(ga_sim_set_op_faults(d.state(), d.counters().op_calls + 1, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_host_unregister(d.b(), mem, 8192), GALLOC_E_DEVICE);
    EXPECT_EQ(d.counters().live_host_registered, 2u);
    ASSERT_EQ(ga_backend_host_unregister(d.b(), mem, 8192), GALLOC_OK);
    EXPECT_EQ(d.counters().live_registered_bytes, 8192u);
    // mem + 8192 is left for close, which forgets it
}

TEST(SimHost, DeviceSynchronizeCompletesEveryStream)
{
    Dev d(Args(64 * kMiB, kManualEvents));
    uintptr_t e1 = 0, e2 = 0;
    ASSERT_EQ(ga_backend_event_create(d.b(), &e1), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_create(d.b(), &e2), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_record(d.b(), e1, 1), GALLOC_OK);
    ASSERT_EQ(ga_backend_event_record(d.b(), e2, 2), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(d.b(), e1), GALLOC_E_NOT_READY);
    ASSERT_EQ(ga_backend_device_synchronize(d.b()), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(d.b(), e1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(d.b(), e2), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_destroy(d.b(), e1), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_destroy(d.b(), e2), GALLOC_OK);
}

} // namespace
} // namespace sim_test
