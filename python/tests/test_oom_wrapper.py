"""galloc.torch's C++ out-of-memory wrapper (_torch_oom.cpp), built the way
use() builds it, against a stand-in for torch's c10/util/Exception.h (the
real header needs torch >= 2, not installable here), then driven by a small
C++ program as PyTorch drives alloc_fn: a failed allocation must come out as
c10::OutOfMemoryError carrying galloc's message. Skipped without a C++
compiler."""
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

import fake_torch

FAKE_EXCEPTION_H = """
#pragma once
// Stand-in for torch's c10/util/Exception.h: the names _torch_oom.cpp uses.
#include <sstream>
#include <stdexcept>
#include <string>
namespace c10 {
struct Error : std::runtime_error { using std::runtime_error::runtime_error; };
struct OutOfMemoryError : Error { using Error::Error; };
template <typename... A> std::string str(const A &...a) { std::ostringstream s; (s << ... << a); return s.str(); }
}
#define TORCH_CHECK_WITH(kind, cond, ...) do { if (!(cond)) throw ::c10::kind(::c10::str(__VA_ARGS__)); } while (0)
#define TORCH_CHECK(cond, ...) TORCH_CHECK_WITH(Error, cond, __VA_ARGS__)
"""

DRIVER = r"""
// PyTorch's side: alloc_fn called from C++, exceptions caught as PyTorch's bindings catch them.
#include <dlfcn.h>
#include <sys/types.h>
#include <cstdio>
#include <cstdlib>
#include <c10/util/Exception.h>
int main(int argc, char **argv) {
    void *g = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL), *w = dlopen(argv[2], RTLD_NOW);
    if (!g || !w) { std::printf("dlopen: %s\n", dlerror()); return 2; }
    auto bind = (void (*)(void *, void *, void *, int))dlsym(w, "galloc_torch_oom_bind");
    auto alloc = (void *(*)(ssize_t, int, void *))dlsym(w, "galloc_torch_oom_malloc");
    auto dealloc = (void (*)(void *, ssize_t, int, void *))dlsym(w, "galloc_torch_oom_free");
    bind(dlsym(g, "galloc_torch_malloc"), dlsym(g, "galloc_torch_free"), dlsym(g, "galloc_torch_last_error"),
         std::atoi(argv[3]));
    void *p = alloc(1, 0, nullptr);
    if (!p) { std::printf("1 byte failed\n"); return 1; }
    dealloc(p, 1, 0, nullptr);
    if (alloc(0, 0, nullptr) != nullptr) { std::printf("size 0 not NULL\n"); return 1; }
    try {
        alloc((ssize_t)2 << 30, 0, nullptr);
    } catch (const c10::OutOfMemoryError &e) {
        std::printf("OutOfMemoryError: %s\n", e.what());
    }
    try {
        alloc(16, 64, nullptr);  // no such device: a failure, not an OOM
    } catch (const c10::OutOfMemoryError &e) {
        std::printf("wrongly OutOfMemoryError: %s\n", e.what());
    } catch (const c10::Error &e) {
        std::printf("Error: %s\n", e.what());
    }
    return 0;
}
"""


class OomWrapper(unittest.TestCase):
    def setUp(self):
        self.cxx = os.environ.get("CXX", "c++")
        if shutil.which(self.cxx) is None:
            self.skipTest(f"no C++ compiler ({self.cxx})")
        self.tmp = tempfile.mkdtemp()
        inc = os.path.join(self.tmp, "include", "c10", "util")
        os.makedirs(inc)
        with open(os.path.join(inc, "Exception.h"), "w") as f:
            f.write(FAKE_EXCEPTION_H)
        libdir = os.path.join(self.tmp, "lib")
        os.makedirs(libdir)
        with open(os.path.join(self.tmp, "c10.c"), "w") as f:
            f.write("void c10_stand_in(void) {}\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(libdir, "libc10.so"),
                        os.path.join(self.tmp, "c10.c")], check=True)
        state = fake_torch.install()
        import types
        import sys
        utils = types.ModuleType("torch.utils")
        ext = types.ModuleType("torch.utils.cpp_extension")
        ext.include_paths = lambda: [os.path.join(self.tmp, "include")]
        ext.library_paths = lambda: [libdir]
        utils.cpp_extension = ext
        sys.modules["torch"].utils = utils
        sys.modules.update({"torch.utils": utils, "torch.utils.cpp_extension": ext})
        self.state = state
        os.environ["GALLOC_CACHE_DIR"] = os.path.join(self.tmp, "cache")

    def tearDown(self):
        os.environ.pop("GALLOC_CACHE_DIR", None)
        import sys
        for m in ("torch.utils", "torch.utils.cpp_extension"):
            sys.modules.pop(m, None)
        fake_torch.uninstall()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_built_as_use_builds_it_and_oom_throws_galloc_message(self):
        import sys
        import galloc.torch
        from galloc import _native
        path, why = galloc.torch._oom_wrapper(sys.modules["torch"])
        self.assertIsNone(why)
        self.assertTrue(os.path.isfile(path))
        self.assertEqual(galloc.torch._oom_wrapper(sys.modules["torch"])[0], path)  # cached
        driver = os.path.join(self.tmp, "driver")
        src = os.path.join(self.tmp, "driver.cc")
        with open(src, "w") as f:
            f.write(DRIVER)
        subprocess.run([self.cxx, "-std=c++17", f"-I{os.path.join(self.tmp, 'include')}", src, "-o", driver, "-ldl"],
                       check=True)
        r = subprocess.run([driver, galloc.torch.LIBRARY, path, str(_native.E_OOM)], capture_output=True, text=True,
                           env=dict(os.environ, GALLOC_CONF="device_backend:sim,sim_capacity:1GiB"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."), r.stdout)
        self.assertTrue(lines[1].startswith("Error: galloc: allocating 16 bytes on device 64 failed: "), r.stdout)


if __name__ == "__main__":
    unittest.main()
