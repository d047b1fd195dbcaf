/* TEMPORARY (not committed): until galloc_usable_size / galloc_segments_visit land. */
#include <galloc/galloc_inspect.h>
__attribute__((weak)) galloc_status_t galloc_usable_size(galloc_allocator_t *a, const void *ptr, size_t *size)
{
    (void)a;
    (void)ptr;
    *size = 0;
    return GALLOC_E_UNSUPPORTED;
}
__attribute__((weak)) galloc_status_t galloc_segments_visit(galloc_allocator_t *a, galloc_segment_visit_fn fn,
                                                            void *ctx)
{
    (void)a;
    (void)fn;
    (void)ctx;
    return GALLOC_E_UNSUPPORTED;
}
