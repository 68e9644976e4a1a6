#!/usr/bin/env bash
# Lab 3's reference run on the GPU machine (see README "Lab 3"), in two calls of at most 10 minutes:
#   bash scripts/lab3_run.sh TAG tune     the GPU tests of the transposes and products at awkward shapes,
#                                         then the transposes beyond the lab tuned at 8192 and 16384
#                                         (results/tuning/lab3-TAG/, into configs/tuning-cache.json), and
#                                         the limits config's 1024, 2049 and 4096 points, to compare with
#                                         results/limits-h200 (results/checks/gemm-TAG/: no GEMM slower)
#   bash scripts/lab3_run.sh TAG study    the config run (results/lab3-2018-TAG/), Nsight Compute's bank
#                                         conflicts of the padded and unpadded kernels, and the report
# Each call leaves $OUT/lab3-TAG-PART.tar.gz (the files to commit) and its log beside it. On a device
# call of 10 minutes: CPU_BUDGET=15 RUN_LIMIT=420 bash scripts/lab3_run.sh TAG study.
set -uo pipefail
tag=${1:?usage: lab3_run.sh TAG tune|study}; part=${2:?usage: lab3_run.sh TAG tune|study}
OUT=${OUT:-/tmp/mmbench-out}
mkdir -p "$OUT"
source .device/setup.sh > /dev/null
export PYTHONUNBUFFERED=1 COLUMNS=120
log="$OUT/lab3-$tag-$part.txt"
mmbench info > "$log" 2>&1
case "$part" in
  tune)
    python3 -m pytest -m gpu -q -p no:cacheprovider -k "transpose or copy or memcpy or matmul or lab3" 2>&1 \
      | tee -a "$log" | tail -4
    dir="results/tuning/lab3-$tag"
    mkdir -p "$dir"
    # Narrowed to the 4 fastest per shape of every earlier tuning run of each kernel (a configuration
    # recorded before GROUP existed is tried at each GROUP); a kernel never tuned is searched whole.
    for v in transpose_pipe transpose_swizzle transpose_vec transpose_tiled; do
      cands=()
      for f in $(grep -l ",$v," results/tuning/*/*.csv 2>/dev/null); do cands+=(--candidates "$f"); done
      [ ${#cands[@]} -gt 0 ] && cands+=(--top 4)  # tune refuses --top without --candidates
      mmbench tune -v "$v" --strategy brute -s 8192,16384 --runs 10 "${cands[@]}" -o "$dir/tune-$v.csv" 2>&1 \
        | tee -a "$log" | grep -E "^best|^Error|configurations"
    done
    mmbench run -v transpose_pipe,transpose_swizzle,transpose_vec,transpose_tiled,memcpy -s 8192,16384 --runs 20 \
      -o "$dir/tuned.csv" 2>&1 | tee -a "$log" | tail -12
    mkdir -p "results/checks/gemm-$tag"
    mmbench run -v best,tile2d,vec4,warptile,pipelined,dbuf,multistage,cublas -s 1024,2049,4096 \
      -o "results/checks/gemm-$tag/limits-points.csv" 2>&1 | tee -a "$log" | tail -14
    tar czf "$OUT/lab3-$tag-tune.tar.gz" "$dir" "results/checks/gemm-$tag" configs/tuning-cache.json
    ;;
  study)
    name="lab3-2018-$tag"
    csv="results/$name/$name.csv"
    if [ -e "$csv" ]; then echo "$csv exists: choose another TAG" | tee -a "$log"; exit 2; fi
    mkdir -p "results/$name"
    SECONDS=0
    # CPU_BUDGET: seconds a naive CPU point may take (longer ones are skipped rows with their estimate);
    # RUN_LIMIT: the run is interrupted (Ctrl-C: its rows and metadata kept) after that many seconds.
    timeout -s INT "${RUN_LIMIT:-900}" mmbench run --config configs/lab3-2018.toml --cpu-budget "${CPU_BUDGET:-120}" \
      -o "$csv" 2>&1 | tee -a "$log" | tail -30
    status=${PIPESTATUS[0]}
    echo "config run: exit $status after $SECONDS s" | tee -a "$log"
    # 0: all verified; 1: some point wrong or failed (rows say which; profile and report still tell)
    if [ "$status" -gt 1 ] || [ ! -s "$csv" ]; then exit "$status"; fi
    mmbench profile --config configs/lab3-2018.toml --points 1024,4096 \
      -v transpose_shmem,transpose_shmem_unpadded,matmul_shared --results "$csv" 2>&1 | tee -a "$log" | tail -12
    mmbench report --config configs/lab3-2018.toml "$csv" 2>&1 | tee -a "$log" | tail -3
    tar czf "$OUT/lab3-$tag-study.tar.gz" "results/$name"
    ;;
  *) echo "usage: lab3_run.sh TAG tune|study" >&2; exit 2 ;;
esac
