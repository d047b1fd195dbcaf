// test_util.cc: see test_util.h.
#include "tests/trace/test_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char **environ;

static int native_site_line;

extern "C" int trace_test_native_site_line(void)
{
    return native_site_line;
}

extern "C" __attribute__((noinline)) uint32_t trace_test_native_site(ga_trace_t *t)
{
    native_site_line = __LINE__ + 1;
    uint32_t id = ga_trace_capture(t, 0);
    asm volatile("" ::: "memory"); // keep this frame: no tail call into the capture
    return id;
}

extern "C" __attribute__((noinline)) uint32_t trace_test_other_site(ga_trace_t *t)
{
    uint32_t id = ga_trace_capture(t, 0);
    asm volatile("" ::: "memory");
    return id;
}

extern "C" size_t trace_test_user_frames(void *ctx, ga_trace_user_frame_t *frames, size_t max_frames)
{
    static const ga_trace_user_frame_t canned[] = {
        {"/src/mod\xc3\xa8le.py", "forward", 42},
        {"/src/\xe6\x97\xa5\xe6\x9c\xac.py", "quote\"back\\slash\ttab\nnl\x01" "ctl", 7},
        {nullptr, "bad\xff" "byte", (int64_t)1 << 40},
    };
    if (ctx != nullptr)
        ++*static_cast<int *>(ctx);
    size_t n = sizeof(canned) / sizeof(canned[0]);
    if (n > max_frames)
        n = max_frames;
    for (size_t i = 0; i < n; i++)
        frames[i] = canned[i];
    return n;
}

std::string trace_test_tmp(const std::string &name)
{
    const char *dir = getenv("TEST_TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

int trace_test_python(const std::vector<std::string> &args, std::string *output)
{
    // Debian's python3 first (what ./bazelw installs); PATH's otherwise.
    const char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    std::string log = trace_test_tmp("python_output.txt");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char *> argv;
    argv.push_back(const_cast<char *>(python));
    for (const std::string &a : args)
        argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid;
    int rc = posix_spawnp(&pid, python, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *output = "cannot start python3";
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    *output = ss.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
