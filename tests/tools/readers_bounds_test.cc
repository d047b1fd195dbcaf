// readers_bounds_test.cc: memory on hostile input (issue 30). Every reader
// gets a small gzip file that inflates to 4 GiB (1 GiB for Kineto's; made
// here with zlib: one member with the format's header, then 64 MiB members of
// zeros or of a repeated record, each a few KiB) or a file that claims sizes
// no device has, and must refuse it with a message naming the file and the
// bound, in a child process whose peak RSS (wait4's ru_maxrss) stays under
// the bound limits.h documents. Each test prints the child's peak.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/readers/limits.h"
#include "tools/readers/trace_reader.h"
}

namespace {

const uint64_t kMiB = 1 << 20, kBomb = (uint64_t)4 << 30, kMember = 64 * kMiB;

// One gzip member of `unit` repeated to `bytes` (streamed: never held whole).
std::string GzipRepeat(const std::string &unit, uint64_t bytes)
{
    z_stream z = {};
    EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
    std::string in;
    while (in.size() < kMiB)
        in += unit;
    std::string out;
    char buf[1 << 16];
    uint64_t left = bytes;
    do {
        size_t n = left < in.size() ? (size_t)left : in.size();
        left -= n;
        z.next_in = (Bytef *)in.data();
        z.avail_in = (uInt)n;
        int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
        do {
            z.next_out = (Bytef *)buf;
            z.avail_out = sizeof(buf);
            deflate(&z, flush);
            out.append(buf, sizeof(buf) - z.avail_out);
        } while (z.avail_out == 0);
    } while (left > 0);
    deflateEnd(&z);
    return out;
}

// A file of head, then `unit` repeated to `bytes` (4 GiB unless told),
// gzipped: the whole member counts of unit fill each 64 MiB member, which
// repeats (cat a.gz b.gz).
std::string Bomb(const std::string &name, const std::string &head, const std::string &unit, uint64_t bytes = kBomb)
{
    uint64_t per = kMember / unit.size() * unit.size();
    std::string member = GzipRepeat(unit, per), out = GzipRepeat(head, head.size());
    for (uint64_t n = 0; n < bytes; n += per)
        out += member;
    EXPECT_LT(out.size(), 16 * kMiB) << name;
    return Write(name, out);
}

struct Child {
    int status = -1;     // exit status: 0 when the reader refused the file
    std::string msg;     // the reader's message
    long peak_kib = 0;   // ru_maxrss
    uint64_t events = 0; // read before the refusal
};

// Read path (every unit, every event) in a child process. A forked child
// starts with the test's resident pages, so the heap the bombs were made in
// is given back first (malloc_trim) and the figure that counts is the peak
// above a child that reads nothing (BaselineKiB), forked from the same state.
Child ReadInChild(const std::string &path, bool stdin_too = false, bool nothing = false)
{
    int pipefd[2];
    EXPECT_EQ(pipe(pipefd), 0);
    fflush(stdout);
    malloc_trim(0);
    pid_t pid = fork();
    if (pid == 0 && nothing)
        _exit(0);
    if (pid == 0) {
        close(pipefd[0]);
        if (stdin_too) {
            int fd = open(path.c_str(), O_RDONLY);
            dup2(fd, 0);
        }
        char err[1024] = "";
        ga_reader_t *r = nullptr;
        int rc = ga_reader_open(stdin_too ? "-" : path.c_str(), GA_FORMAT_AUTO, &r, err, sizeof(err));
        for (size_t u = 0; rc == 0 && u < ga_reader_units(r); u++) {
            ga_event_t e;
            rc = ga_reader_begin(r, u, err, sizeof(err));
            int k = 1;
            while (rc == 0 && (k = ga_reader_next(r, &e, err, sizeof(err))) == 1) {
            }
            rc = k < 0 ? -1 : rc;
        }
        ssize_t w = write(pipefd[1], err, strlen(err));
        (void)w;
        _exit(rc == -1 ? 0 : 1);
    }
    close(pipefd[1]);
    Child c;
    char buf[512];
    ssize_t k;
    while ((k = read(pipefd[0], buf, sizeof(buf))) > 0)
        c.msg.append(buf, (size_t)k);
    close(pipefd[0]);
    int status = 0;
    struct rusage ru = {};
    EXPECT_EQ(wait4(pid, &status, 0, &ru), pid);
    c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    c.peak_kib = ru.ru_maxrss;
    return c;
}

// The peak RSS of a child that reads nothing: the test binary itself.
long BaselineKiB()
{
    return ReadInChild("", false, true).peak_kib;
}

long FileKiB(const std::string &p)
{
    return (long)(ReadAll(p).size() >> 10);
}

// A refusal that names the file, with the peak under bound_kib (above the
// baseline); the figures go to the test log.
void ExpectRefused(const Child &c, const std::string &path, const std::string &want, long bound_kib)
{
    EXPECT_EQ(c.status, 0) << c.msg;
    EXPECT_EQ(c.msg.rfind(path, 0), 0u) << c.msg;
    EXPECT_NE(c.msg.find(want), std::string::npos) << c.msg;
    long base = BaselineKiB(), over = c.peak_kib - base;
    EXPECT_LT(over, bound_kib) << "peak RSS " << c.peak_kib << " KiB";
    std::printf("peak RSS %ld KiB (baseline %ld KiB, +%ld KiB; bound +%ld KiB): %s\n", c.peak_kib, base, over,
                bound_kib, c.msg.c_str());
}

// The bound of a reader that holds what it inflates, for a gzip file of
// `kib` KiB: GA_HOLD_SLACK + GA_HOLD_RATIO x its size, plus 8 MiB for the
// decoder's buffers and the last chunk inflated (1 MiB) before the check.
long HoldBoundKiB(long kib)
{
    return (long)(GA_HOLD_SLACK >> 10) + GA_HOLD_RATIO * kib + 8192;
}

const long kStreamKiB = 8192; // a streamed reader: its buffers (1.3 MiB) and slack

std::string U64(uint64_t v)
{
    std::string s(8, '\0');
    for (int i = 0; i < 8; i++)
        s[i] = (char)(v >> (8 * i));
    return s;
}

std::string U32(uint32_t v)
{
    return U64(v).substr(0, 4);
}

// A pickle str (BINUNICODE).
std::string S(const std::string &s)
{
    return "X" + U32((uint32_t)s.size()) + s;
}

// PyTorch snapshot pickle: header, then a str claiming 4 GiB of zeros. The
// pickle is parsed whole, so the reader must hold it: it is refused once it
// holds more than the bound for its compressed size, read by path (mapped
// or inflated: snapfile.c) or from stdin (ga_input_slurp).
TEST(BoundedMemory, TorchGzipBomb)
{
    std::string p = Bomb("bomb.pickle.gz", "\x80\x04\x8d" + U64(kBomb), std::string(1, '\0'));
    Child c = ReadInChild(p);
    ExpectRefused(c, p, ": the inflated pickle exceeds", HoldBoundKiB(FileKiB(p)));
    EXPECT_NE(c.msg.find("gunzip it and pass the plain file"), std::string::npos);
    Child s = ReadInChild(p, true);
    ExpectRefused(s, "-", ": the inflated file exceeds", HoldBoundKiB(FileKiB(p)));
}

// Sizes no device has, counts no file holds: refused by ga_torch_check.
TEST(BoundedMemory, TorchAbsurdSizes)
{
    const std::string K0("K\x00", 2);
    auto segment = [&](const std::string &total) {
        return "\x80\x02}(" + S("segments") + "](}(" + S("device") + K0 + S("address") + K0 + S("total_size") + total +
               S("stream") + K0 + S("blocks") + "]ue" + S("device_traces") + "]u.";
    };
    std::string p = Write("huge_segment.pickle", segment("\x8a\x08" + U64((uint64_t)1 << 50)));
    ExpectRefused(ReadInChild(p), p,
                  ": segments[0]: 'total_size' of 1125899906842624 bytes is larger than any device (at most 16 TiB)",
                  kStreamKiB);
    p = Write("negative_segment.pickle", segment("J" + U32(0xfffffe00u)));
    ExpectRefused(ReadInChild(p), p, ": segments[0]: 'total_size' is negative (-512)", kStreamKiB);

    // One device trace holding an alloc of 2^62 bytes.
    std::string alloc = "\x80\x02}(" + S("device_traces") + "]]}(" + S("action") + S("alloc") + S("addr") + K0 +
                        S("size") + "\x8a\x08" + U64((uint64_t)1 << 62) + S("stream") + K0 + "uaa" + S("segments") +
                        "]u.";
    p = Write("huge_alloc.pickle", alloc);
    ExpectRefused(ReadInChild(p), p,
                  ": device_traces[0][0]: 'size' of 4611686018427387904 bytes is larger than any device", kStreamKiB);

    // A million device traces, all the same empty list (DUP): 1 MB of file.
    std::string many = "\x80\x02}(" + S("device_traces") + "](]" + std::string(999999, '2') + "eu.";
    p = Write("million_devices.pickle", many);
    ExpectRefused(ReadInChild(p), p, ": 'device_traces' lists 1000000 devices (at most 1024)", 64 * 1024);

    // A str claiming 1 TiB in a file of 20 bytes.
    p = Write("claims_tib.pickle", "\x80\x04\x8d" + U64((uint64_t)1 << 40) + "abc.");
    ExpectRefused(ReadInChild(p), p, ": byte 2: truncated BINUNICODE8: needs 1099511627776 bytes, 4 left", kStreamKiB);
}

// Chrome trace: the reader keeps each CUDA memory event (40 bytes) and each
// range that may enclose one (24 bytes): a bomb of either is refused once
// what is kept exceeds the bound for its compressed size. These bombs inflate
// to 1 GiB, not 4: the reader parses until the bound (64 MiB + 64 times the
// file), and the 4 GiB bombs' larger files set it where 2.1 GB of JSON had to
// be parsed (21 s); 1 GiB still holds about 3 (events) and 2 (ranges) times
// the bound's worth.
TEST(BoundedMemory, KinetoGzipBomb)
{
    const uint64_t kGiB = (uint64_t)1 << 30;
    std::string ev = "{\"name\":\"[memory]\",\"ts\":1,\"args\":{\"Device Type\":1,\"Device Id\":0,\"Bytes\":512,"
                     "\"Addr\":4096}},";
    std::string p = Bomb("bomb.json.gz", "{\"traceEvents\":[", ev, kGiB);
    ExpectRefused(ReadInChild(p), p, ": the CUDA [memory] events and profiler ranges kept exceeds",
                  HoldBoundKiB(FileKiB(p)));
    std::string range =
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},";
    p = Bomb("ranges.json.gz", "{\"traceEvents\":[", range, kGiB);
    ExpectRefused(ReadInChild(p), p, ": the CUDA [memory] events and profiler ranges kept exceeds",
                  HoldBoundKiB(FileKiB(p)));
    // Zeros after the header: refused at the first byte that is not JSON.
    p = Bomb("zeros.json.gz", "{\"traceEvents\":[", std::string(1, '\0'));
    ExpectRefused(ReadInChild(p), p, ": byte 16: ", kStreamKiB);
}

