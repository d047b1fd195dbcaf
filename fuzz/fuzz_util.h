// fuzz_util.h: what the C++ fuzz targets share: a failed check that names
// itself and aborts (libFuzzer keeps the input), the fuzzer's bytes read as
// a stream that yields zeros once spent, and a memfd that stands for a file
// (the readers and the snapshot writer take paths).
#ifndef GA_FUZZ_FUZZ_UTIL_H
#define GA_FUZZ_FUZZ_UTIL_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fuzz {

[[noreturn]] inline void Die(const char *target, const char *file, int line, const char *what, const char *detail)
{
    std::fprintf(stderr, "%s: %s:%d: check failed: %s%s%s\n", target, file, line, what, detail[0] ? ": " : "", detail);
    std::abort();
}

// CHECK(cond, detail): detail is a C string printed with the failure ("" for none).
#define FUZZ_CHECK(cond, detail)                                                                                       \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            fuzz::Die(kTarget, __FILE__, __LINE__, #cond, (detail));                                                   \
    } while (0)

class Bytes {
  public:
    Bytes(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    bool Empty() const { return n_ == 0; }
    size_t Left() const { return n_; }
    uint8_t U8()
    {
        if (n_ == 0)
            return 0;
        n_--;
        return *p_++;
    }
    uint32_t U16() { return U8() | (uint32_t)U8() << 8; }
    uint32_t U32() { return U16() | (uint32_t)U16() << 16; }

  private:
    const uint8_t *p_;
    size_t n_;
};

// A file in memory, named by /proc/self/fd/N: rewritten for every input.
class MemFile {
  public:
    const char *Path()
    {
        if (fd_ < 0) {
            fd_ = memfd_create("galloc_fuzz", 0);
            if (fd_ < 0)
                std::abort();
            std::snprintf(path_, sizeof path_, "/proc/self/fd/%d", fd_);
        }
        return path_;
    }
    void Put(const void *p, size_t n)
    {
        Path();
        if (ftruncate(fd_, 0) != 0)
            std::abort();
        size_t done = 0;
        while (done < n) {
            ssize_t k = pwrite(fd_, static_cast<const char *>(p) + done, n - done, (off_t)done);
            if (k <= 0)
                std::abort();
            done += (size_t)k;
        }
    }

  private:
    int fd_ = -1;
    char path_[64] = "";
};

} // namespace fuzz

#endif // GA_FUZZ_FUZZ_UTIL_H
