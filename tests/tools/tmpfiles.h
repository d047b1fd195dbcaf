// tmpfiles.h: files for the tools' tests: a path in the test's temporary
// directory, writing and reading a whole file, and the example traces in the
// runfiles (//examples:traces).
#ifndef GA_TESTS_TOOLS_TMPFILES_H
#define GA_TESTS_TOOLS_TMPFILES_H

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

inline std::string TmpPath(const std::string &name)
{
    const char *d = std::getenv("TEST_TMPDIR");
    return std::string(d ? d : "/tmp") + "/" + name;
}

inline std::string Write(const std::string &name, const std::string &content)
{
    std::string p = TmpPath(name);
    std::ofstream f(p, std::ios::binary);
    f << content;
    return p;
}

inline std::string Example(const std::string &name)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    if (srcdir != nullptr && ws != nullptr)
        return std::string(srcdir) + "/" + ws + "/examples/" + name;
    return "examples/" + name;
}

inline std::string ReadAll(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

} // namespace

#endif // GA_TESTS_TOOLS_TMPFILES_H
