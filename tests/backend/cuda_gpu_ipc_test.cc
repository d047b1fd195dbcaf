// cuda_gpu_ipc_test: galloc_ipc_* between two processes on the real driver
// and one real GPU (IPC works between processes on one GPU). Tagged "gpu";
// skips where the "cuda" backend cannot open.
//
// CUDA does not survive fork() in a process that initialized it, so the
// consumer is this binary executed again (/proc/self/exe) with
// --gtest_filter=GpuIpcChild.Consumer and the socket's descriptor in
// GALLOC_IPC_TEST_FD: a fresh process that opens its own allocator. Bytes
// are written and read through the driver (cuMemsetD8, cuMemcpyDtoH), since
// device memory is not host memory here. The figures (times of export, send,
// receive and close) are printed for the note.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr const char *kFdEnv = "GALLOC_IPC_TEST_FD";
constexpr const char *kConfEnv = "GALLOC_IPC_TEST_CONF";

// The few driver calls the test makes itself, with the primary context current.
struct Driver {
    int (*cuInit)(unsigned) = nullptr;
    int (*cuDeviceGet)(int *, int) = nullptr;
    int (*cuDevicePrimaryCtxRetain)(void **, int) = nullptr;
    int (*cuCtxSetCurrent)(void *) = nullptr;
    int (*cuMemsetD8_v2)(unsigned long long, unsigned char, size_t) = nullptr;
    int (*cuMemcpyDtoH_v2)(void *, unsigned long long, size_t) = nullptr;
    int (*cuCtxSynchronize)() = nullptr;
    bool ok = false;

    Driver()
    {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr)
            return;
#define SYM_(n) n = reinterpret_cast<decltype(n)>(dlsym(h, #n))
        SYM_(cuInit);
        SYM_(cuDeviceGet);
        SYM_(cuDevicePrimaryCtxRetain);
        SYM_(cuCtxSetCurrent);
        SYM_(cuMemsetD8_v2);
        SYM_(cuMemcpyDtoH_v2);
        SYM_(cuCtxSynchronize);
#undef SYM_
        int dev = 0;
        void *ctx = nullptr;
        ok = cuInit && cuDeviceGet && cuDevicePrimaryCtxRetain && cuCtxSetCurrent && cuMemsetD8_v2 && cuMemcpyDtoH_v2 &&
             cuCtxSynchronize && cuInit(0) == 0 && cuDeviceGet(&dev, 0) == 0 &&
             cuDevicePrimaryCtxRetain(&ctx, dev) == 0 && cuCtxSetCurrent(ctx) == 0;
    }
    void Fill(void *p, size_t n, unsigned char v)
    {
        ASSERT_EQ(cuMemsetD8_v2((unsigned long long)(uintptr_t)p, v, n), 0);
        ASSERT_EQ(cuCtxSynchronize(), 0);
    }
    bool All(void *p, size_t n, unsigned char v)
    {
        std::vector<unsigned char> h(n);
        if (cuMemcpyDtoH_v2(h.data(), (unsigned long long)(uintptr_t)p, n) != 0)
            return false;
        for (unsigned char c : h)
            if (c != v)
                return false;
        return true;
    }
};

std::string Err(galloc_allocator_t *a)
{
    char m[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, m, sizeof m);
    return m;
}

double Ms(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// What the producer sends before each handle: the block's size and the
// bytes it holds; the consumer fills it with value + 1 and answers one byte.
struct Note {
    uint64_t size;
    unsigned char value;
};

// The consumer (see the file comment); skipped when not run as one.
TEST(GpuIpcChild, Consumer)
{
    const char *fd_s = getenv(kFdEnv);
    if (fd_s == nullptr)
        GTEST_SKIP() << "the consumer role of GpuIpc.*, run by those tests in a process of its own";
    int sock = atoi(fd_s);
    Driver d;
    ASSERT_TRUE(d.ok) << "the driver opened in the parent";
    galloc_allocator_t *b = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("cuda", 0, getenv(kConfEnv), &b, err, sizeof err), GALLOC_OK) << err;
    Note n;
    while (read(sock, &n, sizeof n) == (ssize_t)sizeof n) {
        void *q = nullptr;
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(galloc_ipc_recv(b, sock, nullptr, &q), GALLOC_OK) << Err(b);
        double recv_ms = Ms(t0);
        EXPECT_TRUE(d.All(q, n.size, n.value)) << "the producer's bytes";
        d.Fill(q, n.size, (unsigned char)(n.value + 1));
        t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(galloc_ipc_close(b, q), GALLOC_OK) << Err(b);
        printf("consumer: %llu bytes: recv+open %.3f ms, close %.3f ms\n", (unsigned long long)n.size, recv_ms, Ms(t0));
        char ack = 1;
        ASSERT_EQ(write(sock, &ack, 1), 1);
    }
    galloc_allocator_destroy(b);
}

