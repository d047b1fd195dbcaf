// python.h: helpers for tests that check galloc's output with Debian's
// python3 (pickle, json): scratch paths and running a checker script.
#ifndef GALLOC_TESTS_UTIL_PYTHON_H
#define GALLOC_TESTS_UTIL_PYTHON_H

#include <string>
#include <vector>

// A path in the test's scratch directory ($TEST_TMPDIR, else /tmp).
std::string test_tmp_path(const std::string &name);

// Run python3 with args (the script path first) and return its exit status
// (-1 if it could not start); its stdout and stderr go to *output.
int test_run_python(const std::vector<std::string> &args, std::string *output);

#endif
