/*
 * pickle_value.c: reading a decoded pickle (pickle_read.h): a dict's value by
 * key, str comparison and type names. Apart from the decoder in
 * pickle_read.c, because consumers (the snapshot walker) need only these.
 */
#include <string.h>

#include "tools/snapshot/pickle_read.h"

bool ga_pk_str_eq(const ga_pk_value_t *v, const char *s)
{
    size_t n = strlen(s);
    return v != NULL && v->type == GA_PK_STR && v->u.s.n == n && memcmp(v->u.s.p, s, n) == 0;
}

const ga_pk_value_t *ga_pk_dict_get(const ga_pk_value_t *d, const char *key)
{
    if (d == NULL || d->type != GA_PK_DICT)
        return NULL;
    for (size_t i = d->u.seq.n / 2; i-- > 0;)
        if (ga_pk_str_eq(d->u.seq.items[2 * i], key))
            return d->u.seq.items[2 * i + 1];
    return NULL;
}

const char *ga_pk_type_name(ga_pk_type_t t)
{
    static const char *const names[] = {"None", "bool",  "int", "int (beyond 64 bits)", "float", "str", "bytes",
                                        "list", "tuple", "dict"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}
