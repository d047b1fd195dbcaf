// util/lease.h and util/fdpass.h across processes: a reader in a forked
// child joins the producer's slot through /proc, the producer sees it read,
// close or die; descriptors cross a socket in batches.
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "util/fdpass.h"
#include "util/lease.h"
#include "util/lease_int.h"
}
#include "tests/util/child_exit.h"

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
            ga_test_child_exit(code);
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

// The ABA of a join: a reader checks export A's cookie, the producer revokes
// A and exports B into the same slot, and the reader's swap comes after. It
// must be refused and leave B's export as it was, B's reader able to open it.
TEST(Lease, AJoinRacingARevokeAndANewExportIsRefused)
{
    const uint64_t a = 0xAAAA0000AAAA0001ull, b = 0xBBBB0000BBBB0002ull;
    ga_lease_t l;
    ga_lease_init(&l);
    uint32_t slot;
    ASSERT_EQ(ga_lease_take(&l, a, &slot), 0);
    std::string path = LeasePath(l); // a new open file description: a reader's own lock
    ga_lease_reader_t r;
    ASSERT_EQ(ga_lease_attach(path.c_str(), slot, &r), 0);
    ASSERT_EQ(ga_lease_check(&r, a), 0) << "A is exported: the check passes";
    // Between the reader's check and its swap, the producer moves on.
    ASSERT_EQ(ga_lease_revoke(&l, slot), 0);
    ga_lease_release(&l, slot);
    uint32_t again;
    ASSERT_EQ(ga_lease_take(&l, b, &again), 0);
    ASSERT_EQ(again, slot) << "B took A's slot";
    EXPECT_EQ(ga_lease_commit(&r, a), EINVAL) << "A's reader opened B's export";
    ga_lease_detach(&r);
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_WAITING) << "B stays exported, unopened";
    ASSERT_EQ(ga_lease_attach(path.c_str(), slot, &r), 0);
    EXPECT_EQ(ga_lease_check(&r, a), EINVAL);
    EXPECT_EQ(ga_lease_check(&r, b), 0) << "the slot holds B's cookie";
    ga_lease_detach(&r);
    // B's reader, in another process, still opens it.
    Child c;
    c.Start([&](Child &ch) {
        ga_lease_reader_t rb;
        if (ga_lease_join(path.c_str(), slot, a, &rb) != EINVAL)
            return 1;
        if (ga_lease_join(path.c_str(), slot, b, &rb) != 0)
            return 2;
        ch.Signal();
        ga_lease_leave(&rb);
        return 0;
    });
    c.WaitReady();
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_READING);
    c.Go();
    int status = c.Wait();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_ENDED);
    ga_lease_fini(&l);
}

// A reader's descriptor is close-on-exec, but a fork shares it, and its
// lock: a reader that dies without leaving, after forking, stays READING
// until the child it forked exits too.
TEST(Lease, AForkedReadersChildKeepsTheHold)
{
    ga_lease_t l;
    ga_lease_init(&l);
    uint32_t slot;
    ASSERT_EQ(ga_lease_take(&l, 42, &slot), 0);
    std::string path = LeasePath(l);
    int hold[2];
    ASSERT_EQ(pipe(hold), 0);
    Child c;
    c.Start([&](Child &) {
        ga_lease_reader_t r;
        if (ga_lease_join(path.c_str(), slot, 42, &r) != 0)
            return 1;
        if ((fcntl(r.fd, F_GETFD) & FD_CLOEXEC) == 0)
            return 2;
        pid_t g = fork();
        if (g == 0) { // the grandchild holds r.fd until the test's byte
            char b;
            (void)!read(hold[0], &b, 1);
            ga_test_child_exit(0);
        }
        return g > 0 ? 0 : 3; // dies holding the slot, without leaving
    });
    int status = c.Wait();
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_READING) << "the reader is gone, its child holds the lock";
    char b = 1;
    ASSERT_EQ(write(hold[1], &b, 1), 1);
    ga_lease_status_t st = GA_LEASE_READING;
    for (int i = 0; i < 500 && st != GA_LEASE_ENDED; i++) { // the grandchild is not ours to wait for
        usleep(10000);
        ASSERT_EQ(ga_lease_poll(&l, slot, &st), 0);
    }
    EXPECT_EQ(st, GA_LEASE_ENDED);
    close(hold[0]);
    close(hold[1]);
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
        ga_test_child_exit(code);
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

TEST(Lease, BadSlotsAndAWriterLockAreRefused)
{
    ga_lease_t l;
    ga_lease_init(&l);
    ga_lease_status_t st;
    EXPECT_EQ(ga_lease_poll(&l, 0, &st), EINVAL) << "no file yet";
    uint32_t slot;
    ASSERT_EQ(ga_lease_take(&l, 5, &slot), 0);
    EXPECT_EQ(ga_lease_poll(&l, 1u << 30, &st), EINVAL);
    EXPECT_EQ(ga_lease_revoke(&l, 1u << 30), EINVAL);
    ga_lease_release(&l, 1u << 30); // ignored
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_WAITING);
    // Someone else holds a write lock on the slot: a reader cannot join.
    std::string path = LeasePath(l);
    int other = open(path.c_str(), O_RDWR);
    ASSERT_GE(other, 0);
    struct flock fl = {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)(slot * 16);
    fl.l_len = 16;
    ASSERT_EQ(fcntl(other, F_OFD_SETLK, &fl), 0);
    Child c;
    c.Start([&](Child &) {
        ga_lease_reader_t r;
        int err = ga_lease_join(path.c_str(), slot, 5, &r);
        return err == EAGAIN || err == EACCES ? 0 : 1;
    });
    int status = c.Wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(other);
    EXPECT_EQ(Poll(&l, slot), GA_LEASE_WAITING) << "the refused join changed nothing";
    ga_lease_fini(&l);
}

