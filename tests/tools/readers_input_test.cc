// readers_input_test.cc: how trace files are read, whatever their format:
// gzip-compressed input (told by its magic bytes, not its name) with the real
// profiler trace of shared/traces, corrupt and truncated gzip streams, and the
// same events from a plain and a compressed copy of every example trace.
#include <gtest/gtest.h>
#include <zlib.h>

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
// read straight from its .json.gz.
TEST(GzipInput, RealKinetoTrace)
{
    GA_SHARED_TRACE(path, "kineto-hta-rank1-memory.json.gz");
    Read r(path);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.format, GA_FORMAT_KINETO);
    ASSERT_EQ(r.units, 1u);
    ASSERT_EQ(r.ev.size(), 26770u);
    size_t allocs = 0, frees = 0;
    uint64_t largest = 0;
    for (const ga_event_t &e : r.ev) {
        allocs += e.kind == GA_EV_ALLOC;
        frees += e.kind == GA_EV_FREE;
        if (e.kind == GA_EV_ALLOC && e.size > largest)
            largest = e.size;
    }
    EXPECT_EQ(allocs, 13385u);
    EXPECT_EQ(frees, 13385u);
    EXPECT_EQ(largest, 98566144u);

    char err[512];
    ga_reader_t *rd = nullptr;
    ASSERT_EQ(ga_reader_open(path.c_str(), GA_FORMAT_AUTO, &rd, err, sizeof(err)), 0) << err;
    EXPECT_STREQ(ga_reader_unit_label(rd, 0), "device 1");
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

} // namespace
