#!/usr/bin/env bash
# tests/gpu/matrix.sh GALLOC OUT: the capture matrix of docs/accuracy.md on a
# CUDA GPU with PyTorch (run by device_check.sh; about 3 minutes on an H200).
#
# 1. record: every workload of workloads.py under every setting of
#    accuracy.py's SETTINGS, one process per setting (PyTorch reads
#    PYTORCH_CUDA_ALLOC_CONF once), one after another so that mem_get_info
#    sees one process: OUT/matrix/W__S.pickle.gz + W__S.json;
# 2. plan: galloc (the binary GALLOC) predicts every pair and names the caps
#    at 2 % below and above each smallest memory: OUT/matrix/plan.json;
# 3. caps: each setting's capped reruns, the four processes side by side (a
#    memory fraction caps one process's allocator whatever the others hold):
#    OUT/matrix/caps__S.json;
# 4. report: OUT/accuracy.md and the goals' figures (report's last line).
# MATRIX_CAPTURE replaces "python3 capture_matrix.py" (accuracy_test plays the
# GPU with the sim through it). Safe to run twice: OUT/matrix is made afresh. Copy OUT/matrix/*__*.{json,pickle.gz}
# and caps__*.json into tests/tools/data/matrix/ for CI (accuracy_test).
set -uo pipefail
galloc=$(realpath "${1:?usage: matrix.sh GALLOC OUT}")
out=${2:?usage: matrix.sh GALLOC OUT}
here=$(cd "$(dirname "$0")" && pwd)
m=$out/matrix
rm -rf "$m" && mkdir -p "$m"
status=0
read -r -a capture <<<"${MATRIX_CAPTURE:-python3 $here/capture_matrix.py}"
settings=$(cd "$here" && python3 -c 'from accuracy import SETTINGS
for k, v in SETTINGS.items(): print(k, v)')
while read -r name conf; do
    PYTORCH_CUDA_ALLOC_CONF=$conf "${capture[@]}" record "$m" "$name" || status=1
done <<<"$settings"
python3 "$here/accuracy.py" plan "$m" --galloc "$galloc" || exit 1
pids=()
while read -r name conf; do
    PYTORCH_CUDA_ALLOC_CONF=$conf "${capture[@]}" caps "$m" "$name" 2>"$m/caps__$name.log" &
    pids+=($!)
done <<<"$settings"
for p in "${pids[@]}"; do wait "$p" || status=1; done
cat "$m"/caps__*.log >&2
python3 "$here/accuracy.py" report "$m" --markdown "$out/accuracy.md" || status=1
exit $status
