# cli_lib.sh: what the galloc CLI test scripts share, sourced by each:
#   . "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"
# Sets RUNFILES, GALLOC (the binary), EX (examples/), TMP, PY; fail counts a
# failure, expect_exit runs a command keeping its stdout and stderr in
# $TMP/out and $TMP/err, expect_in looks for a pattern (grep's basic regular
# expression), finish reports and exits.
set -uo pipefail

RUNFILES="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}"
GALLOC="$RUNFILES/tools/galloc"
EX="$RUNFILES/examples"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
PY="$(command -v python3 || echo /usr/bin/python3)"
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect_exit CODE DESCRIPTION -- COMMAND...: run, keep stdout/stderr in $TMP/out, $TMP/err.
expect_exit() {
    local want=$1 what=$2
    shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$what: exit $got, expected $want"
        sed 's/^/  out: /' "$TMP/out" | head -20 >&2
        sed 's/^/  err: /' "$TMP/err" | head -20 >&2
    fi
    if [ "$got" -ge 128 ]; then
        fail "$what: killed by a signal (crash)"
    fi
}

expect_in() { # expect_in FILE PATTERN DESCRIPTION
    grep -q -- "$2" "$1" || fail "$3: '$2' not in $1: $(head -c 600 "$1")"
}

finish() { # the last line of every script
    if [ "$failures" -ne 0 ]; then
        echo "$failures failure(s)" >&2
        exit 1
    fi
    echo "PASS"
    exit 0
}
