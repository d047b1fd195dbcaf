// device_fixture.h: one fixture for the suites that run the same on the real
// CUDA driver (libcuda.so.1, device 0: the gpu-tagged cuda_device_gpu_test)
// and on the strict fake driver standing in for it (cuda_device_fake_test, in
// CI), so that the GPU suites are proven on a "device" every day and not only
// on the days a GPU is lent. device_cases.cc holds the cases; each binary
// instantiates them for its driver and the three CUDA allocator layers:
//
//   native      plain cuMemAlloc segments      conf ""
//   async       stream-ordered driver pools    conf "backend:cudaMallocAsync"
//   expandable  VMM pages (cuMemCreate/Map)     conf "expandable_segments:True"
//
// Only what a real device also shows is asserted: the bytes are written and
// read through the backend's copies (cuMemcpyHtoD / DtoH), never through the
// pointer; free memory through cuMemGetInfo; streams are created and held by
// the driver itself (a host function that waits on the real driver, the
// fake's manual streams on the fake). On the fake, TearDown also asserts that
// the driver counts no leak and no broken contract.
//
// A test skips (GTEST_SKIP with the reason) where the allocator cannot open:
// no driver, no device, or the layer's feature missing in the driver.
#ifndef GA_TESTS_BACKEND_DEVICE_FIXTURE_H
#define GA_TESTS_BACKEND_DEVICE_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "backend/backend.h"
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace device_test {

constexpr size_t kMiB = size_t{1} << 20, kGiB = size_t{1} << 30;
constexpr int ALL = GALLOC_STAT_ALL, SMALL = GALLOC_STAT_SMALL_POOL, LARGE = GALLOC_STAT_LARGE_POOL;

enum class Driver { kReal, kFake };
enum class Layer { kNative, kAsync, kExpandable };

// One instantiation: which driver, which allocator layer.
struct Target {
    Driver driver;
    Layer layer;
};

// The three layers on driver d, in the order above; the caching pool's two
// (native, expandable); the driver pool's one (async).
std::vector<Target> AllLayers(Driver d);
std::vector<Target> PoolLayers(Driver d);
std::vector<Target> DriverPoolLayers(Driver d);
// The parameter's name in the test names ("Real/Device.Oom/expandable").
std::string TargetName(const ::testing::TestParamInfo<Target> &info);
std::string DriverName(const ::testing::TestParamInfo<Driver> &info);
// The config string that selects layer l.
const char *LayerConf(Layer l);
// PyTorch's format_size (c10), as galloc's messages print sizes.
std::string FormatSize(uint64_t bytes);

// The fake's device 0 in these suites: small enough that an OOM of the whole
// device maps few pages, large enough for every case.
constexpr uint64_t kFakeDeviceBytes = 2 * kGiB;

// The driver a test runs on, below the allocator: its library loaded by the
// test (for streams; the fake's controls), and the backend args naming it.
class DriverHandle {
  public:
    explicit DriverHandle(Driver d);
    ~DriverHandle();
    DriverHandle(const DriverHandle &) = delete;
    DriverHandle &operator=(const DriverHandle &) = delete;

    bool fake() const { return fake_ != nullptr; }
    FakeCuda &f() { return *fake_; }
    // "driver_path:<the fake>" or "" (the backend's default, libcuda.so.1).
    const std::string &options() const { return options_; }
    // The allocator's config for layer l on this driver.
    std::string Conf(Layer l) const;

    // A new stream on device 0; 0 and a failure when the driver cannot.
    uintptr_t NewStream();
    // Hold s: work queued on it after this (an event galloc records) stays
    // pending until Release(s). Release waits for s to drain.
    void Hold(uintptr_t s);
    void Release(uintptr_t s);
    void ReleaseAll();
    // Destroys the streams (after the allocator that used them).
    void DestroyStreams();

  private:
    struct Real; // libcuda.so.1's stream calls, bound on first use
    struct Gate; // one held stream
    bool RealReady();

    std::unique_ptr<FakeCuda> fake_;
    std::unique_ptr<Real> real_;
    std::string options_;
    std::vector<uintptr_t> streams_;
    std::vector<std::unique_ptr<Gate>> gates_;
};

class Device : public ::testing::TestWithParam<Target> {
  protected:
    void SetUp() override;
    void TearDown() override;

    Layer layer() const { return GetParam().layer; }
    bool fake() const { return GetParam().driver == Driver::kFake; }
    // The caching pool (native or expandable), not the driver's pool.
    bool caching() const { return layer() != Layer::kAsync; }

    void *Alloc(size_t n, galloc_stream_t s = 0);
    void Free(void *p);
    galloc_stats_t Stats();
    std::string LastError();
    // Device bytes through the backend's copies: write seed's pattern, and
    // the first offset that differs from it (-1: none).
    void Write(const void *p, size_t n, unsigned seed);
    long Mismatch(const void *p, size_t n, unsigned seed);
    // cuMemGetInfo on device 0.
    size_t FreeBytes(size_t *total = nullptr);
    std::string BackendError();

    std::unique_ptr<DriverHandle> d_;
    galloc_allocator_t *a_ = nullptr;
    ga_backend_t b_ = {}; // a second backend state on device 0, for copies and mem_info
    bool b_open_ = false;
};

class Pool : public Device {};       // the caching pool: native and expandable
class DriverPool : public Device {}; // backend:cudaMallocAsync

// The backend below the allocator, per driver (the conformance suite).
class Backend : public ::testing::TestWithParam<Driver> {};

// Every suite of device_cases.cc on driver d, named prefix/... .
#define GA_DEVICE_SUITES(prefix, d)                                                                                    \
    INSTANTIATE_TEST_SUITE_P(prefix, Backend, ::testing::Values(d), DriverName);                                       \
    INSTANTIATE_TEST_SUITE_P(prefix, Device, ::testing::ValuesIn(AllLayers(d)), TargetName);                           \
    INSTANTIATE_TEST_SUITE_P(prefix, Pool, ::testing::ValuesIn(PoolLayers(d)), TargetName);                            \
    INSTANTIATE_TEST_SUITE_P(prefix, DriverPool, ::testing::ValuesIn(DriverPoolLayers(d)), TargetName)

} // namespace device_test

#endif // GA_TESTS_BACKEND_DEVICE_FIXTURE_H
