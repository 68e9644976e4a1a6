#!/usr/bin/env bash
# What the machine code of a variant shows, at its tuned parameters for a size on this GPU
# (else its defaults): 16-byte shared/global loads, FFMAs, and any local memory (LDL/STL).
# Needs nvcc and cuobjdump (the GPU machine has both). Usage: bash scripts/sass_check.sh VARIANT N [GPU]
# GPU names the tuning caches' device when this machine has none (e.g. "NVIDIA H200").
set -euo pipefail
variant=${1:?usage: sass_check.sh VARIANT N [GPU]}; n=${2:?usage: sass_check.sh VARIANT N [GPU]}; gpu=${3:-}
dir=$(mktemp -d)
python3 - "$variant" "$n" "$dir" "$gpu" <<'PY'
import sys
from pathlib import Path
from mmbench import source, tune
from mmbench.device import device_identity
from mmbench.sizes import Shape
from mmbench.variants import get_variant, param_points, format_params
v, n, out = get_variant(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
gpu = tune.DeviceId(sys.argv[4]) if sys.argv[4] else device_identity() or tune.DeviceId("")
tuned = tune.lookup(tune.read_caches(), gpu, v, source.source_hash(v), Shape(n, n, n))
params = tuned.params if tuned else param_points(v)[0]
print(f"{v.name} at n={n}: {format_params(params)}")
(out / "kernel.cu").write_text(source.module_source(v, params))
print(source.compile_report(v, params))
PY
here=$(cd "$(dirname "$0")" && pwd)
cd "$dir" && nvcc --cubin -arch sm_90 -lineinfo kernel.cu -o kernel.cubin
# Only this entry function: a family file may build several (warptile.cu builds two).
cuobjdump -sass -fun "$variant" kernel.cubin > kernel.sass
grep -nE '\b(LDL|STL|CALL|RET)' kernel.sass | head -12 || true
for op in 'LDS.128' 'LDS\b' 'LDG.E.128' 'LDG.E\b' 'LDGSTS' 'STS.128' 'STS\b' 'FFMA' 'LDL' 'STL'; do
  printf '%-10s %6d\n' "$op" "$(grep -cP "\b${op}" kernel.sass || true)"
done
python3 "$here/ffma_banks.py" kernel.sass
