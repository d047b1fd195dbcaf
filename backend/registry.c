/*
 * registry.c: the process-wide table of device backends, by name.
 *
 * Built-ins come from backends.def; galloc_backend_register adds user backends.
 * The table is fixed-size (no allocation) and guarded by one mutex; entries are
 * never removed, so a pointer returned by galloc_backend_find stays valid.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"

#define GA_BACKEND(name) extern const galloc_backend_ops_t ga_backend_##name;
#include "backend/backends.def"
#undef GA_BACKEND

#define REGISTRY_MAX 64
#define NAME_MAX_LEN 31

static const galloc_backend_ops_t *const builtin[] = {
#define GA_BACKEND(name) &ga_backend_##name,
#include "backend/backends.def"
#undef GA_BACKEND
};

/* ", sim, cuda": the built-in names for messages (skip the first two bytes). */
static const char builtin_names[] = ""
#define GA_BACKEND(name) ", " #name
#include "backend/backends.def"
#undef GA_BACKEND
    ;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static const galloc_backend_ops_t *registered[REGISTRY_MAX]; /* user backends, guarded by registry_lock */
static size_t n_registered;                                  /* guarded by registry_lock */

/* Required members must exist in a table of this struct_size. */
static int ops_valid(const galloc_backend_ops_t *ops)
{
    if (ops == NULL || ops->version != GALLOC_BACKEND_OPS_V1)
        return 0;
    if (ops->struct_size < offsetof(galloc_backend_ops_t, mem_info) + sizeof(ops->mem_info))
        return 0;
    if (ops->name == NULL || ops->name[0] == '\0' || strlen(ops->name) > NAME_MAX_LEN)
        return 0;
    if (GA_BACKEND_COVERS(ops, vendor) && ops->vendor > GALLOC_BACKEND_VENDOR_HIP)
        return 0;
    return ops->open != NULL && ops->close != NULL && ops->segment_alloc != NULL && ops->segment_free != NULL &&
           ops->mem_info != NULL;
}

static const galloc_backend_ops_t *find_locked(const char *name)
{
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
        if (strcmp(builtin[i]->name, name) == 0)
            return builtin[i];
    for (size_t i = 0; i < n_registered; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return registered[i];
    return NULL;
}

galloc_status_t galloc_backend_register(const galloc_backend_ops_t *ops)
{
    if (!ops_valid(ops))
        return GALLOC_E_INVAL;
    galloc_status_t st = GALLOC_OK;
    pthread_mutex_lock(&registry_lock);
    if (find_locked(ops->name) != NULL)
        st = GALLOC_E_CONFIG;
    else if (n_registered == REGISTRY_MAX)
        st = GALLOC_E_NOMEM;
    else
        registered[n_registered++] = ops;
    pthread_mutex_unlock(&registry_lock);
    return st;
}

const galloc_backend_ops_t *galloc_backend_find(const char *name)
{
    if (name == NULL)
        return NULL;
    pthread_mutex_lock(&registry_lock);
    const galloc_backend_ops_t *ops = find_locked(name);
    pthread_mutex_unlock(&registry_lock);
    return ops;
}

galloc_status_t ga_backend_open(ga_backend_t *b, const char *name, const galloc_backend_args_t *args, char *err,
                                size_t errlen)
{
    const galloc_backend_ops_t *ops = galloc_backend_find(name);
    if (ops == NULL) {
        if (errlen > 0)
            snprintf(err, errlen, "unknown device backend \"%s\" (built in: %s; others must be registered)",
                     name ? name : "(null)", builtin_names + 2);
        return GALLOC_E_UNAVAILABLE;
    }
    void *state = NULL;
    char msg[512] = "";
    galloc_status_t st = ops->open(args, &state, msg, sizeof(msg));
    if (st == GALLOC_E_CONFIG && msg[0] != '\0') {
        if (errlen > 0) /* about the config string, not the device: the caller points it at what the user wrote */
            snprintf(err, errlen, "%s", msg);
        return st;
    }
    if (st != GALLOC_OK) {
        if (errlen > 0)
            snprintf(err, errlen, "device backend \"%s\" could not open device %d: %s", ops->name, args->device,
                     msg[0] ? msg : galloc_strerror(st));
        return st;
    }
    b->ops = ops;
    b->state = state;
    return GALLOC_OK;
}

void ga_backend_close(ga_backend_t *b)
{
    if (b->ops != NULL)
        b->ops->close(b->state);
    b->ops = NULL;
    b->state = NULL;
}
