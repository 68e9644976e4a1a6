#!/usr/bin/env bash
# One call on the GPU machine: set up, print the device, run the GPU tests and the smoke run of
# .github/workflows/gpu-smoke.yml, then whatever extra commands are passed as arguments.
# Full logs go to $OUT (the device tool brings them back).
#   usage: bash scripts/device_check.sh [extra shell command ...]
set -uo pipefail
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh
export PYTHONUNBUFFERED=1 COLUMNS=120
mmbench info 2>&1 | tee "$OUT/info.txt"
python3 -m pytest -m gpu -q -rs -p no:cacheprovider 2>&1 | tee "$OUT/pytest-gpu.txt" | tail -25
# The smoke run of .github/workflows/gpu-smoke.yml (its CSV kept in $SMOKE_DIR, default $OUT).
mmbench run --variant best --sizes 63:129 --runs 3 --output "${SMOKE_DIR:-$OUT}/smoke.csv" 2>&1 | tail -15
for extra in "$@"; do echo "+ $extra"; bash -c "$extra"; done
