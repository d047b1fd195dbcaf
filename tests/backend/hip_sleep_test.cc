// hip_sleep_test: galloc_sleep and galloc_wake on the "hip" backend through
// the public API, on the strict fake HIP runtime: sleep_cases.cc's scenarios and
// fault sweeps, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Sleep, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, SleepPlain, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
