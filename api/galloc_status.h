/*
 * galloc_status.h: status codes returned by every galloc call.
 *
 * One table (GALLOC_STATUS_MAP) generates the enum, galloc_strerror() and
 * galloc_status_name(), so a code cannot exist without its text. The status is
 * the authority; an allocator's last-error message (galloc_last_error) adds the
 * figures. galloc never reports through errno.
 */
#ifndef GALLOC_STATUS_H
#define GALLOC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GALLOC_API __attribute__((visibility("default")))
#else
#define GALLOC_API
#endif

/* X(name, text): append only, never reorder (the numeric values are ABI). */
#define GALLOC_STATUS_MAP(X)                                                                                           \
    X(OK, "success")                                                                                                   \
    X(E_INVAL, "invalid argument")                                                                                     \
    X(E_OOM, "out of device memory")                                                                                   \
    X(E_NOT_OWNED, "pointer not from this allocator or already freed")                                                 \
    X(E_CONFIG, "invalid configuration string")                                                                        \
    X(E_UNSUPPORTED, "operation not supported by this backend")                                                        \
    X(E_UNAVAILABLE, "backend library or device not available")                                                        \
    X(E_DEVICE, "device call failed")                                                                                  \
    X(E_NOMEM, "out of host memory")                                                                                   \
    X(E_CORRUPT, "allocator invariant violated")                                                                       \
    X(E_NOT_READY, "event has not completed yet")                                                                      \
    X(E_FORMAT, "malformed input")                                                                                     \
    X(E_IO, "file could not be read or written")                                                                       \
    X(E_DESTROYED, "allocator was destroyed")                                                                          \
    X(E_ASLEEP, "memory pool is asleep")                                                                               \
    X(E_HOOK, "a device-memory hook refused the memory")

typedef enum galloc_status {
#define GALLOC_STATUS_ENUM_(name, text) GALLOC_##name,
    GALLOC_STATUS_MAP(GALLOC_STATUS_ENUM_)
#undef GALLOC_STATUS_ENUM_
        GALLOC_STATUS_COUNT_ /* number of codes; not a status */
} galloc_status_t;

/*
 * galloc_strerror: a static, human-readable text for status s. Never NULL: an
 * unknown value gives "unknown status". Thread-safe.
 */
GALLOC_API const char *galloc_strerror(galloc_status_t s);

/*
 * galloc_status_name: the code's name without prefix, e.g. "E_OOM" for
 * GALLOC_E_OOM, or "UNKNOWN". Static, never NULL. Thread-safe.
 */
GALLOC_API const char *galloc_status_name(galloc_status_t s);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_STATUS_H */
