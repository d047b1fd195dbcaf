// fake_cuda_util.h: finding a fake driver library in the test's runfiles and
// driving it through its exported controls (fake_cuda_control.h).
//
// One class serves every fake built on the shared core: the fake CUDA driver
// (//tests/fake_cuda, controls fake_cuda_*) and the fake HIP runtime
// (//tests/fake_hip, controls fake_hip_*, same types). The members keep the
// CUDA spelling; for a HIP fake they are bound to its fake_hip_* controls.
//
// The test dlopens the same file galloc is given as driver_path, so galloc's
// dlopen returns the same loaded library: one fake driver, whose state outlives
// galloc's dlclose while this handle is held.
#ifndef GA_TESTS_FAKE_CUDA_UTIL_H
#define GA_TESTS_FAKE_CUDA_UTIL_H

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/fake_cuda/fake_cuda_control.h"

// The runfiles path of a library built by //tests/fake_<vendor> (Bazel's
// TEST_SRCDIR/TEST_WORKSPACE; "." outside Bazel).
inline std::string FakeCudaPath(const std::string &lib = "libfake_cuda.so", const std::string &vendor = "cuda")
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "galloc") + "/tests/fake_" + vendor + "/" + lib;
}

// One handle on a fake driver library and its controls. vendor is the galloc
// backend it stands in for ("cuda", "hip"): it names the package, the control
// prefix and the backend a test selects.
class FakeCuda {
  public:
    explicit FakeCuda(const std::string &lib = "libfake_cuda.so", const std::string &vendor = "cuda")
        : path_(FakeCudaPath(lib, vendor)), vendor_(vendor)
    {
        lib_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib_ == nullptr) {
            const char *e = dlerror();
            error_ = e ? e : "dlopen failed";
            return;
        }
#define FAKE_CUDA_BIND_(f) f = Sym<decltype(&::f)>(Control(#f).c_str());
        FAKE_CUDA_BIND_(fake_cuda_reset)
        FAKE_CUDA_BIND_(fake_cuda_configure)
        FAKE_CUDA_BIND_(fake_cuda_fail)
        FAKE_CUDA_BIND_(fake_cuda_fail_clear)
        FAKE_CUDA_BIND_(fake_cuda_calls)
        FAKE_CUDA_BIND_(fake_cuda_stats)
        FAKE_CUDA_BIND_(fake_cuda_trace)
        FAKE_CUDA_BIND_(fake_cuda_trace_clear)
        FAKE_CUDA_BIND_(fake_cuda_last_violation)
        FAKE_CUDA_BIND_(fake_cuda_set_manual_streams)
        FAKE_CUDA_BIND_(fake_cuda_stream_create)
        FAKE_CUDA_BIND_(fake_cuda_stream_destroy)
        FAKE_CUDA_BIND_(fake_cuda_stream_complete)
        FAKE_CUDA_BIND_(fake_cuda_pool_attr)
        FAKE_CUDA_BIND_(fake_cuda_access)
        FAKE_CUDA_BIND_(fake_cuda_mappings_without)
        FAKE_CUDA_BIND_(fake_cuda_peer_enabled)
        FAKE_CUDA_BIND_(fake_cuda_peer_block)
        FAKE_CUDA_BIND_(fake_cuda_capture_begin)
        FAKE_CUDA_BIND_(fake_cuda_capture_launch)
        FAKE_CUDA_BIND_(fake_cuda_capture_join)
        FAKE_CUDA_BIND_(fake_cuda_capture_end)
        FAKE_CUDA_BIND_(fake_cuda_capture_invalidate)
#undef FAKE_CUDA_BIND_
        if (error_.empty())
            fake_cuda_reset();
    }
    ~FakeCuda()
    {
        if (lib_ != nullptr) {
            fake_cuda_reset(); // free what a failed test left, for the leak checker
            dlclose(lib_);
        }
    }
    FakeCuda(const FakeCuda &) = delete;
    FakeCuda &operator=(const FakeCuda &) = delete;

    bool ok() const
    {
        return lib_ != nullptr && error_.empty();
    }
    const std::string &error() const
    {
        return error_;
    }
    const std::string &path() const
    {
        return path_;
    }
    const std::string &vendor() const
    {
        return vendor_;
    }

    // A symbol of the library as function pointer type F (null if missing).
    template <class F> F Sym(const char *name)
    {
        void *p = dlsym(lib_, name);
        if (p == nullptr && error_.empty())
            error_ = std::string("missing symbol ") + name;
        F f;
        std::memcpy(&f, &p, sizeof(f)); // POSIX: function pointers round-trip through void *
        return f;
    }

    fake_gpu_stats_t Stats()
    {
        fake_gpu_stats_t s;
        fake_cuda_stats(&s);
        return s;
    }
    std::string Trace()
    {
        std::string s(fake_cuda_trace(nullptr, 0) + 1, '\0');
        fake_cuda_trace(&s[0], s.size());
        s.resize(s.size() - 1);
        return s;
    }
    std::string Violation()
    {
        char buf[512];
        fake_cuda_last_violation(buf, sizeof(buf));
        return buf;
    }

    decltype(&::fake_cuda_reset) fake_cuda_reset = nullptr;
    decltype(&::fake_cuda_configure) fake_cuda_configure = nullptr;
    decltype(&::fake_cuda_fail) fake_cuda_fail = nullptr;
    decltype(&::fake_cuda_fail_clear) fake_cuda_fail_clear = nullptr;
    decltype(&::fake_cuda_calls) fake_cuda_calls = nullptr;
    decltype(&::fake_cuda_stats) fake_cuda_stats = nullptr;
    decltype(&::fake_cuda_trace) fake_cuda_trace = nullptr;
    decltype(&::fake_cuda_trace_clear) fake_cuda_trace_clear = nullptr;
    decltype(&::fake_cuda_last_violation) fake_cuda_last_violation = nullptr;
    decltype(&::fake_cuda_set_manual_streams) fake_cuda_set_manual_streams = nullptr;
    decltype(&::fake_cuda_stream_create) fake_cuda_stream_create = nullptr;
    decltype(&::fake_cuda_stream_destroy) fake_cuda_stream_destroy = nullptr;
    decltype(&::fake_cuda_stream_complete) fake_cuda_stream_complete = nullptr;
    decltype(&::fake_cuda_pool_attr) fake_cuda_pool_attr = nullptr;
    decltype(&::fake_cuda_access) fake_cuda_access = nullptr;
    decltype(&::fake_cuda_mappings_without) fake_cuda_mappings_without = nullptr;
    decltype(&::fake_cuda_peer_enabled) fake_cuda_peer_enabled = nullptr;
    decltype(&::fake_cuda_peer_block) fake_cuda_peer_block = nullptr;
    decltype(&::fake_cuda_capture_begin) fake_cuda_capture_begin = nullptr;
    decltype(&::fake_cuda_capture_launch) fake_cuda_capture_launch = nullptr;
    decltype(&::fake_cuda_capture_join) fake_cuda_capture_join = nullptr;
    decltype(&::fake_cuda_capture_end) fake_cuda_capture_end = nullptr;
    decltype(&::fake_cuda_capture_invalidate) fake_cuda_capture_invalidate = nullptr;

  private:
    // A control's exported name for this vendor: fake_cuda_reset -> fake_hip_reset.
    std::string Control(const char *cuda_name) const
    {
        return "fake_" + vendor_ + "_" + std::string(cuda_name).substr(std::strlen("fake_cuda_"));
    }

    std::string path_;
    std::string vendor_;
    std::string error_;
    void *lib_ = nullptr;
};

#endif // GA_TESTS_FAKE_CUDA_UTIL_H
