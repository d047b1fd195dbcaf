// torch_shim_test: libgalloc_torch.so (//torch_plugin:galloc_torch) loaded by Debian's
// python3 through ctypes, the way torch.cuda.memory.CUDAPluggableAllocator
// loads it, and driven on the strict fake CUDA driver (no GPU needed): each
// case runs torch_shim_check.py in a fresh process, so every case starts with
// an empty device registry. The checks themselves (exact stats, snapshot,
// messages, no driver leak) are in the script.
//
// Under --config=asan the library and the fake carry the ASan runtime, which
// must be loaded first: the child gets it through LD_PRELOAD (the shared
// runtime of the compiler that built this test: AsanRuntime), and leak
// detection off, since python3 itself keeps memory at exit.
#include <gtest/gtest.h>

#include <glob.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/util/python.h"

#if defined(__SANITIZE_ADDRESS__)
#define TORCH_SHIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORCH_SHIM_ASAN 1
#endif
#endif

namespace {

// A file built into this test's runfiles.
std::string Runfile(const std::string &rel)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "galloc") + "/" + rel;
}

#ifdef TORCH_SHIM_ASAN
// The shared ASan runtime to preload into python3: the one this process
// loaded (gcc links libasan.so), else, for clang, which links its runtime
// statically into the test, the shared build of the same runtime that clang
// ships beside it (libclang_rt.asan-x86_64.so; the instrumented libraries'
// __asan_* and __ubsan_* calls resolve against either).
std::string AsanRuntime()
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        size_t at = line.find('/');
        if (at != std::string::npos && (line.find("libasan.so", at) != std::string::npos ||
                                        line.find("libclang_rt.asan", at) != std::string::npos))
            return line.substr(at);
    }
#if defined(__clang__)
#define TORCH_SHIM_STR2(x) #x
#define TORCH_SHIM_STR(x) TORCH_SHIM_STR2(x)
    glob_t g = {};
    std::string found;
    if (glob("/usr/lib/llvm-" TORCH_SHIM_STR(__clang_major__) "/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.so", 0,
             nullptr, &g) == 0 &&
        g.gl_pathc > 0)
        found = g.gl_pathv[0];
    globfree(&g);
    return found;
#else
    return "";
#endif
}
#endif

class TorchShim : public ::testing::TestWithParam<const char *> {
  protected:
    void SetUp() override
    {
        lib_ = Runfile("torch_plugin/libgalloc_torch.so");
        fake_ = Runfile("tests/fake_cuda/libfake_cuda.so");
        ASSERT_TRUE(std::ifstream(lib_).good()) << lib_;
        ASSERT_TRUE(std::ifstream(fake_).good()) << fake_;
        // As a user would: the environment picks the CUDA backend and,
        // here, the fake driver in place of libcuda.so.1.
        std::string conf = "device_backend:cuda,driver_path:" + fake_;
        ASSERT_EQ(setenv("GALLOC_CONF", conf.c_str(), 1), 0);
#ifdef TORCH_SHIM_ASAN
        std::string rt = AsanRuntime();
        if (rt.empty())
            GTEST_SKIP() << "no shared ASan runtime to preload into python3 (clang's: libclang-rt-14-dev)";
        ASSERT_EQ(setenv("LD_PRELOAD", rt.c_str(), 1), 0);
        ASSERT_EQ(setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1), 0);
#endif
    }
    void TearDown() override
    {
        unsetenv("GALLOC_CONF");
#ifdef TORCH_SHIM_ASAN
        unsetenv("LD_PRELOAD");
#endif
    }
    std::string lib_, fake_;
};

TEST_P(TorchShim, CtypesCase)
{
    std::string out;
    int rc = test_run_python({"tests/api/torch_shim_check.py", GetParam(), lib_, fake_, test_tmp_path("")}, &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("ok\n"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Python, TorchShim,
                         ::testing::Values("alloc_free_two_devices", "hooks", "snapshot_and_summary",
                                           "configure_and_errors", "bad_driver", "probe_picks_cuda", "no_driver_no_sim",
                                           "sim_only_when_named"),
                         [](const ::testing::TestParamInfo<const char *> &info) { return std::string(info.param); });

} // namespace
