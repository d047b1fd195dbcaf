/*
 * size.h: numbers with a unit as people write them ("80GiB", "512MB", "1.5GB",
 * "7B" parameters): the one parser of galloc's config strings (conf/), the
 * galloc command's options and trace files (tools/) and galloc gen's flags
 * (tools/gen).
 *
 * One grammar, digits ['.' digits] [blanks] unit, read by each caller under
 * its own rules (ga_size_rules_t), because the callers differ on purpose:
 * conf/ reads KB as 1000 bytes and KiB as 1024 and refuses a fraction of a
 * byte, so a config string means one exact number; the command line reads
 * KB, KiB and K alike as 1024 (an "80 GB" GPU reports 80 GiB) and rounds;
 * galloc gen reads counts ("7B" parameters) with units of 1000. What is shared
 * is the scanning, the unit lookup and the exact integer arithmetic: no
 * floating point, so "0.1GiB" is the same byte count on every machine.
 *
 * Sizes are also printed here the way PyTorch prints them (c10's format_size),
 * for the OOM messages users compare with PyTorch's to the character.
 *
 * Thread-safety: pure functions of their arguments. Never reads past n bytes.
 */
#ifndef GA_UTIL_SIZE_H
#define GA_UTIL_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One unit name and what it multiplies by. A number without a unit is
 * always accepted and counts 1 (bytes, or a plain count). */
typedef struct ga_size_unit {
    const char *name; /* compared ignoring ASCII case, whole: "kb" matches "KB", not "k" */
    uint64_t mult;    /* its multiplier, >= 1 */
} ga_size_unit_t;

/* What becomes of a value that is not a whole number ("1.5" bytes, "0.1GiB"). */
typedef enum ga_size_round {
    GA_SIZE_EXACT,        /* refused with GA_SIZE_INEXACT */
    GA_SIZE_ROUND_DOWN,   /* rounded towards zero */
    GA_SIZE_ROUND_NEAREST /* rounded to the nearest whole number, halves up */
} ga_size_round_t;

/* A caller's dialect of the grammar. */
typedef struct ga_size_rules {
    const ga_size_unit_t *units; /* the unit names accepted, n_units of them */
    size_t n_units;
    ga_size_round_t round;  /* a fraction of the unit's smallest part */
    unsigned frac_digits;   /* digits after the point that count (at most 18); later ones are
                                    ignored, or refused (GA_SIZE_SYNTAX) when strict */
    bool strict;            /* conf's reading: digits on both sides of a point ("5." and ".5"
                                    are refused), and all the digits as one integer times the unit
                                    must fit in 64 bits, else GA_SIZE_RANGE, so that a number is
                                    never silently shortened */
    bool blank_before_unit; /* spaces may stand between the number and its unit ("512 MiB") */
} ga_size_rules_t;

typedef enum ga_size_status {
    GA_SIZE_OK = 0,
    GA_SIZE_SYNTAX, /* not digits ['.' digits] and a unit of the rules */
    GA_SIZE_RANGE,  /* well formed, but the value does not fit in 64 bits */
    GA_SIZE_INEXACT /* well formed, but not a whole number under GA_SIZE_EXACT */
} ga_size_status_t;

/*
 * ga_size_parse: read s[0..n) (not necessarily NUL-terminated) under rules.
 * Returns GA_SIZE_OK with *out set, or why not (*out untouched). The checks
 * run in this order: syntax (unit included), then range, then exactness, so
 * a caller can report the first problem a user should fix.
 */
ga_size_status_t ga_size_parse(const char *s, size_t n, const ga_size_rules_t *rules, uint64_t *out);

/* Both of PyTorch's CUDA allocators refuse a request of 1 EB or more before
 * any device call ("Tried to allocate more than 1EB memory."). */
#define GA_ONE_EXABYTE ((uint64_t)1 << 60)

/* ga_format_size: bytes as c10's format_size writes them for OOM messages
 * ("1024 bytes", "1.00 MiB", "80.00 GiB"), NUL-terminated in buf (len bytes). */
void ga_format_size(uint64_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_SIZE_H */
