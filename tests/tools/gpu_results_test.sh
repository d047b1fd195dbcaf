#!/usr/bin/env bash
# gpu_results_test.sh: bench/gpu_results.py, which keeps a GPU run's figures
# (tests/gpu/speed.py, the sleep benchmark) for bench/RESULTS.md: without a
# run it names the command; ingested, it shows each figure and the speedup and
# step-time difference computed from them; a second run replaces the first.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"
mkdir -p "$TMP/bench"
cp "$RUNFILES/bench/gpu_results.py" "$TMP/bench/"
G="$TMP/bench/gpu_results.py"
expect_exit 0 "show, nothing ingested" -- "$PY" "$G" show
expect_in "$TMP/out" "Not measured yet .*device_check.sh" "the command is named"
mkdir -p "$TMP/run1"
cat >"$TMP/run1/speed_pairs.json" <<'J'
{"torch": "2.11.0", "device": "NVIDIA H200", "rows": [
 {"sequence": "fixed_4KiB", "threads": 1, "pairs_per_thread": 10, "native_ns": 400.0, "galloc_ns": 50.0, "speedup": 8.0}]}
J
echo '{"allocator": "native", "median_step_s": 0.100, "min_step_s": 0.1, "peak_reserved": 4294967296}' >"$TMP/run1/speed_step_native.json"
echo '{"allocator": "galloc", "median_step_s": 0.1005, "min_step_s": 0.1, "peak_reserved": 4294967296}' >"$TMP/run1/speed_step_galloc.json"
expect_exit 0 "ingest" -- "$PY" "$G" ingest "$TMP/run1"
expect_in "$TMP/out" "| fixed_4KiB | 1 | 400.0 | 50.0 | 8.00x |" "the pairs row"
expect_in "$TMP/out" "| galloc | 100.50 (+0.50 %) | 4.000 |" "the step row and its difference"
grep -q "sleep" <(grep "^| " "$TMP/out") && fail "no sleep rows without a sleep run"
mkdir -p "$TMP/run2"
echo '{"benchmarks": [{"name": "first_sleep/cold", "real_time": 50.0, "GiB_per_s": 20.5},
 {"name": "sleep_wake/x", "real_time": 70.0, "sleep_ms_per_GiB": 20.0, "wake_ms_per_GiB": 25.0}]}' >"$TMP/run2/sleep.json"
expect_exit 0 "ingest a second run" -- "$PY" "$G" ingest "$TMP/run2"
expect_in "$TMP/out" "| first_sleep/cold | 50 | 20.5 | - |" "the first-sleep row"
expect_in "$TMP/out" "| sleep_wake/x | 70 | 50 | 40 |" "the sleep and wake rates from ms per GiB"
grep -q "fixed_4KiB" "$TMP/out" && fail "the first run's figures were kept beside the second's"
expect_exit 1 "ingest a folder without figures" -- "$PY" "$G" ingest "$TMP"
finish
