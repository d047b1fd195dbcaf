/*
 * site_file.h: whose a Python file is (the user's, torch's, the
 * interpreter's), from its path alone: the rule GA_SITE_CODE and the Python
 * phase rules rest on (docs/owners.md, "Whose file"). site.c's only; the
 * public predicate is ga_site_is_user_file (site.h).
 *
 * Pure: no allocation, no global state; thread-safe.
 */
#ifndef GA_TOOLS_OWNERS_SITE_FILE_H
#define GA_TOOLS_OWNERS_SITE_FILE_H

#include <stddef.h>

typedef enum ga_py_owner {
    GA_PY_USER = 0, /* the user's code, or a library's outside torch (site-packages/transformers/...) */
    GA_PY_TORCH,    /* PyTorch's: torch/, functorch/, torchgen/ installed or checked out, code it generated */
    GA_PY_OTHER     /* the interpreter's: its standard library, "<frozen ...>", "<string>" and the like */
} ga_py_owner_t;

/*
 * ga_site_file_owner: whose Python file file (len bytes, not NUL-terminated;
 * '/' or '\\' separators) is. For a file of torch's own package, *rel and
 * *rel_len (both may be NULL) receive its path inside the package
 * ("nn/modules/module.py", within file); otherwise "" and 0.
 */
ga_py_owner_t ga_site_file_owner(const char *file, size_t len, const char **rel, size_t *rel_len);

#endif /* GA_TOOLS_OWNERS_SITE_FILE_H */
