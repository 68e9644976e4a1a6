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
import math
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from typing import Sequence

import pandas as pd

from .engine.plan import Point
from .precisions import DEFAULT, DEFAULT_LAYOUT
from .sizes import Shape
from .variants import files, format_params

# Counts, summed over the kernels a point launches.
COUNTS = {
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
    # The hierarchical roofline's traffic, a level at a time (as Nsight Compute's and NERSC's
    # hierarchical rooflines count it): bytes the warps moved to and from shared memory, through
    # L1 (global and local), through L2, and DRAM's (the two counts above).
    "sm__sass_data_bytes_mem_shared.sum": "shared_bytes",
    "l1tex__t_bytes.sum": "l1_bytes",
    "lts__t_bytes.sum": "l2_bytes",
    # Coalescing: 32-byte sectors per warp-level global request (4 when a warp's 32 floats are
    # contiguous, 32 when every lane touches its own sector).
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global_ld_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global_ld_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global_st_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global_st_requests",
    # Branches: warp-level branch instructions, and those whose threads went more than one way.
    "smsp__sass_inst_executed_op_branch.sum": "branch_inst",
    "smsp__sass_branch_targets_threads_divergent.sum": "divergent_branches",
    "smsp__inst_executed.sum": "warp_inst",
}
# The warp states a stall table reads besides the barrier (waits on memory, on a busy pipe, on an
# mbarrier or a fixed latency, on the instruction cache).
STALLS = ("long_scoreboard", "short_scoreboard", "math_pipe_throttle", "mio_throttle", "lg_throttle", "wait",
          "sleeping", "no_instruction")
# Rates and ratios, averaged over a point's kernels weighted by their time.
MEANS = {
    "l1tex__t_sector_hit_rate.pct": "l1_hit_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "smsp__inst_executed.avg.per_cycle_active": "ipc_per_smsp",
    # warps waiting at __syncthreads per issued instruction: the synchronization a tiling pays
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": "barrier_stall_per_issue",
    # the tensor cores' use, % of their peak over the SMs' active cycles: mma.sync (hmma) and Hopper's
    # warpgroup MMAs (gmma); a tensor-core kernel loses where these fall short of 100
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_hmma_pct",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_gmma_pct",
    # why warps did not issue, per issued instruction, by reason (Nsight Compute's warp states)
    **{f"smsp__average_warps_issue_stalled_{why}_per_issue_active.ratio": f"{why}_stall_per_issue"
       for why in STALLS},
}
# The device's own peaks per cycle and its clocks during the kernel (Nsight Compute's roofline
# ceilings: a peak is its per-cycle peak times its unit's cycles per second); the median over kernels.
PEAKS = {
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": "peak_ffma_per_cycle",
    "sm__cycles_elapsed.avg.per_second": "sm_hz",
    "sm__sass_data_bytes_mem_shared.sum.peak_sustained": "peak_shared_bytes_per_cycle",
    "l1tex__cycles_elapsed.avg.per_second": "l1_hz",
    "lts__t_bytes.sum.peak_sustained": "peak_l2_bytes_per_cycle",
    "lts__cycles_elapsed.avg.per_second": "l2_hz",
    "dram__bytes.sum.peak_sustained": "peak_dram_bytes_per_cycle",
    "dram__cycles_elapsed.avg.per_second": "dram_hz",
}
METRICS = {**COUNTS, **MEANS, **PEAKS}
LEVELS = ("shared", "l1", "l2", "dram")  # the hierarchical roofline's levels, nearest the SM first
COLUMNS = ("variant", "params", "m", "n", "k", "kernels", "gpu_time_ns", "dram_bytes_read", "dram_bytes_write",
           "fp32_flops", "dram_intensity", "shared_ld_inst", "shared_st_inst", "shared_ld_conflicts",
           "shared_st_conflicts", "conflicts_per_shared_ld", "conflicts_per_shared_st",
           "shared_bytes", "l1_bytes", "l2_bytes", "global_ld_sectors", "global_ld_requests", "global_st_sectors",
           "global_st_requests", "sectors_per_global_ld", "sectors_per_global_st", "branch_inst",
           "divergent_branches", "warp_inst", *MEANS.values(),
           "peak_fp32_flops_per_s", *(f"peak_{level}_bytes_per_s" for level in LEVELS), "dtype", "layout")


