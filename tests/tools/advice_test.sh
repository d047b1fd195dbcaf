#!/usr/bin/env bash
# advice_test.sh: advice that holds together when nothing fits: a 7B
# mixed-precision Adam job (no checkpointing, sequence lengths 1024..2048)
# from galloc gen fits no configuration on 80 GiB. The closest already has
# expandable_segments and runs out at a moment of fragmentation: the verdict
# is genuine with the shortfall in bytes, and no OOM line recommends a setting
# the search has shown is not enough, or one the configuration already has.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

expect_exit 0 "gen 7B" -- "$GALLOC" gen transformer --params 7B --layers 32 --d-model 4096 --seq-len 2048 --batch 4 \
    --mixed-precision --variable-seq-len 1024:2048 --device-memory 80GiB -o "$TMP/7b.trace"
expect_exit 1 "fit 7B: nothing fits" -- "$GALLOC" fit --jobs 2 --bisect 3 "$TMP/7b.trace"
tail -n 4 "$TMP/out" >"$TMP/7b.verdict"
cat >"$TMP/7b.want" <<EOF
No configuration fits on 80.00 GiB: genuine, the job needs more memory than the device has whatever the settings.
The smallest device it fits: 165.17 GiB, under "expandable_segments:True,max_split_size_mb:1024": 85.17 GiB (91,446,312,960 bytes) more than 80.00 GiB.
The closest, "expandable_segments:True", first runs out of memory at event 1,447 of $TMP/7b.trace:
  fragmentation: 84.62 MiB requested <= 34.71 MiB cached free + 66.00 MiB device free, but the largest free block is 16.09 MiB; no configuration galloc fit tried fits this device, so no setting is enough
EOF
cmp -s "$TMP/7b.want" "$TMP/7b.verdict" || fail "fit 7B verdict: $(diff "$TMP/7b.want" "$TMP/7b.verdict")"
grep -q "settings can help" "$TMP/out" && fail "fit 7B: a setting is advised although none fits: $(grep 'settings can help' "$TMP/out")"
expect_exit 1 "replay 7B under expandable segments" -- "$GALLOC" replay --conf expandable_segments:True "$TMP/7b.trace"
expect_in "$TMP/out" "largest free block is 16.09 MiB; settings can help (galloc fit: max_split_size_mb)$" \
    "replay: the hint names only what the configuration lacks"

finish
