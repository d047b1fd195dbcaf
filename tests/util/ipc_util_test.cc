// util/lease.h and util/fdpass.h across processes: a reader in a forked
// child joins the producer's slot through /proc, the producer sees it read,
// close or die; descriptors cross a socket in batches.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

extern "C" {
#include "util/fdpass.h"
#include "util/lease.h"
}

// gcov's flush where the test is built for coverage: the children's counts too.
extern "C" void __gcov_dump(void) __attribute__((weak));

namespace {

std::string LeasePath(const ga_lease_t &l)
{
    return "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(l.fd);
}

ga_lease_status_t Poll(ga_lease_t *l, uint32_t slot)
{
    ga_lease_status_t s = GA_LEASE_WAITING;
    EXPECT_EQ(ga_lease_poll(l, slot, &s), 0);
    return s;
}

// Run fn in a child; a pipe tells the parent when the child reached `ready`,
// and the parent's byte on a second pipe lets it go on.
struct Child {
    pid_t pid = -1;
    int ready[2] = {-1, -1}, go[2] = {-1, -1};

    template <class F> void Start(F fn)
    {
        ASSERT_EQ(pipe(ready), 0);
        ASSERT_EQ(pipe(go), 0);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int code = fn(*this);
            if (__gcov_dump != nullptr)
                __gcov_dump();
            _exit(code);
        }
        close(ready[1]);
        close(go[0]);
    }
    // In the child: tell the parent, wait for its go.
    void Signal()
    {
        char c = 1;
        (void)!write(ready[1], &c, 1);
        (void)!read(go[0], &c, 1);
    }
    void WaitReady()
    {
        char c;
        ASSERT_EQ(read(ready[0], &c, 1), 1);
    }
    void Go()
    {
        char c = 1;
        ASSERT_EQ(write(go[1], &c, 1), 1);
    }
    int Wait()
    {
        int status = 0;
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        close(ready[0]);
        close(go[1]);
        return status;
    }
};

TEST(Lease, ReaderJoinsClosesAndTheSlotEnds)
{
    ga_lease_t l;
    ga_lease_init(&l);
    uint32_t slot = 99;
    ASSERT_EQ(ga_lease_take(&l, 0xC00C1Eull, &slot), 0);
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_WAITING);
    std::string path = LeasePath(l);
    Child c;
    c.Start([&](Child &self) {
        ga_lease_reader_t r;
        if (ga_lease_join(path.c_str(), slot, 0xC00C1Eull, &r) != 0)
            return 1;
        ga_lease_reader_t again;
        if (ga_lease_join(path.c_str(), slot, 0xC00C1Eull, &again) == 0)
            return 2; // opened once only
        self.Signal();
        ga_lease_leave(&r);
        return 0;
    });
    c.WaitReady();
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_READING);
    EXPECT_EQ(ga_lease_revoke(&l, slot), EBUSY);
    c.Go();
    int status = c.Wait();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_ENDED);
    ga_lease_release(&l, slot);
    ga_lease_fini(&l);
}

TEST(Lease, AKilledReaderEndsItsHold)
{
    ga_lease_t l;
    ga_lease_init(&l);
    uint32_t slot;
    ASSERT_EQ(ga_lease_take(&l, 7, &slot), 0);
    std::string path = LeasePath(l);
    Child c;
    c.Start([&](Child &self) {
        ga_lease_reader_t r;
        if (ga_lease_join(path.c_str(), slot, 7, &r) != 0)
            return 1;
        self.Signal();
        pause(); // killed here, holding the slot
        return 0;
    });
    c.WaitReady();
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_READING);
    kill(c.pid, SIGKILL);
    int status = c.Wait();
    ASSERT_TRUE(WIFSIGNALED(status));
    // OPENED, and no lock: the reader is gone.
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_ENDED);
    ga_lease_fini(&l);
}

