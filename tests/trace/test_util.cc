// test_util.cc: see test_util.h.
#include "tests/trace/test_util.h"

#include "tests/util/python.h"

static int native_site_line;

extern "C" int trace_test_native_site_line(void)
{
    return native_site_line;
}

extern "C" __attribute__((noinline)) uint32_t trace_test_native_site(ga_trace_t *t)
{
    native_site_line = __LINE__ + 1;
    uint32_t id = ga_trace_capture(t, 0);
    asm volatile("" ::: "memory"); // keep this frame: no tail call into the capture
    return id;
}

extern "C" __attribute__((noinline)) uint32_t trace_test_other_site(ga_trace_t *t)
{
    uint32_t id = ga_trace_capture(t, 0);
    asm volatile("" ::: "memory");
    return id;
}

extern "C" size_t trace_test_user_frames(void *ctx, ga_trace_user_frame_t *frames, size_t max_frames)
{
    static const ga_trace_user_frame_t canned[] = {
        {"/src/mod\xc3\xa8le.py", "forward", 42},
        {"/src/\xe6\x97\xa5\xe6\x9c\xac.py",
         "quote\"back\\slash\ttab\nnl\x01"
         "ctl",
         7},
        {nullptr,
         "bad\xff"
         "byte",
         (int64_t)1 << 40},
    };
    if (ctx != nullptr)
        ++*static_cast<int *>(ctx);
    size_t n = sizeof(canned) / sizeof(canned[0]);
    if (n > max_frames)
        n = max_frames;
    for (size_t i = 0; i < n; i++)
        frames[i] = canned[i];
    return n;
}

std::string trace_test_tmp(const std::string &name)
{
    return test_tmp_path(name);
}

int trace_test_python(const std::vector<std::string> &args, std::string *output)
{
    return test_run_python(args, output);
}
