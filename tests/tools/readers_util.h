// readers_util.h: helpers shared by the reader tests (readers_test.cc,
// readers_json_test.cc): tmpfiles.h, and Read, which
// drains every unit of a file and checks that errors are sticky.
#ifndef GA_TESTS_TOOLS_READERS_UTIL_H
#define GA_TESTS_TOOLS_READERS_UTIL_H

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/readers/trace_reader.h"
}

namespace {

// Read every event of every unit; returns 0 or -1 (err holds the message).
struct Read {
    std::vector<ga_event_t> ev;
    std::vector<std::string> text; // annotate texts
    std::vector<std::string> tags; // tag events' lists: "text" or "text offload text2"
    std::string err;
    int rc = 0;
    ga_format_t format = GA_FORMAT_AUTO;
    size_t units = 0;
    uint64_t device_memory = 0;
    ga_reader_notes_t notes = {};

    explicit Read(const std::string &path, ga_format_t fmt = GA_FORMAT_AUTO)
    {
        char e[512] = "";
        ga_reader_t *r = nullptr;
        if (ga_reader_open(path.c_str(), fmt, &r, e, sizeof(e)) != 0) {
            EXPECT_EQ(r, nullptr);
            err = e;
            rc = -1;
            return;
        }
        format = ga_reader_format(r);
        units = ga_reader_units(r);
        device_memory = ga_reader_device_memory(r);
        for (size_t u = 0; u < units && rc == 0; u++) {
            if (ga_reader_begin(r, u, e, sizeof(e)) != 0) {
                err = e;
                rc = -1;
                break;
            }
            ga_event_t x;
            int k;
            while ((k = ga_reader_next(r, &x, e, sizeof(e))) == 1) {
                if (x.kind == GA_EV_ANNOTATE)
                    text.emplace_back(x.text, x.text_len);
                if (x.kind >= GA_EV_TAG_BEGIN)
                    tags.push_back(std::string(x.text, x.text_len) +
                                   (x.text2 ? " offload " + std::string(x.text2, x.text2_len) : ""));
                x.text = nullptr;
                x.text2 = nullptr;
                ev.push_back(x);
            }
            if (k < 0) {
                err = e;
                rc = -1;
                // The error is sticky.
                char e2[512];
                EXPECT_EQ(ga_reader_next(r, &x, e2, sizeof(e2)), -1);
                EXPECT_STREQ(e, e2);
            }
            ga_reader_notes(r, &notes);
        }
        ga_reader_close(r);
    }
};

inline void ExpectBad(const std::string &name, const std::string &content, const std::string &where,
                      const std::string &what, ga_format_t fmt = GA_FORMAT_AUTO)
{
    std::string p = Write(name, content);
    Read r(p, fmt);
    EXPECT_EQ(r.rc, -1) << name;
    EXPECT_NE(r.err.find(p + where), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

} // namespace

#endif // GA_TESTS_TOOLS_READERS_UTIL_H
