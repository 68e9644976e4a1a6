#!/usr/bin/env bash
# Run a study's config on the GPU machine, in device calls of at most 10 minutes:
#   bash scripts/config_run.sh CONFIG TAG [SECONDS]
# runs configs/NAME.toml into results/NAME-TAG/NAME-TAG.csv (resuming it when it exists), stopped by
# SIGINT after SECONDS (default 450) so every finished row is kept (call again to go on), writes
# the report when the run is whole, and leaves the folder as $OUT/NAME-TAG.tar.gz to unpack here.
set -uo pipefail
config=${1:?usage: config_run.sh CONFIG TAG [SECONDS]}; tag=${2:?usage: config_run.sh CONFIG TAG [SECONDS]}
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=120
name=$(basename "$config" .toml)-$tag
csv="results/$name/$name.csv"
resume=(); [ -s "$csv" ] && resume=(--resume)
timeout -s INT "${3:-450}" mmbench run --config "$config" -o "$csv" "${resume[@]}" > "$OUT/$name-run.txt" 2>&1
status=$?
tail -25 "$OUT/$name-run.txt"
if [ "$status" -eq 0 ]; then
  mmbench report --config "$config" "$csv" > "$OUT/$name-report.txt" 2>&1; tail -3 "$OUT/$name-report.txt"
fi
tar czf "$OUT/$name.tar.gz" "results/$name"
echo "config_run.sh: mmbench run exited $status; results/$name is in \$OUT/$name.tar.gz"
