#!/usr/bin/env bash
# One GPU call that tunes: the GPU tests, then each tuning pass given, then the tuned variants
# next to cuBLAS at a few sizes. Every pass writes results/tune-NAME-TAG.{csv,meta.json} and
# merges its best configurations into results/tuning-cache.json; all of it is copied to $OUT
# (at most 8 files come back: two per pass, the log, the cache and the comparison).
#   usage: bash scripts/tune_run.sh TAG COMPARE_VARIANTS NAME "TUNE ARGS" [NAME "TUNE ARGS" ...]
#   e.g.   bash scripts/tune_run.sh h200 warptile,dbuf dbuf "-v dbuf -s 2048,4096 --budget 40"
set -uo pipefail
tag=${1:?usage: tune_run.sh TAG COMPARE_VARIANTS NAME "TUNE ARGS" ...}; compare=${2:?COMPARE_VARIANTS}; shift 2
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=160
log="$OUT/tune-log.txt"
python3 -m pytest -m gpu -q -x -p no:cacheprovider 2>&1 | tee "$log" | tail -4
while [ $# -ge 2 ]; do
  name=$1; args=$2; shift 2
  SECONDS=0
  # shellcheck disable=SC2086  # the pass's arguments are meant to split
  mmbench tune $args --runs 5 --jobs 16 -o "results/tune-$name-$tag.csv" 2>&1 | tee -a "$log" | grep -v "^\s*[0-9]*/" | tail -8
  echo "tune $name: $SECONDS s" | tee -a "$log"
  cp "results/tune-$name-$tag.csv" "results/tune-$name-$tag.meta.json" "$OUT/"
done
cp results/tuning-cache.json "$OUT/"
mmbench run -v "$compare,cublas" -s 1024,1025,2048,2049,4096 --runs 10 -o "$OUT/compare-$tag.csv" >> "$log" 2>&1
python3 - "$OUT/compare-$tag.csv" <<'PY'
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
ok = d[d.status == "ok"]
t = ok.pivot_table(index="n", columns="variant", values="gflops_median")
for v in t.columns:
    if v != "cublas":
        t[v + " %"] = 100 * t[v] / t["cublas"]
print(t.round(1).to_string())
bad = d[d.status != "ok"]
if len(bad):
    print(bad[["variant", "n", "status", "reason"]].to_string())
PY
