// test_util.h: helpers shared by the trace tests: a stack-capturing function
// with a known name, the framework frames the tests' callback supplies, temp
// paths, and running the python3 checker.
#ifndef GALLOC_TESTS_TRACE_TEST_UTIL_H
#define GALLOC_TESTS_TRACE_TEST_UTIL_H

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "trace/trace.h"

// Captures a stack through ga_trace_capture; its own frame is the innermost
// one kept, so symbolization must name "trace_test_native_site".
uint32_t trace_test_native_site(ga_trace_t *t);

// The source line of trace_test_native_site's capture call.
int trace_test_native_site_line(void);

// A second call site: a stack different from trace_test_native_site's.
uint32_t trace_test_other_site(ga_trace_t *t);

// The frames callback: the three frames check_snapshot.py's USER_FRAMES
// expects (unicode, characters JSON must escape, an invalid UTF-8 byte, a
// line above 2^31). ctx, if non-NULL, is an int* counting calls.
size_t trace_test_user_frames(void *ctx, ga_trace_user_frame_t *frames, size_t max_frames);
}

// A path in the test's scratch directory.
std::string trace_test_tmp(const std::string &name);

// Run python3 with args (the script path first) and return its exit status
// (-1 if it could not start); its stdout and stderr go to *output.
int trace_test_python(const std::vector<std::string> &args, std::string *output);

#endif
