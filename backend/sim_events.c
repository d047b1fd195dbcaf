/*
 * sim_events.c: the sim device's events and streams. An event completes when
 * it is recorded, or, in manual mode (sim.h), when its stream's work is
 * finished by ga_sim_stream_complete, stream_synchronize or a wait on a later
 * event of that stream. Waits and queries can be made to fail on purpose
 * (ga_sim_set_event_faults), so the pool's handling of a faulted device is
 * testable. Only event_create allocates (it may grow the slots).
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
        event_t *t = sim->n_ev < UINT32_MAX / 2 ? ga_grow(sim->ev, &sim->ev_cap, sim->n_ev, sizeof(event_t), 16) : NULL;
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

/* Event waits and queries on live events pass here once, so they are numbered
 * alike whether they succeed or not (as charge() numbers allocations). */
static galloc_status_t event_fault(sim_t *sim, const char *op, uint64_t *calls, uint64_t nth, uint64_t from,
                                   uintptr_t h)
{
    uint64_t n = ++*calls;
    if (n != nth && (from == 0 || n < from))
        return GALLOC_OK;
    sim->faults_injected++;
    return ga_sim_fail(sim, GALLOC_E_DEVICE, "injected fault on %s #%" PRIu64 " (event 0x%" PRIxPTR ")", op, n, h);
}

galloc_status_t ga_sim_event_query(void *state, uintptr_t event)
{
    sim_t *sim = state;
    event_t *e = ev_get(sim, "event_query", event);
    if (e == NULL)
        return GALLOC_E_INVAL;
    galloc_status_t st =
        event_fault(sim, "event_query", &sim->query_calls, sim->query_fail_nth, sim->query_fail_from, event);
    if (st != GALLOC_OK)
        return st;
    return e->status == EV_PENDING ? GALLOC_E_NOT_READY : GALLOC_OK;
}

/* Waiting on an event finishes its stream's work up to that record, so events
 * recorded earlier on the same stream complete with it. */
galloc_status_t ga_sim_event_synchronize(void *state, uintptr_t event)
{
    sim_t *sim = state;
    event_t *e = ev_get(sim, "event_synchronize", event);
    if (e == NULL)
        return GALLOC_E_INVAL;
    galloc_status_t st =
        event_fault(sim, "event_synchronize", &sim->sync_calls, sim->sync_fail_nth, sim->sync_fail_from, event);
    if (st != GALLOC_OK)
        return st;
    if (e->status == EV_PENDING)
        complete_upto(sim, false, e->stream, e->seq);
    return GALLOC_OK;
}

/* Waiting for a stream finishes the work queued on it so far. */
galloc_status_t ga_sim_stream_synchronize(void *state, galloc_stream_t s)
{
    sim_t *sim = state;
    complete_upto(sim, false, s, sim->ev_seq);
    return GALLOC_OK;
}

/* Waiting for the device finishes the work queued on every stream so far. */
galloc_status_t ga_sim_device_synchronize(void *state)
{
    sim_t *sim = state;
    galloc_status_t st = ga_sim_op_fault(sim, "device_synchronize", GALLOC_E_DEVICE);
    if (st != GALLOC_OK)
        return st;
    complete_upto(sim, true, 0, sim->ev_seq);
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

galloc_status_t ga_sim_set_event_faults(void *state, uint64_t sync_nth, uint64_t sync_from, uint64_t query_nth,
                                        uint64_t query_from)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL)
        return GALLOC_E_INVAL;
    sim->sync_fail_nth = sync_nth;
    sim->sync_fail_from = sync_from;
    sim->query_fail_nth = query_nth;
    sim->query_fail_from = query_from;
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
