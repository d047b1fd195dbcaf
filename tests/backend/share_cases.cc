// share_cases: galloc_ipc_* between two processes on the "cuda" and "hip"
// backends over the strict fake drivers (share_cases.h): bytes written by one
// process are read by the other through plain segments (the handle's bytes),
// expandable segments and tags (descriptors over a Unix socket); the
// producer's free keeps a block a reader holds, and the reader's close or
// death gives it back; every refusal is a clean status with a message; and
// the fault sweeps fail each driver call of export, send, open, receive and
// close in turn: each failure leaves both processes consistent, a retry
// succeeds, and nothing leaks.
#include "tests/backend/share_cases.h"

#include <signal.h>

#include <cstring>
#include <vector>

extern "C" {
#include <galloc/galloc_sleep.h>
}

namespace cuda_test {

namespace {

bool AllBytes(const void *p, size_t n, unsigned char v)
{
    const unsigned char *c = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; i++)
        if (c[i] != v)
            return false;
    return true;
}

galloc_ipc_info_t Info(const galloc_ipc_handle_t &h)
{
    galloc_ipc_info_t i{};
    EXPECT_EQ(galloc_ipc_info(&h, &i), GALLOC_OK);
    return i;
}

void *TagAlloc(galloc_allocator_t *a, const char *tag, size_t n)
{
    void *p = nullptr;
    EXPECT_EQ(galloc_tag_begin(a, tag), GALLOC_OK) << LastError(a);
    EXPECT_EQ(galloc_malloc(a, n, 0, &p), GALLOC_OK) << LastError(a);
    EXPECT_EQ(galloc_tag_end(a, tag), GALLOC_OK) << LastError(a);
    return p;
}

// Read one raw handle from a socket (what galloc_ipc_send wrote; its
// descriptors, unread, are closed by the kernel).
bool ReadHandle(int sock, galloc_ipc_handle_t *h)
{
    size_t got = 0;
    while (got < sizeof(h->bytes)) {
        ssize_t r = read(sock, h->bytes + got, sizeof(h->bytes) - got);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

} // namespace

// A plain segment's block: the handle's bytes alone open it in the other
// process, which reads the producer's bytes and writes back its own.
TEST_P(Share, PlainSegmentBytesBothWays)
{
    Make();
    const size_t n = 3 * kMiB;
    char *p = static_cast<char *>(Alloc(n));
    memset(p, 0x5A, n);
    galloc_ipc_handle_t h, left_open;
    ASSERT_EQ(galloc_ipc_export(a_, p, &h), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_ipc_export(a_, p, &left_open), GALLOC_OK) << LastError(a_);
    galloc_ipc_info_t info = Info(h);
    EXPECT_EQ(info.kind, GALLOC_IPC_PLAIN);
    EXPECT_EQ(info.size, n);
    EXPECT_EQ(info.pid, (int)getpid());
    EXPECT_EQ(info.pages, 0u);
    EXPECT_EQ(Ipc().exports, 2u);
    galloc_stats_t s0 = Stats();

    Consumer c;
    c.Start([&](Consumer &) {
        galloc_allocator_t *b = ChildAllocator();
        void *q = nullptr;
        ASSERT_EQ(galloc_ipc_open(b, &h, &q), GALLOC_OK) << LastError(b);
        EXPECT_NE(q, (void *)p) << "a mapping of its own";
        EXPECT_TRUE(AllBytes(q, n, 0x5A)) << "the producer's bytes";
        memset(q, 0xC3, n);
        EXPECT_EQ(Ipc(b).opened, 1u);
        void *again = nullptr;
        EXPECT_EQ(galloc_ipc_open(b, &h, &again), GALLOC_E_INVAL) << "a handle opens once";
        EXPECT_NE(LastError(b).find("opened before"), std::string::npos) << LastError(b);
        galloc_stats_t sb = cuda_test::Stats(b);
        EXPECT_EQ(sb.allocated_bytes[ALL].current, 0) << "not counted in the reader's stats";
        EXPECT_EQ(galloc_ipc_close(b, q), GALLOC_OK) << LastError(b);
        EXPECT_EQ(galloc_ipc_close(b, q), GALLOC_E_NOT_OWNED);
        EXPECT_EQ(Ipc(b).opened, 0u);
        void *kept = nullptr; // destroy closes what is still open
        EXPECT_EQ(galloc_ipc_open(b, &left_open, &kept), GALLOC_OK) << LastError(b);
        galloc_allocator_destroy(b);
    });
    EXPECT_EQ(c.Join(), 0) << "the consumer's expectations (printed above)";
    EXPECT_TRUE(AllBytes(p, n, 0xC3)) << "the consumer's bytes";
    EXPECT_EQ(Ipc().exports, 0u) << "closed, or closed by the reader's destroy: both exports ended";
    galloc_stats_t s1 = Stats();
    EXPECT_EQ(s1.allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current) << "still the producer's block";
    Free(p);
}

// Expandable segments and a tag: pages travel as descriptors on the socket.
TEST_P(Share, ExpandableAndTaggedPagesOverASocket)
{
    Make("expandable_segments:True");
    const size_t n = 5 * kMiB, tn = 3 * kMiB;
    char *p = static_cast<char *>(Alloc(n));
    char *t = static_cast<char *>(TagAlloc(a_, "w", tn));
    memset(p, 0x21, n);
    memset(t, 0x42, tn);
    galloc_ipc_handle_t hp, ht;
    ASSERT_EQ(galloc_ipc_export(a_, p, &hp), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_ipc_export(a_, t, &ht), GALLOC_OK) << LastError(a_);
    for (const galloc_ipc_handle_t *h : {&hp, &ht}) {
        galloc_ipc_info_t i = Info(*h);
        EXPECT_EQ(i.kind, GALLOC_IPC_PAGES);
        EXPECT_GE(i.pages, 1u);
        EXPECT_LE(i.offset + i.size, i.range);
        void *q = nullptr;
        EXPECT_EQ(galloc_ipc_open(a_, h, &q), GALLOC_E_UNSUPPORTED) << "descriptors come only by socket";
        EXPECT_NE(LastError(a_).find("galloc_ipc_recv"), std::string::npos) << LastError(a_);
    }
    EXPECT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_E_INVAL) << "a shared tag does not sleep";
    EXPECT_NE(LastError(a_).find("shared with another process"), std::string::npos) << LastError(a_);

    Consumer c;
    c.Start([&](Consumer &self) {
        galloc_allocator_t *b = ChildAllocator("expandable_segments:True");
        void *q = nullptr, *u = nullptr;
        galloc_ipc_handle_t got;
        ASSERT_EQ(galloc_ipc_recv(b, self.Peer(), &got, &q), GALLOC_OK) << LastError(b);
        EXPECT_EQ(memcmp(&got, &hp, sizeof(got)), 0) << "the handle comes too";
        ASSERT_EQ(galloc_ipc_recv(b, self.Peer(), nullptr, &u), GALLOC_OK) << LastError(b);
        EXPECT_TRUE(AllBytes(q, n, 0x21));
        EXPECT_TRUE(AllBytes(u, tn, 0x42));
        memset(q, 0x7E, n);
        memset(u, 0x7F, tn);
        EXPECT_EQ(galloc_ipc_close(b, q), GALLOC_OK) << LastError(b);
        EXPECT_EQ(galloc_ipc_close(b, u), GALLOC_OK) << LastError(b);
        galloc_allocator_destroy(b);
    });
    ASSERT_EQ(galloc_ipc_send(a_, c.Sock(), &hp), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_ipc_send(a_, c.Sock(), &ht), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(c.Join(), 0) << "the consumer's expectations (printed above)";
    EXPECT_TRUE(AllBytes(p, n, 0x7E));
    EXPECT_TRUE(AllBytes(t, tn, 0x7F));
    EXPECT_EQ(Ipc().exports, 0u);
    EXPECT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << "the export ended: " << LastError(a_);
    EXPECT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << LastError(a_);
    Free(p);
    Free(t);
}

// The producer frees a block a reader holds: it stays allocated (counted),
// is not handed out again, and is freed when the reader closes.
TEST_P(Share, FreeWhileReadKeepsTheBlockUntilTheReaderCloses)
{
    Make();
    const size_t n = 4 * kMiB;
    char *p = static_cast<char *>(Alloc(n));
    memset(p, 0x11, n);
    galloc_ipc_handle_t h;
    ASSERT_EQ(galloc_ipc_export(a_, p, &h), GALLOC_OK) << LastError(a_);
    galloc_stats_t s0 = Stats();

    Consumer c;
    c.Start([&](Consumer &self) {
        galloc_allocator_t *b = ChildAllocator();
        void *q = nullptr;
        ASSERT_EQ(galloc_ipc_open(b, &h, &q), GALLOC_OK) << LastError(b);
        self.Tell();
        self.Wait(); // the producer freed it and allocated again meanwhile
        EXPECT_TRUE(AllBytes(q, n, 0x11)) << "nobody wrote the block after its free";
        EXPECT_EQ(galloc_ipc_close(b, q), GALLOC_OK) << LastError(b);
        galloc_allocator_destroy(b);
        self.Tell();
    });
    ASSERT_TRUE(c.Heard());
    Free(p);
    galloc_stats_t s1 = Stats();
    EXPECT_EQ(s1.allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current) << "kept, as PyTorch's limbo";
    EXPECT_EQ(s1.allocation[ALL].current, s0.allocation[ALL].current);
    EXPECT_EQ(Ipc().limbo_blocks, 1u);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_E_NOT_OWNED) << "freed once";
    EXPECT_NE(LastError(a_).find("waits for a reader"), std::string::npos) << LastError(a_);
    galloc_ipc_handle_t h2;
    EXPECT_EQ(galloc_ipc_export(a_, p, &h2), GALLOC_E_NOT_OWNED) << "freed: not exported again";
    char *q = static_cast<char *>(Alloc(n));
    EXPECT_NE(q, p) << "not handed out again";
    memset(q, 0xEE, n);
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current + (int64_t)n);
    size_t freed = 9;
    EXPECT_EQ(galloc_ipc_collect(a_, &freed), GALLOC_OK);
    EXPECT_EQ(freed, 0u) << "the reader holds it";
    c.Go();
    ASSERT_TRUE(c.Heard());
    EXPECT_EQ(galloc_ipc_collect(a_, &freed), GALLOC_OK);
    EXPECT_EQ(freed, 1u);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current) << "p gone, q live";
    EXPECT_EQ(Ipc().limbo_blocks, 0u);
    EXPECT_EQ(c.Join(), 0) << "the consumer's expectations (printed above)";
    Free(q);
}

