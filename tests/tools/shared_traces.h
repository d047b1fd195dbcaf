// shared_traces.h: the real traces of shared/traces (README there), which sit
// beside the repository ($(repo)/../shared/traces), outside Bazel's workspace,
// so no data dependency can name them. Found from $GALLOC_SHARED_TRACES, else
// from where the runfiles' examples/ really lives (its symlinks lead to the
// checkout). A test that cannot find them skips and says why.
#ifndef GA_TESTS_TOOLS_SHARED_TRACES_H
#define GA_TESTS_TOOLS_SHARED_TRACES_H

#include <climits>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

#include "tests/tools/tmpfiles.h"

namespace {

// The path of shared/traces/name, or "" (why says where it looked).
inline std::string SharedTrace(const std::string &name, std::string *why)
{
    struct stat st;
    if (const char *d = std::getenv("GALLOC_SHARED_TRACES")) {
        std::string p = std::string(d) + "/" + name;
        if (stat(p.c_str(), &st) == 0)
            return p;
        *why = p + " (from $GALLOC_SHARED_TRACES) does not exist";
        return "";
    }
    // examples/torch_snapshot.pickle is a runfile: a symlink into the checkout.
    char real[PATH_MAX];
    if (realpath(Example("torch_snapshot.pickle").c_str(), real) == nullptr) {
        *why = "cannot resolve the runfiles' examples/ to the checkout";
        return "";
    }
    std::string repo(real);
    repo = repo.substr(0, repo.rfind('/')); // examples/
    repo = repo.substr(0, repo.rfind('/')); // the checkout
    std::string p = repo + "/../shared/traces/" + name;
    if (stat(p.c_str(), &st) == 0)
        return p;
    *why = p + " does not exist (set GALLOC_SHARED_TRACES to the folder holding it)";
    return "";
}

} // namespace

// Named by $GALLOC_SHARED_TRACES (as .ci/run does), the traces must be there:
// a missing one fails the test instead of skipping it.
#define GA_SHARED_TRACE(var, name)                                                                                     \
    std::string var##_why;                                                                                             \
    std::string var = SharedTrace(name, &var##_why);                                                                   \
    if (var.empty() && std::getenv("GALLOC_SHARED_TRACES") != nullptr)                                                 \
        FAIL() << "real trace " << name << " not found: " << var##_why;                                                \
    if (var.empty())                                                                                                   \
    GTEST_SKIP() << "real trace " << name << " not found: " << var##_why

#endif // GA_TESTS_TOOLS_SHARED_TRACES_H
