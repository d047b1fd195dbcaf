// hip_share_test: galloc_ipc_* between two processes on the "hip" backend
// over the fake's memfd-backed memory: share_cases.cc's scenarios and fault
// sweeps, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/share_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Share, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, SharePlain, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
