// child_exit.h: how a forked test child ends. _exit, so that no destructor of
// the parent's objects runs twice; but first stdio is flushed and, in a
// coverage build (.ci/coverage defines GALLOC_COVERAGE), gcov's counts are
// written, or the code only a child runs (an IPC reader's side) would count
// as never run.
#ifndef GA_TESTS_UTIL_CHILD_EXIT_H
#define GA_TESTS_UTIL_CHILD_EXIT_H

#include <stdio.h>
#include <unistd.h>

#ifdef GALLOC_COVERAGE
extern "C" void __gcov_dump(void);
#endif

inline void ga_test_child_exit(int code)
{
    fflush(nullptr);
#ifdef GALLOC_COVERAGE
    __gcov_dump();
#endif
    _exit(code);
}

#endif // GA_TESTS_UTIL_CHILD_EXIT_H
