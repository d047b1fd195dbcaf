/*
 * dl_table.c: dlopen a device library and fill its loaded struct from the
 * vendor's symbol table (see dl_table.h for the required / optional rules).
 * Pure library loading: no call into the library is made.
 */
#include "backend/dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b, const char *c)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, fmt, a, b, c);
}

/* Store a resolved address into the table. POSIX guarantees a function pointer
 * survives the round trip through void *; memcpy avoids the cast ISO C lacks. */
static void set_slot(void *table, size_t offset, void *sym)
{
    memcpy((char *)table + offset, &sym, sizeof(sym));
}

/* Resolve every symbol of lib into the zeroed struct l (dlopen'd as h):
 * GALLOC_OK, or GALLOC_E_UNAVAILABLE for a missing required symbol. */
static galloc_status_t resolve(const ga_dl_library_t *lib, void *h, ga_dl_lib_t *l, char *err, size_t errlen)
{
    const ga_dl_symbol_t *syms = lib->syms;
    for (size_t i = 0; i < lib->count; i++) {
        (void)dlerror();
        void *sym = dlsym(h, syms[i].name);
        if (sym != NULL) {
            set_slot(l, syms[i].offset, sym);
            continue;
        }
        if (syms[i].group == GA_DL_REQUIRED) {
            const char *why = dlerror();
            put_err(err, errlen, "the %s lacks a required symbol: %s%s", lib->what, why ? why : syms[i].name,
                    why ? "" : " not found");
            return GALLOC_E_UNAVAILABLE;
        }
        if (l->missing[syms[i].group] == NULL)
            l->missing[syms[i].group] = syms[i].name;
    }
    /* An optional group works only whole: clear what did resolve of a broken one. */
    for (size_t i = 0; i < lib->count; i++)
        if (l->missing[syms[i].group] != NULL)
            set_slot(l, syms[i].offset, NULL);
    return GALLOC_OK;
}

galloc_status_t ga_dl_open(const ga_dl_library_t *lib, const char *path, void **loaded, uint32_t *features, char *err,
                           size_t errlen)
{
    if (path == NULL || path[0] == '\0') {
        put_err(err, errlen, "no %s path given%s%s", lib->what, "", "");
        return GALLOC_E_INVAL;
    }
    ga_dl_lib_t *l = calloc(1, lib->size);
    if (l == NULL) {
        put_err(err, errlen, "out of host memory loading %s%s%s", path, "", "");
        return GALLOC_E_NOMEM;
    }
    (void)dlerror(); /* clear a stale message: dlerror reports the last failure only */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        put_err(err, errlen, "cannot load %s: %s%s", path, why ? why : "unknown dlopen failure", "");
        free(l);
        return GALLOC_E_UNAVAILABLE;
    }
    galloc_status_t st = resolve(lib, h, l, err, errlen);
    if (st != GALLOC_OK) {
        dlclose(h);
        free(l);
        return st;
    }
    l->handle = h;
    *features = 0;
    for (int g = 1; g < GA_DL_MAX_GROUPS; g++)
        if (l->missing[g] == NULL)
            *features |= 1u << (g - 1);
    *loaded = l;
    return GALLOC_OK;
}

void ga_dl_close(void *loaded)
{
    ga_dl_lib_t *l = loaded;
    if (l == NULL)
        return;
    if (l->handle != NULL)
        dlclose(l->handle);
    free(l);
}

const char *ga_dl_missing(const void *loaded, uint32_t feature)
{
    const ga_dl_lib_t *l = loaded;
    int g = feature != 0 ? __builtin_ctz(feature) + 1 : GA_DL_MAX_GROUPS;
    return g < GA_DL_MAX_GROUPS && l->missing[g] != NULL ? l->missing[g] : "(nothing)";
}
