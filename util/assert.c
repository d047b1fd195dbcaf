/* assert.c: GA_ASSERT's failure report (assert.h). */
#include "util/assert.h"

#include <stdio.h>
#include <stdlib.h>

void ga_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "galloc: %s:%d: assertion failed: %s\n", file, line, cond);
    fflush(stderr);
    abort();
}