TEST(BoundedMemory, KinetoAbsurdSizes)
{
    std::string p = Write("huge.json", "{\"traceEvents\":[{\"name\":\"[memory]\",\"ts\":1,\"args\":{\"Device Type\":1,"
                                       "\"Device Id\":0,\"Bytes\":1152921504606846976,\"Addr\":4096}}]}");
    ExpectRefused(ReadInChild(p), p,
                  "traceEvents[0]: Bytes, Total Allocated or Total Reserved is larger than any device", kStreamKiB);
    p = Write("device.json", "{\"traceEvents\":[{\"name\":\"[memory]\",\"ts\":1,\"args\":{\"Device Type\":1,"
                             "\"Device Id\":5000000,\"Bytes\":512,\"Addr\":4096}}]}");
    ExpectRefused(ReadInChild(p), p, "Device Id (0..1023)", kStreamKiB);
}

// The streamed readers hold one buffer: a bomb after a valid header is
// refused at its first line, whatever it inflates to.
TEST(BoundedMemory, RmmGzipBomb)
{
    std::string p = Bomb("bomb.csv.gz", "Thread,Time,Action,Pointer,Size,Stream\n", std::string(1, '\0'));
    ExpectRefused(ReadInChild(p), p, ":2: line longer than 65536 bytes", kStreamKiB);
}

