// verify_memory_test.cc: `galloc replay --verify` holds about what a plain
// replay of the same snapshot holds (issue 38: 290-304 MB for a 3-4 MB
// snapshot whose replay takes 44 MB, because the replay's own snapshot, which
// verify writes and reads back, carried every recorded frame written out: 27
// times the size of PyTorch's file, which memoizes them).
//
// Both commands run here as the binary runs them (ga_replay_main, stdout
// discarded), and the linker routes malloc, calloc, realloc and free through
// the wrappers below (BUILD: -Wl,--wrap), which count the bytes requested and
// not yet freed and keep their high-water mark: the heap's peak, the same
// figure under any malloc (ASan's included), unlike the resident set. Not
// counted: strdup's copies (libc allocates them inside itself; a few names)
// and mapped files (a plain snapshot file is mapped: both commands map their
// input; verify's own snapshot is written and read back from a file too, but
// kept small by what this test bounds).
//
// The bound: verify's peak <= 3/2 x the replay's + 8 MiB. It held 7x and
// more before (see each test's figures, printed as properties).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "tools/replay/replay_cli.h"
}

namespace {

struct Heap {
    bool on = false;                           // a command is being measured
    size_t live = 0, peak = 0;                 // bytes requested and not freed; their maximum
    std::unordered_map<void *, size_t> blocks; // what is live, by pointer (operator new: not wrapped)
};

// Never freed: the wrappers may run after static destructors, and before this
// initializer (nullptr until then: zero-initialized before any dynamic one).
// One thread: the replay allocates on the caller's.
Heap *heap = new Heap;

void Track(void *old, void *p, size_t n)
{
    if (heap == nullptr || !heap->on)
        return;
    if (old != nullptr) {
        auto it = heap->blocks.find(old);
        if (it != heap->blocks.end()) { // else allocated before the command, or by libc itself
            heap->live -= it->second;
            heap->blocks.erase(it);
        }
    }
    if (p != nullptr) {
        heap->blocks[p] = n;
        heap->live += n;
        if (heap->live > heap->peak)
            heap->peak = heap->live;
    }
}

} // namespace

// The linker's names for the wrapped functions (ld --wrap): reserved
// identifiers, the only ones it accepts.
extern "C" {
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n)
{
    void *p = __real_malloc(n);
    Track(nullptr, p, n);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    void *p = __real_calloc(n, size);
    Track(nullptr, p, n * size);
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    void *p = __real_realloc(old, n);
    if (p != nullptr || n == 0)
        Track(old, p, n);
    return p;
}

void __wrap_free(void *p)
{
    Track(p, nullptr, 0);
    __real_free(p);
}
}

namespace {

constexpr double kMiB = 1 << 20;

std::string Data(const std::string &name)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    std::string dir = srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" : "";
    return dir + "tests/tools/data/" + name;
}

struct Run {
    int code = -1;
    size_t peak = 0; // the heap's high-water mark, bytes
};

// galloc replay ARGS... in this process, its report discarded (messages kept
// on stderr), the heap measured.
Run Replay(std::vector<std::string> args)
{
    args.insert(args.begin(), "replay");
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    heap->blocks.clear();
    heap->live = heap->peak = 0;
    heap->on = true;
    Run r;
    r.code = ga_replay_main(static_cast<int>(args.size()), argv.data());
    heap->on = false;
    r.peak = heap->peak;
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(null);
    return r;
}

// verify's peak against the plain replay's, on one snapshot that verifies.
void Bounded(const std::string &name)
{
    std::string path = Data(name);
    Run plain = Replay({path}), verify = Replay({"--verify", path});
    ASSERT_EQ(plain.code, 1) << name << ": replays with its oom entry's OOM";
    ASSERT_EQ(verify.code, 0) << name << ": agrees";
    char figures[160];
    snprintf(figures, sizeof(figures), "replay %.1f MiB, replay --verify %.1f MiB (%.2fx)", plain.peak / kMiB,
             verify.peak / kMiB, (double)verify.peak / (double)plain.peak);
    testing::Test::RecordProperty("heap_peak", figures);
    printf("%s: heap peak: %s\n", name.c_str(), figures);
    EXPECT_LE(verify.peak, plain.peak * 3 / 2 + 8 * (size_t)kMiB) << name << ": " << figures;
}

// 1.5 MB, 8,716 entries: PyTorch 2.11 on an H200 (data/README.md).
TEST(VerifyMemory, RecordedSnapshot)
{
    Bounded("h200/torch211_h200_full_default.pickle.gz");
}

// 3.5 MB, 34,404 entries: the same run, longer (make_long_snapshot.py), the
// size of the snapshots.
TEST(VerifyMemory, LongSnapshot)
{
    Bounded("torch211_h200_long_default.pickle.gz");
}

} // namespace
