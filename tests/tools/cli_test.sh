#!/usr/bin/env bash
# cli_test.sh: the galloc binary end to end: exit codes 0/1/2, side-by-side
# columns, events/s, the --json document (parsed back with python3's json),
# garbled and truncated inputs (exit 2 with file and line, never a crash),
# standard input, --plot, OOM classification, galloc fit (ranking, JSON, the
# bisected minimum cross-checked with galloc replay), and a generated
# 1,000,000-event trace.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

# ---- exit code 0: replayed without OOM --------------------------------------
expect_exit 0 "rmm example" -- "$GALLOC" replay "$EX/rmm_small.csv"
expect_in "$TMP/out" "peak requested" "rmm table"
expect_in "$TMP/out" "peak reserved" "rmm table"
expect_in "$TMP/out" "reserved but unallocated" "rmm table"
expect_in "$TMP/out" "events/s .* [kM]/s" "events/s reported"
[ -s "$TMP/err" ] && fail "stderr not empty for a redirected run (no progress bar off a terminal): $(cat "$TMP/err")"
expect_exit 0 "torch example" -- "$GALLOC" replay "$EX/torch_snapshot.pickle"
expect_in "$TMP/out" "torch_snapshot.pickle device 0" "snapshot device 0"
expect_in "$TMP/out" "torch_snapshot.pickle device 1" "snapshot device 1"
expect_exit 0 "stdin" -- bash -c "cat '$EX/rmm_small.csv' | '$GALLOC' replay -"
expect_in "$TMP/out" "(rmm, 160 events" "stdin read"
expect_exit 0 "help" -- "$GALLOC" replay --help
expect_in "$TMP/out" "usage: galloc replay" "help text"
expect_exit 0 "version" -- "$GALLOC" --version
for cmd in help "replay --help"; do # both usages list every format (tools/readers/formats.def)
    expect_exit 0 "$cmd" -- "$GALLOC" $cmd
    for f in rmm torch galloc umpire kineto; do expect_in "$TMP/out" "^  $f  " "$cmd names format $f"; done
done

# ---- exit code 1: an OOM, with side-by-side columns -------------------------
expect_exit 1 "fragmentation example" -- "$GALLOC" replay --conf "" --conf expandable_segments:True \
    --conf max_split_size_mb:512 "$EX/fragmentation.trace"
head -2 "$TMP/out" | tail -1 | grep -q "defaults .*expandable_segments:True .*max_split_size_mb:512" ||
    fail "three column headers: $(head -2 "$TMP/out")"
[ "$(grep -c '^verdict ' "$TMP/out")" -eq 1 ] || fail "one verdict row"
[ "$(grep '^verdict ' "$TMP/out" | grep -o 'fits\|OOM' | wc -l)" -eq 3 ] || fail "three verdicts: $(grep '^verdict' "$TMP/out")"
expect_in "$TMP/out" "CUDA out of memory. Tried to allocate" "PyTorch's OOM message"
expect_in "$TMP/out" "OOM at event [0-9,]* (line [0-9]*) after \"step" "OOM event, line and annotation"
# The README's main command and the figures the README quotes from it.
expect_exit 1 "README main command" -- "$GALLOC" replay --conf "" --conf expandable_segments:True \
    "$EX/fragmentation.trace"
expect_in "$TMP/out" "^\[defaults\] OOM at event 1,601 " "README: the defaults' first OOM"
expect_in "$TMP/out" "7.96 GiB is reserved by PyTorch but unallocated" "README: reserved but unallocated"
expect_in "$TMP/out" "^verdict  *OOM (fragmentation)  *fits$" "README: expandable_segments:True fits"
printf 'galloc-trace 1 device_memory 1GiB\nalloc 1 2GiB\n' >"$TMP/oom.trace"
expect_exit 1 "oom trace" -- "$GALLOC" replay "$TMP/oom.trace"
expect_exit 1 "device memory option" -- "$GALLOC" replay --device-memory 256MiB "$EX/rmm_small.csv"
expect_exit 0 "device memory option overrides" -- "$GALLOC" replay --device-memory 2GiB "$TMP/oom.trace" --device-memory 4GiB