// A file size limit makes the memfd's growth fail: the take reports it and
// the lease stays empty.
TEST(Lease, AFailedGrowthLeavesTheLeaseAsItWas)
{
    Child c;
    c.Start([&](Child &) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {100, 100};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
            return 2;
        ga_lease_t l;
        ga_lease_init(&l);
        uint32_t slot;
        if (ga_lease_take(&l, 1, &slot) != EFBIG)
            return 1;
        return l.fd == -1 && l.map == nullptr && l.slots == 0 ? 0 : 3;
    });
    int status = c.Wait();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

void OnSignal(int)
{}

// A signal interrupting a blocked receive: the receive goes on.
TEST(FdPass, AnInterruptedReceiveGoesOn)
{
    struct sigaction sa = {}, old;
    sa.sa_handler = OnSignal; // no SA_RESTART: recvmsg fails with EINTR
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct Args {
        pthread_t target;
        int sock;
    } args = {pthread_self(), sv[0]};
    pthread_t t;
    ASSERT_EQ(pthread_create(
                  &t, nullptr,
                  [](void *p) -> void * {
                      Args *a = static_cast<Args *>(p);
                      usleep(50000);
                      pthread_kill(a->target, SIGUSR1);
                      usleep(50000);
                      char msg[8] = "galloc!";
                      ga_fdpass_send(a->sock, msg, sizeof msg, nullptr, 0);
                      return nullptr;
                  },
                  &args),
              0);
    char got[8] = "";
    int fds[GA_FDPASS_BATCH];
    size_t n = 9;
    EXPECT_EQ(ga_fdpass_recv_msg(sv[1], got, sizeof got, fds, &n), 0);
    EXPECT_STREQ(got, "galloc!");
    EXPECT_EQ(n, 0u);
    pthread_join(t, nullptr);
    sigaction(SIGUSR1, &old, nullptr);
    close(sv[0]);
    close(sv[1]);
}

TEST(FdPass, WhatBreaksTheProtocolIsRefused)
{
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int fds[GA_FDPASS_BATCH];
    size_t n = 0;
    // A batch whose byte is not the protocol's; its descriptor is closed.
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_EQ(ga_fdpass_send(sv[0], "X", 1, &p[0], 1), 0);
    close(p[0]);
    EXPECT_EQ(ga_fdpass_recv_fds(sv[1], fds, &n), EPROTO);
    EXPECT_EQ(n, 0u);
    char c = 0;
    void (*was)(int) = signal(SIGPIPE, SIG_IGN);
    EXPECT_EQ(write(p[1], &c, 1), -1) << "the read end is closed everywhere";
    EXPECT_EQ(errno, EPIPE);
    signal(SIGPIPE, was);
    close(p[1]);
    // More descriptors in one message than a batch holds (253, the kernel's
    // most): the control data is cut, the receive refused, nothing kept.
    std::vector<int> many(253);
    for (int &fd : many)
        fd = dup(sv[0]);
    char cbuf[CMSG_SPACE(sizeof(int) * 253)] = {};
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    struct msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * 253);
    memcpy(CMSG_DATA(cm), many.data(), sizeof(int) * 253);
    ASSERT_EQ(sendmsg(sv[0], &mh, 0), 1);
    for (int fd : many)
        close(fd);
    EXPECT_EQ(ga_fdpass_recv_fds(sv[1], fds, &n), EPROTO);
    EXPECT_EQ(n, 0u);
    // A message in two pieces arrives whole.
    char msg[32], got[32];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (char)(i * 7);
    ASSERT_EQ(write(sv[0], msg, 10), 10);
    std::thread rest([&] {
        usleep(20000);
        (void)!write(sv[0], msg + 10, sizeof msg - 10);
    });
    EXPECT_EQ(ga_fdpass_recv_msg(sv[1], got, sizeof got, fds, &n), 0);
    rest.join();
    EXPECT_EQ(memcmp(got, msg, sizeof msg), 0);
    close(sv[0]);
    close(sv[1]);
    // Not a socket.
    int q[2];
    ASSERT_EQ(pipe(q), 0);
    EXPECT_EQ(ga_fdpass_recv_msg(q[0], got, sizeof got, fds, &n), ENOTSOCK);
    EXPECT_EQ(ga_fdpass_send(q[1], msg, sizeof msg, nullptr, 0), ENOTSOCK);
    close(q[0]);
    close(q[1]);
}

} // namespace
