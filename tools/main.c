/*
 * main.c: the galloc command's executable. The command itself (subcommands,
 * usage, help, version, the check that stdout was written) is command.c, which
 * tools/lib runs in-process too; what is left here belongs to a process of its
 * own: its working directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tools/command.h"

int main(int argc, char **argv)
{
    /* Under `bazel run` the tool starts in its runfiles tree; go back to where
     * the user typed the command so that relative trace and output paths work. */
    const char *wd = getenv("BUILD_WORKING_DIRECTORY");
    if (wd != NULL && chdir(wd) != 0)
        fprintf(stderr, "galloc: cannot change to %s; relative paths are taken from the runfiles tree\n", wd);
    return ga_command_main(argc, argv);
}