// A reader killed while it holds the block: the kernel drops its lease lock,
// and the next collect frees the block.
TEST_P(Share, AKilledReaderReleasesTheBlock)
{
    Make("expandable_segments:True");
    const size_t n = 6 * kMiB;
    char *p = static_cast<char *>(Alloc(n));
    galloc_ipc_handle_t h;
    ASSERT_EQ(galloc_ipc_export(a_, p, &h), GALLOC_OK) << LastError(a_);
    galloc_stats_t s0 = Stats();
    Consumer c;
    c.Start([&](Consumer &self) {
        galloc_allocator_t *b = ChildAllocator("expandable_segments:True");
        void *q = nullptr;
        ASSERT_EQ(galloc_ipc_recv(b, self.Peer(), nullptr, &q), GALLOC_OK) << LastError(b);
        self.Tell();
        pause(); // killed here, the block open
    });
    ASSERT_EQ(galloc_ipc_send(a_, c.Sock(), &h), GALLOC_OK) << LastError(a_);
    ASSERT_TRUE(c.Heard()) << "the reader opened it";
    Free(p);
    size_t freed = 9;
    EXPECT_EQ(galloc_ipc_collect(a_, &freed), GALLOC_OK);
    EXPECT_EQ(freed, 0u);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current);
    kill(c.pid, SIGKILL);
    EXPECT_EQ(c.Join(), 128 + SIGKILL);
    // The next malloc that misses the cache collects first; the test asks directly.
    EXPECT_EQ(galloc_ipc_collect(a_, &freed), GALLOC_OK);
    EXPECT_EQ(freed, 1u) << "the dead reader's hold ended";
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current - (int64_t)n)
        << "p's bytes are free";
    EXPECT_EQ(Ipc().exports, 0u);
    char *r = static_cast<char *>(Alloc(n));
    EXPECT_EQ(r, p) << "and reused";
    Free(r);
}

