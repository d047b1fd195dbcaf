"""galloc's counterfactual accuracy against real runs (docs/accuracy.md).

A matrix folder holds, for workloads W and allocator settings S, recordings
W__S.pickle.gz (PyTorch's snapshot, history from an empty allocator) with
W__S.json (memory_stats at the end, the device's total): what
tests/gpu/capture_matrix.py records on a GPU, or `sim-record` makes on
galloc's sim for the pipeline's own test. A pair (A, B) of one workload asks
galloc, from the trace recorded under A, what the run under B does; the run
recorded under B says what it did.

    accuracy.py plan DIR --galloc BIN [--out OUT]   OUT/predictions.json, OUT/plan.json (caps to run)
    accuracy.py report DIR [--predictions F] [--markdown F] [--check]
    accuracy.py sim-record DIR --galloc BIN [--setting S] TRACE...   recordings made on the sim
    accuracy.py sim-caps DIR --galloc BIN [--setting S]              the capped runs, played by the sim

plan: for every recording A and every setting B, `galloc fit --conf B` on A's
trace (the device's total as --device-memory) gives B's predicted peak
reserved and allocated and its smallest memory m (fit's bisection, the answer
users get). The caps to run on the GPU are m x (1 - BRACKET) and
m x (1 + BRACKET) as memory fractions of the total; galloc's own verdict at
each cap is a replay of A's trace under B with that per_process_memory_fraction
(as PyTorch caps: fraction x total, its garbage collection then active).

The verdicts are also made at every cap already run (DIR/caps__S.json), so a
later galloc is judged on the GPU's runs without a GPU: CI re-plans into a
scratch folder and reports against the recorded runs.

report: per pair the predicted and real peaks and their error; per cap galloc's
verdict beside the real one; the bracket against every capped run of the
pair's workload and setting (it holds when every run at or below m x 0.98 ran
out of memory and every run at or above m x 1.02 fitted, with a run on each
side); and the goals of issue 27: median |error| of
peak reserved <= 0.5 %, worst <= 2 %, OOM or not right at every cap, the
smallest-memory bracket holding (below: OOM, above: fits) in >= 90 % of
pairs. --check exits 1 when a goal is missed.
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import statistics
import subprocess
import sys

# The settings of the matrix (issue 27), by the name recordings carry (what
# matrix.sh records; a folder's own settings are those of its recordings).
SETTINGS = {
    "default": "",
    "expandable": "expandable_segments:True",
    "split128": "max_split_size_mb:128",
    "rd4gc06": "roundup_power2_divisions:4,garbage_collection_threshold:0.6",
}
BRACKET = 0.02
GOALS = {"median_error": 0.005, "worst_error": 0.02, "bracket_share": 0.90}


def recordings(d):
    """{(workload, setting): (trace path, info)} of every W__S.json beside its W__S.pickle.gz."""
    out = {}
    for j in sorted(glob.glob(os.path.join(d, "*__*.json"))):
        stem = j[:-len(".json")]
        if os.path.basename(stem).startswith(("caps__", "plan", "predictions")):
            continue
        w, s = os.path.basename(stem).split("__", 1)
        trace = stem + ".pickle.gz" if os.path.exists(stem + ".pickle.gz") else stem + ".pickle"
        info = json.load(open(j))
        out[(w, s)] = (trace, info)
    return out


def fit(galloc, trace, total, confs, jobs):
    """galloc fit --conf of every conf on trace: ({conf: its row}, the row of the job's own run or None)."""
    args = [galloc, "fit", "--json", "--jobs", str(jobs), "--device-memory", str(total)]
    for c in confs:
        args += ["--conf", c]
    r = subprocess.run(args + [trace], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} {trace}: exit {r.returncode}: {r.stderr.strip()}")
    rows = json.loads(r.stdout)["results"]
    return {x["conf"]: x for x in rows if not x["recorded"]}, next((x for x in rows if x["recorded"]), None)


def verdict_at(galloc, trace, total, conf, fraction):
    """galloc's verdict for a run under conf capped at fraction x total: True when it runs out of memory."""
    c = ",".join(x for x in (conf, f"per_process_memory_fraction:{fraction!r}") if x)
    r = subprocess.run([galloc, "replay", "--no-recorded", "--device-memory", str(total), "--conf", c, trace],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"galloc replay --conf {c} {trace}: exit {r.returncode}: {r.stderr.strip()}")
    return r.returncode == 1


def real_caps(d):
    """{(workload, setting): {fraction: ran out of memory}} of the capped runs in d (caps__S.json)."""
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "caps__*.json"))):
        doc = json.load(open(f))
        for run in doc["runs"]:
            out.setdefault((run["workload"], doc["setting"]), {})[run["fraction"]] = run["oom"]
    return out


