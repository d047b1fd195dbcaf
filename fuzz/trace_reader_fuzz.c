/*
 * trace_reader_fuzz.c: libFuzzer target for the replay tool's trace readers
 * (tools/readers/trace_reader.h: RMM CSV, PyTorch snapshot pickle, galloc text trace,
 * Umpire replay log, PyTorch profiler Chrome trace),
 * which read files users bring from elsewhere. trace_reader.h promises that no
 * input makes a reader crash or leak; beyond that (ASan, UBSan, LeakSanitizer)
 * this checks the contract of each call:
 *   - open: 0 with a reader, or -1 with *out NULL and a non-empty message;
 *   - units >= 1; begin of each unit 0 or -1 with a message;
 *   - next: 1 with a known event kind (an annotation's text readable for its
 *     length), 0 at the end, -1 with a message, and after -1 the same -1 and
 *     the same message again (errors are sticky);
 *   - the event's stack: GA_STACK_NONE with no frames but for an allocation
 *     or OOM that is not a prologue event; otherwise a known kind, frames
 *     whose file and name are readable for their lengths (ASan sees one that
 *     overruns), and keys that name one frame each, while the unit lasts;
 *   - progress in [0, 1] or -1.
 * Input: byte 0 modulo GA_FORMAT_END picks the format (auto, then the
 * registry's: rmm, torch, galloc, umpire, kineto; the seeds of the JSON formats
 * use auto, so detection is fuzzed too), the rest is the file. The file is a
 * memfd reopened by path, as the readers take a path.
 */
/* memfd_create: _GNU_SOURCE comes from .bazelrc */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/readers/trace_reader.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "trace_reader_fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

#define MAX_UNITS 16      /* a snapshot may name up to 1024 devices; a few show the pattern */
#define MAX_EVENTS 200000 /* per unit: bounds one input's time (prologues can be long) */

static char path[64]; /* /proc/self/fd/N of the memfd, set once */
static int fd = -1;

static void put_file(const uint8_t *p, size_t n)
{
    if (fd < 0) {
        fd = memfd_create("trace_reader_fuzz", 0);
        CHECK(fd >= 0);
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    CHECK(ftruncate(fd, 0) == 0);
    size_t done = 0;
    while (done < n) {
        ssize_t k = pwrite(fd, p + done, n - done, (off_t)done);
        CHECK(k > 0);
        done += (size_t)k;
    }
}

static void check_message(const char *err, size_t len)
{
    CHECK(memchr(err, '\0', len) != NULL);
    CHECK(err[0] != '\0');
}

static volatile unsigned sink; /* keeps the annotation and frame reads */

#define MAX_KEYS 64 /* frames remembered per unit for the key check */

/* A frame seen under a key, copied out (the reader's strings last only until
 * its next call): its lengths, line and a hash of its text. */
typedef struct seen {
    uintptr_t key;
    bool has_file;
    size_t file_len, name_len;
    int64_t line;
    uint64_t hash;
} seen_t;

static seen_t summary(uintptr_t key, const ga_frame_t *f)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 0; k < f->file_len; k++)
        h = (h ^ (unsigned char)f->file[k]) * 0x100000001b3ull; /* ASan sees a file that overruns its buffer */
    h = (h ^ 0xffu) * 0x100000001b3ull;
    for (size_t k = 0; k < f->name_len; k++)
        h = (h ^ (unsigned char)f->name[k]) * 0x100000001b3ull;
    return (seen_t){key, f->file != NULL, f->file_len, f->name_len, f->line, h};
}

/* The stack's contract (trace_reader.h): allocations and OOMs only; a
 * GA_EVF_PROLOGUE allocation carries what the record says of it (a
 * snapshot's final block's frames), so it may have one too. */
