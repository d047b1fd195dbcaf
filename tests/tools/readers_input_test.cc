// readers_input_test.cc: how trace files are read, whatever their format:
// gzip-compressed input (told by its magic bytes, not its name) with the real
// profiler trace of shared/traces, corrupt and truncated gzip streams, and the
// same events from a plain and a compressed copy of every example trace.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/tools/readers_util.h"
#include "tests/tools/shared_traces.h"

namespace {

// content gzipped (one member) by zlib.
std::string Gzip(const std::string &content)
{
    z_stream z = {};
    EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&z, content.size()), '\0');
    z.next_in = (Bytef *)content.data();
    z.avail_in = (uInt)content.size();
    z.next_out = (Bytef *)&out[0];
    z.avail_out = (uInt)out.size();
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

void ExpectSameEvents(const Read &a, const Read &b)
{
    ASSERT_EQ(a.rc, 0) << a.err;
    ASSERT_EQ(b.rc, 0) << b.err;
    EXPECT_EQ(a.format, b.format);
    EXPECT_EQ(a.units, b.units);
    ASSERT_EQ(a.ev.size(), b.ev.size());
    for (size_t i = 0; i < a.ev.size(); i++) {
        EXPECT_EQ(a.ev[i].kind, b.ev[i].kind) << i;
        EXPECT_EQ(a.ev[i].id, b.ev[i].id) << i;
        EXPECT_EQ(a.ev[i].size, b.ev[i].size) << i;
        EXPECT_EQ(a.ev[i].where, b.ev[i].where) << i;
    }
}

// The real Kineto trace of shared/traces (README: 26,770 GPU [memory] events
// on device 1, 13,385 allocations and 13,385 frees, largest 98,566,144 bytes),
// read straight from its .json.gz. The trace starts mid-run, so the reader
// puts a prologue first that rebuilds the state before it (GA_EVF_PROLOGUE:
// 11 pinned blocks for the 4,096,614,400 bytes live, one per set bit, and
// one reserve of the cached remainder); the counts below are the trace's own.
TEST(GzipInput, RealKinetoTrace)
{
    GA_SHARED_TRACE(path, "kineto-hta-rank1-memory.json.gz");
    Read r(path);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_KINETO);
    ASSERT_EQ(r.units, 1u);
    ASSERT_EQ(r.ev.size(), 26770u + 12u);
    size_t allocs = 0, frees = 0, prologue = 0;
    uint64_t largest = 0;
    for (const ga_event_t &e : r.ev) {
        if (e.flags & GA_EVF_PROLOGUE) {
            prologue++;
            continue;
        }
        allocs += e.kind == GA_EV_ALLOC;
        frees += e.kind == GA_EV_FREE;
        if (e.kind == GA_EV_ALLOC && e.size > largest)
            largest = e.size;
    }
    EXPECT_EQ(allocs, 13385u);
    EXPECT_EQ(frees, 13385u);
    EXPECT_EQ(largest, 98566144u);
    EXPECT_EQ(prologue, 12u);

    char err[512];
    ga_reader_t *rd = nullptr;
    ASSERT_EQ(ga_reader_open(path.c_str(), GA_FORMAT_AUTO, &rd, err, sizeof(err)), 0) << err;
    EXPECT_STREQ(ga_reader_unit_label(rd, 0), "device 1");
    // deviceProperties[1].totalGlobalMem: the V100-SXM2-32GB it ran on.
    EXPECT_EQ(ga_reader_device_memory(rd), 34089730048u);
    ga_reader_close(rd);
}

// The older Kineto layout of shared/traces (README: 8,220 GPU [memory]
// events on device 0, 4,110 allocations and 4,110 frees, largest
// 116,195,328 bytes, no Addr): every free finds a live allocation of its
// size (LIFO), so none is skipped; 67,498 other events are.
TEST(GzipInput, RealOlderKinetoTrace)
{
    GA_SHARED_TRACE(path, "kineto-resnet50-memory.pt.trace.json.gz");
    char err[512];
    ga_reader_t *rd = nullptr;
    ASSERT_EQ(ga_reader_open(path.c_str(), GA_FORMAT_AUTO, &rd, err, sizeof(err)), 0) << err;
    EXPECT_EQ(ga_reader_format(rd), GA_FORMAT_KINETO);
    ASSERT_EQ(ga_reader_units(rd), 1u);
    EXPECT_STREQ(ga_reader_unit_label(rd, 0), "device 0");
    EXPECT_EQ(ga_reader_device_memory(rd), 34084028416u); // deviceProperties[0], a V100-DGXS-32GB
    size_t allocs = 0, frees = 0;
    uint64_t largest = 0;
    int64_t live = 0, peak = 0; // requested bytes: every free's size is its allocation's
    std::map<uint64_t, uint64_t> sizes;
    ga_event_t e;
    int k;
    while ((k = ga_reader_next(rd, &e, err, sizeof(err))) == 1) {
        EXPECT_EQ(e.flags, 0u);
        if (e.kind == GA_EV_ALLOC) {
            allocs++;
            largest = std::max(largest, e.size);
            EXPECT_TRUE(sizes.emplace(e.id, e.size).second) << e.id;
            live += (int64_t)e.size;
            peak = std::max(peak, live);
        } else {
            ASSERT_EQ(e.kind, GA_EV_FREE);
            frees++;
            auto it = sizes.find(e.id);
            ASSERT_NE(it, sizes.end()) << e.id;
            live -= (int64_t)it->second;
            sizes.erase(it);
        }
    }
    ASSERT_EQ(k, 0) << err;
    EXPECT_EQ(allocs, 4110u);
    EXPECT_EQ(frees, 4110u);
    EXPECT_EQ(largest, 116195328u);
    EXPECT_EQ(peak, 2791636480);
    EXPECT_EQ(live, 0);
    ga_reader_notes_t n;
    ga_reader_notes(rd, &n);
    EXPECT_EQ(n.start.kind, GA_START_UNKNOWN);
    EXPECT_TRUE(n.start.by_size);
    EXPECT_EQ(n.start.unmatched_frees, 0u);
    EXPECT_EQ(n.skipped, 67498u);
    ga_reader_close(rd);
}

