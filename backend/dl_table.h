/*
 * dl_table.h: the one loader of a device library: dlopen'd at backend open
 * into a struct of function pointers filled from the vendor's symbol table,
 * for the CUDA driver and the HIP runtime alike (each vendor file holds only
 * its table, as backend/gpu.h's vendors do; model: FFmpeg's LOAD_SYMBOL /
 * LOAD_SYMBOL_OPT, nv-codec-headers dynlink_loader.h).
 *
 * Every symbol is looked up by its exact exported name and belongs to a
 * group: GA_DL_REQUIRED, and one missing symbol of it fails the load
 * (GALLOC_E_UNAVAILABLE, the library is closed again, the message carries
 * dlerror's text); every other group is an optional feature that resolves all
 * or nothing: one missing symbol leaves every pointer of its group NULL and
 * names the missing symbol, and only that feature is off.
 *
 * Nothing is loaded before ga_dl_open, and nothing here calls into the
 * library. Locking: none; a loaded library belongs to one backend state.
 */
#ifndef GA_BACKEND_DL_TABLE_H
#define GA_BACKEND_DL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The groups: the required one, then the optional features. Optional group
 * g is feature bit 1u << (g - 1) in ga_dl_open's *features, the GPU layer's
 * GA_GPU_F_* (backend/gpu.h). */
#define GA_DL_REQUIRED 0 /* the library is unusable without it */
#define GA_DL_VMM 1      /* virtual memory: expandable segments */
#define GA_DL_ASYNC 2    /* stream-ordered allocation: backend:cudaMallocAsync, backend:hipMallocAsync */
#define GA_DL_HOST 3     /* pinned host memory and synchronous copies: galloc_sleep's offload */
#define GA_DL_PEER 4     /* peer access between devices: galloc_enable_peer_access */
#define GA_DL_IPC 5      /* sharing memory between processes: ipc_export / ipc_open, export_page / import_pages */
#define GA_DL_GRAPH 6    /* stream capture graphs: capture_info / node_deps (graph_capture_record_stream_reuse) */
#define GA_DL_HOSTREG 7  /* page-locking malloc'd memory: host_register (pinned_use_cuda_host_register) */
#define GA_DL_MAX_GROUPS 8

/* One entry of a symbol table. */
typedef struct ga_dl_symbol {
    const char *name; /* exported symbol name, versioned where the library versions it */
    size_t offset;    /* offset of its function pointer in the loaded struct */
    int group;        /* GA_DL_REQUIRED or an optional group */
} ga_dl_symbol_t;

/* A vendor lists its symbols as X(group, symbol) (GA_CUDA_SYMBOLS in
 * cuda_api.h, GA_HIP_SYMBOLS in hip_api.h, group without its GA_DL_ prefix);
 * these expand one entry into a member of its loaded struct (the pointer,
 * typed ga_<symbol>_fn, NULL if its optional group is missing) and into an
 * entry of its symbol table. */
#define GA_DL_POINTER(group, sym) ga_##sym##_fn *sym;
#define GA_DL_SYMBOL(type, group, sym) {#sym, offsetof(type, sym), GA_DL_##group},

/* The first member of every loaded struct. */
typedef struct ga_dl_lib {
    void *handle;                          /* the dlopen handle */
    const char *missing[GA_DL_MAX_GROUPS]; /* per optional group: its first missing symbol, or NULL */
} ga_dl_lib_t;

/* A device library: one per vendor. */
typedef struct ga_dl_library {
    const char *what;           /* names it in messages: "driver library" */
    const char *path;           /* dlopen'd when no path is configured */
    const ga_dl_symbol_t *syms; /* the symbol table */
    size_t count;               /* its entries */
    size_t size;                /* bytes of the loaded struct: a ga_dl_lib_t, the pointers, the vendor's own state */
} ga_dl_library_t;

/*
 * ga_dl_open: allocate lib's loaded struct (zeroed, lib->size bytes), dlopen
 * path (RTLD_NOW | RTLD_LOCAL) and store every symbol into it. *loaded gets
 * the struct; *features the optional groups that resolved whole (group g:
 * bit 1u << (g - 1)). Returns GALLOC_OK; GALLOC_E_UNAVAILABLE if the library
 * does not load or lacks a required symbol (nothing stays open or allocated,
 * err says which, with dlerror's text); GALLOC_E_NOMEM; GALLOC_E_INVAL for a
 * NULL or empty path.
 */
galloc_status_t ga_dl_open(const ga_dl_library_t *lib, const char *path, void **loaded, uint32_t *features, char *err,
                           size_t errlen);

/* ga_dl_close: dlclose the library and free the loaded struct (NULL: no-op). */
void ga_dl_close(void *loaded);

/* ga_dl_missing: the first symbol the library lacks of one optional feature
 * (one bit of ga_dl_open's *features), or "(nothing)". */
const char *ga_dl_missing(const void *loaded, uint32_t feature);

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_DL_TABLE_H */