def plan(d, galloc, jobs, out):
    recs = recordings(d)
    measured = real_caps(d)
    conf = {s: i["conf"] for (_, s), (_, i) in sorted(recs.items())}  # each setting's string, as recorded
    settings = sorted(conf)
    confs = [conf[s] for s in settings]
    pred, caps = {}, {}
    with cf.ThreadPoolExecutor(max(1, jobs)) as ex:
        fits = {k: ex.submit(fit, galloc, t, i["total_memory"], confs, 1) for k, (t, i) in recs.items()}
        for (w, a), fut in fits.items():
            res, own = fut.result()
            total = recs[(w, a)][1]["total_memory"]
            for b in settings:
                # Under its own settings the job's answer is fit's recorded row (its run at the
                # recorded addresses, as users get it); under others a prediction on the sim.
                r = own if b == a and own is not None else res[conf[b]]
                m = r["min_device_memory"]
                fr = [m * (1 - BRACKET) / total, m * (1 + BRACKET) / total] if m else []
                pred[f"{w}|{a}|{b}"] = {"peak_reserved": r["peak_reserved_bytes"],
                                        "peak_allocated": r["peak_allocated_bytes"], "fits": r["fits"],
                                        "min_memory": m, "fractions": fr}
                caps.setdefault(b, {}).setdefault(w, []).extend(fr)
        # galloc's verdict at every cap planned or already run, from every trace of the workload
        keys = [(w, a, b, f) for (w, a) in recs for b in settings
                for f in sorted(set(caps[b].get(w, [])) | set(measured.get((w, b), {})))]
        verdicts = {k: ex.submit(verdict_at, galloc, recs[(k[0], k[1])][0], recs[(k[0], k[1])][1]["total_memory"],
                                 conf[k[2]], k[3]) for k in keys}
        for (w, a, b, f), fut in verdicts.items():
            pred[f"{w}|{a}|{b}"].setdefault("verdicts", {})[repr(f)] = fut.result()
    caps = {b: {w: sorted(set(v)) for w, v in ws.items()} for b, ws in caps.items()}
    os.makedirs(out, exist_ok=True)
    json.dump(pred, open(os.path.join(out, "predictions.json"), "w"), indent=1, sort_keys=True)
    json.dump({"bracket": BRACKET, "caps": caps}, open(os.path.join(out, "plan.json"), "w"), indent=1, sort_keys=True)
    n = sum(len(v) for ws in caps.values() for v in ws.values())
    print(f"plan: {len(pred)} pairs, {n} capped runs", file=sys.stderr)


def gib(b):
    return f"{b / 2**30:.3f}"


def bracket(m, runs, total):
    """Whether the real capped runs bear out "OOM 2 % below m, fits 2 % above": "holds", "fails" (a run
    contradicts it) or "undecided" (no run on one side: galloc's m moved since the GPU ran)."""
    lo = [oom for f, oom in runs.items() if f * total <= m * (1 - BRACKET) * 1.0000001]
    hi = [oom for f, oom in runs.items() if f * total >= m * (1 + BRACKET) * 0.9999999]
    if not all(lo) or any(hi):
        return "fails"
    return "holds" if lo and hi else "undecided"