// Refusals: each is a status and a message, and changes nothing.
TEST_P(Share, RefusalsAndRevoke)
{
    Make();
    char *p = static_cast<char *>(Alloc(2 * kMiB));
    galloc_ipc_handle_t h;
    EXPECT_EQ(galloc_ipc_export(a_, p + 512, &h), GALLOC_E_NOT_OWNED) << "not a block's start";
    EXPECT_NE(LastError(a_).find("not the start of a live block"), std::string::npos) << LastError(a_);
    EXPECT_EQ(galloc_ipc_export(a_, p, nullptr), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_ipc_export(a_, p, &h), GALLOC_OK) << LastError(a_);
    void *q = nullptr;
    EXPECT_EQ(galloc_ipc_open(a_, &h, &q), GALLOC_E_INVAL) << "the producer's own handle";
    EXPECT_NE(LastError(a_).find("this process's own"), std::string::npos) << LastError(a_);
    galloc_ipc_handle_t junk;
    memset(&junk, 0x3C, sizeof junk);
    galloc_ipc_info_t info;
    EXPECT_EQ(galloc_ipc_info(&junk, &info), GALLOC_E_FORMAT);
    EXPECT_EQ(galloc_ipc_open(a_, &junk, &q), GALLOC_E_FORMAT);
    EXPECT_EQ(galloc_ipc_close(a_, p), GALLOC_E_NOT_OWNED) << "not a block of another process";
    EXPECT_EQ(galloc_ipc_send(a_, -1, &h), GALLOC_E_INVAL);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    EXPECT_EQ(galloc_ipc_send(a_, sv[0], &h), GALLOC_E_IO) << "the peer is gone";
    EXPECT_NE(LastError(a_).find("socket"), std::string::npos) << LastError(a_);
    EXPECT_EQ(galloc_ipc_recv(a_, sv[0], nullptr, &q), GALLOC_E_IO);
    close(sv[0]);
    // A handle's bytes without the descriptors galloc_ipc_send puts beside them.
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ASSERT_EQ(write(sv[0], &h, sizeof h), (ssize_t)sizeof h);
    EXPECT_EQ(galloc_ipc_recv(a_, sv[1], nullptr, &q), GALLOC_E_IO);
    EXPECT_NE(LastError(a_).find("descriptors"), std::string::npos) << LastError(a_);
    close(sv[0]);
    close(sv[1]);
    // The same handle from a producer that is gone: the wire's pid (bytes
    // 12..15 of pool/ipc.h's ga_ipc_wire_t; galloc_ipc_info checks the place).
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
    galloc_ipc_handle_t orphan = h;
    int32_t dead32 = (int32_t)dead;
    memcpy(orphan.bytes + 12, &dead32, sizeof dead32);
    ASSERT_EQ(Info(orphan).pid, (int)dead);
    EXPECT_EQ(galloc_ipc_open(a_, &orphan, &q), GALLOC_E_INVAL);
    EXPECT_NE(LastError(a_).find("its producer is gone"), std::string::npos) << LastError(a_);

    // Revoke: an export nobody opened ends; its freed block is freed.
    galloc_stats_t s0 = Stats();
    Free(p);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current) << "kept for a reader";
    EXPECT_EQ(galloc_ipc_revoke(a_, &h), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(Stats().allocated_bytes[ALL].current, s0.allocated_bytes[ALL].current - (int64_t)(2 * kMiB));
    EXPECT_EQ(galloc_ipc_revoke(a_, &h), GALLOC_E_INVAL) << "ended";
    EXPECT_EQ(Ipc().exports, 0u);

    // A revoked handle no longer opens anywhere.
    char *r = static_cast<char *>(Alloc(2 * kMiB));
    ASSERT_EQ(galloc_ipc_export(a_, r, &h), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(galloc_ipc_revoke(a_, &h), GALLOC_OK) << LastError(a_);
    Consumer c;
    c.Start([&](Consumer &) {
        galloc_allocator_t *b = ChildAllocator();
        void *x = nullptr;
        EXPECT_EQ(galloc_ipc_open(b, &h, &x), GALLOC_E_INVAL) << "revoked";
        EXPECT_EQ(Ipc(b).opened, 0u);
        galloc_allocator_destroy(b);
    });
    EXPECT_EQ(c.Join(), 0);
    Free(r);

    // An allocator that cannot share says so.
    galloc_allocator_t *async = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f_, v().AsyncBackend()).c_str(), &async, err, sizeof err),
              GALLOC_OK)
        << err;
    void *ap = nullptr;
    ASSERT_EQ(galloc_malloc(async, 1 * kMiB, 0, &ap), GALLOC_OK) << LastError(async);
    EXPECT_EQ(galloc_ipc_export(async, ap, &h), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(LastError(async).find("cannot share memory between processes"), std::string::npos) << LastError(async);
    EXPECT_EQ(galloc_free(async, ap), GALLOC_OK);
    galloc_allocator_destroy(async);
}