TEST(Lease, WrongCookieRevokedAndMissingSlotsAreRefused)
{
    ga_lease_t l;
    ga_lease_init(&l);
    uint32_t a, b;
    ASSERT_EQ(ga_lease_take(&l, 1, &a), 0);
    ASSERT_EQ(ga_lease_take(&l, 2, &b), 0);
    EXPECT_NE(a, b);
    std::string path = LeasePath(l);
    Child c;
    c.Start([&](Child &) {
        ga_lease_reader_t r;
        if (ga_lease_join(path.c_str(), a, 2, &r) != EINVAL) // b's cookie on a
            return 1;
        if (ga_lease_join(path.c_str(), 100000, 1, &r) != EINVAL) // past the file
            return 2;
        if (ga_lease_join("/proc/self/fd/9999", a, 1, &r) == 0)
            return 3;
        // A failed open's unjoin lets the same export be opened again.
        if (ga_lease_join(path.c_str(), a, 1, &r) != 0)
            return 4;
        ga_lease_unjoin(&r);
        if (ga_lease_join(path.c_str(), a, 1, &r) != 0)
            return 5;
        ga_lease_leave(&r);
        return 0;
    });
    int status = c.Wait();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(Poll(&l, a), GA_LEASE_ENDED);
    EXPECT_EQ(ga_lease_revoke(&l, b), 0); // never opened
    ga_lease_status_t s;
    EXPECT_EQ(ga_lease_poll(&l, b, &s), EINVAL); // FREE: not an export any more
    ga_lease_fini(&l);
}

TEST(Lease, GrowsPastItsFirstPageAndReusesFreedSlots)
{
    ga_lease_t l;
    ga_lease_init(&l);
    std::vector<uint32_t> slots(600);
    for (size_t i = 0; i < slots.size(); i++)
        ASSERT_EQ(ga_lease_take(&l, i + 1, &slots[i]), 0);
    EXPECT_GE(l.slots, 600u);
    ga_lease_release(&l, slots[3]);
    uint32_t again;
    ASSERT_EQ(ga_lease_take(&l, 1234, &again), 0);
    EXPECT_EQ(again, slots[3]);
    // A reader reaches a slot beyond the first page.
    std::string path = LeasePath(l);
    uint32_t far = slots[590];
    Child c;
    c.Start([&](Child &) {
        ga_lease_reader_t r;
        if (ga_lease_join(path.c_str(), far, 591, &r) != 0)
            return 1;
        ga_lease_leave(&r);
        return 0;
    });
    int status = c.Wait();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(Poll(&l, far), GA_LEASE_ENDED);
    ga_lease_fini(&l);
}

TEST(FdPass, AMessageAndSixHundredDescriptorsArriveInOrder)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    // 600 descriptors: three batches. Each is a pipe's read end whose write
    // end holds its index, so the order can be checked after the crossing.
    const size_t n = 600;
    std::vector<int> fds(n);
    for (size_t i = 0; i < n; i++) {
        int p[2];
        ASSERT_EQ(pipe(p), 0);
        uint32_t v = (uint32_t)i;
        ASSERT_EQ(write(p[1], &v, sizeof(v)), (ssize_t)sizeof(v));
        close(p[1]);
        fds[i] = p[0];
    }
    char msg[160];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (char)i;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(sv[1]);
        int code = ga_fdpass_send(sv[0], msg, sizeof(msg), fds.data(), n) == 0 ? 0 : 1;
        if (__gcov_dump != nullptr)
            __gcov_dump();
        _exit(code);
    }
    close(sv[0]);
    for (int fd : fds)
        close(fd); // the child sends its own copies
    char got[160];
    int in[GA_FDPASS_BATCH];
    size_t k = 0;
    ASSERT_EQ(ga_fdpass_recv_msg(sv[1], got, sizeof(got), in, &k), 0);
    EXPECT_EQ(memcmp(got, msg, sizeof(msg)), 0);
    EXPECT_EQ(k, (size_t)GA_FDPASS_BATCH);
    std::vector<int> all(in, in + k);
    while (all.size() < n) {
        ASSERT_EQ(ga_fdpass_recv_fds(sv[1], in, &k), 0);
        ASSERT_GT(k, 0u);
        all.insert(all.end(), in, in + k);
    }
    ASSERT_EQ(all.size(), n);
    for (size_t i = 0; i < n; i++) {
        uint32_t v = UINT32_MAX;
        ASSERT_EQ(read(all[i], &v, sizeof(v)), (ssize_t)sizeof(v));
        EXPECT_EQ(v, (uint32_t)i);
        EXPECT_EQ(fcntl(all[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        close(all[i]);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // The peer is gone: the next receive says so.
    EXPECT_EQ(ga_fdpass_recv_msg(sv[1], got, sizeof(got), in, &k), ECONNRESET);
    close(sv[1]);
}

} // namespace
