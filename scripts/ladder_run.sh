#!/usr/bin/env bash
# The ladder beyond the paper on the GPU machine, in one call: GPU tests, every ladder step at its
# defaults next to cuBLAS, then tuning runs of warptile and pipelined into results/tuning-cache.json.
# Usage: bash scripts/ladder_run.sh TAG [PIPELINED_BUDGET] [WARPTILE_BUDGET]
set -uo pipefail
tag=${1:?usage: ladder_run.sh TAG}
OUT=${OUT:-/tmp/mmbench-out}
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=140
python3 -m pytest -m gpu -q -x -p no:cacheprovider 2>&1 | tee "$OUT/ladder-log.txt" | tail -6
mmbench run -v best,tile2d,vec4,warptile,pipelined,cublas -s 1024,2048,2049,4096 --runs 5 \
  -o "results/ladder-defaults-$tag.csv" 2>&1 | tee -a "$OUT/ladder-log.txt" | tail -10
for spec in "pipelined ${2:-60}" "warptile ${3:-30}"; do
  set -- $spec
  SECONDS=0
  mmbench tune -v "$1" -s 1024,2048,2049,4096 --budget "$2" --runs 5 --jobs 16 \
    -o "results/tune-$1-$tag.csv" 2>&1 | tee -a "$OUT/ladder-log.txt" | tail -8
  echo "tune $1: $SECONDS s" | tee -a "$OUT/ladder-log.txt"
done
cp results/ladder-defaults-$tag.csv results/tune-*-$tag.csv results/tune-pipelined-$tag.meta.json results/tuning-cache.json "$OUT/"