// The producer's side: every driver call of export (plain: the driver's IPC
// handle) and send (pages: one descriptor per page) fails in turn.
TEST_P(SharePlain, FaultSweepExportAndSend)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        FakeCuda f(v().Fake(), v().name);
        ASSERT_TRUE(f.ok()) << f.error();
        uint64_t runs = 0, failures = 0;
        for (uint64_t k = 1; k < 200; k++) {
            SCOPED_TRACE(std::string(conf) + ": failing call #" + std::to_string(k));
            f.fake_cuda_reset();
            galloc_allocator_t *a = nullptr;
            char err[GALLOC_ERROR_MAX] = "";
            ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, conf).c_str(), &a, err, sizeof err), GALLOC_OK)
                << err;
            void *p = nullptr;
            ASSERT_EQ(galloc_malloc(a, 25 * kMiB, 0, &p), GALLOC_OK) << LastError(a); // two pages when expandable
            int sv[2];
            ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            galloc_ipc_handle_t h;
            int64_t allocated = Stats(a).allocated_bytes[ALL].current; // 26 MiB: the segment's whole block
            f.fake_cuda_fail("*", k, 0, kUnknown);
            galloc_status_t se = galloc_ipc_export(a, p, &h);
            galloc_status_t ss = se == GALLOC_OK ? galloc_ipc_send(a, sv[0], &h) : se;
            uint64_t faults = f.Stats().faults;
            f.fake_cuda_fail_clear();
            if (se != GALLOC_OK || ss != GALLOC_OK) {
                failures++;
                EXPECT_NE(LastError(a), "") << "a failure says why";
                char b;
                EXPECT_EQ(recv(sv[1], &b, 1, MSG_DONTWAIT), -1) << "nothing was sent";
                EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
            }
            if (se != GALLOC_OK) {
                EXPECT_EQ(Stats(a).allocated_bytes[ALL].current, allocated);
                galloc_ipc_stats_t is{};
                EXPECT_EQ(galloc_ipc_stats(a, &is), GALLOC_OK);
                EXPECT_EQ(is.exports, 0u) << "a failed export leaves none";
                EXPECT_EQ(galloc_ipc_export(a, p, &h), GALLOC_OK) << "the retry: " << LastError(a);
            }
            if (ss != GALLOC_OK) {
                EXPECT_EQ(galloc_ipc_send(a, sv[0], &h), GALLOC_OK) << "the retry: " << LastError(a);
            }
            galloc_ipc_handle_t got;
            EXPECT_TRUE(ReadHandle(sv[1], &got));
            EXPECT_EQ(memcmp(&got, &h, sizeof h), 0);
            close(sv[0]);
            close(sv[1]);
            EXPECT_EQ(galloc_ipc_revoke(a, &h), GALLOC_OK) << LastError(a);
            EXPECT_EQ(galloc_free(a, p), GALLOC_OK) << LastError(a);
            EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
            galloc_allocator_destroy(a);
            fake_gpu_stats_t fs = f.Stats();
            EXPECT_EQ(fs.leaks, 0u);
            EXPECT_EQ(fs.violations, 0u) << f.Violation();
            if (faults == 0)
                break;
            runs++;
            if (::testing::Test::HasFailure())
                return;
        }
        EXPECT_GE(runs, 1u) << conf;
        EXPECT_GE(failures, 1u) << conf;
    }
}

