#!/usr/bin/env bash
# .ci/apt_install with a stand-in apt-get on PATH: a success prints one line
# however much apt says; a failure prints that line, apt's last lines and
# exits with apt's status; no package named, nothing run.
set -uo pipefail
script="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check WHAT: $? of the condition before it
    if [ "$1" -ne 0 ]; then
        echo "FAIL: $2" >&2
        fail=1
    fi
}
mkdir -p "$tmp/bin"
cat >"$tmp/bin/apt-get" <<'A'
#!/bin/sh
echo "$*" >>"$STUB_CALLS"
for i in $(seq 1 300); do echo "Unpacking package-$i ..."; done
[ "$1" = install ] && [ -n "${STUB_FAIL:-}" ] && { echo "E: stub failure" >&2; exit 100; }
exit 0
A
cat >"$tmp/bin/sudo" <<'A'
#!/bin/sh
exec "$@"
A
chmod +x "$tmp/bin/apt-get" "$tmp/bin/sudo"
export PATH="$tmp/bin:$PATH" STUB_CALLS="$tmp/calls"

"$script" who pkg-a pkg-b >"$tmp/out" 2>"$tmp/err"
check $? "success exits 0"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qx "who: installing pkg-a pkg-b (apt, once per machine)" "$tmp/err"
check $? "success prints one line: $(head -3 "$tmp/err")"
[ ! -s "$tmp/out" ]
check $? "nothing on stdout"
grep -q "^install -y -qq --no-install-recommends pkg-a pkg-b$" "$tmp/calls" && grep -q "^update -qq$" "$tmp/calls"
check $? "apt-get update, then install of the packages: $(cat "$tmp/calls")"

STUB_FAIL=1 "$script" who pkg-c 2>"$tmp/err"
rc=$?
[ $rc -eq 100 ]
check $? "failure exits with apt's status (got $rc)"
grep -q "who: apt-get failed (exit 100)" "$tmp/err" && grep -q "E: stub failure" "$tmp/err"
check $? "failure shows apt's log"
[ "$(wc -l <"$tmp/err")" -le 62 ]
check $? "failure shows the log's last lines, not all of it"

: >"$tmp/calls"
"$script" who 2>"$tmp/err"
check $? "no package: exits 0"
[ ! -s "$tmp/calls" ] && [ ! -s "$tmp/err" ]
check $? "no package: nothing run, nothing printed"
[ $fail -eq 0 ] && echo "apt_install: all checks passed"
exit $fail
