// backend_opened.h: one backend state opened on a fake library, below the
// pool, for the suites that call the backend's members through
// backend/backend.h's wrappers (host_cases.cc, ipc_cases.cc via ipc_util.h,
// graph_cases.cc).
#ifndef GA_TESTS_BACKEND_BACKEND_OPENED_H
#define GA_TESTS_BACKEND_BACKEND_OPENED_H

#include <string>

#include "tests/backend/vendor_cases.h"

extern "C" {
#include "backend/backend.h"
}

namespace cuda_test {

// One backend state on a fake library, closed by the destructor (or Close).
class Opened {
  public:
    Opened(FakeCuda &f, const char *name) : options_("driver_path:" + f.path())
    {
        galloc_backend_args_t args = {};
        args.struct_size = sizeof args;
        args.options = options_.c_str();
        char err[512] = "";
        st_ = ga_backend_open(&b_, name, &args, err, sizeof err);
        err_ = err;
    }
    ~Opened() { Close(); }
    void Close()
    {
        if (st_ == GALLOC_OK)
            ga_backend_close(&b_);
        st_ = GALLOC_E_INVAL;
    }
    galloc_status_t status() const { return st_; }
    const std::string &open_error() const { return err_; }
    ga_backend_t *b() { return &b_; }
    std::string Error()
    {
        char buf[512];
        ga_backend_error_string(&b_, buf, sizeof buf);
        return buf;
    }

  private:
    std::string options_, err_;
    ga_backend_t b_ = {};
    galloc_status_t st_;
};

// "<function> failed: <name>: <text>", the words a backend message ends with
// for an injected kOutOfMemory or kUnknown, in the vendor's names.
inline std::string DriverWords(const char *fn, int code, const Vendor &v)
{
    bool oom = code == kOutOfMemory;
    std::string name =
        oom ? (std::string(v.name) == "cuda" ? "CUDA_ERROR_OUT_OF_MEMORY" : "hipErrorOutOfMemory") : v.unknown;
    return std::string(fn) + " failed: " + name + ": " + (oom ? "out of memory" : "unknown error");
}

} // namespace cuda_test

#endif // GA_TESTS_BACKEND_BACKEND_OPENED_H
