// vendor_cases.h: what lets one test body serve both GPU vendors. The cuda
// and hip backends share the generic GPU layer (backend/gpu_*.c) and differ
// only in their vendor table, so a scenario that runs the same on both is
// written once (malloc_cases.cc, vmm_cases.cc, async_cases.cc, host_cases.cc, hostcache_cases.cc,
// sleep_cases.cc, peer_cases.cc, ipc_cases.cc, graph_cases.cc, compiled into both vendors' test targets) as a value-parameterized test over a Vendor:
// the names that differ between them (library, backend key, driver / runtime
// functions injected with faults or counted, the error names and words in
// the messages; kCudaVendor and kHipVendor below). Each vendor's own test
// file instantiates the shared suites with its Vendor, so each backend keeps
// one Bazel target, and its vendor-only tests stay next to the instantiation.
#ifndef GA_TESTS_BACKEND_VENDOR_CASES_H
#define GA_TESTS_BACKEND_VENDOR_CASES_H

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "tests/backend/cuda_fixture.h"

namespace hook_test {
class Ledger;
}

namespace cuda_test {

// One vendor's names. Exact strings, so every expected message stays exact.
struct Vendor {
    const char *name;     // the backend ("cuda"), the fakes' infix (libfake_cuda.so) and the fake's vendor()
    const char *upper;    // PyTorch's word in messages: "CUDA out of memory", PYTORCH_CUDA_ALLOC_CONF
    const char *real_lib; // the real library's file name, for the bad-path message
    const char *loader;   // what the loader calls the library when a required symbol is missing
    const char *unknown;  // the name of result code 999 (kUnknown)
    // Native pool: segment allocation, cross-stream events, stream sync.
    const char *mem_alloc, *mem_free, *event_create, *event_destroy, *event_record, *event_query, *stream_sync;
    // Virtual memory management (expandable segments).
    const char *address_reserve, *address_free, *mem_create, *mem_release, *mem_map, *mem_unmap, *set_access;
    // Stream-ordered allocation (backend:<name>MallocAsync).
    const char *alloc_async, *free_async, *default_pool, *pool_set_attr, *pool_trim, *device_sync;
    // Pinned host memory and copies (galloc_sleep's offload).
    const char *host_alloc, *host_free, *copy_d2h, *copy_h2d;
    // Peer access (galloc_enable_peer_access).
    const char *can_access_peer, *enable_peer;
    // Sharing between processes (the backend's ipc members): the call the _noipc fake lacks.
    const char *ipc_open;
    // Stream capture graphs (the backend's capture_info, node_deps); the _nograph fake lacks the first.
    const char *capture_info, *node_deps;
    // Registering host memory (the host cache's register path); the _nohostreg fake lacks the first.
    const char *host_register, *host_unregister;

