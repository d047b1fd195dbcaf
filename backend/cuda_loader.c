/*
 * cuda_loader.c: dlopen the CUDA driver and fill ga_cuda_driver_t from the
 * symbol table generated from GA_CUDA_SYMBOLS (see cuda_loader.h for the
 * required / optional rules). Pure library loading: no driver call is made.
 */
#include "backend/cuda_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const ga_cuda_symbol_t ga_cuda_symbols[] = {
#define GA_CUDA_ENTRY_(group, sym) {#sym, offsetof(ga_cuda_driver_t, sym), GA_CUDA_##group},
    GA_CUDA_SYMBOLS(GA_CUDA_ENTRY_)
#undef GA_CUDA_ENTRY_
};
const size_t ga_cuda_symbol_count = sizeof(ga_cuda_symbols) / sizeof(ga_cuda_symbols[0]);

static void put_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, fmt, a, b);
}

/* Store a resolved address into the table. POSIX guarantees a function pointer
 * survives the round trip through void *; memcpy avoids the cast ISO C lacks. */
static void set_slot(ga_cuda_driver_t *d, size_t offset, void *sym)
{
    memcpy((char *)d + offset, &sym, sizeof(sym));
}

galloc_status_t ga_cuda_driver_load(ga_cuda_driver_t *d, const char *path, char *err, size_t errlen)
{
    if (d == NULL || path == NULL || path[0] == '\0') {
        put_err(err, errlen, "%s%s", "no driver library path given", "");
        return GALLOC_E_INVAL;
    }
    memset(d, 0, sizeof(*d));
    (void)dlerror(); /* clear a stale message: dlerror reports the last failure only */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        put_err(err, errlen, "cannot load %s: %s", path, why ? why : "unknown dlopen failure");
        return GALLOC_E_UNAVAILABLE;
    }
    for (size_t i = 0; i < ga_cuda_symbol_count; i++) {
        const ga_cuda_symbol_t *s = &ga_cuda_symbols[i];
        (void)dlerror();
        void *sym = dlsym(lib, s->name);
        if (sym != NULL) {
            set_slot(d, s->offset, sym);
            continue;
        }
        if (s->group == GA_CUDA_REQUIRED) {
            const char *why = dlerror();
            put_err(err, errlen, "the driver library lacks a required symbol: %s%s", why ? why : s->name,
                    why ? "" : " not found");
            dlclose(lib);
            memset(d, 0, sizeof(*d));
            return GALLOC_E_UNAVAILABLE;
        }
        if (d->missing[s->group] == NULL)
            d->missing[s->group] = s->name;
    }
    /* An optional group works only whole: clear what did resolve of a broken one. */
    for (size_t i = 0; i < ga_cuda_symbol_count; i++)
        if (d->missing[ga_cuda_symbols[i].group] != NULL)
            set_slot(d, ga_cuda_symbols[i].offset, NULL);
    d->lib = lib;
    return GALLOC_OK;
}

void ga_cuda_driver_unload(ga_cuda_driver_t *d)
{
    if (d == NULL || d->lib == NULL)
        return;
    dlclose(d->lib);
    memset(d, 0, sizeof(*d));
}
