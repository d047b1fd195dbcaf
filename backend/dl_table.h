/*
 * dl_table.h: a device library, dlopen'd at backend open, as a struct of
 * function pointers filled from one symbol table: the loading rules shared by
 * the CUDA driver (cuda_loader.c) and the HIP runtime (hip_loader.c), written
 * once (model: FFmpeg's LOAD_SYMBOL / LOAD_SYMBOL_OPT, nv-codec-headers
 * dynlink_loader.h).
 *
 * Every symbol is looked up by its exact exported name and belongs to a
 * group: group 0 is required, and one missing symbol of it fails the load
 * (GALLOC_E_UNAVAILABLE, the library is closed again, the message carries
 * dlerror's text); every other group is an optional feature that resolves all
 * or nothing: one missing symbol leaves every pointer of its group NULL and
 * names the missing symbol in missing[group], and only that feature is off.
 *
 * Nothing here calls into the library. Locking: none; a loaded library
 * belongs to one backend state.
 */
#ifndef GA_BACKEND_DL_TABLE_H
#define GA_BACKEND_DL_TABLE_H

#include <stddef.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The required group; optional groups are 1 .. GA_DL_MAX_GROUPS - 1. */
#define GA_DL_REQUIRED 0
#define GA_DL_MAX_GROUPS 4

/* One entry of a symbol table. */
typedef struct ga_dl_symbol {
    const char *name; /* exported symbol name, versioned where the library versions it */
    size_t offset;    /* offset of its function pointer in the caller's struct */
    int group;        /* GA_DL_REQUIRED or an optional group */
} ga_dl_symbol_t;

/*
 * ga_dl_load: dlopen path (RTLD_NOW | RTLD_LOCAL) and store every symbol of
 * syms[0 .. count) into the struct at table (zeroed first, table_size bytes).
 * *lib gets the handle; missing[1 .. GA_DL_MAX_GROUPS) the first missing
 * symbol of each optional group, or NULL (missing[0] is always NULL). `what`
 * names the library in messages ("the driver library").
 * Returns GALLOC_OK; GALLOC_E_UNAVAILABLE if the library does not load or
 * lacks a required symbol (nothing stays open, err says which);
 * GALLOC_E_INVAL for a NULL or empty path.
 */
galloc_status_t ga_dl_load(const char *path, const ga_dl_symbol_t *syms, size_t count, void *table, size_t table_size,
                           void **lib, const char *missing[GA_DL_MAX_GROUPS], const char *what, char *err,
                           size_t errlen);

/* ga_dl_unload: dlclose lib (NULL: no-op). */
void ga_dl_unload(void *lib);

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_DL_TABLE_H */
