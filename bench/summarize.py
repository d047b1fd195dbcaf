#!/usr/bin/env python3
"""summarize.py: turn bench/run's Google Benchmark JSON into ONE summary table
(printed) and bench/RESULTS.md (the machine, the summary, the details).

Input directory (from bench/run): galloc_pairs.json, galloc_traces.json,
galloc_sleep.json, baseline_{glibc,jemalloc,mimalloc,tcmalloc}.json, optional callgrind.tsv
(binary, benchmark, iterations, instructions), load_before, load_after.

Times are Google Benchmark's medians over the repetitions. The verdicts use CPU
time per pair / per event: on a shared machine, wall time also counts the time
other processes held the CPU; CPU time counts only this process's own work
(both are in the details). For the 2-thread rows, CPU time is summed over both
threads and divided by all pairs: perfect scaling keeps it equal to 1 thread.
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys

import gpu_results  # bench/, beside this file
import summarize_owners

SEQS = ["fixed_4KiB", "small_mix", "training_mix", "churn"]
# Sequences whose sizes reach the host allocators' mmap thresholds (glibc's
# starts at 128 KiB and adapts; the others also go to the OS for their largest
# sizes): their baselines pay system calls that galloc's sim device never
# makes, so no verdict is drawn.
NOT_COMPARABLE = {
    "training_mix": "sizes to 1 GiB: the host allocators call the OS",
    "churn": "sizes to 16 MiB: the host allocators call the OS",
}
BASELINES = ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
POLICIES = ["default", "expandable", "max_split_64", "roundup_pow2_4", "gc_0.8"]
POLICY_CONF = {
    "default": "(none)",
    "expandable": "expandable_segments:True",
    "max_split_64": "max_split_size_mb:64",
    "roundup_pow2_4": "roundup_power2_divisions:4",
    "gc_0.8": "garbage_collection_threshold:0.8 + per_process_memory_fraction (1.25 x peak requested)",
}
MODELS = ["125M", "350M", "1.3B"]
LIVE_N = [100, 1000, 10000, 100000]
STREAMS = [0, 1, 4, 16, 64]
RECORDING = ["never", "off", "state", "all", "all_stacks"]
# bench/inspect.cc: usable_size on the stripe path, and a locked call that takes every stripe's lock.
USABLE = ("usable_size/stripe/real_time/threads:1", "locked_call/memory_info/real_time/threads:1")
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# The replay throughput goals, events per second (CPU time).
REPLAY_TARGET = {"fixed": 20e6, "variable": 15e6}
# The 2-thread goals: aggregate throughput of 2 threads on one
# allocator, each on its own stream, over 1 thread's: FREE_CORES where two
# cores are free (judged when the 1-minute load average before bench/run
# started was below FREE_LOAD: the average as the pairs binary starts counts
# the benchmarks run just before it, so it says nothing of other work),
# UNDER_LOAD always.
OWN_STREAMS_FREE_CORES, OWN_STREAMS_UNDER_LOAD, FREE_LOAD = 1.5, 0.9, 0.5


def load(path):
    """run_name -> the median aggregate (or the single run) of that benchmark."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = json.load(f)
    runs, medians = {}, {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = b
        else:
            runs.setdefault(name, b)
    runs.update(medians)
    return runs


def t_ns(entry, key="cpu_time"):
    return entry[key] * UNIT_NS[entry.get("time_unit", "ns")]


def fmt(x, digits=3):
    """A number with `digits` significant figures, thousands separated."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == 0:
        return "0"
    mag = int(math.floor(math.log10(abs(x))))
    decimals = max(0, digits - 1 - mag)
    return f"{x:,.{decimals}f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine(d):
    model, cores = "", ""
    for line in sh("lscpu").splitlines():
        k, _, v = line.partition(":")
        if k.strip() == "Model name":
            model = v.strip()
        elif k.strip() == "CPU(s)":
            cores = v.strip()
    mem = ""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1048576:.1f} GiB"
    versions = sh("dpkg-query -W -f='${Package} ${Version}\\n' libc6 libjemalloc2 libmimalloc2.0 "
                  "libtcmalloc-minimal4 libbenchmark1debian 2>/dev/null")

    def read(name):
        p = os.path.join(d, name)
        return open(p).read().strip() if os.path.exists(p) else "?"

    commit = sh("git rev-parse --short HEAD") or "?"
    if sh("git status --porcelain --untracked-files=no"):
        commit += " (with uncommitted changes)"
    return [
        ("CPU", f"{model}, {cores} logical CPUs ({platform.machine()})"),
        ("Memory", mem),
        ("Compiler", sh("gcc --version | head -1") + "; `-c opt --config=opt` (-O2 -DNDEBUG)"),
        ("Kernel", platform.release()),
        ("Libraries", "; ".join(versions.splitlines())),
        ("galloc", commit),
        ("Date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("Load average (1/5/15 min)", f"{read('load_before')} before, {read('load_after')} after"),
    ]


def callgrind(d):
    """(binary, benchmark) -> instructions per pair (2N run minus N run, over N)."""
    p = os.path.join(d, "callgrind.tsv")
    if not os.path.exists(p):
        return {}
    raw = {}
    for line in open(p):
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 4 and parts[3].replace(",", "").isdigit():
            raw.setdefault((parts[0], parts[1]), {})[int(parts[2])] = int(parts[3].replace(",", ""))
    out = {}
    for key, by_n in raw.items():
        if len(by_n) == 2:
            (n1, i1), (n2, i2) = sorted(by_n.items())
            out[key] = (i2 - i1) / (n2 - n1)
    return out


class Summary:
    def __init__(self, d):
        self.d = d
        self.pairs = load(os.path.join(d, "galloc_pairs.json"))
        self.traces = load(os.path.join(d, "galloc_traces.json"))
        self.sleep = load(os.path.join(d, "galloc_sleep.json"))
        self.base = {a: load(os.path.join(d, f"baseline_{a}.json")) for a in BASELINES}
        self.ir = callgrind(d)
        self.rows = []  # the summary table
        self.details = []  # markdown sections

    # --- 1. hot path -------------------------------------------------------
    def hot_path(self):
        rows, ir_rows = [], []
        for seq in SEQS:
            for th in (1, 2):
                name = f"pair/{seq}/real_time/threads:{th}"
                g = self.pairs.get(name)
                if g is None:
                    continue
                gc = t_ns(g)
                refs, cells = {}, []
                for a in BASELINES:
                    e = self.base[a].get(name)
                    if e is None:
                        cells.append("n/a")
                        continue
                    refs[a] = t_ns(e)
                    cells.append(f"{fmt(refs[a])} (×{fmt(gc / refs[a], 2)})")
                dev = int(g.get("dev_allocs", 0))
                rows.append([seq, th, fmt(gc), fmt(t_ns(g, "real_time"))] + cells + [dev])
                mi = refs.get("mimalloc")
                ref_text = " · ".join(f"{a} {fmt(v)} (×{fmt(gc / v, 2)})" for a, v in refs.items())
                verdict = "n/a"
                if mi and seq in NOT_COMPARABLE:
                    # The host allocators map and unmap pages for these sizes
                    # (system calls on every pair); galloc's sim device maps
                    # nothing. A ratio below 1 says nothing about bookkeeping.
                    verdict = f"not comparable (×{fmt(gc / mi, 2)}): {NOT_COMPARABLE[seq]}"
                elif mi:
                    r = gc / mi
                    verdict = f"met (×{fmt(r, 2)})" if r <= 2.0 else f"**missed**: ×{fmt(r, 2)}, {fmt(r / 2, 2)}× over"
                self.rows.append([f"hot path, {th} thread{'s' if th > 1 else ''}", f"{seq}: malloc+free pair",
                                  f"{fmt(gc)} ns/pair", ref_text, "≤ 2× mimalloc", verdict])
            gi = self.ir.get(("galloc_pairs", f"pair/{seq}"))
            if gi is not None:
                ir_rows.append([seq, fmt(gi, 4)] + [
                    (f"{fmt(v, 4)} (×{fmt(gi / v, 2)})" if (v := self.ir.get((f"baseline_{a}", f"pair/{seq}")))
                     else "n/a") for a in BASELINES])
        self.details.append("## Hot path: malloc+free pairs, cache hits\n\n"
                            "CPU ns per pair (median); in brackets galloc's time as a multiple of the baseline's. "
                            "`dev_allocs`: device allocations galloc made while timing (0 = every request was a "
                            "cache hit). 2 threads share one galloc allocator (one lock); the host allocators use "
                            "their per-thread caches.\n\n" + table(
                                ["sequence", "threads", "galloc CPU ns", "galloc wall ns"] +
                                [f"{a} CPU ns" for a in BASELINES] + ["dev_allocs"], rows))
        if ir_rows:
            self.details.append("### Instructions per pair (callgrind, exact)\n\n"
                                "Instructions executed per malloc+free pair, 1 thread: callgrind's count for "
                                "40,000 iterations minus that for 20,000, over 20,000. Independent of other load on "
                                "the machine; kernel work (mmap/munmap of the host allocators) is not counted.\n\n" +
                                table(["sequence", "galloc"] + BASELINES, ir_rows))

    # --- 2. growth with live blocks ---------------------------------------
    def growth(self):
        rows, frag = [], {}
        for n in LIVE_N:
            h = self.pairs.get(f"live/held/{n}/real_time")
            f = self.pairs.get(f"live/fragmented/{n}/real_time")
            if h is None or f is None:
                continue
            frag[n] = t_ns(f)
            ir_f = self.ir.get(("galloc_pairs", f"live/fragmented/{n}"))
            ir_h = self.ir.get(("galloc_pairs", f"live/held/{n}"))
            rows.append([f"{n:,}", fmt(t_ns(h)), fmt(ir_h, 4) if ir_h else "n/a", int(f.get("holes", 0)),
                         fmt(t_ns(f)), fmt(frag[n] / frag.get(LIVE_N[0], frag[n]), 3),
                         fmt(math.log2(n) / math.log2(LIVE_N[0]), 3), fmt(ir_f, 4) if ir_f else "n/a"])
        if len(frag) < 2:
            return
        lo, hi = min(frag), max(frag)
        growth, bound = frag[hi] / frag[lo], math.log2(hi) / math.log2(lo)
        # Least squares t = a + b log2 n.
        xs = [math.log2(n) for n in frag]
        ys = list(frag.values())
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        a = my - b * mx
        ir_lo = self.ir.get(("galloc_pairs", f"live/fragmented/{lo}"))
        ir_hi = self.ir.get(("galloc_pairs", f"live/fragmented/{hi}"))
        ir_text = f"; instructions {fmt(ir_lo, 4)} → {fmt(ir_hi, 4)} (×{fmt(ir_hi / ir_lo, 3)})" if ir_lo and ir_hi else ""
        self.rows.append(["growth with live blocks", f"n live + n free holes in one best-fit tree, n = {lo:,} → {hi:,}",
                          f"{fmt(frag[lo])} → {fmt(frag[hi])} ns/pair (×{fmt(growth, 3)})",
                          f"log2 n grows ×{fmt(bound, 3)}; fit {fmt(a)} + {fmt(b)}·log2 n ns{ir_text}",
                          "≤ logarithmic", "met" if growth <= bound else f"**missed**: ×{fmt(growth / bound, 3)} over log"])
        h_lo = self.pairs.get(f"live/held/{lo}/real_time")
        h_hi = self.pairs.get(f"live/held/{hi}/real_time")
        if h_lo and h_hi:
            r = t_ns(h_hi) / t_ns(h_lo)
            self.rows.append(["growth with live blocks", f"n live blocks, no holes (pointer map only), n = {lo:,} → {hi:,}",
                              f"{fmt(t_ns(h_lo))} → {fmt(t_ns(h_hi))} ns/pair (×{fmt(r, 3)})", "hash map: flat expected",
                              "≤ logarithmic", "met" if r <= bound else f"**missed**: ×{fmt(r, 3)}"])
        self.details.append("## Cost growth with live blocks\n\n"
                            "CPU ns per pair with n blocks held. *held*: n live blocks packed in their segments. "
                            "*fragmented*: 2n allocated, every other freed: n live and ~n free holes (`holes`) "
                            "that cannot merge, all in the small pool's best-fit tree; pairs ask for hole sizes in "
                            "random order. Logarithmic cost means t(n)/t(100) ≤ log2 n / log2 100.\n\n" + table(
                                ["n", "held ns", "held instr.", "holes", "fragmented ns", "× vs n=100",
                                 "log2 n / log2 100", "fragmented instr."], rows) +
                            f"\n\nLeast-squares fit (fragmented): t ≈ {fmt(a)} + {fmt(b)} · log2 n ns.")

    # --- 3. replay ---------------------------------------------------------
    def replay(self):
        rows = []
        for kind in ("fixed", "variable"):
            for n in (100000, 1000000, 10000000):
                e = self.traces.get(f"replay/{kind}/{n}/real_time")
                if e is None:
                    continue
                events = e.get("events", n)
                cpu_rate = events / (t_ns(e) * 1e-9)
                wall_rate = events / (t_ns(e, "real_time") * 1e-9)
                rows.append([kind, f"{int(events):,}", fmt(cpu_rate / 1e6), fmt(wall_rate / 1e6),
                             fmt(1e9 / cpu_rate), int(e.get("dev_allocs", 0))])
                goal = REPLAY_TARGET[kind]
                self.rows.append(["replay throughput", f"125M {kind}-length trace, {int(events):,} events",
                                  f"{fmt(cpu_rate / 1e6)} M events/s", f"wall clock {fmt(wall_rate / 1e6)} M events/s",
                                  f"≥ {goal / 1e6:.0f} M events/s",
                                  "met" if cpu_rate >= goal else f"**missed**: {fmt(goal / cpu_rate, 3)}× too slow"])
        self.details.append("## Replay throughput\n\n"
                            "Generated GPT-2 125M training traces (mixed precision, batch 8, sequence length 1024, "
                            "or drawn per step from 128..1024), replayed through galloc_malloc / galloc_free in a "
                            "tight loop with an id → pointer array, fresh allocator per iteration (default policy). "
                            "Events are allocs and frees; `dev_allocs` are the cold misses included in the time.\n\n" +
                            table(["trace", "events", "M events/s (CPU)", "M events/s (wall)", "ns/event (CPU)",
                                   "dev_allocs"], rows))

    # --- 4. memory efficiency ---------------------------------------------
    def efficiency(self):
        rows = []
        for model in MODELS:
            for kind in ("fixed", "variable"):
                ratios, extra = {}, {}
                for p in POLICIES:
                    e = self.traces.get(f"efficiency/{model}_{kind}/{p}/iterations:1")
                    if e is not None:
                        ratios[p] = e["reserved_over_requested"]
                        extra[p] = e
                if not ratios:
                    continue
                req = extra[next(iter(extra))]["requested_peak_GiB"]
                cells = []
                for p in POLICIES:
                    if p not in ratios:
                        cells.append("n/a")
                        continue
                    c = f"{ratios[p]:.3f}"
                    if extra[p].get("ooms", 0):
                        c += f" ({int(extra[p]['ooms'])} OOMs)"
                    cells.append(c)
                gc = extra.get("gc_0.8", {})
                rows.append([f"{model} {kind}", f"{req:.2f}"] + cells +
                             [f"{int(gc.get('dev_frees', 0))} / {gc.get('fraction', 0):.3f}" if gc else "n/a"])
                text = " · ".join(f"{p} {ratios[p]:.3f}" for p in POLICIES if p in ratios)
                target, verdict = "", ""
                if kind == "variable" and "expandable" in ratios:
                    target = "expandable ≤ 1.05"
                    r = ratios["expandable"]
                    verdict = "met" if r <= 1.05 else f"**missed** by {r - 1.05:.3f}"
                self.rows.append(["memory efficiency", f"{model}, {kind} sequence length: peak reserved / peak requested",
                                  text, f"peak requested {req:.2f} GiB", target, verdict])
        self.details.append("## Memory efficiency: peak reserved / peak requested\n\n"
                            "reserved_bytes.all.peak / requested_bytes.all.peak after replaying a whole generated "
                            "training run (GPT-2 layouts, mixed precision, Adam; fixed: 4 steps at length 1024; "
                            "variable: 16 steps, lengths drawn from 128..1024). Policies: " +
                            "; ".join(f"`{p}` = {POLICY_CONF[p]}" for p in POLICIES) +
                            ". Last column: segments the GC released and the fraction used.\n\n" +
                            table(["workload", "peak requested GiB"] + POLICIES + ["GC: dev_frees / fraction"], rows))

    # --- 5. recording ------------------------------------------------------
    def recording(self):
        base = self.pairs.get("recording/never/real_time")
        if base is None:
            return
        b = t_ns(base)
        ir_b = self.ir.get(("galloc_pairs", "recording/never"))
        rows, t = [], {}
        for m in RECORDING:
            e = self.pairs.get(f"recording/{m}/real_time")
            if e is None:
                continue
            t[m] = t_ns(e)
            ir = self.ir.get(("galloc_pairs", f"recording/{m}"))
            rows.append([m, fmt(t[m]), f"{t[m] - b:+.1f}", f"{(t[m] - b) / 2:+.1f}", f"{100 * (t[m] - b) / b:+.1f}%",
                         fmt(ir, 4) if ir else "n/a", f"{ir - ir_b:+.0f}" if ir and ir_b else "n/a"])
        if "off" in t:
            d = t["off"] - b
            ir_off = self.ir.get(("galloc_pairs", "recording/off"))
            ird = (ir_off - ir_b) if ir_off and ir_b else None
            ok = (ird is not None and abs(ird) <= 0.01 * ir_b) or (ird is None and abs(d) <= 0.03 * b)
            self.rows.append(["recording cost", "off (started, then stopped) vs never started",
                              f"{d:+.1f} ns/pair ({100 * d / b:+.1f}%)",
                              f"instructions {ird:+.0f}/pair" if ird is not None else "", "nothing measurable",
                              "met" if ok else "**missed**"])
        for m in ("state", "all"):
            if m in t:
                self.rows.append(["recording cost", f"{m} vs never, per event (2 per pair)",
                                  f"{(t[m] - b) / 2:+.1f} ns/event", f"{fmt(t[m])} ns/pair vs {fmt(b)}", "", ""])
        if "all_stacks" in t and "all" in t:
            cap = (t["all_stacks"] - t["all"]) / 2
            tot = (t["all_stacks"] - b) / 2
            self.rows.append(["recording cost", "native stack capture (context ALL, stacks ALL) per event",
                              f"{cap:.0f} ns/event capture", f"{tot:.0f} ns/event over never ({fmt(t['all_stacks'])} ns/pair)",
                              "≤ 1 µs per event", "met" if tot <= 1000 else f"**missed**: {tot / 1000:.2f} µs"])
        self.details.append("## History recording\n\n"
                            "The fixed 4 KiB pair, 1 thread, under galloc_record_memory_history modes (ring of 65,536 "
                            "entries). Per event = per API call (a pair is two). CPU ns.\n\n" +
                            table(["mode", "ns/pair", "Δ ns/pair", "Δ ns/event", "Δ %", "instr./pair",
                                   "Δ instr./pair"], rows))

    # --- 6. multi-stream ---------------------------------------------------
    def multistream(self):
        rows, t = [], {}
        for k in STREAMS:
            e = self.pairs.get(f"multistream/{k}/real_time")
            if e is None:
                continue
            t[k] = t_ns(e)
            ir = self.ir.get(("galloc_pairs", f"multistream/{k}"))
            rows.append([k, fmt(t[k]), fmt(t[k] / t[STREAMS[0]], 3) if STREAMS[0] in t else "n/a",
                         fmt(ir, 4) if ir else "n/a", int(e.get("dev_allocs", 0))])
        if len(t) < 2:
            return
        lo, hi = min(t), max(t)
        r = t[hi] / t[lo]
        ir_lo = self.ir.get(("galloc_pairs", f"multistream/{lo}"))
        ir_hi = self.ir.get(("galloc_pairs", f"multistream/{hi}"))
        self.rows.append(["multi-stream", f"small-mix pairs on one stream while {lo} → {hi} other streams hold cached blocks",
                          f"{fmt(t[lo])} → {fmt(t[hi])} ns/pair (×{fmt(r, 3)})",
                          f"instructions {fmt(ir_lo, 4)} → {fmt(ir_hi, 4)}" if ir_lo and ir_hi else "",
                          "no slowdown (≤ ×1.10)", "met" if r <= 1.10 else f"**missed**: ×{fmt(r, 3)}"])
        self.details.append("## Multi-stream\n\n"
                            "Small-mix pairs on stream 1 while k other streams each hold 32 live blocks and their "
                            "freed neighbours (cached, same small and large pools). CPU ns per pair.\n\n" +
                            table(["other streams", "ns/pair", "× vs 0", "instr./pair", "dev_allocs"], rows))

    # --- 6b. galloc_usable_size (bench/inspect.cc) --------------------------
    def usable_size(self):
        s, lk = (self.pairs.get(run) for run in USABLE)
        if s is None or lk is None:
            return
        ts, tl = t_ns(s, "real_time"), t_ns(lk, "real_time")
        ir_s, ir_l = (self.ir.get(("galloc_pairs", run[:run.index("/real_time")])) for run in USABLE)
        self.rows.append(["usable_size", "galloc_usable_size of a live 4 KiB block (a replay's per-malloc call)",
                          f"{fmt(ts)} ns/call" + (f", {fmt(ir_s, 3)} instr." if ir_s else ""),
                          f"locked call: {fmt(tl)} ns" + (f", {fmt(ir_l, 4)} instr." if ir_l else ""),
                          "well below a locked call", self.verdict(ts < tl / 4, f"{fmt(ts)} ns")])

    # --- 7. sleep and wake -------------------------------------------------
    def sleep_wake(self):
        rows = []
        for large in (0, 1):
            for exp in (0, 1):
                for backed in (0, 1):
                    for off in (0, 1):
                        e = self.sleep.get(f"sleep_wake/large_20MiB:{large}/expandable:{exp}/backed:{backed}/"
                                           f"offload:{off}/real_time")
                        if e is None:
                            continue
                        rows.append(["20 MiB" if large else "2 MiB (1 MiB blocks)",
                                     "expandable" if exp else "plain", "backed" if backed else "unbacked",
                                     "offload" if off else "discard", fmt(e["sleep_ms_per_GiB"]),
                                     fmt(e["wake_ms_per_GiB"]), fmt(e["map_per_GiB"]), fmt(e["unmap_per_GiB"]),
                                     fmt(e["va_per_GiB"]), fmt(e["d2h_per_GiB"]), fmt(e["h2d_per_GiB"]),
                                     fmt(e["dev_alloc_per_GiB"]), fmt(e["dev_free_per_GiB"])])
                        if large and exp and backed and off:
                            self.rows.append(["sleep and wake", "1 GiB tag, 20 MiB expandable segments, offloaded, "
                                              "sim backed (real memcpy)",
                                              f"sleep {fmt(e['sleep_ms_per_GiB'])} ms/GiB, wake "
                                              f"{fmt(e['wake_ms_per_GiB'])} ms/GiB",
                                              f"{fmt(e['map_per_GiB'])} maps, {fmt(e['unmap_per_GiB'])} unmaps, "
                                              f"{fmt(e['va_per_GiB'])} VA calls per GiB", "", ""])
        if rows:
            self.details.append("## Sleep and wake\n\n"
                                "`galloc_sleep` then `galloc_wake` of one tag holding about 1 GiB of live blocks, on "
                                "the sim device wrapped by a counting copy of itself (bench/sleep.cc). Per GiB slept: "
                                "wall ms of each call, and the driver calls of the pair (VA = va_reserve + "
                                "va_release; d2h / h2d = copies; dev = galloc_stats' num_device_alloc / free).\n\n" +
                                table(["segments", "kind", "sim", "contents", "sleep ms/GiB", "wake ms/GiB",
                                       "map", "unmap", "VA", "d2h", "h2d", "dev alloc", "dev free"], rows))

    # --- 7b. the first sleep of a tag (pinning) ----------------------------
    def first_sleep(self):
        rows = []
        for large in (0, 1):
            for mode, what in ((0, "cold (the sleep pins)"), (1, "after galloc_sleep_prepare"),
                               (2, "plain pinned copy (backend ops)")):
                e = self.sleep.get(f"first_sleep/mode:{mode}/large_20MiB:{large}/iterations:3/manual_time")
                if e is None:
                    continue
                extra = e.get("prepare_ms", e.get("pin_ms"))
                rows.append(["52 x 20 MiB" if large else "1,024 x 1 MiB", what,
                             fmt(t_ns(e, "real_time") / 1e6), fmt(e.get("GiB_per_s")),
                             fmt(extra) if extra is not None else "",
                             fmt(e["host_alloc_in_sleep"]) if "host_alloc_in_sleep" in e else ""])
        if rows:
            self.details.append("## First sleep of a tag\n\n"
                                "The first `galloc_sleep` of a 1 GiB offloaded tag on a fresh allocator "
                                "(bench/sleep.cc's first_sleep): the sleep pinning its copies itself, the sleep "
                                "after `galloc_sleep_prepare` (prepare timed apart), and the backend's own "
                                "`host_alloc` of all the bytes (pin ms apart) plus one `copy_d2h` per block. On "
                                "sim `host_alloc` is `malloc`: the count, not the time, is what it shows.\n\n" +
                                table(["blocks", "sleep", "ms", "GiB/s", "prepare / pin ms", "host_alloc in sleep"],
                                      rows))

    def fit(self):
        path = os.path.join(self.d, "fit.tsv")
        if not os.path.exists(path):
            return
        with open(path) as f:
            events, configs, secs = f.read().split()
        ok = os.path.getsize(os.path.join(self.d, "fit.json")) > 0
        secs = float(secs)
        self.rows.append(["galloc fit", f"{int(events):,}-event trace through {configs} configurations, "
                          f"{os.cpu_count()} workers, whole command (wall)",
                          f"{secs:.1f} s" + ("" if ok else " (no JSON written)"), "", "< 60 s on 2 cores",
                          "met" if ok and secs < 60 else f"**missed**: {secs:.1f} s"])

    # --- 0. the hot-path goals ------------------------------------------------
    def verdict(self, ok, miss):
        return "met" if ok else f"**missed**: {miss}"

    def hot_path_goals(self):
        """One row per hot-path goal, met or missed with its figure."""
        area = "hot-path goals"
        ir = lambda name: self.ir.get(("galloc_pairs", name))
        g = self.pairs.get("pair/fixed_4KiB/real_time/threads:1")
        i = ir("pair/fixed_4KiB")
        if g is not None or i is not None:
            ns = t_ns(g) if g is not None else None
            ok = i is not None and i <= 400 and ns is not None and ns <= 50
            self.rows.append([area, "4 KiB malloc+free pair, 1 thread", f"{fmt(i, 4)} instr. · {fmt(ns)} ns/pair",
                              "callgrind; CPU time", "≤ 400 instr. and ≤ 50 ns",
                              self.verdict(ok, f"{fmt(i, 4)} instr. (×{fmt(i / 400, 3)}), {fmt(ns)} ns"
                                           if i is not None and ns is not None else "not measured")])
        i = ir("pair/small_mix")
        if i is not None:
            self.rows.append([area, "small-mix malloc+free pair, 1 thread", f"{fmt(i, 4)} instr.", "callgrind",
                              "≤ 900 instr.", self.verdict(i <= 900, f"×{fmt(i / 900, 3)}")])
        step = self.pairs.get("step/training/real_time")
        i = ir("step/training")
        if step is not None or i is not None:
            pairs = step.get("pairs", 50) if step is not None else 50
            per = i / pairs if i is not None else None
            ns = t_ns(step) / pairs if step is not None else None
            self.rows.append([area, f"training step: {int(pairs)} sizes 2–512 MiB, all allocated then all freed",
                              f"{fmt(per, 4)} instr./pair", f"{fmt(ns)} ns/pair (CPU)", "≤ 600 instr./pair",
                              self.verdict(per is not None and per <= 600,
                                           f"×{fmt(per / 600, 3)}" if per is not None else "not measured")])
        load = self.pairs_load()
        for seq in ("fixed_4KiB", "small_mix"):
            one = self.pairs.get(f"own_streams/{seq}/real_time/threads:1")
            two = self.pairs.get(f"own_streams/{seq}/real_time/threads:2")
            if one is None or two is None:
                continue
            r = two["items_per_second"] / one["items_per_second"]
            ref = f"1 thread {fmt(one['items_per_second'] / 1e6)} M pairs/s, 2 threads " \
                  f"{fmt(two['items_per_second'] / 1e6)} M; load average before the run {fmt(load, 2) if load is not None else '?'}"
            # The ceiling: an allocator per thread shares nothing.
            c1 = self.pairs.get(f"own_allocators/{seq}/real_time/threads:1")
            c2 = self.pairs.get(f"own_allocators/{seq}/real_time/threads:2")
            if c1 is not None and c2 is not None:
                ref += f"; an allocator per thread ×{fmt(c2['items_per_second'] / c1['items_per_second'], 3)}"
            case = f"2 threads on one allocator, own streams ({seq}): throughput over 1 thread's (wall)"
            if load is not None and load < FREE_LOAD:
                v = self.verdict(r >= OWN_STREAMS_FREE_CORES, f"×{fmt(r, 3)}")
            else:
                v = f"not judged: load average {fmt(load, 2) if load is not None else '?'} ≥ {FREE_LOAD}"
            self.rows.append([area, case, f"×{fmt(r, 3)}", ref, f"≥ ×{OWN_STREAMS_FREE_CORES} (two free cores)", v])
            self.rows.append([area, case, f"×{fmt(r, 3)}", ref, f"≥ ×{OWN_STREAMS_UNDER_LOAD} (any load)",
                              self.verdict(r >= OWN_STREAMS_UNDER_LOAD, f"×{fmt(r, 3)}")])
        lo, hi = ir(f"live/fragmented/{LIVE_N[0]}"), ir(f"live/fragmented/{LIVE_N[-1]}")
        if lo and hi:
            self.rows.append([area, f"growth: {LIVE_N[0]:,} → {LIVE_N[-1]:,} live blocks (fragmented), instructions",
                              f"{fmt(lo, 4)} → {fmt(hi, 4)} instr. (×{fmt(hi / lo, 3)})", "callgrind", "< ×1.2",
                              self.verdict(hi / lo < 1.2, f"×{fmt(hi / lo, 3)}")])

    def pairs_load(self):
        """1-minute load average before bench/run started (its load_before file)."""
        try:
            with open(os.path.join(self.d, "load_before")) as f:
                return float(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            return None

    def run(self):
        self.fit()
        self.hot_path_goals()
        self.hot_path()
        self.growth()
        self.multistream()
        self.usable_size()
        self.replay()
        rows, detail = summarize_owners.owners(self.traces, t_ns, fmt, table, self.verdict)
        self.rows += rows
        self.details += [detail] if detail else []
        self.efficiency()
        self.recording()
        self.sleep_wake()
        self.first_sleep()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="bench/run's output directory")
    ap.add_argument("--markdown", help="write RESULTS.md here")
    args = ap.parse_args()
    s = Summary(args.dir)
    s.run()
    summary = table(["area", "case", "galloc", "reference", "target", "verdict"], s.rows)
    print(summary)
    if args.markdown:
        m = machine(args.dir)
        doc = ["# galloc benchmark results", "",
               "Written by `bench/run` (do not edit by hand; method and profile notes are in "
               "[NOTES.md](NOTES.md)). Medians of the repetitions; CPU time unless marked wall.", "",
               "## Machine", "", table(["", ""], m), "", "## Summary", "", summary, ""]
        for sec in s.details:
            doc += [sec, ""]
        doc += [gpu_results.section(), ""]  # kept from the last GPU run ingested (bench/gpu/)
        with open(args.markdown, "w") as f:
            f.write("\n".join(doc))
        print(f"\nwritten to {args.markdown}", file=sys.stderr)


if __name__ == "__main__":
    main()
