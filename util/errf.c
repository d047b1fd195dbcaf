/* errf.c: see errf.h. */
#include "util/errf.h"

#include <stdarg.h>
#include <stdio.h>

int ga_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
