// cuda_graph_test: the "cuda" backend's stream capture graph members
// (capture_info, node_deps) on the strict fake driver's capture model:
// graph_cases.cc's scenarios, instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Graph, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
