/*
 * options.h: reading the options of a device backend, for backend/; conf.c
 * reads the allocator's own keys with the same rows and the same parser.
 *
 * The items of a config string that no allocator key claims reach the device
 * backend as one string (galloc_backend_args_t.options). A backend lists the
 * keys it takes in a table of ga_conf_key_t rows and hands the string to
 * ga_conf_options_parse, so its keys are tokenized, read and refused exactly
 * as the allocator's are: the same grammar (conf/value.c's tokenizer), the
 * same value readers, the same messages ("<key>: expected <what>, got
 * "<value>" (offset N)", and PyTorch's "Unrecognized key '<key>' in CUDA
 * allocator config (offset N)" for a key the table lacks).
 *
 * Pure: reads no environment and no globals, allocates nothing; thread-safe
 * over its arguments.
 */
#ifndef GA_CONF_OPTIONS_H
#define GA_CONF_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_CONF_PATH_MAX 256        /* a GA_CONF_PATH value: at most 255 bytes and the NUL */
#define GA_CONF_NOT_STORED SIZE_MAX /* ga_conf_key_t.field of a key that is checked, not stored */
/* The units a GA_CONF_SIZE value takes, for a row's `allowed` text. */
#define GA_CONF_SIZE_UNITS "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"

/* How a key's value is read and where it goes (ga_conf_key_t.kind). */
enum {
    GA_CONF_BOOL = 1, /* True | False, into a bool */
    GA_CONF_WHOLE,    /* decimal digits only, into a uint64_t in [min, max] */
    GA_CONF_SIZE,     /* bytes, or a number and a unit ("80GiB", "1.5GB"), into a uint64_t in [min, max] */
    GA_CONF_PATH,     /* 1 to 255 bytes, no whitespace inside, into a char[GA_CONF_PATH_MAX] */
    GA_CONF_OWN       /* conf.c's allocator keys use kinds from here on; a backend's table never does */
};

/* One key a table takes. */
typedef struct ga_conf_key {
    const char *name;    /* the key as written; compared case-sensitively, as PyTorch compares keys */
    uint32_t kind;       /* GA_CONF_BOOL, GA_CONF_WHOLE, GA_CONF_SIZE or GA_CONF_PATH */
    size_t field;        /* offsetof the value in the struct being filled; GA_CONF_NOT_STORED: checked only */
    uint64_t min, max;   /* GA_CONF_WHOLE, GA_CONF_SIZE: the values accepted */
    const char *allowed; /* GA_CONF_WHOLE, GA_CONF_SIZE: what a message says is expected, e.g.
                            "a size (0 = off): bytes, or a number with unit " GA_CONF_SIZE_UNITS */
    uint32_t set_bit;    /* conf.c's own keys: the GA_CONF_SET_* bit a given key sets; 0 in a backend's table */
} ga_conf_key_t;

/*
 * ga_conf_options_parse: read options ("key:value,key:value"; NULL or "" for
 * none) into *out, left to right, as table's n rows say (a key given twice
 * keeps its last value). Returns GALLOC_OK; GALLOC_E_CONFIG with err (errlen
 * bytes, may be NULL) naming the key, the value as written, what is allowed
 * and the byte offset in options, PyTorch's "Unrecognized key '<key>' in CUDA
 * allocator config (offset N)" for a key the table lacks (*out may then be
 * partly written); GALLOC_E_INVAL if table or out is NULL while n > 0.
 */
galloc_status_t ga_conf_options_parse(const char *options, const ga_conf_key_t *table, size_t n, void *out, char *err,
                                      size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* GA_CONF_OPTIONS_H */
