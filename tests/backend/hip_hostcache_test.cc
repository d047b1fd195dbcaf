// hip_hostcache_test: the pinned host cache on the "hip" backend over the
// strict fake HIP runtime: hostcache_cases.cc's scenarios and sweeps,
// instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, HostCache, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, HostCacheSweep, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
