"""Nsight Compute profiles of chosen points: DRAM bytes, FP32 operations and shared-memory bank
conflicts per point.

Each point's kernels run once under ``ncu --clock-control none --cache-control all`` (caches
flushed before the kernel, as in the harness's cold mode). The counts give the measured DRAM
arithmetic intensity the roofline plots, and the bank conflicts per shared-memory instruction
that decide whether padding a tile removed a conflict (measured, not inferred from timing).
"""

from __future__ import annotations

import csv
import io
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from typing import Sequence

import pandas as pd

from .engine.plan import Point
from .variants import files, format_params

METRICS = {
    "gpu__time_duration.sum": "gpu_time_ns",
    "dram__bytes_read.sum": "dram_bytes_read",
    "dram__bytes_write.sum": "dram_bytes_write",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "ffma",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": "fadd",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": "fmul",
    # Extra shared-memory passes a warp's request needed because lanes hit one bank (ld: loads,
    # st: stores), and the warp-level shared load and store instructions they came from.
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared_ld_conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared_st_conflicts",
    "smsp__inst_executed_op_shared_ld.sum": "shared_ld_inst",
    "smsp__inst_executed_op_shared_st.sum": "shared_st_inst",
}
COLUMNS = ("variant", "params", "m", "n", "k", "kernels", "gpu_time_ns", "dram_bytes_read", "dram_bytes_write",
           "fp32_flops", "dram_intensity", "shared_ld_inst", "shared_st_inst", "shared_ld_conflicts",
           "shared_st_conflicts", "conflicts_per_shared_ld", "conflicts_per_shared_st")


class ProfileError(RuntimeError):
    """ncu is missing or failed; the message says which and how to get it."""


def ncu_path() -> str | None:
    return shutil.which("ncu")


def ncu_command(args: Sequence[str], metrics: Sequence[str] = tuple(METRICS), cache_control: str = "all") -> list[str]:
    ncu = ncu_path()
    if ncu is None:
        raise ProfileError("Nsight Compute (ncu) is not on PATH; it ships with the CUDA toolkit "
                           "(install nsight-compute and put its ncu on PATH)")
    return [ncu, "--csv", "--print-units", "base", "--clock-control", "none", "--cache-control", cache_control,
            "--metrics", ",".join(metrics), sys.executable, "-m", "mmbench.profiler_target", *args]


def parse_ncu_csv(text: str) -> list[dict]:
    """Per profiled kernel launch, in order: its name and the metrics (ncu's "details" CSV)."""
    start = text.find('"ID"')
    if start < 0:
        return []
    launches: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        entry = launches.setdefault(row["ID"], {"kernel": row["Kernel Name"]})
        name = METRICS.get(row["Metric Name"])
        if name:
            entry[name] = float(row["Metric Value"].replace(",", ""))
    return [launches[i] for i in sorted(launches, key=int)]


def _row(point: Point, launches: list[dict]) -> dict:
    total = defaultdict(float)
    for launch in launches:
        for name in METRICS.values():
            total[name] += launch.get(name, 0.0)
    flops = 2 * total["ffma"] + total["fadd"] + total["fmul"]
    dram = total["dram_bytes_read"] + total["dram_bytes_write"]
    s = point.shape
    return {"variant": point.variant.name, "params": format_params(point.params), "m": s.m, "n": s.n, "k": s.k,
            "kernels": ";".join(sorted({la["kernel"] for la in launches})), "gpu_time_ns": total["gpu_time_ns"],
            "dram_bytes_read": total["dram_bytes_read"], "dram_bytes_write": total["dram_bytes_write"],
            "fp32_flops": flops, "dram_intensity": flops / dram if dram else float("nan"),
            **{f"shared_{op}_{what}": total[f"shared_{op}_{what}"] for op in ("ld", "st") for what in ("inst", "conflicts")},
            **{f"conflicts_per_shared_{op}": total[f"shared_{op}_conflicts"] / total[f"shared_{op}_inst"]
               if total[f"shared_{op}_inst"] else float("nan") for op in ("ld", "st")}}


def _run(args: list[str], metrics: Sequence[str] = tuple(METRICS), cache_control: str = "all") -> list[dict]:
    proc = subprocess.run(ncu_command(args, metrics, cache_control), capture_output=True, text=True,
                          env=files.environment())  # the target knows your variant files' variants too
    launches = parse_ncu_csv(proc.stdout)
    if proc.returncode != 0 or not launches:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ProfileError(f"ncu failed (exit {proc.returncode}): {' | '.join(tail)}")
    return launches


def _args(point: Point) -> list[str]:
    s = point.shape  # written out in full: a transpose's 4096 is 4096 x 4096 x 0, a GEMM's 4096 x 4096 x 4096
    return [point.variant.name, format_params(point.params) or "-", f"{s.m}x{s.n}x{s.k}"]


def profile_points(points: Sequence[Point]) -> pd.DataFrame:
    """Profile our kernels in one ncu process (one launch each, in order) and each library
    point in a process of its own (a library may launch several kernels for one call)."""
    ours = [p for p in points if p.variant.backend == "cuda"]
    rows = []
    if ours:
        launches = _run([a for p in ours for a in _args(p)])
        if len(launches) != len(ours):
            raise ProfileError(f"expected {len(ours)} kernel launches under ncu, saw {len(launches)}")
        rows += [_row(p, [la]) for p, la in zip(ours, launches)]
    for point in points:
        if point.variant.backend == "cublas":
            rows.append(_row(point, _run(_args(point))))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def kernel_time_ns(point: Point, cache_control: str = "all", calls: int = 1) -> tuple[float, int]:
    """Nsight Compute's gpu__time_duration summed over every kernel one call of the point launches
    (its own process: a library may launch several), the median over `calls` calls on the same
    inputs, and how many kernels a call launched. cache_control "all": every cache flushed before
    each kernel (ncu's default); "none": as the kernel finds them."""
    launches = _run(["--repeat", str(calls), *_args(point)], ("gpu__time_duration.sum",), cache_control)
    return per_call_median([la.get("gpu_time_ns", 0.0) for la in launches], calls)


def per_call_median(kernel_ns: Sequence[float], calls: int) -> tuple[float, int]:
    """The median over calls of each call's summed kernel times, and the kernels a call launched,
    from the kernels of `calls` identical calls in launch order."""
    if not kernel_ns or len(kernel_ns) % calls:
        raise ProfileError(f"{len(kernel_ns)} kernel launches under ncu do not split into {calls} equal calls")
    per = len(kernel_ns) // calls
    return statistics.median(sum(kernel_ns[i:i + per]) for i in range(0, len(kernel_ns), per)), per


def profile_path(csv_path):
    from .results import sibling

    return sibling(csv_path, ".profile.csv")


ROOFLINE_COLUMNS = COLUMNS[:11]  # what every profile has; the shared-memory counts came later


def read_profile(path) -> pd.DataFrame:
    """A profile beside a results CSV (what `mmbench profile` wrote); ProfileError in one line when
    the file is not one, rather than a pandas traceback in the middle of a figure."""
    try:
        df = pd.read_csv(path, dtype={"params": str})
    except (ValueError, OSError) as exc:  # pandas' ParserError and EmptyDataError are ValueErrors, as is a bad byte
        raise ProfileError(f"{path} is not an mmbench profile: {str(exc).splitlines()[0]}") from None
    missing = [c for c in ROOFLINE_COLUMNS if c not in df]
    if missing:
        raise ProfileError(f"{path} is not an mmbench profile: it has no column {', '.join(missing)} "
                           f"(rerun `mmbench profile` or move it away)")
    return df.fillna({"params": ""})