class GpuIpc : public ::testing::Test {
  protected:
    void Open(const char *conf)
    {
        conf_ = conf;
        char err[GALLOC_ERROR_MAX] = "";
        galloc_status_t st = galloc_allocator_create("cuda", 0, conf, &a_, err, sizeof err);
        if (st == GALLOC_E_UNAVAILABLE)
            GTEST_SKIP() << err;
        ASSERT_EQ(st, GALLOC_OK) << err;
        ASSERT_TRUE(d_.ok);
    }
    // Execute the consumer with its end of a socket pair.
    void Spawn()
    {
        int sv[2];
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        int child_fd = dup(sv[1]); // without CLOEXEC: the consumer keeps it
        ASSERT_GE(child_fd, 0);
        std::string fd_env = std::string(kFdEnv) + "=" + std::to_string(child_fd);
        std::string conf_env = std::string(kConfEnv) + "=" + conf_;
        std::vector<char *> envp;
        for (char **e = environ; *e != nullptr; e++)
            envp.push_back(*e);
        envp.push_back(&fd_env[0]);
        envp.push_back(&conf_env[0]);
        envp.push_back(nullptr);
        char filter[] = "--gtest_filter=GpuIpcChild.Consumer";
        char self[] = "/proc/self/exe";
        char *argv[] = {self, filter, nullptr};
        fflush(nullptr);
        pid_ = fork();
        ASSERT_GE(pid_, 0);
        if (pid_ == 0) {
            execve(self, argv, envp.data());
            _exit(127);
        }
        close(child_fd);
        close(sv[1]);
        sock_ = sv[0];
    }
    // Send one block; wait until the consumer closed it.
    void Share(void *p, size_t n, unsigned char value, bool free_first)
    {
        d_.Fill(p, n, value);
        galloc_ipc_handle_t h;
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(galloc_ipc_export(a_, p, &h), GALLOC_OK) << Err(a_);
        double export_ms = Ms(t0);
        Note note{n, value};
        ASSERT_EQ(write(sock_, &note, sizeof note), (ssize_t)sizeof note);
        t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(galloc_ipc_send(a_, sock_, &h), GALLOC_OK) << Err(a_);
        double send_ms = Ms(t0);
        galloc_ipc_info_t info{};
        ASSERT_EQ(galloc_ipc_info(&h, &info), GALLOC_OK);
        printf("producer (%s): %zu bytes, kind %d, %zu pages, range %zu: export %.3f ms, send %.3f ms\n", conf_.c_str(),
               n, (int)info.kind, info.pages, info.range, export_ms, send_ms);
        galloc_stats_t s0;
        s0.struct_size = sizeof s0;
        ASSERT_EQ(galloc_memory_stats(a_, &s0), GALLOC_OK);
        if (free_first) {
            EXPECT_EQ(galloc_free(a_, p), GALLOC_OK) << Err(a_); // kept for the reader
        }
        char ack = 0;
        ASSERT_EQ(read(sock_, &ack, 1), 1) << "the consumer died (its output is above)";
        EXPECT_TRUE(d_.All(p, n, (unsigned char)(value + 1))) << "the consumer's bytes";
        size_t freed = 0;
        EXPECT_EQ(galloc_ipc_collect(a_, &freed), GALLOC_OK);
        EXPECT_EQ(freed, free_first ? 1u : 0u);
        if (!free_first) {
            EXPECT_EQ(galloc_free(a_, p), GALLOC_OK) << Err(a_);
        }
    }
    int Join()
    {
        close(sock_);
        int status = 0;
        EXPECT_EQ(waitpid(pid_, &status, 0), pid_);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    void TearDown() override
    {
        if (a_ != nullptr)
            galloc_allocator_destroy(a_);
    }
    Driver d_;
    std::string conf_;
    galloc_allocator_t *a_ = nullptr;
    pid_t pid_ = -1;
    int sock_ = -1;
};

TEST_F(GpuIpc, PlainSegmentRoundTrip)
{
    Open("");
    if (IsSkipped() || HasFatalFailure())
        return;
    Spawn();
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 3 * kMiB, 0, &p), GALLOC_OK) << Err(a_);
    Share(p, 3 * kMiB, 0x5A, false);
    ASSERT_EQ(galloc_malloc(a_, 64 * kMiB, 0, &p), GALLOC_OK) << Err(a_);
    Share(p, 64 * kMiB, 0x10, true);
    EXPECT_EQ(Join(), 0) << "the consumer's expectations (printed above)";
}

TEST_F(GpuIpc, ExpandableAndTaggedRoundTrip)
{
    Open("expandable_segments:True");
    if (IsSkipped() || HasFatalFailure())
        return;
    Spawn();
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 45 * kMiB, 0, &p), GALLOC_OK) << Err(a_); // three 20 MiB pages
    Share(p, 45 * kMiB, 0x21, true);
    ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK) << Err(a_);
    ASSERT_EQ(galloc_malloc(a_, 3 * kMiB, 0, &p), GALLOC_OK) << Err(a_);
    ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK) << Err(a_);
    Share(p, 3 * kMiB, 0x42, false);
    EXPECT_EQ(Join(), 0) << "the consumer's expectations (printed above)";
}

} // namespace
