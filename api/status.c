/* status.c: galloc_strerror and galloc_status_name, generated from GALLOC_STATUS_MAP. */
#include <galloc/galloc_status.h>

#include <stddef.h>

static const char *const status_text[] = {
#define TEXT_(name, text) text,
    GALLOC_STATUS_MAP(TEXT_)
#undef TEXT_
};

static const char *const status_names[] = {
#define NAME_(name, text) #name,
    GALLOC_STATUS_MAP(NAME_)
#undef NAME_
};

const char *galloc_strerror(galloc_status_t s)
{
    if ((unsigned)s >= (unsigned)GALLOC_STATUS_COUNT_)
        return "unknown status";
    return status_text[s];
}

const char *galloc_status_name(galloc_status_t s)
{
    if ((unsigned)s >= (unsigned)GALLOC_STATUS_COUNT_)
        return "UNKNOWN";
    return status_names[s];
}
