// hip_async_test: backend:hipMallocAsync on the "hip" backend through the
// public API, on the strict fake HIP runtime: cuda_async_test's figures with
// the HIP calls PyTorch's hipified CUDAMallocAsyncAllocator makes
// (hipMallocAsync / hipFreeAsync, empty_cache = hipDeviceSynchronize +
// hipMemPoolTrimTo(0)). Every scenario here is one cuda_async_test runs the
// same way, so all are async_cases.cc's, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Async, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, AsyncPlain, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
