// cuda_hooks_test: device-memory hooks (galloc_hooks.h) on the "cuda"
// backend through the public API, on the strict fake driver:
// hooks_cases.cc's scenarios and sweeps, instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Hooks, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, HooksSweep, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
