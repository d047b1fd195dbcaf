/*
 * hip_loader.c: the HIP runtime's symbol table, generated from
 * GA_HIP_SYMBOLS, loaded by the shared loader (dl_table.c; see hip_loader.h).
 * Pure library loading: no HIP call is made.
 */
#include "backend/hip_loader.h"

#include <stdio.h>
#include <string.h>

const ga_dl_symbol_t ga_hip_symbols[] = {
#define GA_HIP_ENTRY_(group, sym) {#sym, offsetof(ga_hip_runtime_t, sym), GA_HIP_##group},
    GA_HIP_SYMBOLS(GA_HIP_ENTRY_)
#undef GA_HIP_ENTRY_
};
const size_t ga_hip_symbol_count = sizeof(ga_hip_symbols) / sizeof(ga_hip_symbols[0]);

_Static_assert(GA_HIP_GROUPS <= GA_DL_MAX_GROUPS, "too many HIP symbol groups");

galloc_status_t ga_hip_runtime_load(ga_hip_runtime_t *r, const char *path, char *err, size_t errlen)
{
    if (r == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "no runtime table given");
        return GALLOC_E_INVAL;
    }
    return ga_dl_load(path, ga_hip_symbols, ga_hip_symbol_count, r, sizeof(*r), &r->lib, r->missing,
                      "HIP runtime library", err, errlen);
}

void ga_hip_runtime_unload(ga_hip_runtime_t *r)
{
    if (r == NULL || r->lib == NULL)
        return;
    ga_dl_unload(r->lib);
    memset(r, 0, sizeof(*r));
}
