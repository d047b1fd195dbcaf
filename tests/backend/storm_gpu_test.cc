// storm_gpu_test: the concurrency storm (tests/reliability/storm.h) on the
// real driver (backend "cuda", libcuda.so.1, device 0): 16 workers, each on a
// CUDA stream of its own (created by the test through device_fixture's
// driver handle), beside the control threads. Tagged "gpu"; skips with the
// backend's reason where it cannot open (no driver, no device).
// Environment: GALLOC_STORM_SECONDS (default 10), GALLOC_STORM_SEED (default
// from the clock, printed), GALLOC_STORM_THREADS (default 16).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/backend/device_fixture.h"
#include "tests/reliability/storm.h"

extern "C" {
#include <galloc/galloc.h>
}

namespace {

TEST(StormGpu, WorkersAndControlThreadsOnTheRealDriver)
{
    storm::Config c;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = galloc_allocator_create("cuda", 0, "", &c.a, err, sizeof err);
    if (st == GALLOC_E_UNAVAILABLE)
        GTEST_SKIP() << err;
    ASSERT_EQ(st, GALLOC_OK) << err;
    {
        // The streams outlive the allocator: the handle destroys them at the
        // end of this scope, after galloc_allocator_destroy.
        device_test::DriverHandle driver(device_test::Driver::kReal);
        int workers = storm::ThreadsFromEnv(16);
        ASSERT_GE(workers, 1);
        for (int t = 0; t < workers; t++) {
            galloc_stream_t s = driver.NewStream();
            ASSERT_NE(s, 0u) << "cuStreamCreate for worker " << t;
            c.streams.push_back(s);
        }
        storm::RunInTest(c, 10);
        galloc_allocator_destroy(c.a);
        c.a = nullptr;
    }
    if (c.a != nullptr) // a fatal failure above returned before destroy
        galloc_allocator_destroy(c.a);
}

} // namespace
