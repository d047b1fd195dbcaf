// hip_graph_test: the "hip" backend's stream capture graph members
// (capture_info, node_deps) on the strict fake HIP runtime's capture model:
// graph_cases.cc's scenarios, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Graph, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
