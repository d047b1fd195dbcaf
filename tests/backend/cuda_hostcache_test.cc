// cuda_hostcache_test: the pinned host cache on the "cuda" backend over the
// strict fake driver: hostcache_cases.cc's scenarios and sweeps,
// instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, HostCache, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, HostCacheSweep, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
