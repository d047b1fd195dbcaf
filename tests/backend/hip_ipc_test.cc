// hip_ipc_test: the "hip" backend's sharing of device memory between
// processes (ipc_export / ipc_open / ipc_close, export_page / import_pages),
// two processes on the strict fake HIP runtime: ipc_cases.cc's scenarios and fault
// sweeps, instantiated with the HIP names.
#include <gtest/gtest.h>

#include "tests/backend/vendor_cases.h"

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Ipc, ::testing::Values(&kHipVendor), VendorName);

} // namespace cuda_test
