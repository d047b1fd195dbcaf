// hip_host_test: the "hip" backend's pinned host memory and copies on the
// strict fake HIP runtime: host_cases.cc's scenarios, instantiated with the
// HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Host, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
