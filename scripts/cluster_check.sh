#!/usr/bin/env bash
# Issue 16's check on a host of 2 GPUs (nvidia-h200-x2), one device call:
#   bash scripts/cluster_check.sh TAG
# the cluster GPU test, then a tuning pass and a sweep, each on one GPU (a plain run) and on both
# (--cluster local), into results/checks/cluster-TAG/. The one-GPU run goes once before to fill
# the compile cache, so both timed runs load the same cached kernels. Prints the wall times (from
# each file's metadata) and the speedups; $OUT/cluster-TAG.tar.gz holds the folder.
set -uo pipefail
tag=${1:?usage: cluster_check.sh TAG}
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=120
dir="results/checks/cluster-$tag"
mkdir -p "$dir"
nvidia-smi --query-gpu=index,name,uuid --format=csv > "$dir/gpus.txt"
python3 -m pytest -m gpu -q tests/test_gpu.py -k cluster > "$OUT/gpu-tests.txt" 2>&1; echo "GPU test: exit $? ($(tail -1 "$OUT/gpu-tests.txt"))"
tune=(mmbench tune -v dbuf --engine points --strategy random --budget 48 --seed 1 -s 1024,2048 --runs 5)
sweep=(mmbench run -v dbuf,best,shared,cublas -s 256:4096:+256 --runs 10)
CUDA_VISIBLE_DEVICES=0 "${tune[@]}" -o /tmp/warm-tune.csv --tuning-cache /tmp/warm.json > "$OUT/warm.txt" 2>&1
CUDA_VISIBLE_DEVICES=0 "${sweep[@]}" -o /tmp/warm-sweep.csv > "$OUT/warm-sweep.txt" 2>&1
CUDA_VISIBLE_DEVICES=0,1 "${tune[@]}" --cluster local -o "$dir/tune-2gpu.csv" --tuning-cache "$dir/cache-2gpu.json" > "$OUT/tune-2gpu.txt" 2>&1
CUDA_VISIBLE_DEVICES=0 "${tune[@]}" -o "$dir/tune-1gpu.csv" --tuning-cache "$dir/cache-1gpu.json" > "$OUT/tune-1gpu.txt" 2>&1
CUDA_VISIBLE_DEVICES=0,1 "${sweep[@]}" --cluster local -o "$dir/sweep-2gpu.csv" > "$OUT/sweep-2gpu.txt" 2>&1
CUDA_VISIBLE_DEVICES=0 "${sweep[@]}" -o "$dir/sweep-1gpu.csv" > "$OUT/sweep-1gpu.txt" 2>&1
python3 - "$dir" <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
for what in ("tune", "sweep"):
    wall = {g: json.loads((d / f"{what}-{g}.meta.json").read_text())["invocations"][-1].get("wall_s") for g in ("1gpu", "2gpu")}
    ratio = wall["1gpu"] / wall["2gpu"] if wall["1gpu"] and wall["2gpu"] else float("nan")
    print(f"{what}: one GPU {wall['1gpu']} s, two GPUs {wall['2gpu']} s, speedup {ratio:.2f}x")
PY
tar czf "$OUT/cluster-$tag.tar.gz" "$dir"
