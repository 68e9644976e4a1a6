#!/usr/bin/env bash
# One GPU call that tunes: the GPU tests, then each tuning pass given (in order, so a later pass
# may narrow its search with --candidates from an earlier one), then the variants compared with
# cuBLAS. Every pass writes results/tuning/TAG/tune-NAME.{csv,meta.json} and merges its best
# configurations into mmbench/data/tuning-cache.json. All of it goes back in $OUT/tune-TAG.tar.gz
# (the device tool returns at most 8 files), the log beside it.
#   usage: bash scripts/tune_run.sh TAG COMPARE_VARIANTS NAME "TUNE ARGS" [NAME "TUNE ARGS" ...]
#   e.g.   bash scripts/tune_run.sh h200 warptile,dbuf dbuf "-v dbuf -s 2048,4096 --budget 40"
#   COMPARE_SIZES (default 1024,1025,2048,2049,4096) sets the comparison's sizes; GPU_TESTS, below.
set -uo pipefail
tag=${1:?usage: tune_run.sh TAG COMPARE_VARIANTS NAME "TUNE ARGS" ...}; compare=${2:?COMPARE_VARIANTS}; shift 2
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export MMBENCH_TUNING_CACHE=$PWD/mmbench/data/tuning-cache.json  # these runs tune the shipped cache
export PYTHONUNBUFFERED=1 COLUMNS=160
log="$OUT/tune-log.txt"
dir="results/tuning/$tag"
mkdir -p "$dir"
files=(mmbench/data/tuning-cache.json "$dir/compare.csv" "$dir/compare.meta.json")
# GPU_TESTS: a pytest -k expression for the GPU tests to run first (default all), or "none"
if [ "${GPU_TESTS:-}" != none ]; then
  python3 -m pytest -m gpu -q -x -p no:cacheprovider ${GPU_TESTS:+-k "$GPU_TESTS"} 2>&1 | tee "$log" | tail -4
fi
while [ $# -ge 2 ]; do
  name=$1; args=$2; shift 2
  SECONDS=0
  # shellcheck disable=SC2086  # the pass's arguments are meant to split (and may override --runs)
  mmbench tune --runs 5 --jobs 16 $args -o "$dir/tune-$name.csv" 2>&1 | tee -a "$log" | grep "^best\|^Error\|configurations"
  echo "tune $name: $SECONDS s" | tee -a "$log"
  files+=("$dir/tune-$name.csv" "$dir/tune-$name.meta.json")
  tar czf "$OUT/tune-$tag.tar.gz" "${files[@]}" 2>/dev/null  # what is done so far survives a time-out
done
SECONDS=0
mmbench run -v "$compare,cublas" -s "${COMPARE_SIZES:-1024,1025,2048,2049,4096}" --runs 10 \
  -o "$dir/compare.csv" >> "$log" 2>&1
echo "compare: $SECONDS s" | tee -a "$log"
# The summary (% of cuBLAS at 4096 and 2049, geomean over the paper sizes) and its figure, as
# `mmbench plot vs-cublas` computes them for any results file.
mmbench plot vs-cublas "$dir/compare.csv" 2>&1 | tee -a "$log"
tar czf "$OUT/tune-$tag.tar.gz" "${files[@]}" "$dir/compare"
