"""Parameters by rule where no tuning cache has an entry (a GPU nobody tuned, or the caches switched
off): a variant's configuration chosen from the shape and the GPU's SM count, instead of one fixed
default point for every size.

dbuf's rule picks one of three configurations of its tuned space by how its tiles fill the GPU
(the three the H200 tuning of every size from 512 to 2049 chose most, results/README.md says
where that tuning lives; each was best or near it wherever the rule picks it):

- few 128 x 128 tiles (fewer than half the SMs): 64 x 64 tiles, 128 threads, k split 4 ways, so
  the grid has enough blocks to fill the SMs;
- otherwise, where k split 3 ways fills the last wave of blocks (two 128 x 128 blocks an SM: their
  2 x 33 KB of shared memory fits every SM since Volta) to 90 % or more: 128 x 128 tiles, split-K 3;
- otherwise stream-K: 128 x 128 tiles shared out over a persistent grid, so no wave is left partial.

Against the tuned best of the same space on the H200 (146 sizes), the rule gives 97.8 % on
geometric mean and at least 88.5 % of cuBLAS at every size from 1024, the tuned best's own
worst there (`mmbench run -v dbuf,cublas --tuning-cache none` measures it on yours).

kmajor's rule (issue 47) picks between the two shapes its H200 tuning chose at 132 of the limits
study's 153 sizes: CUTLASS-like 128 x 256 tiles, one block an SM (k-steps of 16 where the rows are
16-byte aligned, of 8 with 16 x 8 register tiles where not), wherever those tiles fill the GPU's waves
of one block an SM: a last wave at least 85 % full, or 8 waves and more; else 64 x 64 tiles of 64
threads, k split 4 ways. Against the best of its five tuned finalists at each of the study's 153
sizes (the ladder plan's run on an H200, results/limits-h200/), the rule gives 99.7 % on geometric
mean and at least 92.3 % (at 1087).
"""

from __future__ import annotations

import math
from typing import Callable

from ..ops.gemm import rows_aligned
from ..sizes import Shape
from ..variants import Params, parse_params
from ..vocabulary import DeviceId

_COMMON = "BK=16,ORDER=1,STAGE=1,STRIP=4,VEC4=1,TN=4"
DBUF_SMALL = parse_params(f"{_COMMON},BM=64,BN=64,THREADS=128,MINB=1,WM=32,WN=32,WNITER=1,TM=4,SPLITK=4,SK=0")
DBUF_SPLIT3 = parse_params(f"{_COMMON},BM=128,BN=128,THREADS=256,MINB=2,WM=32,WN=64,WNITER=2,TM=8,SPLITK=3,SK=0")
DBUF_STREAM = parse_params(f"{_COMMON},BM=128,BN=128,THREADS=256,MINB=2,WM=64,WN=32,WNITER=1,TM=8,SPLITK=1,SK=1")
BLOCKS_PER_SM = 2  # 128 x 128 blocks resident on an SM (MINB)
FULL_LAST_WAVE = 0.9  # split-K 3 is kept where its last wave of blocks is at least this full


def dbuf_rule(shape: Shape, device: DeviceId) -> Params:
    """dbuf's configuration for a shape on a GPU of device.sm_count SMs (see the module's text)."""
    sms = device.sm_count or 132
    tiles = math.ceil(shape.m / 128) * math.ceil(shape.n / 128)
    if tiles < sms / 2:
        return DBUF_SMALL
    fill = (3 * tiles / (BLOCKS_PER_SM * sms)) % 1
    if shape.k >= 3 * 128 and (fill == 0 or fill >= FULL_LAST_WAVE):
        return DBUF_SPLIT3
    return DBUF_STREAM


_KMAJOR = "COPY_AT=1,MINB=1,SPLITK=1,STAGES=4,THREADS=256,BM=128,BN=256"
KMAJOR_LARGE_ALIGNED = parse_params(f"{_KMAJOR},BK=16,TM=8,TN=16,WM=64,WN=64")
KMAJOR_LARGE_UNALIGNED = parse_params(f"{_KMAJOR},BK=8,TM=16,TN=8,WM=32,WN=128")
KMAJOR_SMALL = parse_params("BK=8,BM=64,BN=64,COPY_AT=0,MINB=1,SPLITK=4,STAGES=3,THREADS=64,TM=8,TN=8,WM=64,WN=32")
FULL_WAVE = 0.85  # the large tiles are kept where their last wave of blocks is at least this full
MANY_WAVES = 8  # ... or where there are this many waves: the last one's idle SMs cost little


def kmajor_rule(shape: Shape, device: DeviceId) -> Params:
    """kmajor's configuration for a shape on a GPU of device.sm_count SMs (see the module's text)."""
    waves = math.ceil(shape.m / 128) * math.ceil(shape.n / 256) / (device.sm_count or 132)
    last = waves % 1
    if waves >= MANY_WAVES or (waves >= FULL_WAVE and (last == 0 or last >= FULL_WAVE)):
        return KMAJOR_LARGE_ALIGNED if rows_aligned(shape) else KMAJOR_LARGE_UNALIGNED
    return KMAJOR_SMALL


RULES: dict[str, Callable[[Shape, DeviceId], Params]] = {"dbuf": dbuf_rule, "kmajor": kmajor_rule}
