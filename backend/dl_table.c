/*
 * dl_table.c: dlopen a device library and fill a function-pointer struct
 * from its symbol table (see dl_table.h for the required / optional rules).
 * Pure library loading: no call into the library is made.
 */
#include "backend/dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
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

galloc_status_t ga_dl_load(const char *path, const ga_dl_symbol_t *syms, size_t count, void *table, size_t table_size,
                           void **lib, const char *missing[GA_DL_MAX_GROUPS], const char *what, char *err,
                           size_t errlen)
{
    if (path == NULL || path[0] == '\0') {
        put_err(err, errlen, "no %s path given%s%s", what, "", "");
        return GALLOC_E_INVAL;
    }
    memset(table, 0, table_size);
    for (int g = 0; g < GA_DL_MAX_GROUPS; g++)
        missing[g] = NULL;
    *lib = NULL;
    (void)dlerror(); /* clear a stale message: dlerror reports the last failure only */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        put_err(err, errlen, "cannot load %s: %s%s", path, why ? why : "unknown dlopen failure", "");
        return GALLOC_E_UNAVAILABLE;
    }
    for (size_t i = 0; i < count; i++) {
        (void)dlerror();
        void *sym = dlsym(h, syms[i].name);
        if (sym != NULL) {
            set_slot(table, syms[i].offset, sym);
            continue;
        }
        if (syms[i].group == GA_DL_REQUIRED) {
            const char *why = dlerror();
            put_err(err, errlen, "the %s lacks a required symbol: %s%s", what, why ? why : syms[i].name,
                    why ? "" : " not found");
            dlclose(h);
            memset(table, 0, table_size);
            return GALLOC_E_UNAVAILABLE;
        }
        if (missing[syms[i].group] == NULL)
            missing[syms[i].group] = syms[i].name;
    }
    /* An optional group works only whole: clear what did resolve of a broken one. */
    for (size_t i = 0; i < count; i++)
        if (missing[syms[i].group] != NULL)
            set_slot(table, syms[i].offset, NULL);
    *lib = h;
    return GALLOC_OK;
}

void ga_dl_unload(void *lib)
{
    if (lib != NULL)
        dlclose(lib);
}
