/*
 * sim_events.c: the sim device's events and streams. An event completes when
 * it is recorded, or, in manual mode (sim.h), when its stream's work is
 * finished by ga_sim_stream_complete, stream_synchronize or a wait on a later
 * event of that stream. Only event_create allocates (it may grow the slots).
 */
#include "backend/sim_int.h"

static event_t *ev_get(sim_t *sim, const char *op, uintptr_t h) /* NULL (and a violation) if not live */
{
    uint64_t idx = (uint64_t)h & 0xffffffffu;
    if (idx == 0 || idx > sim->n_ev || sim->ev[idx - 1].status == EV_FREE ||
        sim->ev[idx - 1].gen != (uint32_t)((uint64_t)h >> 32)) {
        ga_sim_fail(sim, GALLOC_E_INVAL, "%s(0x%" PRIxPTR "): not a live event", op, h);
        return NULL;
    }
    return &sim->ev[idx - 1];
}

/* Complete the pending events recorded on stream s (any stream if all) up to
 * sequence number seq. */
static void complete_upto(sim_t *sim, bool all, galloc_stream_t s, uint64_t seq)
{
    for (uint32_t i = 0; i < sim->n_ev; i++)
        if (sim->ev[i].status == EV_PENDING && (all || sim->ev[i].stream == s) && sim->ev[i].seq <= seq)
            sim->ev[i].status = EV_DONE;
}

galloc_status_t ga_sim_event_create(void *state, uintptr_t *event)
{
    sim_t *sim = state;
    if (event == NULL)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "event_create: event is NULL");
    uint32_t i = 0;
    while (i < sim->n_ev && sim->ev[i].status != EV_FREE) /* a scan: creates are rare, the pool reuses events */
        i++;
    if (i == sim->n_ev) {
        event_t *t = sim->n_ev < UINT32_MAX / 2 ? ga_sim_grow(sim->ev, &sim->ev_cap, sim->n_ev, sizeof(event_t)) : NULL;
        if (t == NULL)
            return ga_sim_fail(sim, GALLOC_E_NOMEM, "event table: cannot grow past %" PRIu32 " events", sim->n_ev);
        sim->ev = t;
        sim->ev[sim->n_ev++].gen = 0;
    }
    sim->ev[i] = (event_t){.gen = sim->ev[i].gen, .status = EV_DONE};
    sim->live_events++;
    *event = (uintptr_t)((uint64_t)sim->ev[i].gen << 32 | (i + 1u));
    return GALLOC_OK;
}

galloc_status_t ga_sim_event_destroy(void *state, uintptr_t event)
{
    sim_t *sim = state;
    event_t *e = ev_get(sim, "event_destroy", event);
    if (e == NULL)
        return GALLOC_E_INVAL;
    e->status = EV_FREE;
    e->gen++;
    sim->live_events--;
    return GALLOC_OK;
}

galloc_status_t ga_sim_event_record(void *state, uintptr_t event, galloc_stream_t s)
{
    sim_t *sim = state;
    event_t *e = ev_get(sim, "event_record", event);
    if (e == NULL)
        return GALLOC_E_INVAL;
    e->status = sim->manual_events ? EV_PENDING : EV_DONE;
    e->stream = s;
    e->seq = ++sim->ev_seq;
    return GALLOC_OK;
}

galloc_status_t ga_sim_event_query(void *state, uintptr_t event)
{
    event_t *e = ev_get(state, "event_query", event);
    if (e == NULL)
        return GALLOC_E_INVAL;
    return e->status == EV_PENDING ? GALLOC_E_NOT_READY : GALLOC_OK;
}

/* Waiting on an event finishes its stream's work up to that record, so events
 * recorded earlier on the same stream complete with it. */
galloc_status_t ga_sim_event_synchronize(void *state, uintptr_t event)
{
    event_t *e = ev_get(state, "event_synchronize", event);
    if (e == NULL)
        return GALLOC_E_INVAL;
    if (e->status == EV_PENDING)
        complete_upto(state, false, e->stream, e->seq);
    return GALLOC_OK;
}

/* Waiting for a stream finishes the work queued on it so far. */
galloc_status_t ga_sim_stream_synchronize(void *state, galloc_stream_t s)
{
    sim_t *sim = state;
    complete_upto(sim, false, s, sim->ev_seq);
    return GALLOC_OK;
}

galloc_status_t ga_sim_set_manual_events(void *state, bool on)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL)
        return GALLOC_E_INVAL;
    if (!on)
        complete_upto(sim, true, 0, UINT64_MAX);
    sim->manual_events = on;
    return GALLOC_OK;
}

galloc_status_t ga_sim_stream_complete(void *state, galloc_stream_t s)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL)
        return GALLOC_E_INVAL;
    complete_upto(sim, false, s, UINT64_MAX);
    return GALLOC_OK;
}

