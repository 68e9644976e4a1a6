"""How much does the way a cold sample's L2 is emptied weigh on a read-mostly kernel? GEMV (gemv_tuned at
each shape's tuned configuration), cuBLAS SGEMV and the device copy of A's bytes, each timed 20 times
behind the stream hold after three preparations: "write" (a memset of twice the L2: mmbench's flush
before 2026-11-24), "read" (a read of twice the L2: the flush now) and "hot" (none). On the GPU machine:

    python3 scripts/l2_flush_probe.py OUT.csv      # writes OUT.csv and OUT.meta.json
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from mmbench import environment
from mmbench.device import open_gpu
from mmbench.ops import get_op
from mmbench.results import write_metadata
from mmbench.runs import utc_now
from mmbench.sizes import Shape
from mmbench.tune import DeviceId, lookup, read_caches
from mmbench import source
from mmbench.variants import format_params, get_variant

SHAPES = [(8200, 8200), (82000, 820), (820, 82000), (16380, 16380), (5120, 5120), (2560, 2560), (1280, 1280), (6400, 64)]
PREPARATIONS = ("write", "read", "hot")
RUNS = 20


def median_ms(gpu, launch, preparation: str) -> float:
    prep = (lambda: None) if preparation == "hot" else (lambda: gpu.flush_l2(preparation))
    for _ in range(3):
        prep()
        launch()
    gpu.synchronize()
    pairs = [(gpu.event(), gpu.event()) for _ in range(RUNS)]
    gpu.hold()
    try:
        for start, end in pairs:
            prep()
            start.record(gpu.stream)
            launch()
            end.record(gpu.stream)
    finally:
        gpu.release()
    gpu.synchronize()
    if not gpu.held_ok():
        raise RuntimeError("the stream hold expired")
    return statistics.median(end.time_since(start) for start, end in pairs)


def main(out: Path) -> None:
    gpu = open_gpu()
    op, tuned = get_op("gemv"), get_variant("gemv_tuned")
    cache, device = read_caches(), DeviceId(gpu.facts.name, gpu.facts.arch, gpu.facts.sm_count)
    started, rows = utc_now(), []
    for m, n in SHAPES:
        shape = Shape(m, n, 0)
        entry = lookup(cache, device, tuned, source.source_hash(tuned), shape)
        inputs = op.make_inputs(shape, np.random.default_rng(1))
        bufs = op.upload(gpu, inputs)
        copy_to = gpu.alloc(4 * m * n)
        launches = {"gemv_tuned": op.kernel(gpu, tuned, entry.params, shape, bufs),
                    "cublas_gemv": op.library_call(op.library(tuned, gpu), shape, bufs),
                    "memcpy": lambda: gpu.drv.memcpy_dtod_async(copy_to, bufs.inputs[0], 4 * m * n, gpu.stream)}
        for preparation in PREPARATIONS:
            t = {name: median_ms(gpu, launch, preparation) for name, launch in launches.items()}
            gemv_bytes, copy_bytes = 4 * (m * n + m + n), 8 * m * n
            rows.append({"m": m, "n": n, "preparation": preparation, "params": format_params(entry.params),
                         **{f"{name}_us": round(1e3 * v, 2) for name, v in t.items()},
                         "gemv_tuned_pct_copy": round(100 * (gemv_bytes / t["gemv_tuned"]) / (copy_bytes / t["memcpy"]), 1),
                         "gemv_tuned_vs_cublas": round(t["cublas_gemv"] / t["gemv_tuned"], 3)})
            print(rows[-1], flush=True)
        copy_to.free()
        bufs.free()
    table = pd.DataFrame(rows)
    table.to_csv(out, index=False)
    write_metadata(out, {"name": "l2-flush-probe", "command": sys.argv, "started_at": started, "finished_at": utc_now(),
                         "settings": {"runs": RUNS, "warmup": 3}, **environment.collect(gpu)})
    print(table.drop(columns=["params"]).to_string(index=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
