#!/usr/bin/env bash
# embed_demo_test: run embed_demo with galloc and with plain malloc and check
# the exit status and the figures. Sizes: 4 weights and 4 gradients of
# 128 x 128 floats (64 KiB each), an input, 4 activations and a side buffer of
# 8 x 128 floats (4 KiB each), all multiples of 512, so both allocators count
# the same allocated bytes. The peak is the side buffer's allocation, when
# everything is live: 8 x 64 KiB + 6 x 4 KiB = 548864. galloc keeps it all in
# one 2 MiB small-pool segment (one device allocation), as PyTorch would;
# malloc goes to the "device" for every tensor: 4 + 3 steps x 10 = 34.
set -euo pipefail
demo="$1"

fail() { echo "FAIL: $*" >&2; exit 1; }

out_g=$("$demo" --allocator galloc --steps 3) || fail "galloc run exited $?"
out_h=$("$demo" --allocator host --steps 3) || fail "host run exited $?"
echo "$out_g"
echo "$out_h"

expect() { # expect OUTPUT LINE: LINE must appear verbatim
    grep -qxF -- "$2" <<<"$1" || fail "missing line: $2"
}

peak=$((8 * 65536 + 6 * 4096))
for d in 0 1; do
    expect "$out_g" "device $d: allocated 262144 max_allocated $peak reserved 2097152 max_reserved 2097152 device_allocs 1"
    expect "$out_g" "device $d: after release allocated 0 reserved 2097152; after empty_cache reserved 0"
    expect "$out_h" "device $d: allocated 262144 max_allocated $peak reserved 262144 max_reserved $peak device_allocs 34"
    expect "$out_h" "device $d: after release allocated 0 reserved 0; after empty_cache reserved 0"
    expect "$out_g" "device $d: out of memory as expected: CUDA out of memory. Tried to allocate 4.00 GiB."
    # The arithmetic must not depend on the allocator.
    cg=$(grep "^device $d: checksum" <<<"$out_g")
    ch=$(grep "^device $d: checksum" <<<"$out_h")
    [ "$cg" = "$ch" ] || fail "checksums differ: '$cg' vs '$ch'"
    [ "$cg" != "device $d: checksum 0.000000" ] || fail "the forward pass computed nothing"
done
expect "$out_g" "ok"
expect "$out_h" "ok"

# Bad usage and a bad configuration are errors, not crashes.
if "$demo" --allocator nosuch >/dev/null 2>&1; then fail "unknown allocator accepted"; fi
if GALLOC_CONF=max_split_size_mb:lots "$demo" >/dev/null 2>err.txt; then fail "bad GALLOC_CONF accepted"; fi
grep -q "max_split_size_mb" err.txt || fail "the configuration error does not name the key: $(cat err.txt)"
echo "PASS"