    // The fake library of this vendor, optionally a variant ("_noalloc").
    std::string Fake(const std::string &variant = "") const { return "libfake_" + std::string(name) + variant + ".so"; }
    std::string AsyncBackend() const { return "backend:" + std::string(name) + "MallocAsync"; }
};

// The two vendors, field by field as Vendor declares them.
inline const Vendor kCudaVendor = {
    "cuda",
    "CUDA",
    "libcuda.so",
    "driver library",
    "CUDA_ERROR_UNKNOWN",
    // native pool
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventQuery",
    "cuStreamSynchronize",
    // virtual memory management
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    // stream-ordered allocation: empty_cache synchronizes the context
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuDeviceGetDefaultMemPool",
    "cuMemPoolSetAttribute",
    "cuMemPoolTrimTo",
    "cuCtxSynchronize",
    // pinned host memory and copies
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemcpyDtoH_v2",
    "cuMemcpyHtoD_v2",
    // peer access: the peer's context enables access to ours
    "cuDeviceCanAccessPeer",
    "cuCtxEnablePeerAccess",
    // sharing between processes
    "cuIpcOpenMemHandle_v2",
    // stream capture graphs
    "cuStreamGetCaptureInfo_v2",
    "cuGraphNodeGetDependencies",
    // registering host memory
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
};
inline const Vendor kHipVendor = {
    "hip",
    "HIP",
    "libamdhip64.so",
    "HIP runtime library",
    "hipErrorUnknown",
    // native pool
    "hipMalloc",
    "hipFree",
    "hipEventCreateWithFlags",
    "hipEventDestroy",
    "hipEventRecord",
    "hipEventQuery",
    "hipStreamSynchronize",
    // virtual memory management
    "hipMemAddressReserve",
    "hipMemAddressFree",
    "hipMemCreate",
    "hipMemRelease",
    "hipMemMap",
    "hipMemUnmap",
    "hipMemSetAccess",
    // stream-ordered allocation: HIP has no contexts, empty_cache synchronizes the device
    "hipMallocAsync",
    "hipFreeAsync",
    "hipDeviceGetDefaultMemPool",
    "hipMemPoolSetAttribute",
    "hipMemPoolTrimTo",
    "hipDeviceSynchronize",
    // pinned host memory and copies
    "hipHostMalloc",
    "hipHostFree",
    "hipMemcpyDtoH",
    "hipMemcpyHtoD",
    // peer access: the peer device, current, enables access to ours
    "hipDeviceCanAccessPeer",
    "hipDeviceEnablePeerAccess",
    // sharing between processes
    "hipIpcOpenMemHandle",
    // stream capture graphs
    "hipStreamGetCaptureInfo_v2",
    "hipGraphNodeGetDependencies",
    // registering host memory
    "hipHostRegister",
    "hipHostUnregister",
};

// gtest prints a failing test's parameter: the vendor's name, not an address.
inline void PrintTo(const Vendor *v, std::ostream *os)
{
    *os << v->name;
}

// The parameter's name in the test names ("Cuda/Malloc.OneByte.../cuda").
inline std::string VendorName(const ::testing::TestParamInfo<const Vendor *> &info)
{
    return info.param->name;
}

// The allocator fixture (cuda_fixture.h's CudaTest) on the vendor's fake. The
// parameter interface comes first: the CudaTest base reads it to pick the
// library, and gtest sets the parameter before constructing the fixture.
class VendorTest : public ::testing::WithParamInterface<const Vendor *>, public CudaTest {
  protected:
    VendorTest() : CudaTest(GetParam()->Fake(), GetParam()->name) {}
    const Vendor &v() const { return *GetParam(); }
};

// The suites without a fixture allocator: they load their own fake (a
// variant, or a fresh one per sweep run).
class VendorPlain : public ::testing::TestWithParam<const Vendor *> {
  protected:
    const Vendor &v() const { return *GetParam(); }
};

// The shared suites, one per scenario file; declared here, complete, because
// each vendor's test file instantiates them (INSTANTIATE_TEST_SUITE_P needs
// the fixture's ParamType).
class Malloc : public VendorTest {}; // malloc_cases.cc: the native pool
class MallocLoad : public VendorPlain {};
class MallocSweep : public VendorPlain {};

class Vmm : public VendorTest { // vmm_cases.cc: expandable segments
  protected:
    void SetUp() override
    {
        VendorTest::SetUp();
        Make("expandable_segments:True");
    }
    void GrowTwoPages(char **a, char **b); // vmm_cases.cc
};
class VmmSweep : public VendorPlain {};

class Async : public VendorTest { // async_cases.cc: backend:<vendor>MallocAsync
  protected:
    void SetUp() override
    {
        VendorTest::SetUp();
        Make(v().AsyncBackend());
    }
    uint64_t PoolAttr(int attr) // device 0's default pool, as the fake holds it
    {
        uint64_t val = 0;
        EXPECT_EQ(f_.fake_cuda_pool_attr(0, attr, &val), 0);
        return val;
    }
};
class AsyncPlain : public VendorPlain {};

class Host : public VendorPlain {};           // host_cases.cc: the backend's host memory and copies, no allocator
class HostCache : public VendorTest {};       // hostcache_cases.cc: the pinned host cache through the public API
class HostCacheSweep : public VendorPlain {}; // and its fault sweeps

// sleep_cases.cc: galloc_sleep / galloc_wake through the public API. The
// tagged workload: tag "weights" (offloaded) holds a 5 MiB and a 3000-byte
// block, tag "kv" (discarded) a 3 MiB block, and an untagged 1 MiB block
// stays awake; each holds its own byte pattern.
struct Tagged {
    char *w_big = nullptr, *w_small = nullptr, *kv = nullptr, *plain = nullptr;
};
class Sleep : public VendorTest {
  protected:
    void RoundTrip(const char *conf); // sleep with offload, wake: the whole contract once
};
class SleepPlain : public VendorPlain {}; // the sweeps and the library without host memory

// peer_cases.cc: galloc_enable_peer_access on the fake's two devices, the
// allocator on device 0, device 1 the peer.
class Peer : public VendorTest {};
class PeerPlain : public VendorPlain {}; // the fault sweeps

// ipc_cases.cc: the backend's sharing between processes (ipc_export / ipc_open
// / ipc_close, export_page / import_pages) below the pool, two processes on
// the fake driver.
class Ipc : public VendorPlain {};

// graph_cases.cc: the backend's capture_info and node_deps below the pool,
// on the fake's capture model.
class Graph : public VendorPlain {};

// hooks_cases.cc: device-memory hooks (galloc_hooks.h) against the driver's
// books; Balanced checks a hook's ledger (tests/util/hook_ledger.h) against
// reserved_bytes and the bytes the driver holds.
class Hooks : public VendorTest {
  protected:
    void Balanced(hook_test::Ledger &l, const std::string &where);
};
class HooksSweep : public VendorPlain {}; // the driver's faults and the hook's own, in turn

// capture_cases.cc: graph_capture_record_stream_reuse through the public API:
// a capture on s_ routed to pool_, side streams s1_ and s2_ (test-owned).
class Capture : public VendorTest {
  protected:
    void Begin(const std::string &conf);
    void End();
    void *FreeUsedOnS1(uintptr_t *use);
    galloc_stream_t S() const { return (galloc_stream_t)s_; }
    uintptr_t s_ = 0, s1_ = 0, s2_ = 0;
    galloc_mempool_id_t pool_ = {0, 0};
};

} // namespace cuda_test

#endif // GA_TESTS_BACKEND_VENDOR_CASES_H