# ---- exit code 2: usage and bad input ---------------------------------------
expect_exit 2 "no trace" -- "$GALLOC" replay
expect_exit 2 "unknown option" -- "$GALLOC" replay --bogus "$EX/rmm_small.csv"
expect_exit 2 "bad size" -- "$GALLOC" replay --device-memory 12XB "$EX/rmm_small.csv"
expect_in "$TMP/err" "bad --device-memory" "bad size message"
expect_exit 2 "bad format" -- "$GALLOC" replay --format xml "$EX/rmm_small.csv"
expect_exit 2 "missing file" -- "$GALLOC" replay "$TMP/does-not-exist.csv"
expect_in "$TMP/err" "does-not-exist.csv: cannot open" "missing file message"
expect_exit 2 "unknown command" -- "$GALLOC" frobnicate
expect_exit 2 "bad conf" -- "$GALLOC" replay --conf "" --conf "no_such_key:1" "$EX/rmm_small.csv"
expect_in "$TMP/err" "no_such_key" "creation failure names the key"
# a configuration never made gets no column of "-" (issue 38): left out, said on stderr
expect_in "$TMP/out" "^configuration \"no_such_key:1\" could not be made: left out (said on stderr)$" "creation failure left out of the table"
grep -q "verdict .*  error" "$TMP/out" && fail "creation failure: a column of - in the table"
expect_in "$TMP/out" "fits" "the other column still ran"
head -c 2000 "$EX/rmm_small.csv" >"$TMP/cut.csv"
expect_exit 2 "truncated csv" -- "$GALLOC" replay "$TMP/cut.csv"
expect_in "$TMP/err" "cut.csv:[0-9]*: .*fields" "truncated csv names the line"
head -c 5000 "$EX/torch_snapshot.pickle" >"$TMP/cut.pickle"
expect_exit 2 "truncated pickle" -- "$GALLOC" replay "$TMP/cut.pickle"
expect_in "$TMP/err" "cut.pickle: byte [0-9]*: truncated" "truncated pickle names the offset"
printf 'galloc-trace 1\nalloc 1 10\nalloc 2 zz\nalloc 3 10\n' >"$TMP/bad.trace"
expect_exit 2 "garbled text trace" -- "$GALLOC" replay "$TMP/bad.trace"
expect_in "$TMP/err" "bad.trace:3: bad size" "garbled text names the line"
# Umpire replay log and Kineto (profiler) JSON: truncated mid-object and
# garbled, exit 2 with the file and where, as for the formats above.
U='{"kind":"replay","uid":1,"timestamp":1,"event":"allocate","payload":{"allocator_ref":"0x1","size":134},"result":{"memory_ptr":"0x2000"}}'
printf '%s\n%s\n' "$U" '{"kind":"replay","uid":1,"timestamp":2,"event":"allocate","payload":{"allocator_ref":"0x1","si' >"$TMP/cut.umpire"
expect_exit 2 "truncated umpire log" -- "$GALLOC" replay --format umpire "$TMP/cut.umpire"
expect_in "$TMP/err" "cut.umpire:2:" "truncated umpire names the line"
printf '%s\n%s\n' "$U" '{"kind":"replay","uid":1,"event":"deallocate",,"payload":{}}' >"$TMP/bad.umpire"
expect_exit 2 "garbled umpire log" -- "$GALLOC" replay --format umpire "$TMP/bad.umpire"
expect_in "$TMP/err" "bad.umpire:2:" "garbled umpire names the line"
K='{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 100, "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Addr": 4096, "Device Type": 1, "Device Id": 0}}'
printf '{"schemaVersion": 1, "traceEvents": [\n%s,\n%s' "$K" '{"ph": "i", "cat": "cpu_instant_event", "name": "[mem' >"$TMP/cut.json"
expect_exit 2 "truncated kineto trace" -- "$GALLOC" replay --format kineto "$TMP/cut.json"
expect_in "$TMP/err" "cut.json: byte [0-9]*: unterminated string" "truncated kineto names the offset"
printf '{"schemaVersion": 1, "traceEvents": [\n%s,\n{"ph": "i" "name": 3}]}\n' "$K" >"$TMP/bad.json"
expect_exit 2 "garbled kineto trace" -- "$GALLOC" replay --format kineto "$TMP/bad.json"
expect_in "$TMP/err" "bad.json: byte [0-9]*: expected" "garbled kineto names the offset"
for f in cut.umpire bad.umpire cut.json bad.json; do # and through auto-detection and galloc fit
    expect_exit 2 "auto-detected $f" -- "$GALLOC" replay "$TMP/$f"
    expect_exit 2 "fit $f" -- "$GALLOC" fit --max-configs 1 "$TMP/$f"
done
head -c 3000 /dev/urandom >"$TMP/noise.bin"
expect_exit 2 "random bytes" -- "$GALLOC" replay "$TMP/noise.bin"
printf '\x80\x04\x95' >"$TMP/tiny.pickle"
expect_exit 2 "three-byte pickle" -- "$GALLOC" replay "$TMP/tiny.pickle"
# Every 50th truncation of each example through the binary: 0, 1 or 2, never a signal.
for f in rmm_small.csv fragmentation.trace torch_snapshot.pickle; do
    size=$(wc -c <"$EX/$f")
    for ((n = 0; n < size; n += size / 50 + 1)); do
        head -c "$n" "$EX/$f" >"$TMP/t.$f"
        "$GALLOC" replay "$TMP/t.$f" >/dev/null 2>&1
        rc=$?
        [ "$rc" -le 2 ] || fail "$f cut at $n bytes: exit $rc"
    done
done

# ---- --json: one document, PyTorch's keys -----------------------------------
expect_exit 2 "json (one file missing)" -- "$GALLOC" replay --json --conf "" --conf expandable_segments:True \
    "$EX/fragmentation.trace" "$EX/rmm_small.csv" "$TMP/does-not-exist.csv"
"$PY" - "$TMP/out" <<'EOF' || fail "json document"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["tool"] == "galloc replay" and doc["backend"] == "sim", doc.keys()
traces = doc["traces"]
assert len(traces) == 3, len(traces)
assert traces[2]["error"] and "cannot open" in traces[2]["error"], traces[2]
for t in traces[:2]:
    assert t["error"] is None
    assert [r["conf"] for r in t["results"]] == ["", "expandable_segments:True"], t["results"]
    for r in t["results"]:
        for k in ("memory_stats", "peak_requested_bytes", "peak_reserved_bytes", "ooms", "events", "seconds", "conf"):
            assert k in r, k
        ms = r["memory_stats"]
        assert len(ms) == 123, len(ms)
        keys = list(ms)
        assert keys == sorted(keys), "not in PyTorch's (sorted) order"
        assert keys[0] == "active.all.allocated" and keys[-1] == "segment.small_pool.peak", keys[:1] + keys[-1:]
        assert r["peak_reserved_bytes"] == ms["reserved_bytes.all.peak"]
        assert r["peak_requested_bytes"] == ms["requested_bytes.all.peak"]
        assert r["events"] == t["events"] and r["events"] > 0
        assert r["seconds"] > 0 and r["events_per_second"] > 0
        assert ms["num_ooms"] == r["ooms_total"]
        for o in r["ooms"]:
            assert set(("event", "size", "message")) <= set(o), o
            assert o["message"].startswith("CUDA out of memory. Tried to allocate"), o["message"]
