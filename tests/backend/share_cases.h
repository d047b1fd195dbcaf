// share_cases.h: the fixture of share_cases.cc, galloc_ipc_* through the
// public API between two real processes (fork) on the fake drivers, which
// back device memory with memfds so that a mapping opened in one process
// holds the other's bytes. Instantiated by cuda_share_test.cc and
// hip_share_test.cc.
//
// The child process runs the consumer: it creates its own allocator on the
// fake (its copy after fork), opens what the parent exported, checks and
// writes bytes, closes, and exits 1 if any expectation failed (gtest prints
// them to the shared output). The parent waits and checks what the child left.
#ifndef GA_TESTS_BACKEND_SHARE_CASES_H
#define GA_TESTS_BACKEND_SHARE_CASES_H

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "tests/backend/vendor_cases.h"
#include "tests/util/child_exit.h"

extern "C" {
#include <galloc/galloc_ipc.h>
}

namespace cuda_test {

// A forked consumer with two pipes (child -> parent "ready", parent -> child "go")
// and a socket pair (parent end sock, child end peer).
struct Consumer {
    pid_t pid = -1;
    int ready[2] = {-1, -1}, go[2] = {-1, -1};
    int sock[2] = {-1, -1};

    // Run fn in a child; it exits 1 when an expectation failed.
    void Start(const std::function<void(Consumer &)> &fn)
    {
        ASSERT_EQ(pipe(ready), 0);
        ASSERT_EQ(pipe(go), 0);
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sock), 0);
        fflush(nullptr);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            close(sock[0]);
            fn(*this);
            ga_test_child_exit(::testing::Test::HasFailure() ? 1 : 0);
        }
        close(ready[1]);
        close(go[0]);
        close(sock[1]);
    }
    // Child: one byte to the parent; Parent: read it (false: the child ended).
    void Tell(char c = 'r') { (void)!write(ready[1], &c, 1); }
    bool Heard(char *c = nullptr)
    {
        char b;
        bool got = read(ready[0], &b, 1) == 1;
        if (c != nullptr)
            *c = got ? b : 0;
        return got;
    }
    // Parent: let the child on; Child: wait for it.
    void Go(char c = 'g') { ASSERT_EQ(write(go[1], &c, 1), 1); }
    char Wait()
    {
        char c = 0;
        (void)!read(go[0], &c, 1);
        return c;
    }
    int Peer() const { return sock[1]; }
    int Sock() const { return sock[0]; }
    // Parent: the child's exit status, 0 when it passed.
    int Join()
    {
        int status = 0;
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        close(ready[0]);
        close(go[1]);
        close(sock[0]);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
};

// galloc_ipc_stats of a.
inline galloc_ipc_stats_t IpcStats(galloc_allocator_t *a)
{
    galloc_ipc_stats_t s{};
    EXPECT_EQ(galloc_ipc_stats(a, &s), GALLOC_OK);
    return s;
}

class Share : public VendorTest {
  protected:
    // The consumer's own allocator on the same fake (its copy), same settings.
    galloc_allocator_t *ChildAllocator(const std::string &extra = "")
    {
        galloc_allocator_t *b = nullptr;
        char err[GALLOC_ERROR_MAX] = "";
        EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f_, extra).c_str(), &b, err, sizeof err), GALLOC_OK)
            << err;
        return b;
    }
    galloc_ipc_stats_t Ipc(galloc_allocator_t *a = nullptr) { return IpcStats(a ? a : a_); }
};
class SharePlain : public VendorPlain {}; // the fault sweeps

} // namespace cuda_test
#endif // GA_TESTS_BACKEND_SHARE_CASES_H
