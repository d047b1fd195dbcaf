// hip_hooks_test: device-memory hooks (galloc_hooks.h) on the "hip"
// backend through the public API, on the strict fake HIP runtime:
// hooks_cases.cc's scenarios and sweeps, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Hooks, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, HooksSweep, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
