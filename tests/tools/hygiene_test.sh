#!/usr/bin/env bash
# hygiene_test.sh: issue 18, output hygiene of every galloc subcommand:
# every error once and on stderr (never on stdout), a failed write exits 2
# with a message, a trace cut short exits 2 with no verdict, --plot and
# --snapshot paths are refused before the replay, sizes near 2^64 print as
# sizes, and galloc budget's exit codes and JSON head are replay's and fit's.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

# run WANT DESCRIPTION COMMAND...: expect_exit without its "--".
run() {
    local want=$1 what=$2
    shift 2
    expect_exit "$want" "$what" -- "$@"
}
hasnt() { ! grep -q -- "$2" "$1" || fail "$3: '$2' in $1: $(grep -m2 -- "$2" "$1")"; }
count() { # count FILE PATTERN N DESCRIPTION: PATTERN on exactly N lines
    local n
    n=$(grep -c -- "$2" "$1")
    [ "$n" -eq "$3" ] || fail "$4: '$2' on $n lines of $1, expected $3"
}
B=(--params 1M --layers 2 --d-model 64 --seq-len 16 --batch 1)

# ---- 1. every error once, on stderr -----------------------------------------
run 2 "missing file" "$GALLOC" replay "$TMP/unknown.bin"
count "$TMP/err" "unknown.bin: cannot open" 1 "missing file said once"
[ -s "$TMP/out" ] && fail "missing file: stdout not empty: $(head -c 300 "$TMP/out")"
run 2 "bad conf" "$GALLOC" replay --conf "" --conf no_such_key:1 "$EX/rmm_small.csv"
count "$TMP/err" "no_such_key" 1 "refused configuration said once on stderr"
hasnt "$TMP/out" "no_such_key.*Unrecognized\|could not create" "refused configuration not repeated on stdout"
run 2 "fit: refused environment" env PYTORCH_CUDA_ALLOC_CONF=bogus_key:1 "$GALLOC" fit --env --max-configs 2 --bisect 0 \
    "$EX/rmm_small.csv"
expect_in "$TMP/err" "galloc fit: configuration" "fit: a configuration that cannot be replayed, on stderr"
hasnt "$TMP/out" "Unrecognized" "fit: the refusal not on stdout (the --env header names the variable)"
run 2 "budget: refused conf" "$GALLOC" budget "${B[@]}" --conf bogus_key:1
count "$TMP/err" "bogus_key" 1 "budget: refused configuration said once on stderr"
hasnt "$TMP/out" "Unrecognized" "budget: the message not on stdout"

# ---- 2. a failed write exits 2, said on stderr ------------------------------
for cmd in "replay $EX/rmm_small.csv" "replay --json $EX/rmm_small.csv" "fit --bisect 0 $EX/rmm_small.csv" \
    "fit --json --bisect 0 $EX/rmm_small.csv" "budget ${B[*]}" "budget --json ${B[*]}" \
    "gen transformer ${B[*]}" "replay --help" "--version"; do
    # shellcheck disable=SC2086
    "$GALLOC" $cmd >/dev/full 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "$cmd > /dev/full: exit $rc, expected 2"
    count "$TMP/err" "cannot write standard output" 1 "$cmd > /dev/full: said once"
done

# ---- 3. a parse error partway: exit 2, no verdict ---------------------------
{ echo "galloc-trace 1"; for i in $(seq 1 50); do echo "alloc $i 4096"; done; echo "alloc 51 12XB"; \
  echo "alloc 52 4096"; } >"$TMP/cut.trace"
run 2 "garbled partway" "$GALLOC" replay "$TMP/cut.trace"
count "$TMP/err" "cut.trace:52: bad size" 1 "the parse error once, with its line"
for v in fits OOM verdict "peak reserved"; do hasnt "$TMP/out" "$v" "no verdict for a trace cut short"; done
run 2 "garbled partway, two files" "$GALLOC" replay "$TMP/cut.trace" "$EX/rmm_small.csv"
count "$TMP/out" "^verdict" 1 "only the good file has a verdict"
run 2 "garbled partway, json" "$GALLOC" replay --json "$TMP/cut.trace"
"$PY" - "$TMP/out" <<'PYEOF' || fail "json of a trace cut short: error, no results"
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
assert "bad size" in t["error"] and t["results"] == [], t
PYEOF
run 2 "fit: garbled partway" "$GALLOC" fit "$TMP/cut.trace"
[ -s "$TMP/out" ] && fail "fit: a trace cut short prints no table: $(head -c 300 "$TMP/out")"