class ProfileError(RuntimeError):
    """ncu is missing or failed; the message says which and how to get it."""


def ncu_path() -> str | None:
    return shutil.which("ncu")


def ncu_command(args: Sequence[str], metrics: Sequence[str] | None = None, cache_control: str = "all") -> list[str]:
    ncu = ncu_path()
    if ncu is None:
        raise ProfileError("Nsight Compute (ncu) is not on PATH; it ships with the CUDA toolkit "
                           "(install nsight-compute and put its ncu on PATH)")
    metrics = available(tuple(METRICS)) if metrics is None else metrics
    return [ncu, "--csv", "--print-units", "base", "--clock-control", "none", "--cache-control", cache_control,
            "--metrics", ",".join(metrics), sys.executable, "-m", "mmbench.profiler_target", *args]


_AVAILABLE: dict[str, frozenset] = {}


def available(metrics: Sequence[str]) -> tuple[str, ...]:
    """The metrics this GPU's Nsight Compute knows (by base name, `ncu --query-metrics`): one that
    an older GPU or Nsight lacks leaves its column empty instead of failing the whole profile.
    Where the query says nothing usable, all of them are asked for."""
    ncu = ncu_path()
    if ncu not in _AVAILABLE:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
        _AVAILABLE[ncu] = frozenset(query_metric_names(proc.stdout)) if proc.returncode == 0 else frozenset()
    known = _AVAILABLE[ncu]
    return tuple(m for m in metrics if not known or m.split(".")[0] in known)


def query_metric_names(text: str) -> set[str]:
    """The base metric names in `ncu --query-metrics`'s table (the first word of its rows)."""
    return {line.split()[0] for line in text.splitlines() if line.strip() and "__" in line.split()[0]}


def _number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:  # "n/a": the metric does not apply to this launch
        return float("nan")


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
            entry[name] = _number(row["Metric Value"])
    return [launches[i] for i in sorted(launches, key=int)]


def _ratio(num: float, den: float) -> float:
    return num / den if den and not math.isnan(den) else float("nan")


def aggregate(launches: list[dict]) -> dict:
    """One point's counts from its kernels: counts summed (a metric no kernel reported stays
    NaN), rates averaged weighted by each kernel's time, the device's peaks the median."""
    out = {}
    for name in COUNTS.values():
        values = [la[name] for la in launches if not math.isnan(la.get(name, math.nan))]
        out[name] = sum(values) if values else float("nan")
    times = [la.get("gpu_time_ns", 0.0) or 0.0 for la in launches]
    for name in MEANS.values():
        pairs = [(la[name], t) for la, t in zip(launches, times) if not math.isnan(la.get(name, math.nan))]
        weight = sum(t for _, t in pairs)
        out[name] = (sum(v * t for v, t in pairs) / weight if weight else
                     statistics.fmean(v for v, _ in pairs) if pairs else float("nan"))
    for name in PEAKS.values():
        values = [la[name] for la in launches if not math.isnan(la.get(name, math.nan))]
        out[name] = statistics.median(values) if values else float("nan")
    return out


