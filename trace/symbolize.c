/*
 * symbolize.c: native return addresses to {function, file, line}, run only
 * when a snapshot is written (PyTorch symbolizes at _snapshot() time too,
 * torch/csrc/profiler/combined_traceback.cpp symbolize()).
 *
 * elfutils libdw (dwfl) reads this process's modules from /proc/self/maps and
 * gives the function from the symbol table (.symtab, which -fvisibility=hidden
 * and a static link still keep) and the source file and line from DWARF when
 * the module has debug info. Without libdw's answer, dladdr gives the exported
 * symbol and the module path. C++ names are demangled through the C++
 * runtime's __cxa_demangle when the process has one (looked up by dlsym here,
 * on this cold path, so that galloc needs no C++ runtime itself).
 *
 * Each return address is looked up at pc - 1, inside the call instruction, so
 * that the line is the call's and not the next statement's.
 */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/stack.h"

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static galloc_status_t intern(ga_trace_stacks_t *s, const char *text, uint32_t *id)
{
    return ga_trace_strtab_intern(s->strings, text, strlen(text), id);
}

/* The source line at addr when libdw's lookup cannot find its compilation
 * unit: clang emits no .debug_aranges unless -gdwarf-aranges, and libdw 0.188
 * then answers "address out of range". Walk the units' address ranges
 * instead (cold: only for addresses the fast lookup missed). */
static const char *line_by_units(Dwfl_Module *mod, Dwarf_Addr addr, int *line)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = NULL;
    while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL) {
        Dwarf_Addr rel = addr - bias, base, start, end;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(cu, off, &base, &start, &end)) > 0) {
            if (rel < start || rel >= end)
                continue;
            Dwarf_Line *l = dwarf_getsrc_die(cu, rel);
            if (l == NULL || dwarf_lineno(l, line) != 0)
                return NULL;
            return dwarf_linesrc(l, NULL, NULL);
        }
    }
    return NULL;
}

static galloc_status_t resolve(ga_trace_stacks_t *s, Dwfl *dwfl, demangle_fn demangle, ga_trace_frame_t *f)
{
    uintptr_t addr = f->pc - 1;
    const char *name = NULL;
    const char *file = NULL;
    int line = 0;
    if (dwfl != NULL) {
        Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
        if (mod != NULL) {
            name = dwfl_module_addrname(mod, addr);
            Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
            if (l != NULL)
                file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
            else
                file = line_by_units(mod, addr, &line);
            if (file == NULL) {
                const char *mainfile = NULL;
                const char *modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, NULL);
                file = mainfile != NULL ? mainfile : modname;
                line = 0;
            }
        }
    }
    if (name == NULL || file == NULL) {
        Dl_info info;
        if (dladdr((void *)addr, &info) != 0) {
            if (name == NULL)
                name = info.dli_sname;
            if (file == NULL)
                file = info.dli_fname;
        }
    }
    char *demangled = NULL;
    if (name != NULL && demangle != NULL && name[0] == '_' && name[1] == 'Z') {
        int st = -1;
        demangled = demangle(name, NULL, NULL, &st);
        if (st == 0 && demangled != NULL)
            name = demangled;
    }
    uint32_t name_id = 0;
    uint32_t file_id = 0;
    galloc_status_t rc = intern(s, name != NULL ? name : "??", &name_id);
    if (rc == GALLOC_OK)
        rc = intern(s, file != NULL ? file : "??", &file_id);
    free(demangled);
    if (rc != GALLOC_OK)
        return rc;
    f->name = name_id;
    f->filename = file_id;
    f->line = line;
    f->symbolized = 1;
    return GALLOC_OK;
}

galloc_status_t ga_trace_stacks_symbolize(ga_trace_stacks_t *s)
{
    bool work = false;
    for (uint32_t id = 1; id < s->nframes && !work; id++)
        work = s->frames[id].pc != 0 && !s->frames[id].symbolized;
    if (!work)
        return GALLOC_OK;

    char *debuginfo_path = NULL;
    const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .debuginfo_path = &debuginfo_path,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (dwfl != NULL) {
        dwfl_report_begin(dwfl);
        if (dwfl_linux_proc_report(dwfl, getpid()) != 0 || dwfl_report_end(dwfl, NULL, NULL) != 0) {
            dwfl_end(dwfl); /* fall back to dladdr for everything */
            dwfl = NULL;
        }
    }
    demangle_fn demangle = NULL;
    void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    memcpy(&demangle, &sym, sizeof(demangle)); /* object to function pointer, as POSIX dlsym requires */

    galloc_status_t rc = GALLOC_OK;
    for (uint32_t id = 1; id < s->nframes && rc == GALLOC_OK; id++) {
        ga_trace_frame_t *f = &s->frames[id];
        if (f->pc != 0 && !f->symbolized)
            rc = resolve(s, dwfl, demangle, f);
    }
    if (dwfl != NULL)
        dwfl_end(dwfl);
    return rc;
}