def report(d, predictions, markdown, check):
    recs = recordings(d)
    pred = json.load(open(predictions))
    measured = real_caps(d)
    rows, errs, aerrs, verdicts, brackets = [], [], [], [0, 0], [0, 0]
    for key in sorted(pred):
        w, a, b = key.split("|")
        if (w, b) not in recs:
            continue
        p, real = pred[key], recs[(w, b)][1]["memory_stats"]
        rr, ra = real["reserved_bytes.all.peak"], real["allocated_bytes.all.peak"]
        e, ea = (p["peak_reserved"] - rr) / rr, (p["peak_allocated"] - ra) / ra
        errs.append(abs(e))
        aerrs.append(abs(ea))
        runs = measured.get((w, b), {})
        for f, oom in runs.items():
            verdicts[0] += p["verdicts"][repr(f)] == oom
            verdicts[1] += 1
        br = "-"
        if runs and p["min_memory"]:
            br = bracket(p["min_memory"], runs, recs[(w, b)][1]["total_memory"])
            brackets[0] += br == "holds"
            brackets[1] += 1
        rows.append(f"| {w} | {a} | {b} | {gib(rr)} | {gib(p['peak_reserved'])} | {100 * e:+.2f} % | "
                    f"{gib(ra)} | {100 * ea:+.2f} % | {gib(p['min_memory']) if p['min_memory'] else '-'} | {br} |")
    if not errs:
        raise SystemExit(f"{d}: no pair has both a prediction and a real run")
    med, worst = statistics.median(errs), max(errs)
    summary = {
        "pairs": len(errs), "median_error": med, "worst_error": worst,
        "median_allocated_error": statistics.median(aerrs), "worst_allocated_error": max(aerrs),
        "caps_right": verdicts[0], "caps": verdicts[1], "brackets_held": brackets[0], "brackets": brackets[1],
    }
    missed = []
    if med > GOALS["median_error"]:
        missed.append(f"median |error| of peak reserved {100 * med:.3f} % > {100 * GOALS['median_error']} %")
    if worst > GOALS["worst_error"]:
        missed.append(f"worst |error| of peak reserved {100 * worst:.3f} % > {100 * GOALS['worst_error']} %")
    if verdicts[0] != verdicts[1]:
        missed.append(f"OOM or not right at {verdicts[0]} of {verdicts[1]} caps")
    if brackets[1] and brackets[0] < GOALS["bracket_share"] * brackets[1]:
        missed.append(f"the bracket held in {brackets[0]} of {brackets[1]} pairs")
    summary["missed"] = missed
    head = ("| workload | recorded under | predicted under | real peak reserved GiB | galloc GiB | error | "
            "real peak allocated GiB | error | galloc smallest memory GiB | bracket -2 % / +2 % |\n"
            "|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    lines = [head] + rows + [
        "", f"{len(errs)} pairs: peak reserved |error| median {100 * med:.3f} %, worst {100 * worst:.3f} %; "
        f"peak allocated median {100 * summary['median_allocated_error']:.3f} %, "
        f"worst {100 * summary['worst_allocated_error']:.3f} %; OOM or not right at {verdicts[0]} of "
        f"{verdicts[1]} caps; bracket held in {brackets[0]} of {brackets[1]} pairs."]
    text = "\n".join(lines) + "\n"
    if markdown:
        open(markdown, "w").write(text)
    print(text, end="")
    print(json.dumps(summary))
    if check and missed:
        print("goals missed: " + "; ".join(missed), file=sys.stderr)
        sys.exit(1)


def sim_record(d, galloc, traces, total, only):
    """Each trace replayed on the sim under every setting (or only one), written as W__S.pickle + W__S.json."""
    os.makedirs(d, exist_ok=True)
    for t in traces:
        w = os.path.basename(t).split(".")[0].replace("__", "_")
        for s, conf in SETTINGS.items():
            if only and s != only:
                continue
            base = os.path.join(d, f"{w}__{s}")
            r = subprocess.run([galloc, "replay", "--json", "--device-memory", str(total), "--conf", conf,
                                "--snapshot", base + ".pickle", t], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"{t} under {conf!r}: exit {r.returncode}: {r.stderr.strip()}")
            stats = json.loads(r.stdout)["traces"][0]["results"][0]["memory_stats"]
            json.dump({"workload": w, "setting": s, "conf": conf, "total_memory": total, "memory_stats": stats},
                      open(base + ".json", "w"), indent=1, sort_keys=True)


def sim_caps(d, galloc, only):
    """The plan's capped runs (of every setting, or only one), each the sim's replay of the run
    recorded under its own setting."""
    recs = recordings(d)
    caps = json.load(open(os.path.join(d, "plan.json")))["caps"]
    for s, ws in caps.items():
        if only and s != only:
            continue
        runs = []
        for w, fracs in ws.items():
            trace, info = recs[(w, s)]
            for f in fracs:
                runs.append({"workload": w, "fraction": f, "cap": int(f * info["total_memory"]),
                             "oom": verdict_at(galloc, trace, info["total_memory"], info["conf"], f)})
        json.dump({"setting": s, "runs": runs}, open(os.path.join(d, f"caps__{s}.json"), "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["plan", "report", "sim-record", "sim-caps"])
    ap.add_argument("dir")
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--galloc")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--markdown")
    ap.add_argument("--out", help="plan: where predictions.json and plan.json go (default: DIR)")
    ap.add_argument("--predictions", help="report: galloc's predictions (default: DIR/predictions.json)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--device-memory", type=int, default=80 << 30)
    ap.add_argument("--setting", help="sim-record, sim-caps: this setting only")
    a = ap.parse_intermixed_args()
    if a.what != "report" and not a.galloc:
        ap.error(f"{a.what} needs --galloc")
    if a.what == "plan":
        plan(a.dir, a.galloc, a.jobs, a.out or a.dir)
    elif a.what == "report":
        report(a.dir, a.predictions or os.path.join(a.dir, "predictions.json"), a.markdown, a.check)
    elif a.what == "sim-record":
        sim_record(a.dir, a.galloc, a.traces, a.device_memory, a.setting)
    else:
        sim_caps(a.dir, a.galloc, a.setting)


if __name__ == "__main__":
    main()
