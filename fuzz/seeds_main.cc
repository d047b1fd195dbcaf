// seeds_main.cc: a fuzz target's seed corpus as a test, without libFuzzer.
// Linked with one harness (fuzz_seeds_test in fuzz.bzl), it runs the
// harness's LLVMFuzzerTestOneInput on every file of the corpus directory, in
// name order, as `<fuzzer> -runs=0 DIR` does, so a seed that trips a check
// fails `bazel test //...` (and, under --config=asan, ASan and UBSan too),
// not only the fuzz smoke run that CI builds with clang.
//
// Usage: seeds_main --min=N DIR: fails when DIR holds fewer than N seeds (a
// corpus that shrank, or a typo in its path, would otherwise pass by running
// nothing). Prints each seed with its size and time.
#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    long min = 0;
    const char *dir = nullptr;
    for (int i = 1; i < argc; i++) {
        if (std::strncmp(argv[i], "--min=", 6) == 0)
            min = std::strtol(argv[i] + 6, nullptr, 10);
        else
            dir = argv[i];
    }
    if (dir == nullptr) {
        std::fprintf(stderr, "usage: %s --min=N DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(dir);
    if (d == nullptr) {
        std::fprintf(stderr, "%s: cannot open the corpus\n", dir);
        return 1;
    }
    std::vector<std::string> names;
    while (const dirent *e = readdir(d))
        if (e->d_name[0] != '.')
            names.push_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string &n : names) {
        std::string path = std::string(dir) + "/" + n;
        std::ifstream f(path, std::ios::binary);
        std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (!f.good() && !f.eof()) {
            std::fprintf(stderr, "%s: cannot read\n", path.c_str());
            return 1;
        }
        std::printf("%s (%zu bytes) ...", n.c_str(), bytes.size());
        std::fflush(stdout);
        auto t0 = std::chrono::steady_clock::now();
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf(" ok, %.0f ms\n", ms);
    }
    std::printf("%zu seeds in %s\n", names.size(), dir);
    if ((long)names.size() < min) {
        std::fprintf(stderr, "%s: %zu seeds, fewer than %ld\n", dir, names.size(), min);
        return 1;
    }
    return 0;
}
