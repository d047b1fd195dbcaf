// ipc_api_test: galloc_ipc_*'s front end and the pool's checks that need no
// device: every argument refused before any call, allocators that cannot
// share (a user allocator; sim, whose memory no other process can map), a
// destroyed allocator, and handles that are not handles, on one socket pair in
// one process. Two processes exchanging bytes: tests/backend/share_cases.cc.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

std::string LastError(galloc_allocator_t *a)
{
    char m[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, m, sizeof m);
    return m;
}

galloc_allocator_t *Sim(const char *conf)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, conf, &a, err, sizeof err), GALLOC_OK) << err;
    return a;
}

void *HostMalloc(void *, size_t n, int, galloc_stream_t)
{
    return malloc(n);
}
void HostFree(void *, void *p, size_t, int, galloc_stream_t)
{
    free(p);
}

TEST(IpcApi, ArgumentsAreRefusedFirst)
{
    galloc_allocator_t *a = Sim("sim_capacity:1GiB");
    galloc_ipc_handle_t h{};
    galloc_ipc_info_t info;
    galloc_ipc_stats_t s;
    void *p = nullptr;
    EXPECT_EQ(galloc_ipc_export(a, nullptr, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_export(nullptr, nullptr, &h), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_info(nullptr, &info), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_info(&h, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_send(a, -1, &h), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_send(a, 0, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_recv(a, -1, &h, &p), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_recv(a, 0, &h, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_open(a, nullptr, &p), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_open(a, &h, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_close(nullptr, p), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_revoke(a, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_collect(nullptr, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_stats(a, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_ipc_stats(nullptr, &s), GALLOC_E_INVAL);
    galloc_allocator_destroy(a);
}

TEST(IpcApi, SimHasNothingToShareAndSaysWhy)
{
    for (const char *conf : {"sim_capacity:1GiB", "sim_capacity:1GiB,expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        galloc_allocator_t *a = Sim(conf);
        void *p = nullptr;
        ASSERT_EQ(galloc_malloc(a, 5 << 20, 0, &p), GALLOC_OK);
        galloc_ipc_handle_t h;
        EXPECT_EQ(galloc_ipc_export(a, p, &h), GALLOC_E_UNSUPPORTED);
        EXPECT_NE(LastError(a).find(conf[17] ? "cannot export mapped pages" : "cannot share segments"),
                  std::string::npos)
            << LastError(a);
        EXPECT_EQ(galloc_ipc_export(a, (char *)p + 512, &h), GALLOC_E_NOT_OWNED) << "not a block's start";
        galloc_ipc_stats_t s;
        ASSERT_EQ(galloc_ipc_stats(a, &s), GALLOC_OK);
        EXPECT_EQ(s.exports + s.limbo_blocks + s.limbo_bytes + s.opened, 0u);
        size_t freed = 7;
        EXPECT_EQ(galloc_ipc_collect(a, &freed), GALLOC_OK);
        EXPECT_EQ(freed, 0u);
        EXPECT_EQ(galloc_ipc_collect(a, nullptr), GALLOC_OK);
        EXPECT_EQ(galloc_ipc_close(a, p), GALLOC_E_NOT_OWNED) << "not another process's block";
        EXPECT_EQ(galloc_free(a, p), GALLOC_OK) << "unchanged by the refusals";
        EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
        galloc_allocator_destroy(a);
    }
}

// Bytes that are not a handle: refused by every call that reads one, and by
// recv after it took them (and their descriptors) off the socket.
TEST(IpcApi, NotAHandle)
{
    galloc_allocator_t *a = Sim("sim_capacity:1GiB");
    galloc_ipc_handle_t junk;
    memset(&junk, 0x3C, sizeof junk);
    galloc_ipc_info_t info;
    void *p = nullptr;
    EXPECT_EQ(galloc_ipc_info(&junk, &info), GALLOC_E_FORMAT);
    EXPECT_EQ(galloc_ipc_open(a, &junk, &p), GALLOC_E_FORMAT);
    EXPECT_NE(LastError(a).find("not a galloc IPC handle"), std::string::npos) << LastError(a);
    EXPECT_EQ(galloc_ipc_revoke(a, &junk), GALLOC_E_FORMAT);
    EXPECT_EQ(galloc_ipc_send(a, 0, &junk), GALLOC_E_FORMAT);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ASSERT_EQ(write(sv[0], &junk, sizeof junk), (ssize_t)sizeof junk);
    EXPECT_EQ(galloc_ipc_recv(a, sv[1], nullptr, &p), GALLOC_E_FORMAT);
    // A short message, then the peer hangs up.
    ASSERT_EQ(write(sv[0], &junk, 10), 10);
    close(sv[0]);
    EXPECT_EQ(galloc_ipc_recv(a, sv[1], nullptr, &p), GALLOC_E_IO);
    EXPECT_NE(LastError(a).find("receiving on socket"), std::string::npos) << LastError(a);
    close(sv[1]);
    galloc_allocator_destroy(a);
}

TEST(IpcApi, AUserAllocatorCannotShare)
{
    galloc_user_allocator_t u{};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.malloc_fn = HostMalloc;
    u.free_fn = HostFree;
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a, nullptr, 0), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 4096, 0, &p), GALLOC_OK);
    galloc_ipc_handle_t h{};
    galloc_ipc_stats_t s;
    void *q = nullptr;
    size_t n = 0;
    EXPECT_EQ(galloc_ipc_export(a, p, &h), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(LastError(a).find("the user allocator cannot share memory between processes"), std::string::npos)
        << LastError(a);
    EXPECT_EQ(galloc_ipc_send(a, 0, &h), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_ipc_recv(a, 0, &h, &q), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_ipc_open(a, &h, &q), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_ipc_close(a, p), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_ipc_revoke(a, &h), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_ipc_collect(a, &n), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_ipc_stats(a, &s), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