// The reader's side: every driver call of open (plain), receive (pages) and
// close fails in turn, in the reader's process; each failure leaves the
// reader as it was and a retry succeeds; the producer ends every export.
TEST_P(SharePlain, FaultSweepOpenReceiveAndCloseInTheReader)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        bool pages = conf[0] != '\0';
        FakeCuda f(v().Fake(), v().name);
        ASSERT_TRUE(f.ok()) << f.error();
        f.fake_cuda_reset();
        galloc_allocator_t *a = nullptr;
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, conf).c_str(), &a, err, sizeof err), GALLOC_OK)
            << err;
        const size_t n = 25 * kMiB;
        char *p = nullptr;
        ASSERT_EQ(galloc_malloc(a, n, 0, (void **)&p), GALLOC_OK) << LastError(a);
        memset(p, 0x66, n);
        Consumer c;
        c.Start([&](Consumer &self) {
            galloc_allocator_t *b = nullptr;
            char e2[GALLOC_ERROR_MAX] = "";
            ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, conf).c_str(), &b, e2, sizeof e2), GALLOC_OK)
                << e2;
            auto open = [&](void **q) {
                if (pages)
                    return galloc_ipc_recv(b, self.Peer(), nullptr, q);
                galloc_ipc_handle_t h;
                EXPECT_TRUE(ReadHandle(self.Peer(), &h));
                return galloc_ipc_open(b, &h, q);
            };
            for (int phase = 0; phase < 2; phase++) { // 0: open fails, 1: close fails
                uint64_t runs = 0;
                for (uint64_t k = 1; k < 200; k++) {
                    SCOPED_TRACE((phase ? "close: failing call #" : "open: failing call #") + std::to_string(k));
                    self.Tell('E'); // a fresh export, sent
                    uint64_t leaks0 = f.Stats().leaks, faults0 = f.Stats().faults;
                    void *q = nullptr;
                    if (phase == 0)
                        f.fake_cuda_fail("*", k, 0, kUnknown);
                    galloc_status_t st = open(&q);
                    if (phase == 0)
                        f.fake_cuda_fail_clear();
                    if (st != GALLOC_OK) {
                        EXPECT_EQ(st, GALLOC_E_DEVICE) << LastError(b);
                        EXPECT_NE(LastError(b), "");
                        EXPECT_EQ(IpcStats(b).opened, 0u);
                        EXPECT_EQ(f.Stats().leaks, leaks0) << "a failed open leaves nothing";
                        self.Tell('S'); // the same export again
                        st = open(&q);
                        EXPECT_EQ(st, GALLOC_OK) << "the retry: " << LastError(b);
                    }
                    if (st != GALLOC_OK)
                        return;
                    EXPECT_TRUE(AllBytes(q, n, 0x66));
                    if (phase == 1)
                        f.fake_cuda_fail("*", k, 0, kUnknown);
                    galloc_status_t cs = galloc_ipc_close(b, q);
                    if (phase == 1)
                        f.fake_cuda_fail_clear();
                    if (cs != GALLOC_OK) {
                        EXPECT_EQ(cs, GALLOC_E_DEVICE) << LastError(b);
                        EXPECT_EQ(IpcStats(b).opened, 1u) << "still open";
                        EXPECT_EQ(galloc_ipc_close(b, q), GALLOC_OK) << "the retry: " << LastError(b);
                    }
                    EXPECT_EQ(f.Stats().leaks, leaks0) << "closed: nothing left";
                    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
                    if (f.Stats().faults == faults0)
                        break;
                    runs++;
                    if (::testing::Test::HasFailure())
                        return;
                }
                EXPECT_GE(runs, 1u) << "phase " << phase;
            }
            self.Tell('Q');
            galloc_allocator_destroy(b);
        });
        galloc_ipc_handle_t h;
        char ch;
        while (c.Heard(&ch) && ch != 'Q') {
            if (ch == 'E') {
                ASSERT_EQ(galloc_ipc_export(a, p, &h), GALLOC_OK) << LastError(a);
            }
            ASSERT_EQ(galloc_ipc_send(a, c.Sock(), &h), GALLOC_OK) << LastError(a);
        }
        EXPECT_EQ(c.Join(), 0) << "the reader's expectations (printed above)";
        galloc_ipc_stats_t is{};
        EXPECT_EQ(galloc_ipc_stats(a, &is), GALLOC_OK);
        EXPECT_EQ(is.exports, 0u) << "every export closed";
        EXPECT_EQ(galloc_free(a, p), GALLOC_OK) << LastError(a);
        EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
        galloc_allocator_destroy(a);
        fake_gpu_stats_t fs = f.Stats();
        EXPECT_EQ(fs.leaks, 0u);
        EXPECT_EQ(fs.violations, 0u) << f.Violation();
    }
}

} // namespace cuda_test