def _row(point: Point, launches: list[dict]) -> dict:
    total = aggregate(launches)
    zero = lambda name: 0.0 if math.isnan(total[name]) else total[name]  # noqa: E731  (the FLOP counts a GEMM lacks)
    flops = 2 * zero("ffma") + zero("fadd") + zero("fmul")
    dram = zero("dram_bytes_read") + zero("dram_bytes_write")
    s = point.shape
    return {"variant": point.variant.name, "params": format_params(point.params), "m": s.m, "n": s.n, "k": s.k,
            "kernels": ";".join(sorted({la["kernel"] for la in launches})), "gpu_time_ns": total["gpu_time_ns"],
            "dram_bytes_read": zero("dram_bytes_read"), "dram_bytes_write": zero("dram_bytes_write"),
            "fp32_flops": flops, "dram_intensity": flops / dram if dram else float("nan"),
            **{f"shared_{op}_{what}": zero(f"shared_{op}_{what}") for op in ("ld", "st") for what in ("inst", "conflicts")},
            **{f"conflicts_per_shared_{op}": _ratio(zero(f"shared_{op}_conflicts"), zero(f"shared_{op}_inst"))
               for op in ("ld", "st")},
            **{name: total[name] for name in ("shared_bytes", "l1_bytes", "l2_bytes", "global_ld_sectors",
                                              "global_ld_requests", "global_st_sectors", "global_st_requests",
                                              "branch_inst", "divergent_branches", "warp_inst", *MEANS.values())},
            **{f"sectors_per_global_{op}": _ratio(total[f"global_{op}_sectors"], total[f"global_{op}_requests"])
               for op in ("ld", "st")},
            **peaks(total), "dtype": point.dtype, "layout": point.layout}


def peaks(total: dict) -> dict:
    """The roofline's ceilings from Nsight Compute's per-cycle peaks and the clocks it saw: FP32
    FLOP/s (an FFMA is 2 FLOPs) and each level's bytes per second (shared memory's peak is per SM
    cycle)."""
    return {"peak_fp32_flops_per_s": 2 * total["peak_ffma_per_cycle"] * total["sm_hz"],
            "peak_shared_bytes_per_s": total["peak_shared_bytes_per_cycle"] * total["sm_hz"],
            # L1 and shared memory are one array behind one 128 B/cycle data path an SM (what Nsight
            # Compute's L1 roof counts: LSU writeback cycles x 128 B); L1's tag-stage peak
            # (l1tex__t_bytes.peak_sustained) is 4x that, a rate no kernel's data could reach.
            "peak_l1_bytes_per_s": total["peak_shared_bytes_per_cycle"] * total["l1_hz"],
            "peak_l2_bytes_per_s": total["peak_l2_bytes_per_cycle"] * total["l2_hz"],
            "peak_dram_bytes_per_s": total["peak_dram_bytes_per_cycle"] * total["dram_hz"]}


def _run(args: list[str], metrics: Sequence[str] | None = None, cache_control: str = "all") -> list[dict]:
    proc = subprocess.run(ncu_command(args, metrics, cache_control), capture_output=True, text=True,
                          env=files.environment())  # the target knows your variant files' variants too
    launches = parse_ncu_csv(proc.stdout)
    if proc.returncode != 0 or not launches:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ProfileError(f"ncu failed (exit {proc.returncode}): {' | '.join(tail)}")
    return launches


def _args(point: Point) -> list[str]:
    """The profiler target's arguments for a point: the shape its kernel runs at (a padded point's
    padded shape; its row keeps the problem's shape), written out in full: a transpose's 4096 is
    4096 x 4096 x 0, a GEMM's 4096 x 4096 x 4096."""
    from .engine.rows import padded_shape

    padded = padded_shape(point)
    s = Shape(*map(int, padded.split("x"))) if padded else point.shape
    form = f"@{point.dtype}/{point.layout}" if (point.dtype, point.layout) != (DEFAULT, DEFAULT_LAYOUT) else ""
    return [point.variant.name, format_params(point.params) or "-", f"{s.m}x{s.n}x{s.k}{form}"]


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
    for column, value in (("dtype", DEFAULT), ("layout", DEFAULT_LAYOUT)):  # profiles from before the columns
        if column not in df:
            df[column] = value
    return df.fillna({"params": ""})
