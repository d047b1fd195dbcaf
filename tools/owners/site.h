/*
 * site.h: who made an allocation, from what its record carries (a
 * ga_stack_t: a snapshot's call stack, a profiler's enclosing ranges, an
 * annotation, an allocator, a thread): its site, the name a person can act
 * on ("train.py:35 step", "MulBackward0", "at::_ops::mm"), and its phase of
 * a training step (forward, backward, optimizer, other). The rules, in the
 * order they apply, are docs/owners.md's; they are the only place a stack is
 * interpreted, for every format.
 *
 * Pure functions: no allocation, no global state; thread-safe.
 */
#ifndef GA_TOOLS_OWNERS_SITE_H
#define GA_TOOLS_OWNERS_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The phase of a training step an allocation belongs to. */
typedef enum ga_phase {
    GA_PHASE_OTHER = 0, /* none of the below: inputs, a loss outside any module, setup, data movement */
    GA_PHASE_FORWARD,   /* inside a module's call (nn.Module.__call__) */
    GA_PHASE_BACKWARD,  /* inside autograd's engine or an autograd node (gradients, recomputation) */
    GA_PHASE_OPTIMIZER  /* inside torch.optim (step, zero_grad) or its record_function ranges */
} ga_phase_t;
#define GA_PHASES 4 /* the phases above, for arrays indexed by ga_phase_t */

/* ga_phase_name: "other", "forward", "backward", "optimizer". */
const char *ga_phase_name(ga_phase_t p);

/* What a site's name is. */
typedef enum ga_site_kind {
    GA_SITE_CODE = 0,   /* the first frame in the user's code: a Python frame outside torch's and the
                           interpreter's own files, "FILE:LINE FUNCTION" */
    GA_SITE_NODE,       /* no user frame: the autograd node that allocated, "MulBackward0" */
    GA_SITE_OP,         /* no user frame nor node: the outermost operator, "at::_ops::mm" (C++ frames)
                           or "aten::mm" (profiler ranges) */
    GA_SITE_TORCH,      /* only torch's (or the interpreter's) Python frames: the outermost of them,
                           "FILE:LINE FUNCTION" */
    GA_SITE_RANGE,      /* profiler ranges with no op or Python function: the innermost range's name */
    GA_SITE_ANNOTATION, /* a text trace: the annotation in force */
    GA_SITE_ALLOCATOR,  /* an Umpire log: "ALLOCATOR" or "ALLOCATOR: ALLOCATION NAME" */
    GA_SITE_THREAD,     /* an RMM log: the thread */
    GA_SITE_UNKNOWN,    /* a stack with nothing above to name: "(no Python frame, node or op in the stack)" */
    GA_SITE_NONE,       /* nothing recorded for the allocation: "(no stack recorded)" */
    GA_SITE_BEFORE,     /* live before the trace's first entry, its allocation not in the record:
                           "(allocated before the trace)" */
    GA_SITE_OVERFLOW    /* past the owners index's limit on distinct owners (index.h) */
} ga_site_kind_t;

/* ga_site_kind_name: "code", "autograd node", "op", "torch", "range", "annotation",
 * "allocator", "thread", "unknown", "none", "before the trace", "overflow". */
const char *ga_site_kind_name(ga_site_kind_t k);

#define GA_SITE_KEY_MAX 512 /* a site's name, NUL included (longer names are cut, ending "...") */

/* A classified stack. */
typedef struct ga_site_class {
    ga_site_kind_t kind;
    ga_phase_t phase;
    size_t frame;              /* the frame that names the site, SIZE_MAX when none does */
    char key[GA_SITE_KEY_MAX]; /* the site's name (see ga_site_kind_t), NUL-terminated */
} ga_site_class_t;

/*
 * ga_site_classify: the site and phase of an allocation whose record carries
 * st (NULL or kind GA_STACK_NONE: GA_SITE_NONE, GA_PHASE_OTHER). Reads each
 * frame at most a few times; O(frames). Equal stacks give equal results.
 */
void ga_site_classify(const ga_stack_t *st, ga_site_class_t *out);

/* ga_site_special: the class of an allocation the record says nothing about
 * (kind GA_SITE_NONE, GA_SITE_BEFORE or GA_SITE_OVERFLOW): its fixed name,
 * phase other. */
void ga_site_special(ga_site_kind_t kind, ga_site_class_t *out);

/* ga_site_is_user_file: whether a Python file is the user's (not torch's,
 * nor the interpreter's standard library's, nor "<frozen ...>"-style
 * pseudo-files): the rule GA_SITE_CODE rests on. */
bool ga_site_is_user_file(const char *file, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_OWNERS_SITE_H */
