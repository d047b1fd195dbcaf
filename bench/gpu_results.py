"""The GPU rows of bench/RESULTS.md: galloc beside PyTorch's own allocator and
sleep on the real driver, from one tests/gpu/device_check.sh run.

    python3 bench/gpu_results.py ingest OUT     # keep a run's figures in bench/gpu/
    python3 bench/gpu_results.py show           # print the section

bench/summarize.py appends section() to RESULTS.md, so the GPU figures stay
beside the CPU ones when bench/run rewrites the file, until a new GPU run is
ingested. Without a run the section says so and names the command.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "gpu")
FILES = ("speed_pairs.json", "speed_step_native.json", "speed_step_galloc.json", "sleep.json")
COMMAND = ("tests/gpu/prepare.sh .gpu; PARTS=\"speed sleep\" bash tests/gpu/device_check.sh .gpu OUT; "
           "python3 bench/gpu_results.py ingest OUT")


def _load(name):
    p = os.path.join(STORE, name)
    return json.load(open(p)) if os.path.exists(p) else None


def _pairs(doc):
    rows = ["| sequence | threads | PyTorch native ns | galloc ns | galloc's speedup |", "|---|---|---:|---:|---:|"]
    for r in doc["rows"]:
        rows.append(f"| {r['sequence']} | {r['threads']} | {r['native_ns']:.1f} | {r['galloc_ns']:.1f} | "
                    f"{r['speedup']:.2f}x |")
    return (f"malloc+free pairs per thread, cache hits, {doc['device']}, PyTorch {doc['torch']}, one process: "
            "`raw_alloc_with_stream` + `raw_delete` beside `galloc_malloc` + `galloc_free` (tests/gpu/speed.py). "
            "Goal: galloc at least 5x faster.\n\n" + "\n".join(rows))


def _step(native, ours):
    d = ours["median_step_s"] / native["median_step_s"] - 1
    return ("A decoder training step (tests/gpu/speed.py step), median of 20, each process on its own allocator. "
            "Goal: within 1 % of the native step time at equal or lower peak reserved.\n\n"
            "| allocator | median step ms | peak reserved GiB |\n|---|---:|---:|\n"
            f"| PyTorch native | {1e3 * native['median_step_s']:.2f} | {native['peak_reserved'] / 2**30:.3f} |\n"
            f"| galloc | {1e3 * ours['median_step_s']:.2f} ({100 * d:+.2f} %) | {ours['peak_reserved'] / 2**30:.3f} |")


def _sleep(doc):
    """first_sleep rows give GiB_per_s (the call, or the plain pinned copy); sleep_wake rows ms per GiB."""
    rows = ["| benchmark | wall ms | sleep (or copy) GiB/s | wake GiB/s |", "|---|---:|---:|---:|"]
    for b in doc.get("benchmarks", []):
        sleep = b.get("GiB_per_s") or (1e3 / b["sleep_ms_per_GiB"] if b.get("sleep_ms_per_GiB") else None)
        wake = 1e3 / b["wake_ms_per_GiB"] if b.get("wake_ms_per_GiB") else None
        rows.append(f"| {b['name']} | {b['real_time']:.3g} | {f'{sleep:.3g}' if sleep else '-'} | "
                    f"{f'{wake:.3g}' if wake else '-'} |")
    return ("`galloc_sleep` on the real driver (bench/sleep.cc with GALLOC_BENCH_BACKEND=cuda). "
            "Goal: first sleep at least 20 GiB/s, wake at least 40 GiB/s on an H200.\n\n" + "\n".join(rows))


def section():
    """The markdown section for RESULTS.md."""
    parts = ["## On a GPU: beside PyTorch's allocator, and sleep on the real driver", ""]
    pairs, native, ours, sleep = (_load(f) for f in FILES)
    if not any((pairs, native, ours, sleep)):
        return "\n".join(parts + ["Not measured yet (no GPU run ingested). The command: `" + COMMAND + "`."])
    meta = _load("ingested.json") or {}
    parts.append(f"Ingested from one device_check.sh run ({meta.get('date', '?')}, galloc {meta.get('commit', '?')}).")
    for body in ((pairs and _pairs(pairs)), (native and ours and _step(native, ours)), (sleep and _sleep(sleep))):
        if body:
            parts += ["", body]
    return "\n".join(parts)


def ingest(out):
    os.makedirs(STORE, exist_ok=True)
    got = [f for f in FILES if os.path.exists(os.path.join(out, f))]
    if not got:
        sys.exit(f"{out}: none of {', '.join(FILES)}")
    for f in FILES:  # one run's figures, never mixed with an older run's
        p = os.path.join(STORE, f)
        if os.path.exists(p):
            os.remove(p)
    for f in got:
        shutil.copy(os.path.join(out, f), STORE)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    date = subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M UTC"], capture_output=True, text=True)
    json.dump({"files": got, "commit": commit.stdout.strip(), "date": date.stdout.strip()},
              open(os.path.join(STORE, "ingested.json"), "w"), indent=1)
    print(section())


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "ingest":
        ingest(sys.argv[2])
    elif sys.argv[1:] == ["show"]:
        print(section())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
