// ipc_util.h: what ipc_cases.cc's two-process scenarios share: a backend
// state opened on a fake library (below the pool: backend_opened.h), fork and wait with the
// child's exit status as its report, byte and descriptor transport (a pipe,
// SCM_RIGHTS over a unix socket), and one process's memory to share (a plain
// segment and VMM pages, each with its own bytes) with its release.
#ifndef GA_TESTS_BACKEND_IPC_UTIL_H
#define GA_TESTS_BACKEND_IPC_UTIL_H

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/util/child_exit.h"
#include "tests/backend/backend_opened.h"
#include "tests/backend/vendor_cases.h"

extern "C" {
#include "backend/backend.h"
#include "util/fdpass.h"
}

namespace cuda_test {

constexpr size_t kPage = 2 * kMiB; // the fake's default granularity
constexpr size_t kPages = 3;

// Run body in a child process; its result is the child's exit status.
inline pid_t Fork(const std::function<int()> &body)
{
    pid_t pid = fork();
    if (pid == 0)
        ga_test_child_exit(body());
    return pid;
}

// The child's exit status (0: every check passed), 128 + signal if it died.
inline int Wait(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline bool WriteAll(int fd, const void *p, size_t n)
{
    return write(fd, p, n) == (ssize_t)n;
}

inline bool ReadAll(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

// n (at most GA_FDPASS_BATCH) descriptors over a unix socket: one batch of
// util/fdpass.h, the protocol galloc_ipc_send uses.
inline bool SendFds(int sock, const int *fds, size_t n)
{
    return ga_fdpass_send(sock, "F", 1, fds, n) == 0;
}

// Exactly n descriptors, in one batch.
inline bool RecvFds(int sock, int *fds, size_t n)
{
    int got[GA_FDPASS_BATCH];
    size_t k = 0;
    if (ga_fdpass_recv_fds(sock, got, &k) != 0)
        return false;
    if (k != n) {
        for (size_t i = 0; i < k; i++)
            close(got[i]);
        return false;
    }
    std::memcpy(fds, got, n * sizeof(int));
    return true;
}

inline bool AllBytes(uintptr_t p, size_t n, unsigned char b)
{
    const unsigned char *q = reinterpret_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; i++)
        if (q[i] != b)
            return false;
    return true;
}

inline void Fill(uintptr_t p, size_t n, unsigned char b)
{
    std::memset(reinterpret_cast<void *>(p), b, n);
}

// A process's memory to share: one 3 MiB plain segment and kPages VMM pages,
// each filled with its own byte. Everything released by Release.
struct Exported {
    uintptr_t seg = 0, resv = 0;
    unsigned char handle[GALLOC_BACKEND_IPC_BYTES] = {};
    int fds[kPages] = {-1, -1, -1};
};

constexpr size_t kSeg = 3 * kMiB;

// The exporter's side; 0 or the number of the step that failed.
inline int Export(Opened &o, Exported &e)
{
    if (ga_backend_segment_alloc(o.b(), kSeg, 0, &e.seg) != GALLOC_OK)
        return 10;
    Fill(e.seg, kSeg, 0x5a);
    if (ga_backend_ipc_export(o.b(), e.seg, e.handle) != GALLOC_OK)
        return 11;
    if (ga_backend_va_reserve(o.b(), kPages * kPage, &e.resv) != GALLOC_OK)
        return 12;
    for (size_t i = 0; i < kPages; i++) {
        uintptr_t at = e.resv + i * kPage;
        if (ga_backend_map(o.b(), at, kPage) != GALLOC_OK)
            return 13;
        Fill(at, kPage, (unsigned char)(0x10 + i));
        if (ga_backend_export_page(o.b(), at, &e.fds[i]) != GALLOC_OK || e.fds[i] < 0)
            return 14;
    }
    return 0;
}

inline int Release(Opened &o, Exported &e)
{
    for (int &fd : e.fds)
        if (fd >= 0)
            close(fd), fd = -1;
    if (ga_backend_unmap(o.b(), e.resv, kPages * kPage) != GALLOC_OK ||
        ga_backend_va_release(o.b(), e.resv, kPages * kPage) != GALLOC_OK)
        return 15;
    if (ga_backend_segment_free(o.b(), e.seg, kSeg, 0) != GALLOC_OK)
        return 16;
    return 0;
}

} // namespace cuda_test

#endif // GA_TESTS_BACKEND_IPC_UTIL_H
