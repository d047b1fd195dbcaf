// cuda_capture_test: graph_capture_record_stream_reuse on the "cuda" backend
// through the public API, over the strict fake driver's capture model:
// capture_cases.cc's scenarios, instantiated with the CUDA names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Capture, ::testing::Values(&kCudaVendor), VendorName);

} // namespace cuda_test
