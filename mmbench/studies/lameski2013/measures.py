"""Lameski 2013's approaches, depths and numbers, and the measures of the run that its claims,
figures and report share: approach 2's speed normalized to approach 1's, padding's mean improvement
per k and scope, and the mechanism table from the Nsight Compute profile (its shapes, its names)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import analysis, hierarchy
from ...analysis import by_shape, ok_rows, shape_ratio
from ...ops.base import SCOPES
from ...results import ResultsError

PADDING = dict(variant="shared_padded", params="BLOCK=32", pad=1)  # approach 1
BORDERS = dict(variant="shared", params="BLOCK=32", pad=0)  # approach 2
DEPTHS = (32, 64)  # the paper's wA = hB
PAPER_PERCENT = {32: 15.51, 64: 10.24}  # padding's average improvement, per k (section V)
MODERN = ("dbuf", "shared", "cublas")  # the `modern` sweep's kernels: --pad on the fastest
GAIN = "padding's mean improvement %"


def normalized_speed(df: pd.DataFrame, scope: str) -> pd.Series:
    """Approach 2's speed normalized to approach 1's, by shape (m, n, k): approach 1's time over
    approach 2's (medians of the samples). Below 1, padding is faster (the paper's Fig. 3 and 4)."""
    ok = ok_rows(df)
    return shape_ratio(by_shape(ok, scope=scope, **PADDING), by_shape(ok, scope=scope, **BORDERS))


def improvement(ratio: pd.Series) -> float:
    """The paper's "average improvement of performance" of padding: the mean over shapes of
    approach 1's speed over approach 2's, less 1, in percent."""
    return float(100 * (1 / ratio - 1).mean()) if len(ratio) else np.nan


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per k and scope: shapes, padding's mean improvement (the paper's number), its geometric
    mean, and where each approach wins."""
    rows = []
    for scope in SCOPES:
        r = normalized_speed(df, scope)
        for k in DEPTHS:
            cut = r[r.index.get_level_values("k") == k] if len(r) else r
            if cut.empty:
                continue
            rows.append({"k (wA = hB)": k, "scope": scope, "shapes": len(cut),
                         GAIN: improvement(cut),
                         "geometric mean %": float(100 * (np.exp(-np.log(cut).mean()) - 1)),
                         "paper %": PAPER_PERCENT[k], "padding faster at": int((cut < 1).sum()),
                         "borders faster at": int((cut > 1).sum())})
    if not rows:
        raise ResultsError("the Lameski report needs shared_padded and shared (BLOCK=32) rows of one scope")
    return pd.DataFrame(rows).set_index("k (wA = hB)")


# The paper's approach 2 branches in border blocks only; ours predicates its checks in every block.
PAPER_KERNEL_RUN = ("a variant checking borders in border blocks only, branching there as the paper's pseudo-code "
                    "does, run in the kernel scope at the study's shapes and profiled at the same shapes")
# -- the mechanism, from the Nsight Compute profile beside the run -----------------------------------------------
PROFILE_COMMAND = ("`mmbench profile --config configs/lameski2013.toml --points \"[1000,4000]x[1000,4000]x[32,64]\" "
                   "-v shared_padded,shared --results RUN.csv.gz` (branch, instruction and byte counts)")
COUNTS = ("branch_inst", "divergent_branches", "warp_inst", "global_ld_sectors", "global_st_sectors", "l2_bytes",
          "dram_bytes_read", "gpu_time_ns")


def _profiled(profile: pd.DataFrame | None, variant: str) -> pd.DataFrame:
    """One approach's profile rows at BLOCK = 32 by shape (m, n, k), with the counts the mechanism reads."""
    if profile is None or any(c not in profile for c in COUNTS):
        return pd.DataFrame()
    rows = profile[(profile.variant == variant) & (profile.params == "BLOCK=32")].dropna(subset=list(COUNTS))
    return rows.set_index(["m", "n", "k"])[list(COUNTS)]


def mechanism(profile: pd.DataFrame | None, df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per shape profiled for both approaches (approach 1 at its padded shape, the kernel alone):
    branch instructions and divergent branches of each, the warp instructions the checks add, the
    global-memory sectors (loads and stores, 32 B each), L2 bytes and DRAM bytes read that padding
    adds, Nsight Compute's kernel times and, from the run, approach 1's median kernel time over
    approach 2's. Empty without a profile holding both."""
    pad, chk = _profiled(profile, PADDING["variant"]), _profiled(profile, BORDERS["variant"])
    shapes = pad.index.intersection(chk.index).sort_values()
    if shapes.empty:
        return pd.DataFrame()
    pad, chk = pad.loc[shapes], chk.loc[shapes]
    sectors = lambda t: t.global_ld_sectors + t.global_st_sectors
    out = pd.DataFrame({
        "aligned": [m % 32 == 0 and n % 32 == 0 for m, n, _ in shapes],
        "branches padding": pad.branch_inst, "branches checks": chk.branch_inst,
        "divergent padding": pad.divergent_branches, "divergent checks": chk.divergent_branches,
        "instructions checks %": 100 * (chk.warp_inst / pad.warp_inst - 1),
        "sectors padding %": 100 * (sectors(pad) / sectors(chk) - 1),
        "l2 padding %": 100 * (pad.l2_bytes / chk.l2_bytes - 1),
        "dram read padding %": 100 * (pad.dram_bytes_read / chk.dram_bytes_read - 1),
        "time padding us": pad.gpu_time_ns / 1e3, "time checks us": chk.gpu_time_ns / 1e3}, index=shapes)
    run = normalized_speed(df, "kernel") if df is not None else pd.Series(dtype=float)
    out["run time ratio"] = [run.get(s, np.nan) for s in shapes]
    return out


def _span(values: pd.Series, fmt: str = "{:+.1f}") -> str:
    lo, hi = float(values.min()), float(values.max())
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)} to {fmt.format(hi)}"


def hierarchy_shapes(profile: pd.DataFrame | None) -> list[tuple]:
    """The two profiled shapes the hierarchy shows: the smallest (its operands fit in L2, both sides
    unaligned) and the largest (past L2)."""
    table = mechanism(profile)
    if table.empty:
        return []
    shapes = sorted(table.index, key=lambda s: (hierarchy.working_set_mb("gemm", *s), s))
    return list(dict.fromkeys([shapes[0], shapes[-1]]))


APPROACH = {PADDING["variant"]: "approach 1: padding (shared_padded, 32x32)",
            BORDERS["variant"]: "approach 2: border checks (shared, 32x32)"}


def _name(label: str) -> str:
    """A hierarchy label in this study's words (the hierarchy names `shared` CUDA-1, Zosa's name for it)."""
    for spec in (PADDING, BORDERS):
        if label == analysis.series_of(spec["variant"], spec["params"]).label:
            return APPROACH[spec["variant"]]
    return label


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/lameski2013-h100/lameski2013-h100.csv.gz"
