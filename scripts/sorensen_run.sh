#!/usr/bin/env bash
# Sørensen's GEMV study on the GPU machine (see README "GEMV"), in device calls of at most 10 minutes:
#   bash scripts/sorensen_run.sh TAG tune    the batched mesh tuning of gemv_tuned (mesh:1024, cold L2),
#                                            resumed after its last whole cell when its file exists;
#                                            stopped by SIGINT after TUNE_S seconds (default 470), so it
#                                            compresses its file and records its whole cells in
#                                            mmbench/data/tuning-cache.json: call again until it finishes
#   bash scripts/sorensen_run.sh TAG study   configs/sorensen2012.toml into results/sorensen2012-TAG/
#                                            (stopped after RUN_S seconds, default 450; --resume next time)
# PYCUDA_CACHE_DIR is .pycuda-cache/ (git-ignored); .device/pycuda-cache.tar.xz, when there, fills it
# (each call leaves the cache as $OUT/pycuda-cache.tar.xz: carry it back, 1536 configurations load in
# about 45 s instead of compiling in 120 s). $OUT/sorensen-TAG-PART.tar.gz holds the files to commit
# (the tuning's in pieces, sorensen-TAG-tune.tar.gz.00, .01 ...: cat them | tar xz).
set -uo pipefail
tag=${1:?usage: sorensen_run.sh TAG tune|study}; part=${2:?usage: sorensen_run.sh TAG tune|study}
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export MMBENCH_TUNING_CACHE=$PWD/mmbench/data/tuning-cache.json  # these runs tune the shipped cache
export PYTHONUNBUFFERED=1 COLUMNS=120 PYCUDA_CACHE_DIR=$PWD/.pycuda-cache
mkdir -p "$PYCUDA_CACHE_DIR"
[ -f .device/pycuda-cache.tar.xz ] && tar xJf .device/pycuda-cache.tar.xz -C "$PYCUDA_CACHE_DIR"
log="$OUT/sorensen-$tag-$part.txt"
case "$part" in
  tune)
    dir="results/tuning/sorensen2012-$tag"; file="$dir/tune-gemv_tuned.csv"
    mkdir -p "$dir"
    resume=(); [ -f "$file.gz" ] && resume=(--resume)
    timeout -s INT "${TUNE_S:-470}" mmbench tune -v gemv_tuned -s mesh:1024 --strategy brute --jobs 16 \
      -o "$file" "${resume[@]}" 2>&1 | tee "$log" | tail -20
    # in pieces of 15 MiB (a device call returns files of at most 16 MiB): cat them | tar xz
    tar czf - "$dir" mmbench/data/tuning-cache.json | split -b 15M -d - "$OUT/sorensen-$tag-tune.tar.gz."
    ;;
  study)
    dir="results/sorensen2012-$tag"; file="$dir/sorensen2012-$tag.csv"
    mkdir -p "$dir"
    resume=(); [ -s "$file" ] && resume=(--resume)
    timeout -s INT "${RUN_S:-450}" mmbench run --config configs/sorensen2012.toml -o "$file" "${resume[@]}" 2>&1 \
      | tee "$log" | tail -12
    tar czf "$OUT/sorensen-$tag-study.tar.gz" "$dir"
    ;;
  *) echo "usage: sorensen_run.sh TAG tune|study" >&2; exit 2 ;;
esac
tar -I "xz -T0" -cf "$OUT/pycuda-cache.tar.xz" -C "$PYCUDA_CACHE_DIR" .  # xz on every core: seconds, not a minute
