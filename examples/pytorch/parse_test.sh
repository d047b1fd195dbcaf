#!/usr/bin/env bash
# parse_test: the example must at least be valid Python and name only entry
# points libgalloc_torch.so exports (torch_plugin/galloc_torch.h declares them all).
set -euo pipefail
script="$1"
python3 - "$script" <<'PY'
import ast, re, sys
src = open(sys.argv[1]).read()
ast.parse(src)
header = open("torch_plugin/galloc_torch.h").read()
declared = set(re.findall(r"\b(galloc_torch_[a-z_]+)\(", header))
used = set(re.findall(r"\b(galloc_torch_[a-z_]+)\b", src))
missing = sorted(used - declared)
assert not missing, f"the example calls undeclared entry points: {missing}"
for needed in ("galloc_torch_malloc", "galloc_torch_free", "CUDAPluggableAllocator", "change_current_allocator"):
    assert needed in src, needed
print("ok")
PY