// Every example trace reads the same compressed, under a name without .gz
// (detection is by the magic bytes), and as two concatenated gzip members.
TEST(GzipInput, SameEventsAsThePlainFile)
{
    for (const char *name : {"rmm_small.csv", "torch_snapshot.pickle", "fragmentation.trace"}) {
        std::string content = ReadAll(Example(name));
        ASSERT_GT(content.size(), 100u) << name;
        Read plain(Example(name));
        Read packed(Write(std::string("gz_") + name, Gzip(content)));
        ExpectSameEvents(plain, packed);
        size_t half = content.size() / 2;
        Read two(Write(std::string("gz2_") + name, Gzip(content.substr(0, half)) + Gzip(content.substr(half))));
        ExpectSameEvents(plain, two);
    }
}

// A damaged stream says what it is and where, in compressed bytes.
TEST(GzipInput, CorruptAndTruncatedStreams)
{
    std::string csv = ReadAll(Example("fragmentation.trace"));
    std::string gz = Gzip(csv);
    ASSERT_GT(gz.size(), 200u);

    std::string p = Write("trunc.csv", gz.substr(0, 100));
    Read t(p);
    EXPECT_EQ(t.rc, -1);
    EXPECT_EQ(t.err, p + ": gzip stream truncated at byte 100 (the file ends inside compressed data)");

    std::string crc = gz;
    crc[crc.size() - 6] ^= 0x5a; // the CRC-32 of the trailer
    p = Write("crc.csv", crc);
    Read c(p);
    EXPECT_EQ(c.rc, -1);
    EXPECT_EQ(c.err, p + ": gzip stream corrupt at byte " + std::to_string(gz.size() - 4) + ": incorrect data check");

    std::string hdr = gz;
    hdr[2] = 7; // compression method: only 8 (deflate) exists
    p = Write("hdr.csv", hdr);
    Read h(p);
    EXPECT_EQ(h.rc, -1);
    EXPECT_EQ(h.err, p + ": gzip stream corrupt at byte 4: unknown compression method");
}

// The older snapshot fixtures (tests/tools/data/make_old_snapshots.py).
std::string OldSnapshot(const std::string &name)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    std::string rel = "tests/tools/data/" + name;
    return srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" + rel : rel;
}

struct Ev {
    ga_event_kind_t kind;
    uint64_t id, size;
    bool prologue;
};

void ExpectEvents(const std::vector<ga_event_t> &got, size_t from, const std::vector<Ev> &want)
{
    ASSERT_GE(got.size(), from + want.size());
    for (size_t i = 0; i < want.size(); i++) {
        const ga_event_t &e = got[from + i];
        EXPECT_EQ(e.kind, want[i].kind) << i;
        EXPECT_EQ(e.id, want[i].id) << std::hex << i;
        EXPECT_EQ(e.size, want[i].size) << i;
        EXPECT_EQ((e.flags & GA_EVF_PROLOGUE) != 0, want[i].prologue) << i;
    }
}

const uint64_t kS0 = 0x7F3A00000000, kS1 = 0x7F3A01400000, kS2 = 0x7F4C00000000, kMB = 1 << 20;

// PyTorch 2.0: blocks without 'address' (the segment's address plus the
// sizes before) and without 'requested_size' (history[0].real_size).
// Device 0: 3 live blocks the trace never mentions (the prologue), then its
// one trace entry; device 1: 1 live block.
TEST(OldSnapshots, Torch20BlocksWithoutAddress)
{
    Read r(OldSnapshot("torch20_snapshot.pickle"));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_TORCH);
    ASSERT_EQ(r.units, 2u);
    ASSERT_EQ(r.ev.size(), 5u);
    ExpectEvents(r.ev, 0,
                 {{GA_EV_ALLOC, kS0, 8000000, true},
                  {GA_EV_ALLOC, kS1, 500, true},
                  {GA_EV_ALLOC, kS1 + 512, 1000, true},
                  {GA_EV_ALLOC, kS0 + 10 * kMB, 10000000, false},
                  {GA_EV_ALLOC, kS2 + 8192, 4000, true}});
}

