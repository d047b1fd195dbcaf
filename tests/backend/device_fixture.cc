// device_fixture.cc: the driver handle and the Device fixture (see
// device_fixture.h).
#include "tests/backend/device_fixture.h"

#include <dlfcn.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace device_test {

std::vector<Target> AllLayers(Driver d)
{
    return {{d, Layer::kNative}, {d, Layer::kAsync}, {d, Layer::kExpandable}};
}

std::vector<Target> PoolLayers(Driver d)
{
    return {{d, Layer::kNative}, {d, Layer::kExpandable}};
}

std::vector<Target> DriverPoolLayers(Driver d)
{
    return {{d, Layer::kAsync}};
}

std::string TargetName(const ::testing::TestParamInfo<Target> &info)
{
    switch (info.param.layer) {
    case Layer::kNative: return "native";
    case Layer::kAsync: return "async";
    case Layer::kExpandable: return "expandable";
    }
    return "unknown";
}

std::string DriverName(const ::testing::TestParamInfo<Driver> &info)
{
    return info.param == Driver::kReal ? "real" : "fake";
}

const char *LayerConf(Layer l)
{
    switch (l) {
    case Layer::kNative: return "";
    case Layer::kAsync: return "backend:cudaMallocAsync";
    case Layer::kExpandable: return "expandable_segments:True";
    }
    return "";
}

std::string FormatSize(uint64_t bytes)
{
    char buf[64];
    if (bytes <= 1024)
        std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
    else if (bytes <= kMiB)
        std::snprintf(buf, sizeof buf, "%.2f KiB", (double)bytes / 1024.0);
    else if (bytes <= kGiB)
        std::snprintf(buf, sizeof buf, "%.2f MiB", (double)bytes / (double)kMiB);
    else
        std::snprintf(buf, sizeof buf, "%.2f GiB", (double)bytes / (double)kGiB);
    return buf;
}

// ---- The driver handle. ----

// The driver calls the test makes itself on libcuda.so.1 (CUresult is an int,
// handles are pointers): a current context on this thread, streams, and a
// host function that holds a stream.
struct DriverHandle::Real {
    void *lib = nullptr;
    void *ctx = nullptr;
    int dev = 0;
    int (*cuInit)(unsigned);
    int (*cuDeviceGet)(int *, int);
    int (*cuDevicePrimaryCtxRetain)(void **, int);
    int (*cuDevicePrimaryCtxRelease_v2)(int);
    int (*cuCtxSetCurrent)(void *);
    int (*cuStreamCreate)(uintptr_t *, unsigned);
    int (*cuStreamDestroy_v2)(uintptr_t);
    int (*cuStreamSynchronize)(uintptr_t);
    int (*cuLaunchHostFunc)(uintptr_t, void (*)(void *), void *);
    std::string error;

    template <class F> void Bind(F *f, const char *name)
    {
        void *p = dlsym(lib, name);
        if (p == nullptr && error.empty())
            error = std::string("libcuda.so.1 lacks ") + name;
        std::memcpy(f, &p, sizeof *f);
    }
    Real()
    {
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            error = dlerror();
            return;
        }
        Bind(&cuInit, "cuInit");
        Bind(&cuDeviceGet, "cuDeviceGet");
        Bind(&cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
        Bind(&cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2");
        Bind(&cuCtxSetCurrent, "cuCtxSetCurrent");
        Bind(&cuStreamCreate, "cuStreamCreate");
        Bind(&cuStreamDestroy_v2, "cuStreamDestroy_v2");
        Bind(&cuStreamSynchronize, "cuStreamSynchronize");
        Bind(&cuLaunchHostFunc, "cuLaunchHostFunc");
        int rc = 0;
        if (error.empty() && ((rc = cuInit(0)) != 0 || (rc = cuDeviceGet(&dev, 0)) != 0 ||
                              (rc = cuDevicePrimaryCtxRetain(&ctx, dev)) != 0 || (rc = cuCtxSetCurrent(ctx)) != 0))
            error = "the test's own context on device 0: CUresult " + std::to_string(rc);
    }
    ~Real()
    {
        if (ctx != nullptr) {
            cuCtxSetCurrent(nullptr);
            cuDevicePrimaryCtxRelease_v2(dev);
        }
        if (lib != nullptr)
            dlclose(lib);
    }
};

// A held stream: the host function queued on it waits until opened.
struct DriverHandle::Gate {
    uintptr_t stream = 0;
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    static void Wait(void *self)
    {
        Gate *g = static_cast<Gate *>(self);
        std::unique_lock<std::mutex> lock(g->m);
        g->cv.wait(lock, [g] { return g->open; });
    }
    void Open()
    {
        std::lock_guard<std::mutex> lock(m);
        open = true;
        cv.notify_all();
    }
};

DriverHandle::DriverHandle(Driver d)
{
    if (d == Driver::kFake) {
        fake_.reset(new FakeCuda());
        options_ = "driver_path:" + fake_->path();
        if (fake_->ok())
            fake_->fake_cuda_configure(1, kFakeDeviceBytes, 2 * kMiB);
    }
}

DriverHandle::~DriverHandle()
{
    ReleaseAll();
    DestroyStreams();
}

std::string DriverHandle::Conf(Layer l) const
{
    std::string conf = LayerConf(l);
    if (!fake())
        return conf;
    return "device_backend:cuda," + options_ + (conf.empty() ? "" : "," + conf);
}

bool DriverHandle::RealReady()
{
    if (real_ == nullptr)
        real_.reset(new Real());
    EXPECT_EQ(real_->error, "");
    return real_->error.empty();
}

uintptr_t DriverHandle::NewStream()
{
    uintptr_t s = 0;
    if (fake()) {
        EXPECT_EQ(fake_->fake_cuda_stream_create(0, &s), 0);
    } else if (RealReady()) {
        EXPECT_EQ(real_->cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */), 0);
    }
    if (s != 0)
        streams_.push_back(s);
    return s;
}

