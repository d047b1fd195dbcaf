// python.cc: see python.h.
#include "tests/util/python.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

extern char **environ;

std::string test_tmp_path(const std::string &name)
{
    const char *dir = getenv("TEST_TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

int test_run_python(const std::vector<std::string> &args, std::string *output)
{
    // Debian's python3 first (what ./bazelw installs); PATH's otherwise.
    const char *python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    std::string log = test_tmp_path("python_output.txt");
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