frag = traces[0]["results"]
assert frag[0]["ooms_total"] > 0 and frag[0]["verdict"] == "OOM (fragmentation)", frag[0]["verdict"]
EOF
expect_exit 2 "json with a creation failure" -- "$GALLOC" replay --json --conf bogus:1 "$EX/rmm_small.csv"
"$PY" -c "
import json,sys
r = json.load(open('$TMP/out'))['traces'][0]['results'][0]
assert r['create_error'] and r['memory_stats'] is None, r
" || fail "json create_error"

# ---- --plot and --snapshot --------------------------------------------------
expect_exit 1 "plot" -- "$GALLOC" replay --plot "$TMP/mem.png" --conf "" --conf expandable_segments:True \
    "$EX/fragmentation.trace"
[ "$(head -c 4 "$TMP/mem.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "plot is not a PNG"
expect_exit 0 "plot per device" -- "$GALLOC" replay --plot "$TMP/dev.svg" "$EX/torch_snapshot.pickle"
[ -s "$TMP/dev.1.svg" ] && [ -s "$TMP/dev.2.svg" ] || fail "one numbered plot per device: $(ls "$TMP")"
# The snapshot writer is always built in (GA_TOOLS_HAVE_SNAPSHOT in tools/BUILD):
# a "not available yet" here is a regression, not a configuration to accept.
expect_exit 0 "snapshot" -- "$GALLOC" replay --snapshot "$TMP/s.pickle" "$EX/rmm_small.csv"
"$PY" -c "import pickle; d = pickle.load(open('$TMP/s.pickle', 'rb')); assert 'device_traces' in d" ||
    fail "snapshot does not load with pickle"
"$GALLOC" replay "$TMP/s.pickle" >/dev/null 2>&1 || fail "the written snapshot does not replay"

# ---- OOM classification in the replay report --------------------------------
# load_order FILE HEADER BIG SMALL: BIG 530 MiB buffers allocated and freed,
# then SMALL 270 MiB ones that the split remainders cannot hold.
load_order() {
    { printf '%b' "$2"
      for i in $(seq 1 "$3"); do echo "alloc $i 530MiB"; done
      for i in $(seq 1 "$3"); do echo "free $i"; done
      for i in $(seq 0 $(($4 - 1))); do echo "alloc $((1000 + i)) 270MiB"; done; } >"$1"
}
load_order "$TMP/lo8.trace" 'galloc-trace 1 device_memory 8GiB\n' 15 28
expect_exit 1 "fragmentation OOM classified" -- "$GALLOC" replay "$TMP/lo8.trace"
expect_in "$TMP/out" "OOM at event 45 (line 47), 270.00 MiB requested" "load-order OOM event"
expect_in "$TMP/out" "fragmentation: 270.00 MiB requested <= 3.81 GiB cached free + 242.00 MiB device free, but the largest free block is 260.00 MiB" "fragmentation figures"
expect_in "$TMP/out" "OOM (fragmentation)" "fragmentation verdict"
expect_exit 1 "genuine OOM classified" -- "$GALLOC" replay "$TMP/oom.trace"
expect_in "$TMP/out" "genuine: 0 bytes live + 2.00 GiB requested exceed the 1024.00 MiB device" "genuine figures"
expect_in "$TMP/out" "OOM (genuine)" "genuine verdict"
# Under a memory fraction only the room below the cap counts: 512 MiB live +
# 3,700 MiB exceed 0.5 x 8 GiB (genuine, though the device has 7.5 GiB free),
# and the advice fits the class (no allocator setting for a genuine OOM).
printf 'galloc-trace 1 device_memory 8GiB\nset_fraction 0.5\nalloc 1 512MiB\nalloc 2 3700MiB\n' >"$TMP/cap.trace"
expect_exit 1 "capped OOM is genuine" -- "$GALLOC" replay "$TMP/cap.trace"
expect_in "$TMP/out" "genuine: 512.00 MiB live + 3.61 GiB requested exceed the 4.00 GiB the memory fraction allows (0.5 of 8.00 GiB); no allocator setting helps (a larger set_per_process_memory_fraction" "capped genuine figures"
expect_in "$TMP/out" "OOM (genuine)" "capped genuine verdict"
grep "^  genuine:" "$TMP/out" | grep -q "expandable_segments\|max_split" && fail "a genuine OOM's advice names an allocator setting"
expect_exit 1 "conf fraction OOM is genuine" -- "$GALLOC" replay --conf per_process_memory_fraction:0.5 \
    "$TMP/cap.trace"
expect_in "$TMP/out" "exceed the 4.00 GiB the memory fraction allows" "conf fraction classified under the cap"
load_order "$TMP/capfrag.trace" 'galloc-trace 1 device_memory 8GiB\nset_fraction 0.5\n' 7 9
expect_exit 1 "capped fragmentation" -- "$GALLOC" replay "$TMP/capfrag.trace"
expect_in "$TMP/out" "fragmentation: 270.00 MiB requested <= 1.78 GiB cached free + 116.00 MiB free under the memory fraction (0.5 of 8.00 GiB = 4.00 GiB), but the largest free block is 260.00 MiB; settings can help (galloc fit: expandable_segments:True, max_split_size_mb)" "capped fragmentation figures"
expect_exit 1 "capped oom in json" -- "$GALLOC" replay --json "$TMP/cap.trace"
"$PY" -c "
import json
o = json.load(open('$TMP/out'))['traces'][0]['results'][0]['ooms'][0]
assert o['class'] == 'genuine' and o['memory_fraction'] == 0.5 and o['limit_bytes'] == 4 << 30, o
assert o['device_free_bytes'] == (8192 - 512) << 20 and o['usable_free_bytes'] == (4096 - 512) << 20, o
" || fail "json capped oom"
expect_exit 1 "oom class in json" -- "$GALLOC" replay --json "$TMP/lo8.trace"
"$PY" -c "
import json
o = json.load(open('$TMP/out'))['traces'][0]['results'][0]['ooms'][0]
assert o['class'] == 'fragmentation' and o['event'] == 45, o
assert o['cached_free_bytes'] == 15 * 260 << 20 and o['largest_free_block'] == 260 << 20, o
assert o['live_bytes'] == 15 * 270 << 20 and o['device_free_bytes'] == (8192 - 15 * 530) << 20, o
assert o['device_total_bytes'] == 8 << 30, o
" || fail "json oom class"

# ---- galloc fit ---------------------------------------------------------------
expect_exit 0 "fit load order" -- "$GALLOC" fit --jobs 2 "$TMP/lo8.trace"
expect_in "$TMP/out" "40 configurations, 7 fit" "fit counts"
expect_in "$TMP/out" "^   1  yes .*7.77 GiB .*7.77 GiB  -  .*expandable_segments:True$" "fit rank 1"
expect_in "$TMP/out" "Under the defaults the job runs out of memory at event 45" "defaults OOM"
expect_in "$TMP/out" "fragmentation: 270.00 MiB requested" "defaults OOM class"
expect_in "$TMP/out" 'Fits: export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"' "winning setting"
[ -s "$TMP/err" ] && fail "fit: stderr not empty off a terminal: $(cat "$TMP/err")"
expect_exit 0 "fit json" -- "$GALLOC" fit --json --bisect all --jobs 2 "$TMP/lo8.trace"
"$PY" - "$TMP/out" "$TMP/bisect.txt" <<'EOF' || fail "fit json document"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["tool"] == "galloc fit" and doc["fits"] is True, doc.keys()
assert doc["pytorch_cuda_alloc_conf"] == "expandable_segments:True", doc["pytorch_cuda_alloc_conf"]
assert doc["device_memory"] == 8 << 30 and doc["events"] == 58 and doc["configurations"] == 40
rs = doc["results"]
assert [r["rank"] for r in rs] == list(range(1, 41))
assert sum(r["fits"] for r in rs) == 7
fit = [r for r in rs if r["fits"]]
assert rs[:7] == fit, "fitting configurations first"
assert all(a["peak_reserved_bytes"] <= b["peak_reserved_bytes"] for a, b in zip(fit, fit[1:])), "smallest peak first"
for r in rs:
    for k in ("conf", "stage", "peak_reserved_bytes", "peak_allocated_bytes", "fragmentation_at_peak",
              "external_fragmentation_at_peak", "min_device_memory", "first_oom", "replays"):
        assert k in r, k
    assert r["min_device_memory_searched"] is True
    assert (r["first_oom"] is None) == r["fits"], r
d = [r for r in rs if r["conf"] == ""][0]
assert d["first_oom"]["event"] == 45 and d["first_oom"]["class"] == "fragmentation", d["first_oom"]
assert d["min_device_memory"] == (15 * 530 + 13 * 270) << 20, d["min_device_memory"]
assert rs[0]["min_device_memory"] == 7960 << 20, rs[0]["min_device_memory"]
with open(sys.argv[2], "w") as f:  # configurations and sizes to cross-check with galloc replay
    for r in (rs[0], d, fit[-1]):
        f.write("%s %d\n" % (r["conf"] or "-", r["min_device_memory"]))
EOF
# The bisected minimum, cross-checked with galloc replay: fits there, not 2 MiB below.
while read -r conf size; do
    [ "$conf" = "-" ] && conf=""
    expect_exit 0 "replay '$conf' at its fit minimum $size" -- "$GALLOC" replay --conf "$conf" \
        --device-memory "$size" "$TMP/lo8.trace"
    expect_exit 1 "replay '$conf' 2 MiB below its fit minimum" -- "$GALLOC" replay --conf "$conf" \
        --device-memory "$((size - 2097152))" "$TMP/lo8.trace"
done <"$TMP/bisect.txt"
[ "$(wc -l <"$TMP/bisect.txt")" -eq 3 ] || fail "three bisection cross-checks"
# --conf: the settings given, no search; each bisected to the same minimum the search found.
expect_exit 0 "fit --conf" -- "$GALLOC" fit --json --jobs 2 --conf "" --conf expandable_segments:True "$TMP/lo8.trace"
"$PY" - "$TMP/out" "$TMP/bisect.txt" <<'EOF' || fail "fit --conf document"
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
assert sorted(r["conf"] for r in rs) == ["", "expandable_segments:True"], [r["conf"] for r in rs]
assert all(r["stage"] == "given" for r in rs), [r["stage"] for r in rs]
searched = dict(l.split() for l in open(sys.argv[2]))
for r in rs:
    assert r["min_device_memory"], r
    key = r["conf"] or "-"
    if key in searched:
        assert r["min_device_memory"] == int(searched[key]), (r["conf"], r["min_device_memory"], searched[key])
EOF
expect_exit 2 "fit: a --conf too long" -- "$GALLOC" fit --conf "max_split_size_mb:$(printf '1%.0s' $(seq 200))" "$TMP/lo8.trace"
expect_in "$TMP/err" "bad --conf" "fit: the long --conf named"
expect_exit 2 "fit: a bad --conf" -- "$GALLOC" fit --conf bogus_key:1 "$TMP/lo8.trace"
expect_exit 1 "fit: nothing fits" -- "$GALLOC" fit --bisect 1 "$TMP/oom.trace"
expect_in "$TMP/out" '^No configuration fits on 1024.00 MiB: genuine, the job needs more memory than the device has whatever the settings.$' "no fit, genuine verdict"
expect_in "$TMP/out" '^The smallest device it fits: 2.00 GiB, under "(defaults)": 1024.00 MiB (1,073,741,824 bytes) more than 1024.00 MiB.$' "no fit, shortfall in bytes"
expect_in "$TMP/out" "genuine: 0 bytes live + 2.00 GiB requested" "no fit, genuine"
expect_exit 0 "fit device memory option" -- "$GALLOC" fit --device-memory 2GiB --max-configs 3 "$TMP/oom.trace"
expect_in "$TMP/out" "3 configurations, 3 fit" "max-configs and device memory"
# examples/fit: fails under the defaults on 80 GiB with most of the cached
# memory unallocated, and galloc fit finds the setting that fits.
expect_exit 1 "fit example fails under defaults" -- "$GALLOC" replay "$EX/fit/load_order.trace"
expect_in "$TMP/out" "38.09 GiB is reserved by PyTorch but unallocated" "example: unallocated reserved memory"
expect_in "$TMP/out" "OOM (fragmentation)" "example: fragmentation verdict"
expect_exit 0 "fit example" -- "$GALLOC" fit "$EX/fit/load_order.trace"
expect_in "$TMP/out" 'Fits: export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"' "example: winning setting"
expect_exit 0 "fit example winner replays" -- "$GALLOC" replay --conf expandable_segments:True "$EX/fit/load_order.trace"
expect_exit 0 "fit example max_split replays" -- "$GALLOC" replay --conf max_split_size_mb:512 "$EX/fit/load_order.trace"
# The shell must not change the answer: PYTORCH_CUDA_ALLOC_CONF set in the
# environment is not read by replay or fit (the reports are byte for byte the
# same, timings aside); --env applies it and names it.
untimed() { sed -E 's/[0-9.]+ [kM]?\/s//g; s/in [0-9.]+ s/in - s/g; s/(replay time +)[0-9.]+ s/\1- s/; s/"(read_)?seconds": [0-9.e-]+//g; s/"events_per_second": [0-9.e-]+//g' "$1"; }
for run in "1 replay" "1 replay --json" "0 fit --jobs 2 --bisect 1" "0 fit --json --jobs 2 --bisect 1"; do
    code=${run%% *} cmd=${run#* }
    expect_exit "$code" "$cmd without the variable" -- env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF -u GALLOC_CONF \
        "$GALLOC" $cmd "$TMP/lo8.trace"
    untimed "$TMP/out" >"$TMP/env_unset"
    expect_exit "$code" "$cmd with the variable" -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
        "$GALLOC" $cmd "$TMP/lo8.trace"
    untimed "$TMP/out" >"$TMP/env_set"
    cmp -s "$TMP/env_unset" "$TMP/env_set" || fail "$cmd: the environment changed the report: $(diff "$TMP/env_unset" "$TMP/env_set" | head -5)"
    expect_in "$TMP/err" "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is set and not applied (--env applies it)" \
        "$cmd: the ignored variable is said on stderr"
done
expect_exit 0 "fit --env" -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$GALLOC" fit --env --jobs 2 \
    --bisect 1 "$TMP/lo8.trace"
expect_in "$TMP/out" "^Every configuration replayed over the environment (--env): PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True$" "fit --env header"
expect_in "$TMP/out" "^   1  yes .* (environment)$" "fit --env: the environment's column is not called defaults"
expect_in "$TMP/out" "^Fits under the environment's settings as they are: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True$" "fit --env verdict"
grep -q "defaults" "$TMP/out" && fail "fit --env calls a column defaults: $(grep defaults "$TMP/out")"
expect_exit 0 "replay --env" -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$GALLOC" replay --env \
    --conf max_split_size_mb:512 "$TMP/lo8.trace"
expect_in "$TMP/out" "^  \[1\] max_split_size_mb:512 + PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True$" "replay --env label"
expect_exit 0 "replay --env --json" -- env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$GALLOC" replay --env \
    --json "$TMP/lo8.trace"
expect_in "$TMP/out" '"environment": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}' "replay --env --json environment"
# galloc fit --plot: the defaults and the winner over time, the defaults' OOM
# marked with its class; a bad name is refused before the search.
expect_exit 0 "fit plot png" -- "$GALLOC" fit --plot "$TMP/fit.png" "$TMP/lo8.trace"
[ "$(head -c 8 "$TMP/fit.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "fit plot is not a PNG"
expect_in "$TMP/out" "^Plot (the job's own run and the answer over time): $TMP/fit.png$" "fit plot named in the report"
expect_exit 0 "fit plot svg, json" -- "$GALLOC" fit --json --plot "$TMP/fit.svg" "$TMP/lo8.trace"
"$PY" - "$TMP/out" "$TMP/fit.svg" <<'EOF' || fail "fit plot svg / json plots"
import json, sys, xml.etree.ElementTree as ET
doc = json.load(open(sys.argv[1]))
assert doc["plots"] == [sys.argv[2]], doc["plots"]
assert ET.parse(sys.argv[2]).getroot().tag == "{http://www.w3.org/2000/svg}svg"
EOF
expect_exit 1 "fit plot when nothing fits" -- "$GALLOC" fit --bisect 0 --plot "$TMP/none.png" "$TMP/oom.trace"
[ -s "$TMP/none.png" ] || fail "fit plot written when nothing fits"
expect_exit 0 "fit plot per device" -- "$GALLOC" fit --bisect 0 --max-configs 4 --plot "$TMP/fdev.svg" \
    "$EX/torch_snapshot.pickle"
[ -s "$TMP/fdev.1.svg" ] && [ -s "$TMP/fdev.2.svg" ] || fail "fit: one numbered plot per device: $(ls "$TMP")"
expect_exit 2 "fit plot bad extension" -- "$GALLOC" fit --plot "$TMP/fit.jpg" "$TMP/lo8.trace"
expect_in "$TMP/err" "fit.jpg: unknown plot format (the file name must end in .png or .svg)" "bad extension message"
[ -s "$TMP/out" ] && fail "fit plot bad extension: refused before the search, yet printed: $(head -3 "$TMP/out")"
expect_exit 2 "fit plot unwritable" -- "$GALLOC" fit --plot "$TMP/no/such/dir/fit.png" "$TMP/lo8.trace"
expect_in "$TMP/err" "fit.png: cannot create: No such file or directory" "unwritable plot message"
# A PyTorch snapshot's recorded allocator_settings are replayed first as the job's own.
cat >"$TMP/mksnap.py" <<'EOF'
import pickle, sys
path, text, es, ms, gc, rd = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
MiB, tr = 1 << 20, []
def e(action, addr, size):
    tr.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 1000 + len(tr), "frames": []})
for i in range(15):
    e("alloc", (1 << 40) + i * 1024 * MiB, 530 * MiB)
for i in range(15):
    e("free_requested", (1 << 40) + i * 1024 * MiB, 530 * MiB)
    e("free_completed", (1 << 40) + i * 1024 * MiB, 530 * MiB)
for i in range(28):
    e("alloc", (2 << 40) + i * 1024 * MiB, 270 * MiB)
divs = [int(x) for x in rd.split(",")] if rd else [0] * 16
settings = {"PYTORCH_CUDA_ALLOC_CONF": text, "max_split_size": ms, "garbage_collection_threshold": gc,
            "expandable_segments": es, "roundup_power2_divisions": {str(1 << i): divs[i] for i in range(16)}}
if len(sys.argv) > 7:  # a 2.9+ field
    settings["graph_capture_record_stream_reuse"] = sys.argv[7] == "1"
pickle.dump({"segments": [], "device_traces": [tr], "allocator_settings": settings}, open(path, "wb"))
EOF
"$PY" "$TMP/mksnap.py" "$TMP/s1.pickle" "max_split_size_mb:512" 0 $((512 << 20)) 0.0 "" || fail "mksnap s1"
"$PY" "$TMP/mksnap.py" "$TMP/s2.pickle" "roundup_power2_divisions:[1:1,256:2,>:4]" 0 -1 0.6 \
    "1,1,1,1,1,1,1,1,2,4,4,4,4,4,4,4" || fail "mksnap s2"
expect_exit 0 "fit recorded settings that fit" -- "$GALLOC" fit --device-memory 8GiB "$TMP/s1.pickle"
expect_in "$TMP/out" 'PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:512"): replayed as "max_split_size_mb:512" at the recorded addresses, rank [0-9]*: fits' "recorded fits"
expect_in "$TMP/out" "Under the defaults the job runs out of memory at event 45" "snapshot defaults OOM"
expect_exit 0 "fit recorded settings json" -- "$GALLOC" fit --json --device-memory 8GiB "$TMP/s2.pickle"
"$PY" -c "
import json
d = json.load(open('$TMP/out'))
want = 'roundup_power2_divisions:[1:1,2:1,4:1,8:1,16:1,32:1,64:1,128:1,256:2,512:4,1024:4,2048:4,4096:4,8192:4,16384:4,32768:4],garbage_collection_threshold:0.6'
assert d['recorded_conf'] == want, d['recorded_conf']
assert d['recorded_pytorch_cuda_alloc_conf'] == 'roundup_power2_divisions:[1:1,256:2,>:4]'
r = [x for x in d['results'] if x['stage'] == 'recorded']
assert len(r) == 1 and r[0]['conf'] == want and not r[0]['fits'], r
assert r[0]['first_oom']['event'] == 12 and r[0]['first_oom']['class'] == 'genuine', r[0]['first_oom']
assert d['configurations'] == 41, d['configurations']
" || fail "recorded settings in json"
expect_exit 0 "fit --no-recorded" -- "$GALLOC" fit --json --no-recorded --device-memory 8GiB "$TMP/s1.pickle"
"$PY" -c "
import json
d = json.load(open('$TMP/out'))
assert d['recorded_conf'] is None and d['configurations'] == 40
assert not [x for x in d['results'] if x['stage'] == 'recorded']
" || fail "--no-recorded"
expect_exit 0 "fit snapshot without settings" -- "$GALLOC" fit --max-configs 2 "$EX/torch_snapshot.pickle"
expect_in "$TMP/out" 'PYTORCH_CUDA_ALLOC_CONF=""): replayed as "(defaults)" at the recorded addresses, rank 1: fits' "example snapshot's default settings"
expect_in "$TMP/out" "^Fits as recorded, under PyTorch's defaults: leave PYTORCH_CUDA_ALLOC_CONF unset$" "the job's own settings fit: kept"
expect_exit 2 "fit: no trace" -- "$GALLOC" fit
expect_exit 2 "fit: missing file" -- "$GALLOC" fit "$TMP/does-not-exist.trace"
expect_in "$TMP/err" "does-not-exist.trace: cannot open" "fit missing file message"
expect_exit 2 "fit: garbled trace" -- "$GALLOC" fit "$TMP/bad.trace"
expect_in "$TMP/err" "bad.trace:3: bad size" "fit garbled names the line"
expect_exit 2 "fit: bad jobs" -- "$GALLOC" fit --jobs 0 "$TMP/lo8.trace"
expect_exit 2 "fit: bad bisect" -- "$GALLOC" fit --bisect x "$TMP/lo8.trace"
expect_exit 2 "fit: bad size" -- "$GALLOC" fit --device-memory 12XB "$TMP/lo8.trace"
expect_exit 0 "fit help" -- "$GALLOC" help fit
expect_in "$TMP/out" "usage: galloc fit" "fit help text"

# ---- a snapshot's recorded settings (s1.pickle records max_split_size_mb:512) --
expect_exit 0 "replay under the recorded settings" -- "$GALLOC" replay --device-memory 8GiB "$TMP/s1.pickle"
expect_in "$TMP/out" 'settings from the snapshot: max_split_size_mb:512 (recorded PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:512"' "settings line"
expect_in "$TMP/out" '^ *recorded$' "the column is the recorded run"
expect_exit 1 "--no-recorded replays the defaults" -- "$GALLOC" replay --no-recorded --device-memory 8GiB "$TMP/s1.pickle"
expect_in "$TMP/out" '^ *defaults$' "--no-recorded: the column is PyTorch's defaults"
expect_in "$TMP/out" "OOM at event 45" "defaults OOM without the recorded settings"
expect_exit 1 "--conf wins over the recorded settings" -- "$GALLOC" replay --conf "" --device-memory 8GiB "$TMP/s1.pickle"
expect_in "$TMP/out" '^ *defaults$' "--conf \"\": the column is PyTorch's defaults, not the recorded run"
expect_exit 0 "recorded settings in json" -- "$GALLOC" replay --json --device-memory 8GiB "$TMP/s1.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces'][0]
assert t['settings_from_snapshot'] == 'max_split_size_mb:512', t['settings_from_snapshot']
assert [(r['conf'], r['recorded'], r['label']) for r in t['results']] == [('max_split_size_mb:512', True, 'recorded')], t['results']
" || fail "settings_from_snapshot in json"
# A 2.9+ snapshot's graph_capture_record_stream_reuse is replayed as recorded
# and kept in the snapshot galloc writes.
"$PY" "$TMP/mksnap.py" "$TMP/s3.pickle" "max_split_size_mb:512,graph_capture_record_stream_reuse:True" 0 $((512 << 20)) \
    0.0 "" 1 || fail "mksnap s3"
expect_exit 0 "recorded graph_capture_record_stream_reuse" -- "$GALLOC" replay --json --device-memory 8GiB \
    --snapshot "$TMP/s3out.pickle" "$TMP/s3.pickle"
"$PY" -c "
import json, pickle
t = json.load(open('$TMP/out'))['traces'][0]
want = 'max_split_size_mb:512,graph_capture_record_stream_reuse:True'
assert t['settings_from_snapshot'] == want, t['settings_from_snapshot']
s = pickle.load(open('$TMP/s3out.pickle', 'rb'))['allocator_settings']
assert s['graph_capture_record_stream_reuse'] is True, s
assert s['PYTORCH_CUDA_ALLOC_CONF'] == want, s['PYTORCH_CUDA_ALLOC_CONF']
" || fail "graph_capture_record_stream_reuse read from and written to snapshots"
# PyTorch main's keys have no allocator_settings field: they come from the
# recorded text beside the fields (tools/snapshot/settings.c), and the replay
# honours them. s4 ran with throw_on_cudamalloc_oom: once the 8 GiB device is
# full, each new segment is refused before the device (num_oom_rejections),
# where the defaults flush and retry (num_ooms, num_alloc_retries).
"$PY" "$TMP/mksnap.py" "$TMP/s4.pickle" "throw_on_cudamalloc_oom:True" 0 -1 0.0 "" || fail "mksnap s4"
expect_exit 1 "recorded throw_on_cudamalloc_oom" -- "$GALLOC" replay --json --device-memory 8GiB "$TMP/s4.pickle"
cp "$TMP/out" "$TMP/s4.json"
expect_exit 1 "s4 under the defaults" -- "$GALLOC" replay --json --no-recorded --device-memory 8GiB "$TMP/s4.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/s4.json'))['traces'][0]
assert t['settings_from_snapshot'] == 'throw_on_cudamalloc_oom:True', t['settings_from_snapshot']
m = t['results'][0]['memory_stats']
got = (m['num_oom_rejections'], m['num_ooms'], m['num_alloc_retries'], m['num_sync_all_streams'])
assert got == (13, 0, 0, 0), got
d = json.load(open('$TMP/out'))['traces'][0]['results'][0]['memory_stats']
got = (d['num_oom_rejections'], d['num_ooms'], d['num_alloc_retries'], d['num_sync_all_streams'])
assert got == (0, 13, 13, 13), got
" || fail "a recorded throw_on_cudamalloc_oom is replayed"
"$PY" "$TMP/mksnap.py" "$TMP/s5.pickle" \
    "per_process_memory_fraction:0.9,throw_on_cudamalloc_oom:True,expandable_segments_reserve:40G,expandable_segments_reserve_by_class:[a:0.5, b:8G]" \
    1 -1 0.0 "" || fail "mksnap s5"
"$PY" "$TMP/mksnap.py" "$TMP/s6.pickle" "per_process_memory_fraction:0.9,throw_on_cudamalloc_oom:False" 0 -1 0.0 "" ||
    fail "mksnap s6"
for s in s5 s6; do
    expect_exit 1 "recorded $s" -- "$GALLOC" replay --json --device-memory 8GiB "$TMP/$s.pickle"
    cp "$TMP/out" "$TMP/$s.json"
done
"$PY" -c "
import json
t = json.load(open('$TMP/s5.json'))['traces'][0]
want = ('expandable_segments:True,per_process_memory_fraction:0.9,throw_on_cudamalloc_oom:True,'
        'expandable_segments_reserve:40G,expandable_segments_reserve_by_class:[a:0.5,b:8G]')
assert t['settings_from_snapshot'] == want, t['settings_from_snapshot']
t = json.load(open('$TMP/s6.json'))['traces'][0]
assert t['settings_from_snapshot'] == 'throw_on_cudamalloc_oom:False', t['settings_from_snapshot']
" || fail "the reserve keys and the refusal's fraction come from the recorded text"
expect_exit 0 "text trace: no recorded settings" -- "$GALLOC" replay --json "$EX/rmm_small.csv"
"$PY" -c "
import json
assert json.load(open('$TMP/out'))['traces'][0]['settings_from_snapshot'] is None
" || fail "settings_from_snapshot null for a CSV"

# ---- --snapshot-range and --snapshot-max-entries -------------------------------
# Ten 1 MiB blocks (small pool: two per 2 MiB segment), then their frees.
"$PY" -c "
s = 'galloc-trace 1\n' + ''.join('alloc %d 1MiB\n' % i for i in range(1, 11)) + ''.join('free %d\n' % i for i in range(1, 11))
open('$TMP/ten.trace', 'w').write(s)"
expect_exit 0 "snapshot range" -- "$GALLOC" replay --snapshot "$TMP/r.pickle" --snapshot-range 2:4 "$TMP/ten.trace"
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/r.pickle', 'rb'))
got = [(e['action'], e['size']) for e in d['device_traces'][0]]
M = 1 << 20
# no entry of galloc's own at the end: a replay's snapshot holds the trace's entries only
want = [('segment_alloc', 2 * M), ('alloc', M), ('alloc', M), ('segment_alloc', 2 * M), ('alloc', M)]
assert got == want, got
# written after event 4: five live blocks in three segments, listed by
# address: the sim places segments descending (sim_placement:descending), so
# the newest, half-used one comes first
assert [[(b['size'], b['state']) for b in s['blocks']] for s in d['segments']] == [[(M, 'active_allocated'), (M, 'inactive')]] + [[(M, 'active_allocated')] * 2] * 2, d['segments']
assert [s['address'] for s in d['segments']] == sorted(s['address'] for s in d['segments']), d['segments']
" || fail "--snapshot-range 2:4 holds events 2..4"
expect_exit 0 "snapshot max entries" -- "$GALLOC" replay --snapshot "$TMP/m.pickle" --snapshot-max-entries 4 "$TMP/ten.trace"
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/m.pickle', 'rb'))
got = [e['action'] for e in d['device_traces'][0]]
assert got == ['free_requested', 'free_completed', 'free_requested', 'free_completed'], got
assert len(d['segments']) == 5
" || fail "--snapshot-max-entries 4 keeps the last 4 entries"
expect_exit 0 "range and max entries" -- "$GALLOC" replay --snapshot "$TMP/rm.json" --snapshot-range 0: --snapshot-max-entries 3 "$TMP/ten.trace"
"$PY" -c "
import json
assert len(json.load(open('$TMP/rm.json'))['device_traces'][0]) == 3
" || fail "range to the end with max entries, JSON"
expect_exit 2 "range past the trace" -- "$GALLOC" replay --snapshot "$TMP/p.pickle" --snapshot-range 30:40 "$TMP/ten.trace"
expect_in "$TMP/err" "not written: --snapshot-range starts at event 30, after the trace's last event" "range past the end"
expect_exit 2 "bad range" -- "$GALLOC" replay --snapshot "$TMP/p.pickle" --snapshot-range 4:2 "$TMP/ten.trace"
expect_in "$TMP/err" 'bad --snapshot-range "4:2"' "bad range message"
expect_exit 2 "bad max entries" -- "$GALLOC" replay --snapshot "$TMP/p.pickle" --snapshot-max-entries 0 "$TMP/ten.trace"
expect_exit 2 "range without --snapshot" -- "$GALLOC" replay --snapshot-range 1:2 "$TMP/ten.trace"
expect_in "$TMP/err" "need --snapshot FILE" "range without --snapshot message"

# ---- a generated 1,000,000-event trace ---------------------------------------
"$PY" - "$TMP/million.trace" <<'EOF'
import random, sys
rng = random.Random(1)
with open(sys.argv[1], "w") as f:
    w = f.write
    w("galloc-trace 1\n")
    for i in range(500000):
        w("alloc %d %d\n" % (i, rng.choice((512, 4096, 65536, 1 << 20, 3 << 20, 24 << 20))))
        if i >= 1000:
            w("free %d\n" % (i - 1000))
    for i in range(499000, 500000):
        w("free %d\n" % i)
EOF
expect_exit 0 "million events" -- "$GALLOC" replay "$TMP/million.trace"
expect_in "$TMP/out" "1,000,000 events" "million events read"
echo "1,000,000-event trace: $(grep -E '^(replay time|events/s)' "$TMP/out" | tr -s ' ' | tr '\n' ';') $(grep '^read' "$TMP/out")"

finish
