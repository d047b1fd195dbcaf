#!/usr/bin/env bash
# soak/run.sh: build //soak:soak optimized (--config=opt) and run it.
# Usage: soak/run.sh [OPERATIONS [CONF [SEED]]]   e.g. soak/run.sh 1e8 expandable_segments:True
#   OPERATIONS default 1e8; CONF is added to "sim_capacity:80GiB,sim_manual_events:True".
# A long run, not part of CI: .ci/budgets, where CI's time-boxed checks take
# their budgets, lists it with the other long runs (storm.sh, run_long.sh).
# Environment: BAZEL (default ./bazelw), e.g. "bazel --output_base=/tmp/bazel-soak";
#   BAZEL_FLAGS, extra build flags.
# Exit status: soak's (0 passed, 1 a check failed, 2 bad arguments), or 3 if the build failed.
set -uo pipefail
cd "$(dirname "$0")/.."
read -r -a bazel <<<"${BAZEL:-./bazelw}"
read -r -a flags <<<"${BAZEL_FLAGS:-}"
"${bazel[@]}" build --config=opt "${flags[@]}" //soak:soak >&2 || exit 3
bin="$("${bazel[@]}" info --config=opt "${flags[@]}" bazel-bin 2>/dev/null)/soak/soak"
exec "$bin" "${1:-1e8}" "${2:-}" "${3:-0x5eed}"