// torch.cuda.memory_snapshot()'s bare list of segments: no trace, so it
// replays as the state it records (every live block, as a prologue).
TEST(OldSnapshots, BareListOfSegments)
{
    Read r(OldSnapshot("torch_segments_list.pickle"));
    ASSERT_EQ(r.rc, 0) << r.err;
    ASSERT_EQ(r.units, 2u);
    ASSERT_EQ(r.ev.size(), 5u);
    ExpectEvents(r.ev, 0,
                 {{GA_EV_ALLOC, kS0, 8000000, true},
                  {GA_EV_ALLOC, kS0 + 10 * kMB, 10000000, true},
                  {GA_EV_ALLOC, kS1, 500, true},
                  {GA_EV_ALLOC, kS1 + 512, 1000, true},
                  {GA_EV_ALLOC, kS2 + 8192, 4000, true}});
    uint64_t bytes = 0;
    for (const ga_event_t &e : r.ev)
        bytes += e.size;
    EXPECT_EQ(bytes, 18005500u);
}

// What cannot be replayed says what was expected and what was found.
TEST(OldSnapshots, ErrorsNameTheLayout)
{
    std::string p = OldSnapshot("torch_segments_idle.pickle");
    Read idle(p);
    EXPECT_EQ(idle.rc, -1);
    EXPECT_EQ(idle.err, p + ": a list of 1 segment (torch.cuda.memory_snapshot(), or PyTorch 1.13's _snapshot()) "
                            "with no allocated block: it holds no trace, so there is nothing to replay (record one "
                            "with torch.cuda.memory._record_memory_history() and _dump_snapshot())");
    p = OldSnapshot("torch20_noaddr.pickle");
    Read na(p);
    EXPECT_EQ(na.rc, -1);
    EXPECT_EQ(na.err, p + ": segments[0].blocks[1]: expected a live block with int 'size' and 'address' (PyTorch "
                          "2.1+) or a segment 'address' to count from (2.0); found 'size' an int, 'address' missing, "
                          "and no int segment 'address'");
}

// A 200 MB file with a snapshot's pickle header and garbage after it (sparse:
// no disk) is refused at the first bad opcode without being read whole: the
// snapshot cache maps the file, and the decoder touches only what it parses,
// so the refusal does not cost the file's size in memory. Measured in a child
// process, above a child that reads nothing forked from the same state (a
// forked child starts with its parent's resident pages, which the earlier
// tests' reads of the real traces have grown, under ASan by its quarantine).
TEST(BoundedMemory, LargeGarbageAfterAPickleHeaderIsRefusedCheaply)
{
    const off_t size = (off_t)200 << 20;
    // PROTO 4, FRAME of 9 bytes, EMPTY_DICT, MEMOIZE, then 0x00: no such opcode.
    const std::string head("\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00}\x94", 13);
    std::string p = TmpPath("big.pickle");
    int fd = open(p.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, head.data(), head.size()), (ssize_t)head.size());
    ASSERT_EQ(ftruncate(fd, size), 0);
    close(fd);

    struct rusage base = {};
    int status = 0;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
        _exit(0);
    ASSERT_EQ(wait4(pid, &status, 0, &base), pid);

    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        char err[512] = "";
        ga_reader_t *r = nullptr;
        int rc = ga_reader_open(p.c_str(), GA_FORMAT_AUTO, &r, err, sizeof(err));
        ssize_t w = write(pipefd[1], err, strlen(err));
        (void)w;
        _exit(rc == -1 && r == nullptr ? 0 : 1);
    }
    close(pipefd[1]);
    std::string msg;
    char buf[256];
    ssize_t k;
    while ((k = read(pipefd[0], buf, sizeof(buf))) > 0)
        msg.append(buf, (size_t)k);
    close(pipefd[0]);
    struct rusage ru = {};
    ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << msg;
    EXPECT_EQ(msg, p + ": byte 13: unknown opcode 0x00");
    // ru_maxrss is in KiB: the child's peak above the one that read nothing
    // stays far below the file's 200 MiB.
    EXPECT_LT(ru.ru_maxrss - base.ru_maxrss, 32L << 10)
        << "peak RSS " << ru.ru_maxrss << " KiB, " << base.ru_maxrss << " KiB reading nothing";
    std::printf("peak RSS %ld KiB, %ld KiB reading nothing\n", ru.ru_maxrss, base.ru_maxrss);
    unlink(p.c_str());
}

} // namespace
