// cuda_device_fake_test: device_cases.cc's suites, written for the real
// driver, on the strict fake standing in for libcuda.so.1 (driver_path), so
// that CI proves them every day; cuda_device_gpu_test runs them on a GPU.
#include <gtest/gtest.h>

#include "tests/backend/device_fixture.h"

namespace device_test {

GA_DEVICE_SUITES(Fake, Driver::kFake);

} // namespace device_test