TEST(BoundedMemory, RmmAbsurdSizes)
{
    std::string p = Write("huge.csv", "Thread,Time,Action,Pointer,Size,Stream\n"
                                      "1,0,allocate,0x1000,1152921504606846976,0x0\n");
    ExpectRefused(ReadInChild(p), p, ":2: allocation larger than any device (at most 16 TiB): size", kStreamKiB);
    p = Write("overflow.csv", "Thread,Time,Action,Pointer,Size,Stream\n"
                              "1,0,allocate,0x1000,99999999999999999999,0x0\n");
    ExpectRefused(ReadInChild(p), p, ":2: bad size", kStreamKiB);
}

TEST(BoundedMemory, UmpireGzipBomb)
{
    std::string head = "{\"kind\":\"replay\",\"uid\":1,\"event\":\"version\",\"payload\":{}}\n";
    std::string p = Bomb("bomb.replay.gz", head, std::string(1, '\0'));
    ExpectRefused(ReadInChild(p), p, ":2: line longer than 65536 bytes", kStreamKiB);
}

TEST(BoundedMemory, UmpireAbsurdSizes)
{
    std::string p = Write("huge.replay", "{\"category\":\"operation\",\"name\":\"allocate\",\"numeric_args\":{\"size\":"
                                         "1152921504606846976},\"string_args\":{\"pointer\":\"0x1000\"}}\n");
    ExpectRefused(ReadInChild(p), p,
                  ":1: column 66: numeric_args.size of 1152921504606846976 bytes is larger than any device",
                  kStreamKiB);
}

// galloc's own text trace: streamed the same way. Its sizes are not bounded
// (limits.h: the what-if format), but a size past 2^64 is not a number.
TEST(BoundedMemory, TextGzipBomb)
{
    std::string p = Bomb("bomb.trace.gz", "galloc-trace 1\nalloc 1 4096\n", std::string(1, '\0'));
    ExpectRefused(ReadInChild(p), p, ":3: line longer than 65536 bytes", kStreamKiB);
    p = Write("overflow.trace", "galloc-trace 1\nalloc 1 20000000000EiB\n");
    ExpectRefused(ReadInChild(p), p, ":2: bad size", kStreamKiB);
}

// zstd (and xz) are refused by name, not read as garbage: galloc reads gzip.
TEST(BoundedMemory, ZstdRefusedByName)
{
    std::string p = Write("trace.csv.zst", std::string("\x28\xb5\x2f\xfd\x04\x58\x00\x00", 8) + std::string(64, 'x'));
    ExpectRefused(ReadInChild(p), p, ": a zstd-compressed file: galloc reads plain and gzip-compressed files only",
                  kStreamKiB);
}

} // namespace
