#!/usr/bin/env bash
# tests/reliability/storm.sh: run the concurrency storm (//tests/reliability:storm_test)
# longer than CI does (CI's budget is GALLOC_CI_STORM_SECONDS in .ci/budgets, a
# few seconds a setting in each of its stages: plain, ASan, TSan, coverage).
# Usage: tests/reliability/storm.sh [SECONDS [CONFIG [SEED]]]
#   SECONDS default 600; CONFIG one of plain (default), tsan, asan (.bazelrc's
#   --config); SEED default from the clock (printed, and printed again on a
#   failure: rerun with it).
# Each of the test's three allocator settings (Defaults, Expandable,
# GcAndSplitLimit) storms for SECONDS; GTEST_FILTER='*/Expandable' runs one.
# Environment: BAZEL (default ./bazelw), BAZEL_FLAGS (extra build flags),
#   GALLOC_STORM_THREADS (workers, default 8), GTEST_FILTER.
# Exit status: the test's (0 passed), or 3 if the build failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-600}"
config="${2:-plain}"
seed="${3:-$(( $(date +%s) % 1000000007 ))}"
read -r -a bazel <<<"${BAZEL:-./bazelw}"
read -r -a flags <<<"${BAZEL_FLAGS:-}"
case "$config" in
plain) ;;
tsan | asan) flags+=("--config=$config") ;;
*) echo "storm.sh: CONFIG is plain, tsan or asan, not '$config'" >&2; exit 2 ;;
esac
"${bazel[@]}" build "${flags[@]}" //tests/reliability:storm_test >&2 || exit 3
bin="$("${bazel[@]}" info "${flags[@]}" bazel-bin 2>/dev/null)/tests/reliability/storm_test"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "storm.sh: $seconds s, $config, GALLOC_STORM_SEED=$seed" >&2
# The sanitizer options CI's test runs use (.bazelrc's test:asan / test:tsan).
GALLOC_STORM_SECONDS="$seconds" GALLOC_STORM_SEED="$seed" TEST_TMPDIR="$tmp" \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    TSAN_OPTIONS=halt_on_error=1 "$bin"
