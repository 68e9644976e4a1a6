#!/usr/bin/env bash
# Issue 16's diagnosis on one GPU: where a Dask worker's time goes against a plain process's.
#   bash scripts/cluster_overhead.sh [SIZES]        (default 1536:2049; 8 GEMM variants, 400 points)
# Compiles the kernels once (one sample a point), then times the same points three ways: a plain
# run, a plain run with MALLOC_TRIM_THRESHOLD_=65536 (what Dask's nanny gives its workers), and
# --cluster local (one worker: every run sees only the first GPU). Prints each run's wall time and its time_spent_s (metadata: the
# runner's run() and its parts, per process); the logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
first=${CUDA_VISIBLE_DEVICES:-0}
export PYTHONUNBUFFERED=1 COLUMNS=120 CUDA_VISIBLE_DEVICES=${first%%,*}
V=best,tile2d,vec4,warptile,pipelined,dbuf,multistage,cublas
S=${1:-1536:2049}
mmbench run -v $V -s "$S" --runs 1 --warmup 0 -o /tmp/overhead-warm.csv > /dev/null 2>&1
timed() {  # timed NAME COMMAND...: the command's output in $OUT/NAME.log, then its times
  local name=$1; shift
  rm -f "/tmp/overhead-$name.csv" "/tmp/overhead-$name.meta.json"
  timeout 300 "$@" -o "/tmp/overhead-$name.csv" > "$OUT/$name.log" 2>&1
  echo "$name: exit $?"
  python3 -c "import json, sys; m = json.load(open(sys.argv[1])); i = m['invocations'][-1]
print('  measuring', i['wall_s'], 's; time spent', i.get('time_spent_s'))
print('  workers\' allocators', [w.get('malloc') for w in (m.get('cluster') or {}).get('workers', {}).values()] or '-')" \
    "/tmp/overhead-$name.meta.json"
}
timed plain mmbench run -v $V -s "$S"
timed plain-trim env MALLOC_TRIM_THRESHOLD_=65536 mmbench run -v $V -s "$S"
timed cluster mmbench run -v $V -s "$S" --cluster local
