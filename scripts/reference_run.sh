#!/usr/bin/env bash
# The zosa2017 reference run on the GPU machine, in one call (see README "Reference results"):
# GPU tests and the smoke run, a compile warm-up, the timed config run, the device ceilings,
# Nsight Compute profiles of a few points, and ncu's gpu__time_duration for the n = 63
# CUDA-Best launch. Usage: bash scripts/reference_run.sh TAG   (writes results/zosa2017-TAG/)
set -uo pipefail
tag=${1:?usage: reference_run.sh TAG (e.g. h200)}
OUT=${OUT:-/tmp/mmbench-out}
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=120
csv=results/zosa2017-$tag/zosa2017-$tag.csv
mkdir -p "results/zosa2017-$tag"
OUT=/tmp/check SMOKE_DIR=/tmp bash scripts/device_check.sh > "$OUT/device-check.txt" 2>&1
tail -4 "$OUT/device-check.txt"
# Compile every kernel once so the timed run below measures a warm compile cache.
mmbench run -v best_const,best,interleaved,unroll_k2,shared,naive,shared_uncoalesced,cublas \
  -s 64 --block 8,16,32 --runs 1 --warmup 0 -o /tmp/warm.csv > /dev/null 2>&1
SECONDS=0
mmbench run --config configs/zosa2017.toml --output "$csv" > "$OUT/zosa-run.txt" 2>&1
echo "config run: exit $? after $SECONDS s" | tee -a "$OUT/zosa-run.txt"
tail -16 "$OUT/zosa-run.txt"
mmbench ceilings --results "$csv" 2>&1 | tee "$OUT/ceilings-profile.txt"
mmbench profile --config configs/zosa2017.toml --points 256,1024,2048 --results "$csv" 2>&1 | tee -a "$OUT/ceilings-profile.txt" | tail -40
# Nsight Compute on the n = 63 CUDA-Best launch (cold caches: ncu flushes them before each replay).
ncu --clock-control none --cache-control all -k regex:'^best$' --metrics gpu__time_duration.sum --csv \
  mmbench run -v best -s 63 --runs 5 --warmup 0 -o /tmp/ncu-run.csv > "$OUT/ncu63.txt" 2>&1
grep -E 'gpu__time' "$OUT/ncu63.txt" | cut -d, -f1,5,13- | head -6
cp "$csv" "${csv%.csv}.meta.json" "${csv%.csv}.profile.csv" "$OUT/"
ls "$OUT"
