#!/usr/bin/env bash
# Issue 17's check, one device call: the kernel clock against Nsight Compute in each CUPTI mode
#   bash scripts/clock_check.sh TAG MODE...        (MODE: concurrent, serial, isolated)
# runs `mmbench verify-timing` on best, dbuf, cublas, gemv_tuned and transpose_vec at 63 to 8192
# per mode into results/checks/kernel-clock-TAG/clock-MODE.csv (its comparison beside it as
# clock-MODE.verify.csv), prints each mode's tally, and leaves the folder as
# $OUT/kernel-clock-TAG.tar.gz.
set -uo pipefail
tag=${1:?usage: clock_check.sh TAG MODE...}; shift
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=160
dir="results/checks/kernel-clock-$tag"
mkdir -p "$dir"
for mode in "$@"; do
  t0=$SECONDS
  timeout -s INT -k 30 280 mmbench verify-timing -v best,dbuf,cublas,gemv_tuned,transpose_vec -s 63,128,512,2048,8192 \
    --kernel-clock "$mode" -o "$dir/clock-$mode.csv" > "$dir/clock-$mode.log" 2>&1
  echo "$mode: exit $? after $((SECONDS - t0)) s"
  tail -32 "$dir/clock-$mode.log"
  tar czf "$OUT/kernel-clock-$tag.tar.gz" "$dir"
done
