// emit_test: the pickle and JSON emitters: exact encodings, escaping,
// batching and memo references read back by python3, nesting errors, and
// write errors (/dev/full).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/trace/test_util.h"

extern "C" {
#include "trace/emit.h"
}

namespace {

// Emit through fn into a file and return its bytes and the finish status.
template <typename Fn> std::string emit(const ga_trace_emitter_ops_t *ops, Fn fn, galloc_status_t *status = nullptr)
{
    std::string path = trace_test_tmp(std::string("emit.") + ops->name);
    FILE *f = fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    auto *e = new ga_trace_emitter_t;
    ga_trace_emit_start(e, ops, f);
    fn(e);
    galloc_status_t rc = ga_trace_emit_finish(e);
    delete e;
    fclose(f);
    if (status != nullptr)
        *status = rc;
    else
        EXPECT_EQ(rc, GALLOC_OK);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string body(const std::string &pickle) // without PROTO 4 and STOP
{
    EXPECT_GE(pickle.size(), 3u);
    EXPECT_EQ(pickle.substr(0, 2), std::string("\x80\x04", 2));
    EXPECT_EQ(pickle.back(), '.');
    return pickle.substr(2, pickle.size() - 3);
}

std::string pickle_i64(int64_t v)
{
    return body(emit(&ga_trace_pickle, [&](ga_trace_emitter_t *e) { ga_trace_emit_i64(e, v); }));
}

std::string pickle_u64(uint64_t v)
{
    return body(emit(&ga_trace_pickle, [&](ga_trace_emitter_t *e) { ga_trace_emit_u64(e, v); }));
}

// Python loads the pickle at path; `check` is an expression on v.
void python_check(const std::string &path, const std::string &check)
{
    std::string code = "import pickle, sys\nv = pickle.load(open(sys.argv[1], 'rb'))\n"
                       "assert " +
                       check + ", repr(v)[:2000]\n";
    std::string out;
    EXPECT_EQ(trace_test_python({"-c", code, path}, &out), 0) << out;
}

TEST(Pickle, IntegersUseTheSmallestOpcode)
{
    // What Python's pickle writes for the same values (encode_long is the
    // minimal two's complement), verified by loading below.
    EXPECT_EQ(pickle_i64(0), std::string("K\x00", 2));
    EXPECT_EQ(pickle_i64(255), "K\xff");
    EXPECT_EQ(pickle_i64(256), std::string("M\x00\x01", 3));
    EXPECT_EQ(pickle_i64(65535), "M\xff\xff");
    EXPECT_EQ(pickle_i64(65536), std::string("J\x00\x00\x01\x00", 5));
    EXPECT_EQ(pickle_i64(-1), "J\xff\xff\xff\xff");
    EXPECT_EQ(pickle_i64(INT32_MAX), "J\xff\xff\xff\x7f");
    EXPECT_EQ(pickle_i64(INT32_MIN), std::string("J\x00\x00\x00\x80", 5));
    EXPECT_EQ(pickle_i64((int64_t)1 << 31), std::string("\x8a\x05\x00\x00\x00\x80\x00", 7));
    EXPECT_EQ(pickle_i64((int64_t)INT32_MIN - 1), std::string("\x8a\x05\xff\xff\xff\x7f\xff", 7));
    EXPECT_EQ(pickle_i64(INT64_MAX), std::string("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f", 10));
    EXPECT_EQ(pickle_i64(INT64_MIN), std::string("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80", 10));
    EXPECT_EQ(pickle_u64((uint64_t)1 << 63), std::string("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00", 11));
    EXPECT_EQ(pickle_u64(UINT64_MAX), std::string("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00", 11));
    EXPECT_EQ(pickle_u64(0x7f0000200000ull), std::string("\x8a\x06\x00\x00\x20\x00\x00\x7f", 8));
}

TEST(Pickle, ValuesRoundTripThroughPython)
{
    std::string path = trace_test_tmp("values.pickle");
    galloc_status_t rc;
    std::string bytes = emit(
        &ga_trace_pickle,
        [](ga_trace_emitter_t *e) {
            ga_trace_emit_begin_list(e);
            const int64_t ints[] = {0,
                                    255,
                                    256,
                                    65535,
                                    65536,
                                    -1,
                                    INT32_MAX,
                                    INT32_MIN,
                                    (int64_t)1 << 31,
                                    (int64_t)INT32_MIN - 1,
                                    INT64_MAX,
                                    INT64_MIN};
            for (int64_t v : ints)
                ga_trace_emit_i64(e, v);
            ga_trace_emit_u64(e, (uint64_t)1 << 63);
            ga_trace_emit_u64(e, UINT64_MAX);
            ga_trace_emit_f64(e, 0.8);
            ga_trace_emit_f64(e, -1e300);
            ga_trace_emit_bool(e, true);
            ga_trace_emit_bool(e, false);
            ga_trace_emit_none(e);
            ga_trace_emit_tuple2(e, 0, (int64_t)1 << 40);
            ga_trace_emit_str(e, "caf\xc3\xa9 \xe6\x97\xa5", 9);
            std::string long_str(300, 'x');
            ga_trace_emit_str(e, long_str.data(), long_str.size()); // BINUNICODE
            ga_trace_emit_str(e,
                              "a\xff"
                              "b\xc3",
                              4); // invalid UTF-8
            ga_trace_emit_str(e, "", 0);
            ga_trace_emit_begin_dict(e);
            ga_trace_emit_end_dict(e);
            ga_trace_emit_begin_list(e);
            ga_trace_emit_end_list(e);
            ga_trace_emit_end_list(e);
        },
        &rc);
    ASSERT_EQ(rc, GALLOC_OK);
    FILE *f = fopen(path.c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
    python_check(path, "v == [0, 255, 256, 65535, 65536, -1, 2**31-1, -2**31, 2**31, -2**31-1, 2**63-1, -2**63, "
                       "2**63, 2**64-1, 0.8, -1e300, True, False, None, (0, 2**40), 'caf\\u00e9 \\u65e5', 'x'*300, "
                       "'a\\ufffdb\\ufffd', '', {}, []]");
}

TEST(Pickle, LongListsAreBatchedAndMemoShares)
{
    std::string path = trace_test_tmp("batch.pickle");
    std::string bytes = emit(&ga_trace_pickle, [](ga_trace_emitter_t *e) {
        ga_trace_emit_begin_dict(e);
        ga_trace_emit_key(e, "big");
        ga_trace_emit_begin_list(e);
        for (int i = 0; i < 2500; i++)
            ga_trace_emit_i64(e, i);
        ga_trace_emit_end_list(e);
        ga_trace_emit_key(e, "shared");
        ga_trace_emit_begin_list(e);
        ga_trace_emit_begin_list(e);
        ga_trace_emit_atom(e, "alloc");
        ga_trace_emit_atom(e, "alloc");
        ga_trace_emit_end_list(e);
        uint32_t m = ga_trace_emit_memo_put(e);
        ga_trace_emit_memo_get(e, m);
        ga_trace_emit_end_list(e);
        for (int i = 0; i < 300; i++) { // keys past 256 memo slots: LONG_BINPUT / LONG_BINGET
            ga_trace_emit_key(e, "k");
            ga_trace_emit_begin_list(e);
            ga_trace_emit_end_list(e);
            ga_trace_emit_memo_put(e);
        }
        ga_trace_emit_key(e, "last");
        ga_trace_emit_memo_get(e, 299);
        ga_trace_emit_end_dict(e);
    });
    FILE *f = fopen(path.c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
    python_check(path, "v['big'] == list(range(2500)) and v['shared'] == [['alloc', 'alloc']]*2 "
                       "and v['shared'][0] is v['shared'][1] and v['k'] == [] and v['last'] == []");
    // 2500 items in three MARK ... APPENDS batches (1000, 1000, 500), one each
    // for the two "shared" lists, none for empty lists.
    std::string out;
    std::string code = "import pickletools, sys\nops = [o.name for o, a, p in pickletools.genops(open(sys.argv[1], "
                       "'rb').read())]\nassert ops.count('APPENDS') == 5, ops.count('APPENDS')\n"
                       "assert 'LONG_BINPUT' in ops and 'LONG_BINGET' in ops\n";
    EXPECT_EQ(trace_test_python({"-c", code, path}, &out), 0) << out;
}

TEST(Json, StringsAreEscapedAndUtf8PassesThrough)
{
    std::string s = emit(&ga_trace_json, [](ga_trace_emitter_t *e) {
        const char in[] = "q\"b\\\b\f\n\r\t\x01\x1f\x7f\xc3\xa9\xff/";
        ga_trace_emit_str(e, in, sizeof(in) - 1);
    });
    EXPECT_EQ(s, "\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\xef\xbf\xbd/\"\n");
}

TEST(Json, StructureNumbersAndFloats)
{
    std::string s = emit(&ga_trace_json, [](ga_trace_emitter_t *e) {
        ga_trace_emit_begin_dict(e);
        ga_trace_emit_key(e, "a");
        ga_trace_emit_begin_list(e);
        ga_trace_emit_i64(e, INT64_MIN);
        ga_trace_emit_u64(e, UINT64_MAX);
        ga_trace_emit_begin_dict(e);
        ga_trace_emit_key(e, "b");
        ga_trace_emit_none(e);
        ga_trace_emit_end_dict(e);
        ga_trace_emit_begin_list(e);
        ga_trace_emit_end_list(e);
        ga_trace_emit_end_list(e);
        ga_trace_emit_key(e, "f");
        ga_trace_emit_begin_list(e);
        ga_trace_emit_f64(e, 0.8);
        ga_trace_emit_f64(e, 1.0);
        ga_trace_emit_f64(e, 1e300);
        ga_trace_emit_f64(e, NAN);
        ga_trace_emit_f64(e, -INFINITY);
        ga_trace_emit_end_list(e);
        ga_trace_emit_key(e, "t");
        ga_trace_emit_tuple2(e, 1, -2);
        ga_trace_emit_key(e, "y");
        ga_trace_emit_bool(e, true);
        ga_trace_emit_key(e, "n");
        ga_trace_emit_bool(e, false);
        ga_trace_emit_end_dict(e);
    });
    EXPECT_EQ(s, "{\"a\":[-9223372036854775808,18446744073709551615,{\"b\":null},[]],"
                 "\"f\":[0.8,1.0,1e+300,null,null],\"t\":[1,-2],\"y\":true,\"n\":false}\n");
    EXPECT_FALSE(ga_trace_json.memo_put != nullptr);
}

TEST(Emit, BadNestingIsInvalid)
{
    for (const ga_trace_emitter_ops_t *ops : {&ga_trace_pickle, &ga_trace_json}) {
        galloc_status_t rc;
        emit(
            ops, [](ga_trace_emitter_t *e) { ga_trace_emit_begin_list(e); }, &rc);
        EXPECT_EQ(rc, GALLOC_E_INVAL) << ops->name << ": unclosed list";
        emit(
            ops,
            [](ga_trace_emitter_t *e) {
                ga_trace_emit_begin_dict(e);
                ga_trace_emit_i64(e, 1); // a value without its key
                ga_trace_emit_end_dict(e);
            },
            &rc);
        EXPECT_EQ(rc, GALLOC_E_INVAL) << ops->name << ": value without key";
        emit(
            ops,
            [](ga_trace_emitter_t *e) {
                ga_trace_emit_begin_list(e);
                ga_trace_emit_end_dict(e);
            },
            &rc);
        EXPECT_EQ(rc, GALLOC_E_INVAL) << ops->name << ": mismatched close";
        emit(
            ops,
            [](ga_trace_emitter_t *e) {
                for (int i = 0; i < GA_TRACE_EMIT_MAX_DEPTH + 1; i++)
                    ga_trace_emit_begin_list(e);
            },
            &rc);
        EXPECT_EQ(rc, GALLOC_E_INVAL) << ops->name << ": too deep";
        emit(
            ops,
            [](ga_trace_emitter_t *e) {
                ga_trace_emit_begin_list(e);
                ga_trace_emit_key(e, "k"); // a key in a list
                ga_trace_emit_end_list(e);
            },
            &rc);
        EXPECT_EQ(rc, GALLOC_E_INVAL) << ops->name << ": key in list";
    }
}

TEST(Emit, WriteErrorIsIo)
{
    for (const ga_trace_emitter_ops_t *ops : {&ga_trace_pickle, &ga_trace_json}) {
        for (int n : {1, 100000}) { // fails at the final flush, and in the middle
            FILE *f = fopen("/dev/full", "wb");
            ASSERT_NE(f, nullptr);
            auto *e = new ga_trace_emitter_t;
            ga_trace_emit_start(e, ops, f);
            ga_trace_emit_begin_list(e);
            for (int i = 0; i < n; i++)
                ga_trace_emit_str(e, "0123456789", 10);
            ga_trace_emit_end_list(e);
            EXPECT_EQ(ga_trace_emit_finish(e), GALLOC_E_IO) << ops->name << " " << n;
            delete e;
            fclose(f);
        }
    }
}

} // namespace
