#!/usr/bin/env bash
# Issue 16's check on a host of 2 GPUs (nvidia-h200-x2); on one GPU it measures what the cluster's
# path costs (a cluster of one worker against a plain run):
#   bash scripts/cluster_check.sh TAG STEP...
# STEP: tests (the cluster GPU tests); tune or sweep (a workload: warmed, then timed); warm-tune,
# warm-sweep, timed-tune, timed-sweep (the halves, for two device calls on one warm machine: a whole
# workload may take longer than one call of 10 minutes).
#   tune:  a tuning pass of dbuf, 160 random configurations at 2048 and 4096, 20 samples each
#          (tuneN: N configurations, e.g. tune640, whose files are named tune640-*: a pass long enough
#          that the cluster's fixed start-up, some 6 s more than a plain run's, is a small part of it)
#   sweep: the limits study (configs/limits.toml): 8 variants, 153 sizes, 1224 points
# Warming runs the workload once on both GPUs with one sample per point, only to fill PyCUDA's
# compile cache, so that both timed runs load the same cached kernels (not kept). Timed: on every
# GPU of the host (--cluster local: NAME-cluster.csv), then on one (a plain run: NAME-1gpu.csv), into
# results/checks/cluster-TAG/. Prints the
# wall times (each command's whole, start-up included, and the measuring from each file's
# metadata), the speedups and how the two runs' results agree (scripts/cluster_compare.py);
# $OUT/cluster-TAG.tar.gz holds the folder.
set -uo pipefail
tag=${1:?usage: cluster_check.sh TAG STEP...}; shift
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=120
dir="results/checks/cluster-$tag"
mkdir -p "$dir"
nvidia-smi --query-gpu=index,name,uuid --format=csv > "$dir/gpus.txt"
all=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)  # the cluster's GPUs: every one

declare -A took
run() {  # run LIMIT NAME GPUS ARGS...: one command, its output in $OUT/NAME.txt, its whole time in took[NAME]
  local limit=$1 name=$2 gpus=$3; shift 3
  local t0; t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$gpus timeout -s INT -k 30 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  took[$name]=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  echo "$name: exit $rc after ${took[$name]} s"
}
workload() {  # sets cmd, one, many (the timed runs' own options) for tune or sweep
  case "$1" in
    tune*) local budget=${1#tune}
           cmd=(mmbench tune -v dbuf --engine points --strategy random --budget "${budget:-160}" --seed 1 -s 2048,4096 --runs 20 --jobs 16)
           many=(--tuning-cache "$dir/$1-cache-cluster.json"); one=(--tuning-cache "$dir/$1-cache-1gpu.json") ;;
    sweep) cmd=(mmbench run --config configs/limits.toml); many=(); one=() ;;
  esac
}
warm() {
  workload "$1"
  local cache=(); [[ "$1" = tune* ]] && cache=(--tuning-cache /tmp/warm-cache.json)
  rm -f "/tmp/warm-$1.csv" "/tmp/warm-$1.meta.json"  # an earlier call's, on a machine kept warm
  run 420 "$1-warm" "$all" "${cmd[@]}" --runs 1 --warmup 0 "${cache[@]}" --cluster local -o "/tmp/warm-$1.csv"
}
timed() {
  workload "$1"
  run 180 "$1-cluster" "$all" "${cmd[@]}" "${many[@]}" --cluster local -o "$dir/$1-cluster.csv"
  run 300 "$1-1gpu" 0 "${cmd[@]}" "${one[@]}" -o "$dir/$1-1gpu.csv"
  cp "$OUT/$1-cluster.txt" "$dir/$1-cluster.log"; cp "$OUT/$1-1gpu.txt" "$dir/$1-1gpu.log"
  python3 scripts/cluster_compare.py "$dir/$1-1gpu.csv" "$dir/$1-cluster.csv" "${took[$1-1gpu]}" "${took[$1-cluster]}" \
    | tee "$dir/$1-compare.txt"
}
for step in "$@"; do
  case "$step" in
    tests) timeout 120 python3 -m pytest -m gpu -q tests/test_gpu.py -k cluster > "$OUT/gpu-tests.txt" 2>&1
           echo "GPU tests: exit $? ($(tail -1 "$OUT/gpu-tests.txt"))"; cp "$OUT/gpu-tests.txt" "$dir/gpu-tests.log" ;;
    tune|tune[0-9]*|sweep) warm "$step"; timed "$step" ;;
    warm-tune|warm-tune[0-9]*|warm-sweep) warm "${step#warm-}" ;;
    timed-tune|timed-tune[0-9]*|timed-sweep) timed "${step#timed-}" ;;
    *) echo "cluster_check.sh: '$step' is not a step; choose tests, tune (or tuneN), sweep, warm-tune, warm-sweep,"\
            "timed-tune, timed-sweep"
       exit 2 ;;
  esac
  tar czf "$OUT/cluster-$tag.tar.gz" "$dir"
done
