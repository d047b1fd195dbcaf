// cuda_host_test: the "cuda" backend's pinned host memory and copies on the
// strict fake driver: host_cases.cc's scenarios, instantiated with the
// CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Host, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