static void check_stack(const ga_event_t *ev, seen_t *seen, size_t *nseen)
{
    const ga_stack_t *st = &ev->stack;
    /* A prologue allocation may carry what the record says of it (a
     * snapshot's final block's frames: trace_reader.h). */
    if (ev->kind != GA_EV_ALLOC && ev->kind != GA_EV_OOM)
        CHECK(st->kind == GA_STACK_NONE);
    if (st->kind == GA_STACK_NONE) {
        CHECK(st->n == 0);
        return;
    }
    CHECK(st->kind <= GA_STACK_THREAD && st->n > 0 && st->frame != NULL);
    for (size_t i = 0; i < st->n; i++) {
        ga_frame_t f;
        st->frame(st->data, i, &f);
        CHECK(f.name != NULL || f.name_len == 0);
        CHECK(f.file != NULL || f.file_len == 0);
        uintptr_t key = st->key != NULL ? st->key(st->data, i) : 0;
        seen_t now = summary(key, &f);
        sink += (unsigned)now.hash;
        if (key == 0)
            continue;
        size_t j = 0;
        while (j < *nseen && seen[j].key != key)
            j++;
        if (j < *nseen) /* equal keys, equal frames */
            CHECK(seen[j].has_file == now.has_file && seen[j].file_len == now.file_len &&
                  seen[j].name_len == now.name_len && seen[j].line == now.line && seen[j].hash == now.hash);
        else if (*nseen < MAX_KEYS)
            seen[(*nseen)++] = now;
    }
}

static void read_unit(ga_reader_t *r, size_t unit)
{
    char err[1024];
    double p = ga_reader_progress(r);
    CHECK(p == -1.0 || (p >= 0.0 && p <= 1.0));
    if (ga_reader_begin(r, unit, err, sizeof(err)) != 0) {
        check_message(err, sizeof(err));
        return;
    }
    (void)ga_reader_unit_label(r, unit);
    ga_event_t ev;
    seen_t seen[MAX_KEYS];
    size_t nseen = 0;
    for (size_t i = 0; i < MAX_EVENTS; i++) {
        memset(&ev, 0, sizeof(ev));
        memset(err, 0, sizeof(err));
        int rc = ga_reader_next(r, &ev, err, sizeof(err));
        if (rc == 0)
            break;
        if (rc < 0) {
            check_message(err, sizeof(err));
            char again[1024];
            CHECK(ga_reader_next(r, &ev, again, sizeof(again)) == -1);
            CHECK(strcmp(err, again) == 0);
            break;
        }
        CHECK(rc == 1);
        CHECK(ev.kind >= GA_EV_ALLOC && ev.kind <= GA_EV_LAST);
        if (ev.kind == GA_EV_ANNOTATE || ev.kind >= GA_EV_TAG_BEGIN) {
            CHECK(ev.text != NULL || ev.text_len == 0);
            for (size_t k = 0; k < ev.text_len; k++)
                sink += (unsigned char)ev.text[k]; /* ASan sees a text that overruns its buffer */
            for (size_t k = 0; k < ev.text2_len; k++)
                sink += (unsigned char)ev.text2[k];
        }
        check_stack(&ev, seen, &nseen);
        p = ga_reader_progress(r);
        CHECK(p == -1.0 || (p >= 0.0 && p <= 1.0));
    }
    ga_reader_notes_t notes;
    ga_reader_notes(r, &notes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ga_format_t fmt = (ga_format_t)(data[0] % GA_FORMAT_END); /* auto, then the registry (formats.def) */
    put_file(data + 1, size - 1);
    char err[1024];
    ga_reader_t *r = (ga_reader_t *)1;
    if (ga_reader_open(path, fmt, &r, err, sizeof(err)) != 0) {
        CHECK(r == NULL);
        check_message(err, sizeof(err));
        return 0;
    }
    CHECK(r != NULL);
    CHECK(fmt == GA_FORMAT_AUTO || ga_reader_format(r) == fmt);
    CHECK(ga_reader_format(r) != GA_FORMAT_AUTO);
    (void)ga_reader_format_name(ga_reader_format(r));
    (void)ga_reader_device_memory(r);
    size_t units = ga_reader_units(r);
    CHECK(units >= 1);
    for (size_t u = 0; u < units && u < MAX_UNITS; u++)
        read_unit(r, u);
    ga_reader_close(r); /* frees the parsed snapshot too */
    return 0;
}
