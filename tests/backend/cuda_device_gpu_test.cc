// cuda_device_gpu_test: device_cases.cc's suites on the real driver
// (libcuda.so.1, device 0) for the three CUDA layers. Tagged "gpu"; every
// test skips where the allocator cannot open (no driver, no device), so the
// target passes on machines without one. cuda_device_fake_test runs the same
// cases on the fake driver in CI.
#include <gtest/gtest.h>

#include "tests/backend/device_fixture.h"

namespace device_test {

GA_DEVICE_SUITES(Real, Driver::kReal);

} // namespace device_test
