#!/usr/bin/env bash
# snapshot_shapes_test.sh: issue 38's snapshot writer, one check per bullet with
# exact figures (snapshot_shapes_check.py says which): snapshots without trace
# events written with their state, frames and pools; the H200 replay's frames
# shared through the pickle memo and its size; segment_free entries with their
# own frames and times; snapshot markers kept; inactive blocks' requested_size.
# Inputs: data/make_snapshot_shapes.py's shapes and PyTorch's own H200 file.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

"$PY" "$RUNFILES/tests/tools/snapshot_shapes_check.py" "$GALLOC" "$RUNFILES/tests/tools/data" "$TMP" >"$TMP/check" 2>&1 ||
    fail "the snapshot writer's shapes: $(grep FAIL "$TMP/check" || tail -5 "$TMP/check")"
cat "$TMP/check"
finish
