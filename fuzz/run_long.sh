#!/usr/bin/env bash
# fuzz/run_long.sh: build the libFuzzer targets with clang (--config=fuzz, see
# .bazelrc) and run each for SECONDS over its seed corpus, one after another
# or FUZZ_JOBS at a time.
# CI runs it briefly, a smoke run with the per-target seconds of .ci/budgets
# (GALLOC_CI_FUZZ_TARGETS); run it for hours to search further.
#
# Usage: fuzz/run_long.sh [SECONDS [TARGET[:SECONDS]...]]
#   SECONDS  per fuzzer (default 300); TARGET: conf_fuzz, api_fuzz, pickle_fuzz,
#            trace_reader_fuzz, seed_fuzz, replay_fuzz, sleep_fuzz,
#            snapshot_roundtrip_fuzz (default: all); TARGET:SECONDS gives that
#            one its own time
# Dictionaries (-dict=): fuzz/TARGET.dict when it exists; seed_fuzz, which
# reads snapshot pickles, uses fuzz/pickle_fuzz.dict (opcodes and keys).
# Environment:
#   FUZZ_WORK    where the growing corpora, logs and crash inputs go (default
#                /tmp/galloc-fuzz); fuzz/corpus/ is read, never written
#   BAZEL        the Bazel command (default ./bazelw), e.g.
#                "bazel --output_base=/tmp/bazel-fuzz"
#   BAZEL_FLAGS  extra build flags, e.g. --config=ci
#   FUZZ_ARGS    extra libFuzzer flags, e.g. -jobs=2 -workers=2
#   FUZZ_JOBS    how many fuzzers run at once (default 1: one after another);
#                each is one process on one core, so up to the number of
#                cores each still gets its SECONDS of a whole core
#
# Prints one line per fuzzer: executions, new corpus entries, crashes. Exits 1
# if any fuzzer crashed (an assertion, a sanitizer report, a leak, a timeout or
# running out of memory); the input that did it is kept under
# $FUZZ_WORK/<target>/crashes/ and the log's tail is printed. To reproduce:
# run the fuzzer binary with that file as its only argument.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-300}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] ||
    targets=(conf_fuzz api_fuzz pickle_fuzz trace_reader_fuzz seed_fuzz replay_fuzz sleep_fuzz snapshot_roundtrip_fuzz)
work="${FUZZ_WORK:-/tmp/galloc-fuzz}"
read -r -a bazel <<<"${BAZEL:-./bazelw}"
read -r -a flags <<<"${BAZEL_FLAGS:-}"
read -r -a extra <<<"${FUZZ_ARGS:-}"
jobs="${FUZZ_JOBS:-1}"
case "$jobs" in '' | *[!0-9]* | 0) echo "run_long.sh: FUZZ_JOBS is a number of fuzzers, not '$jobs'" >&2; exit 2 ;; esac

labels=()
declare -A secs=() # per-target seconds, from TARGET:SECONDS
names=()
for spec in "${targets[@]}"; do
    t="${spec%%:*}"
    secs[$t]="$seconds"
    if [ "$spec" != "$t" ]; then
        secs[$t]="${spec#*:}"
        case "${secs[$t]}" in '' | *[!0-9]*) echo "run_long.sh: bad seconds in $spec" >&2; exit 2 ;; esac
    fi
    [ -d "fuzz/corpus/$t" ] || { echo "run_long.sh: unknown fuzz target $t" >&2; exit 2; }
    names+=("$t")
    labels+=("//fuzz:$t")
done
"${bazel[@]}" build --config=fuzz "${flags[@]}" "${labels[@]}" || { echo "run_long.sh: build failed" >&2; exit 1; }
bin="$("${bazel[@]}" info --config=fuzz "${flags[@]}" bazel-bin 2>/dev/null)"

fuzz_one() { # fuzz_one TARGET: run it, print its line; its exit status goes to $work/TARGET/rc
    local t="$1" dir="$work/$1"
    mkdir -p "$dir/corpus" "$dir/crashes"
    local log="$dir/log.txt"
    local dict=()
    local dictfile="fuzz/$t.dict"
    [ "$t" = seed_fuzz ] && dictfile=fuzz/pickle_fuzz.dict
    [ -f "$dictfile" ] && dict=("-dict=$dictfile")
    # Memory limits, stated so a run cannot exhaust the machine: RSS over
    # 2 GiB, or one malloc over the limit, is reported as a crash with its
    # input. pickle_fuzz decodes lengths declared by the input itself, and
    # ga_pickle_parse promises to keep within its budget (64 MiB + 16 x input
    # by default, about 65 MiB for the seeds): one allocation of 256 MiB means
    # a declared length was trusted, a finding rather than a slow swap.
    local limits=(-rss_limit_mb=2048 -malloc_limit_mb=2048)
    [ "$t" = pickle_fuzz ] && limits=(-rss_limit_mb=2048 -malloc_limit_mb=256)
    local before start rc took execs after crashes slow
    before=$(find "$dir/corpus" -type f | wc -l)
    start=$(date +%s)
    # New inputs go to the first directory only: the seeds stay as committed.
    "$bin/fuzz/$t" -max_total_time="${secs[$t]}" -timeout=30 "${limits[@]}" -print_final_stats=1 \
        -artifact_prefix="$dir/crashes/" "${dict[@]}" "${extra[@]}" "$dir/corpus" "fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    after=$(find "$dir/corpus" -type f | wc -l)
    # libFuzzer also keeps inputs slower than -report_slow_units (10 s) as
    # slow-unit-*: a note on a loaded machine, not a failure.
    crashes=$(find "$dir/crashes" -type f ! -name 'slow-unit-*' | wc -l)
    slow=$(find "$dir/crashes" -type f -name 'slow-unit-*' | wc -l)
    echo "fuzz $t: ${execs:-0} executions in ${took}s, corpus +$((after - before)) (now $after), rc $rc," \
        "crash files $crashes, slow inputs $slow"
    echo "$rc" >"$dir/rc"
}

# FUZZ_JOBS fuzzers at a time (each is one process on one core), the longest
# first when several run at once, so that the last ones end together; each
# prints its line as it ends, and the failures follow at the end.
order=("${names[@]}")
if [ "$jobs" -gt 1 ]; then
    order=()
    while read -r _ t; do order+=("$t"); done < <(for t in "${names[@]}"; do echo "${secs[$t]} $t"; done | sort -s -k1,1nr)
fi
running=0
for t in "${order[@]}"; do
    rm -f "$work/$t/rc"
    fuzz_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
failed=0
for t in "${names[@]}"; do
    dir="$work/$t"
    rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
    if [ "$rc" -ne 0 ]; then
        failed=1
        echo "---- $t failed; last lines of $dir/log.txt:" >&2
        tail -40 "$dir/log.txt" >&2
        ls -1 "$dir/crashes" >&2
    fi
done
exit "$failed"
