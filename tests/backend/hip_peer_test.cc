// hip_peer_test: galloc_enable_peer_access on the "hip" backend through the
// public API, on the strict fake HIP runtime's two devices: peer_cases.cc's
// scenarios and fault sweeps, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Peer, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, PeerPlain, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