void DriverHandle::Hold(uintptr_t s)
{
    if (fake()) {
        fake_->fake_cuda_set_manual_streams(1);
        return;
    }
    if (!RealReady())
        return;
    gates_.emplace_back(new Gate());
    gates_.back()->stream = s;
    EXPECT_EQ(real_->cuLaunchHostFunc(s, &Gate::Wait, gates_.back().get()), 0);
}

void DriverHandle::Release(uintptr_t s)
{
    if (fake()) {
        EXPECT_EQ(fake_->fake_cuda_stream_complete(0, s), 0);
        fake_->fake_cuda_set_manual_streams(0);
        return;
    }
    for (auto &g : gates_) {
        if (g->stream == s && !g->open) {
            g->Open();
            EXPECT_EQ(real_->cuStreamSynchronize(s), 0);
        }
    }
}

void DriverHandle::ReleaseAll()
{
    if (fake()) {
        if (fake_->ok())
            fake_->fake_cuda_set_manual_streams(0);
        return;
    }
    for (auto &g : gates_)
        if (!g->open)
            Release(g->stream);
}

void DriverHandle::DestroyStreams()
{
    for (uintptr_t s : streams_) {
        if (fake()) {
            EXPECT_EQ(fake_->fake_cuda_stream_destroy(s), 0);
        } else if (real_ != nullptr) {
            EXPECT_EQ(real_->cuStreamDestroy_v2(s), 0);
        }
    }
    streams_.clear();
}

// ---- The fixture. ----

void Device::SetUp()
{
    d_.reset(new DriverHandle(GetParam().driver));
    if (d_->fake()) {
        ASSERT_TRUE(d_->f().ok()) << d_->f().error();
    }
    char err[GALLOC_ERROR_MAX] = "";
    const std::string conf = d_->Conf(layer());
    galloc_status_t st = galloc_allocator_create_ex(fake() ? nullptr : "cuda", 0, conf.c_str(), GALLOC_CREATE_NO_ENV,
                                                    &a_, err, sizeof err);
    // No driver or device; or a driver without the layer's feature (no
    // stream-ordered allocation, no virtual memory management).
    if (st == GALLOC_E_UNAVAILABLE || (st == GALLOC_E_UNSUPPORTED && !fake()))
        GTEST_SKIP() << err;
    ASSERT_EQ(st, GALLOC_OK) << err;
    galloc_backend_args_t args = {};
    args.struct_size = sizeof args;
    args.options = d_->options().c_str();
    ASSERT_EQ(ga_backend_open(&b_, "cuda", &args, err, sizeof err), GALLOC_OK) << err;
    b_open_ = true;
}

void Device::TearDown()
{
    if (d_ != nullptr)
        d_->ReleaseAll(); // a test that failed while holding a stream
    if (a_ != nullptr) {
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError();
        galloc_allocator_destroy(a_);
        a_ = nullptr;
    }
    if (b_open_)
        ga_backend_close(&b_);
    b_open_ = false;
    if (d_ == nullptr)
        return;
    d_->DestroyStreams();
    if (d_->fake() && d_->f().ok()) {
        fake_gpu_stats_t s = d_->f().Stats();
        EXPECT_EQ(s.leaks, 0u) << "the fake driver counts leaks after destroy";
        EXPECT_EQ(s.violations, 0u) << d_->f().Violation();
    }
    d_.reset();
}

void *Device::Alloc(size_t n, galloc_stream_t s)
{
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << LastError();
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError();
    return p;
}

void Device::Free(void *p)
{
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK) << LastError();
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError();
}

galloc_stats_t Device::Stats()
{
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a_, &st), GALLOC_OK);
    return st;
}

std::string Device::LastError()
{
    char msg[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a_, msg, sizeof msg);
    return msg;
}

std::string Device::BackendError()
{
    char buf[512];
    ga_backend_error_string(&b_, buf, sizeof buf);
    return buf;
}

namespace {

std::vector<unsigned char> Pattern(size_t n, unsigned seed)
{
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned char)((i * 131 + seed * 17) ^ (i >> 12) ^ 0x5a);
    return v;
}

} // namespace

void Device::Write(const void *p, size_t n, unsigned seed)
{
    std::vector<unsigned char> v = Pattern(n, seed);
    EXPECT_EQ(ga_backend_copy_h2d(&b_, (uintptr_t)p, v.data(), n), GALLOC_OK) << BackendError();
}

long Device::Mismatch(const void *p, size_t n, unsigned seed)
{
    std::vector<unsigned char> want = Pattern(n, seed), got(n, 0);
    galloc_status_t st = ga_backend_copy_d2h(&b_, got.data(), (uintptr_t)p, n);
    EXPECT_EQ(st, GALLOC_OK) << BackendError();
    if (st != GALLOC_OK)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return (long)i;
    return -1;
}

size_t Device::FreeBytes(size_t *total)
{
    size_t free_bytes = 0, t = 0;
    EXPECT_EQ(ga_backend_mem_info(&b_, &free_bytes, &t), GALLOC_OK) << BackendError();
    if (total != nullptr)
        *total = t;
    return free_bytes;
}

} // namespace device_test
