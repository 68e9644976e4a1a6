#!/usr/bin/env bash
# Issue 16's check on a host of 2 GPUs (nvidia-h200-x2), one device call per workload:
#   bash scripts/cluster_check.sh TAG tune     # the cluster GPU tests, then a tuning pass of dbuf
#   bash scripts/cluster_check.sh TAG sweep    # the limits study's sweep (configs/limits.toml)
# Each workload runs three times into results/checks/cluster-TAG/: once on both GPUs with one
# sample per point, only to fill PyCUDA's compile cache (so both timed runs load the same cached
# kernels; not kept), then timed on both GPUs (--cluster local) and on one (a plain run). Prints
# the wall times (each command's whole, start-up included, and the measuring from each file's
# metadata), the speedups and how the two runs' results agree
# (scripts/cluster_compare.py); $OUT/cluster-TAG-WORKLOAD.tar.gz holds the folder.
set -uo pipefail
tag=${1:?usage: cluster_check.sh TAG tune|sweep}; what=${2:?usage: cluster_check.sh TAG tune|sweep}
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=120
dir="results/checks/cluster-$tag"
mkdir -p "$dir"
nvidia-smi --query-gpu=index,name,uuid --format=csv > "$dir/gpus.txt"
case "$what" in
  tune)
    python3 -m pytest -m gpu -q tests/test_gpu.py -k cluster > "$OUT/gpu-tests.txt" 2>&1
    echo "GPU tests: exit $? ($(tail -1 "$OUT/gpu-tests.txt"))"
    cmd=(mmbench tune -v dbuf --engine points --strategy random --budget 160 --seed 1 -s 2048,4096 --runs 20 --jobs 16)
    warm=(--runs 1 --warmup 0 --tuning-cache /tmp/warm-cache.json)
    two=(--tuning-cache "$dir/tune-cache-2gpu.json"); one=(--tuning-cache "$dir/tune-cache-1gpu.json")
    limits=(200 150 250) ;;
  sweep)
    cmd=(mmbench run --config configs/limits.toml)
    warm=(--runs 1 --warmup 0); two=(); one=()
    limits=(200 160 300) ;;
  *) echo "cluster_check.sh: '$what' is not a workload; choose tune or sweep"; exit 2 ;;
esac
declare -A took
run() {  # run LIMIT NAME GPUS ARGS...: one command, its output in $OUT/NAME.txt, its whole time in took[NAME]
  local limit=$1 name=$2 gpus=$3; shift 3
  local t0; t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$gpus timeout -s INT "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  took[$name]=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  echo "$name: exit $rc after ${took[$name]} s"
}
run "${limits[0]}" "$what-warm" 0,1 "${cmd[@]}" "${warm[@]}" --cluster local -o "/tmp/warm-$what.csv"
run "${limits[1]}" "$what-2gpu" 0,1 "${cmd[@]}" "${two[@]}" --cluster local -o "$dir/$what-2gpu.csv"
run "${limits[2]}" "$what-1gpu" 0 "${cmd[@]}" "${one[@]}" -o "$dir/$what-1gpu.csv"
cp "$OUT/$what-2gpu.txt" "$dir/$what-2gpu.log"; cp "$OUT/$what-1gpu.txt" "$dir/$what-1gpu.log"
python3 scripts/cluster_compare.py "$dir/$what-1gpu.csv" "$dir/$what-2gpu.csv" "${took[$what-1gpu]}" "${took[$what-2gpu]}" | tee "$dir/$what-compare.txt"
tar czf "$OUT/cluster-$tag-$what.tar.gz" "$dir"