# ---- 4. output paths checked before the replay ------------------------------
for opt in --plot --snapshot; do
    run 2 "$opt into a missing directory" "$GALLOC" replay $opt "$TMP/no/such/dir/x.png" "$EX/rmm_small.csv"
    count "$TMP/err" "no/such/dir/x.png: cannot create" 1 "$opt: refused with the reason"
    [ -s "$TMP/out" ] && fail "$opt: refused before the replay (stdout empty): $(head -c 300 "$TMP/out")"
done
run 2 "fit --plot into a missing directory" "$GALLOC" fit --plot "$TMP/no/x.png" "$EX/rmm_small.csv"
expect_in "$TMP/err" "cannot create" "fit --plot refused"
mkdir -p "$TMP/ro" && chmod 555 "$TMP/ro"
if [ ! -w "$TMP/ro" ]; then # (root can write anyway)
    run 2 "--plot into a read-only directory" "$GALLOC" replay --plot "$TMP/ro/x.png" "$EX/rmm_small.csv"
    expect_in "$TMP/err" "Permission denied" "read-only directory refused"
fi
echo keep >"$TMP/old.png"
run 0 "--plot over an existing file" "$GALLOC" replay --plot "$TMP/old.png" "$EX/rmm_small.csv"
run 2 "--plot check leaves no file" "$GALLOC" replay --plot "$TMP/never.png" "$TMP/unknown.bin"
[ -e "$TMP/never.png" ] && fail "the path check left a file behind"

# ---- 5. sizes near 2^64 print as sizes --------------------------------------
printf 'galloc-trace 1\nalloc 1 18446744073709547520\nfree 1\nalloc 2 1024\nfree 2\n' >"$TMP/huge.trace"
run 1 "a request near 2^64" "$GALLOC" replay "$TMP/huge.trace"
expect_in "$TMP/out" "16.00 EiB requested" "a request near 2^64 as a size"
hasnt "$TMP/out" " -[0-9]" "no negative figure"
run 1 "json, a request near 2^64" "$GALLOC" replay --json "$TMP/huge.trace"
expect_in "$TMP/out" '"size": 18446744073709547520' "json size unsigned"
run 1 "an 8 EiB device" "$GALLOC" replay --device-memory 9223372036854775807 "$TMP/huge.trace"
expect_in "$TMP/out" "sim device 8.00 EiB" "a huge device as a size"
hasnt "$TMP/out" " -[0-9]" "no negative figure"
run 2 "a 16 EiB device" "$GALLOC" replay --device-memory 18446744073709551615 "$TMP/huge.trace"
# the sim refuses it: a configuration never made gets no table (issue 38), the refusal names the size
expect_in "$TMP/err" 'got "18446744073709551615"' "2^64 - 1 device refused, named"
[ -s "$TMP/out" ] && fail "a 16 EiB device: a table for a configuration never made: $(head -c 300 "$TMP/out")"
hasnt "$TMP/err" " -[0-9]" "no negative figure"
run 1 "fit, a 16 EiB request" "$GALLOC" fit --bisect 0 --max-configs 2 "$TMP/huge.trace"
hasnt "$TMP/out" " -[0-9]" "fit: no negative figure"

# ---- 6. budget: replay's exit codes and JSON head ---------------------------
run 0 "budget fits" "$GALLOC" budget "${B[@]}"
run 1 "budget OOM" "$GALLOC" budget "${B[@]}" --device-memory 1MiB
run 2 "budget bad usage" "$GALLOC" budget --params 1M
for cmd in "replay --json $EX/rmm_small.csv" "fit --json --bisect 0 $EX/rmm_small.csv" "budget --json ${B[*]}"; do
    # shellcheck disable=SC2086
    "$GALLOC" $cmd >"$TMP/out" 2>/dev/null
    "$PY" - "$TMP/out" "${cmd%% *}" <<'PYEOF' || fail "$cmd: JSON head"
import json, sys
doc = json.load(open(sys.argv[1]))
assert list(doc)[:2] == ["tool", "version"], list(doc)[:3]
# replay and fit documents are version 2 (the loaded job's unit, cap ranges); budget's is 1
assert doc["tool"] == "galloc " + sys.argv[2] and doc["version"] == (1 if sys.argv[2] == "budget" else 2), (doc["tool"], doc["version"])
PYEOF
done

finish
