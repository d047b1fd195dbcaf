/* err.c: ga_fail, the one place failures are recorded (see err.h). */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>

galloc_status_t ga_fail(ga_err_t *err, galloc_status_t status, const char *fmt, ...)
{
    if (err == NULL)
        return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->status = status;
    return status;
}
