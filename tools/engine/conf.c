/*
 * conf.c: what a column is made with and called (replay.h): the
 * configuration string galloc gets (the sim device's size and placement
 * first, so the user's keys win), the column's label, the environment's
 * allocator variables as the labels name them, and the cap set as PyTorch
 * sets a memory fraction.
 */
#include "tools/engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The configuration string handed to galloc: the capacity and placement
 * first, so that a sim_capacity or sim_placement the user wrote (later in
 * the string) wins. */
char *ga_engine_conf(const char *user, const char *backend, uint64_t capacity, bool recorded)
{
    bool sim = backend == NULL || strcmp(backend, "sim") == 0;
    size_t n = (user ? strlen(user) : 0) + 96;
    char *s = malloc(n);
    if (s == NULL)
        return NULL;
    char cap[40] = "", place[40] = "";
    if (sim && (user == NULL || strstr(user, "sim_capacity") == NULL))
        snprintf(cap, sizeof(cap), "sim_capacity:%" PRIu64 ",", capacity);
    if (sim && (user == NULL || strstr(user, "sim_placement") == NULL))
        snprintf(place, sizeof(place), "sim_placement:%s,", recorded ? "recorded" : "descending");
    snprintf(s, n, "%s%s%s", cap, place, user ? user : "");
    size_t len = strlen(s);
    if (len > 0 && s[len - 1] == ',')
        s[len - 1] = '\0';
    return s;
}

size_t ga_replay_env_text(char *buf, size_t len)
{
    /* galloc_allocator_create's sources (front/allocator.c): PyTorch reads only
     * the first set of its two names; GALLOC_CONF goes over it. */
    const char *pt = getenv("PYTORCH_ALLOC_CONF") ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
    const char *names[] = {pt, "GALLOC_CONF"};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v != NULL && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "", names[i], v);
    }
    return n < len ? n : len - 1;
}

/* The column's name: "recorded" for the traced run's own settings,
 * "defaults" for PyTorch's, else what the user wrote; the environment, when
 * it applies, is part of the name. */
char *ga_engine_label(const ga_replay_spec_t *spec, bool env)
{
    char e[512];
    const char *user = spec->conf;
    bool has_user = user != NULL && *user;
    const char *base = spec->recorded ? "recorded" : has_user ? user : "defaults";
    if (!env || ga_replay_env_text(e, sizeof(e)) == 0)
        return strdup(base);
    size_t n = strlen(e) + strlen(base) + 8;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s + %s", base, e);
    return s;
}

/* Set the cap: allowed_memory_maximum = (size_t)(fraction x total) in
 * PyTorch and galloc; the half byte makes the truncation land on cap. */
galloc_status_t ga_engine_set_cap(galloc_allocator_t *a, uint64_t cap, uint64_t capacity)
{
    double f = ((double)cap + 0.5) / (double)capacity;
    return galloc_set_memory_fraction(a, f > 1.0 ? 1.0 : f);
}
