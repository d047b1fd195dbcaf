"""summarize_owners.py: the owners rows of bench/RESULTS.md (bench/owners.cc),
beside summarize.py (which stays under the house's 600 lines): the replay
engine's CPU time per replay without and with owners, side by side from one
run, the cost as a fraction, and the memory owners took against the events.
"""

OWNERS_SIZES = (100000, 1000000)
OWNERS_GOAL = 0.20  # issue 37: "asked for, it costs at most 20 %" (CPU time)


def owners(traces, t_ns, fmt, table, verdict):
    """(summary rows, details section or None) from galloc_traces' entries."""
    rows, detail = [], []
    for n in OWNERS_SIZES:
        off, on = (traces.get(f"owners/{k}/{n}/real_time") for k in ("off", "on"))
        if off is None or on is None:
            continue
        t_off, t_on = t_ns(off), t_ns(on)
        cost = t_on / t_off - 1.0
        events = int(on.get("events", n))
        mem = int(on.get("index_bytes", 0)) + int(on.get("track_bytes", 0))
        detail.append([f"{events:,}", fmt(t_off / 1e6), fmt(t_on / 1e6), f"{100 * cost:+.1f} %",
                       fmt(t_ns(off, "real_time") / 1e6), fmt(t_ns(on, "real_time") / 1e6),
                       int(on.get("sites", 0)), int(on.get("classes", 0)), f"{int(on.get('index_bytes', 0)):,}",
                       f"{int(on.get('track_bytes', 0)):,}"])
        if n == 1000000:
            rows.append(["owners", f"replay engine, 125M fixed-length trace, {events:,} events: owners on vs off",
                         f"{100 * cost:+.1f} % CPU time ({fmt(t_on / 1e6)} vs {fmt(t_off / 1e6)} ms)",
                         f"owners' memory {mem / 1024:.0f} KiB for {events:,} events",
                         f"≤ +{100 * OWNERS_GOAL:.0f} %", verdict(cost <= OWNERS_GOAL, f"{100 * cost:+.1f} %")])
    if not detail:
        return rows, None
    return rows, ("## Owners: what attributing memory costs\n\n"
                  "bench/owners.cc: the replay engine (`ga_replay_column`, what `galloc replay` runs per column) "
                  "over a generated GPT-2 125M training trace (fixed sequence length, the generator's phase "
                  "annotations as sites), once without and once with owners, in the same binary and run. "
                  "Milliseconds per whole replay (CPU, then wall); the owners' host memory is the index (sites, "
                  "classes, kept after loading) and the tracker at its largest (the records in the pointer "
                  "map's entries, cells, undo log): the same for 10x the events.\n\n" +
                  table(["events", "off ms (CPU)", "on ms (CPU)", "cost", "off ms (wall)", "on ms (wall)",
                         "sites", "classes", "index bytes", "tracker bytes"], detail))
