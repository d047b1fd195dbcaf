/*
 * umpire_int.h: what read_umpire.c shares with umpire_names.c, the allocator
 * names an Umpire log's requests are served by (the stacks it hands out).
 * Private to the readers; not thread-safe (one reader per thread).
 */
#ifndef GA_TOOLS_READERS_UMPIRE_INT_H
#define GA_TOOLS_READERS_UMPIRE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/readers/intern.h"
#include "tools/readers/json_scan.h"
#include "tools/readers/trace_reader.h"

/* A string of a log line, copied out of the scanner. */
typedef struct ga_umpire_text {
    bool has;                    /* the line has it */
    size_t n;                    /* its length */
    char s[GA_JSON_STR_MAX + 1]; /* its bytes (cut at GA_JSON_STR_MAX) */
} ga_umpire_text_t;

/* The allocators named so far, and the last allocation's stack. */
typedef struct ga_umpire_names {
    ga_intern_t names;                 /* allocator names, once each */
    ga_addrmap_t refs;                 /* allocator_ref -> its name (umpire_names.c) */
    uint32_t stack_name;               /* the last allocation's stack: its allocator's name ... */
    ga_umpire_text_t stack_allocation; /* ... and a named_allocate's name */
} ga_umpire_names_t;

void ga_umpire_names_init(ga_umpire_names_t *u);
void ga_umpire_names_free(ga_umpire_names_t *u);

/* ga_umpire_names_held: the host memory the names hold. */
size_t ga_umpire_names_held(const ga_umpire_names_t *u);

/* ga_umpire_name: allocator_ref ref (not 0) now names the allocator called
 * name (a make line; the last naming of a ref wins). 0 or GA_HOLD_*. */
int ga_umpire_name(ga_umpire_names_t *u, uint64_t ref, const ga_umpire_text_t *name, const ga_hold_t *hold);

/* ga_umpire_stack: the stack of an allocation whose line names its allocator
 * by tag (tags.allocator_name; has false: none) or else by ref (0: none),
 * with allocation (a named_allocate's name; has false: none) as its second
 * frame, into *st: GA_STACK_NONE when neither names an allocator known. Its
 * data is u, valid until the next call. 0 or GA_HOLD_*. */
int ga_umpire_stack(ga_umpire_names_t *u, const ga_umpire_text_t *tag, uint64_t ref, const ga_umpire_text_t *allocation,
                    const ga_hold_t *hold, ga_stack_t *st);

#endif /* GA_TOOLS_READERS_UMPIRE_INT_H */
