/*
 * site_file.c: see site_file.h. A path is read component by component (a
 * component is what lies between separators), left to right, once:
 *
 *   - torch's: a component torch, functorch or torchgen (the top-level
 *     packages a PyTorch wheel installs) that is the path's first (a relative
 *     path, as the profiler's Python tracer writes torch's files:
 *     "torch/nn/modules/module.py") or follows site-packages, dist-packages
 *     or pytorch (a checkout: ".../pytorch/torch/..."); or a component
 *     torchinductor_* (the code torch.compile writes and runs,
 *     /tmp/torchinductor_USER/...). A folder merely named torch elsewhere
 *     ("/opt/torch/train.py") is not torch's.
 *   - the interpreter's: a component lib or lib64 followed by python<digit>...
 *     (/usr/lib/python3.12/, a venv's or conda's lib/python3.X/), or a
 *     Windows Lib, unless a site-packages or dist-packages follows (then it is
 *     an installed package); and pseudo-files "<...>" (exec'd code
 *     "<string>", "<frozen importlib._bootstrap>"), but for what a person
 *     typed: "<stdin>" and IPython's "<ipython-input-N-...>" are the user's.
 *     torch.fx's generated "<eval_with_key>.N" is torch's.
 *   - the user's: anything else, libraries installed beside torch included
 *     (transformers' modeling code names the layer that allocated).
 */
#include "tools/owners/site_file.h"

#include <stdbool.h>
#include <string.h>

#include "tools/owners/site.h"

static bool is_sep(char c)
{
    return c == '/' || c == '\\';
}

static bool comp_is(const char *p, size_t n, const char *z)
{
    return n == strlen(z) && memcmp(p, z, n) == 0;
}

static bool comp_starts(const char *p, size_t n, const char *z)
{
    size_t k = strlen(z);
    return n >= k && memcmp(p, z, k) == 0;
}

static ga_py_owner_t pseudo_file(const char *file, size_t len)
{
    if (comp_is(file, len, "<stdin>") || comp_starts(file, len, "<ipython-input-"))
        return GA_PY_USER;
    if (comp_starts(file, len, "<eval_with_key>"))
        return GA_PY_TORCH;
    return GA_PY_OTHER;
}

ga_py_owner_t ga_site_file_owner(const char *file, size_t len, const char **rel, size_t *rel_len)
{
    const char *r = "";
    size_t rn = 0;
    ga_py_owner_t owner = GA_PY_USER;
    if (file == NULL || len == 0) {
        owner = GA_PY_OTHER;
        goto out;
    }
    if (file[0] == '<') {
        owner = pseudo_file(file, len);
        goto out;
    }
    const char *prev = NULL; /* the component before this one */
    size_t prev_n = 0;
    bool stdlib = false; /* under the interpreter's lib/pythonX.Y/ and no package folder since */
    for (size_t b = 0; b <= len;) {
        size_t e = b;
        while (e < len && !is_sep(file[e]))
            e++;
        const char *c = file + b;
        size_t n = e - b;
        bool top = prev == NULL || comp_is(prev, prev_n, "site-packages") || comp_is(prev, prev_n, "dist-packages") ||
                   comp_is(prev, prev_n, "pytorch");
        if (e < len && top && (comp_is(c, n, "torch") || comp_is(c, n, "functorch") || comp_is(c, n, "torchgen"))) {
            owner = GA_PY_TORCH;
            if (comp_is(c, n, "torch")) {
                r = file + e + 1;
                rn = len - e - 1;
            }
            goto out;
        }
        if (e < len && comp_starts(c, n, "torchinductor_")) {
            owner = GA_PY_TORCH;
            goto out;
        }
        if (comp_is(c, n, "site-packages") || comp_is(c, n, "dist-packages"))
            stdlib = false;
        else if (comp_is(c, n, "Lib") && e < len)
            stdlib = true;
        else if (prev != NULL && (comp_is(prev, prev_n, "lib") || comp_is(prev, prev_n, "lib64")) && e < len && n > 6 &&
                 comp_starts(c, n, "python") && c[6] >= '0' && c[6] <= '9')
            stdlib = true;
        prev = c;
        prev_n = n;
        b = e + 1;
    }
    owner = stdlib ? GA_PY_OTHER : GA_PY_USER;
out:
    if (rel != NULL)
        *rel = r;
    if (rel_len != NULL)
        *rel_len = rn;
    return owner;
}

bool ga_site_is_user_file(const char *file, size_t len)
{
    return ga_site_file_owner(file, len, NULL, NULL) == GA_PY_USER;
}
