// cuda_peer_test: galloc_enable_peer_access on the "cuda" backend through the
// public API, on the strict fake driver's two devices: peer_cases.cc's
// scenarios and fault sweeps, instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Peer, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, PeerPlain, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
