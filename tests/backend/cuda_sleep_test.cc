// cuda_sleep_test: galloc_sleep and galloc_wake on the "cuda" backend through
// the public API, on the strict fake driver: sleep_cases.cc's scenarios and
// fault sweeps, instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Sleep, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, SleepPlain, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
