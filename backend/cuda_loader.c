/*
 * cuda_loader.c: the CUDA driver's symbol table, generated from
 * GA_CUDA_SYMBOLS, loaded by the shared loader (dl_table.c; see cuda_loader.h
 * for the required / optional rules). Pure library loading: no driver call.
 */
#include "backend/cuda_loader.h"

#include <stdio.h>
#include <string.h>

const ga_cuda_symbol_t ga_cuda_symbols[] = {
#define GA_CUDA_ENTRY_(group, sym) {#sym, offsetof(ga_cuda_driver_t, sym), GA_CUDA_##group},
    GA_CUDA_SYMBOLS(GA_CUDA_ENTRY_)
#undef GA_CUDA_ENTRY_
};
const size_t ga_cuda_symbol_count = sizeof(ga_cuda_symbols) / sizeof(ga_cuda_symbols[0]);

/* The group count must fit the shared loader's missing[] array. */
_Static_assert(GA_CUDA_GROUPS <= GA_DL_MAX_GROUPS, "too many CUDA symbol groups");

galloc_status_t ga_cuda_driver_load(ga_cuda_driver_t *d, const char *path, char *err, size_t errlen)
{
    if (d == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "no driver table given");
        return GALLOC_E_INVAL;
    }
    return ga_dl_load(path, ga_cuda_symbols, ga_cuda_symbol_count, d, sizeof(*d), &d->lib, d->missing,
                      "driver library", err, errlen);
}

void ga_cuda_driver_unload(ga_cuda_driver_t *d)
{
    if (d == NULL || d->lib == NULL)
        return;
    ga_dl_unload(d->lib);
    memset(d, 0, sizeof(*d));
}
