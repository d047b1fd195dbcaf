// cuda_share_test: galloc_ipc_* between two processes on the "cuda" backend
// over the fake's memfd-backed memory: share_cases.cc's scenarios and fault
// sweeps, instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/share_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Share, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, SharePlain, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
