/* assert_shim.c: see assert_shim.h. */
#include "tests/pool/assert_shim.h"

#include "util/assert.h"

int assert_shim_on(void)
{
    return GA_ASSERT_ON;
}

void assert_shim_check(int value)
{
    GA_ASSERT(value == 1);
}
