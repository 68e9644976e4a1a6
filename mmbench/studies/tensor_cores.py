"""The tensor-core study (configs/tensor-cores.toml): mmbench's own BF16 GEMM ladder, one technique a
step, and the last step at FP8 e4m3, each as % of cuBLASLt at the same precision and layout in the
same run; the steps' gains beside a published ladder on the same kind of GPU.

Its targets (the issue that built it): at BF16, the fastest of ours at 95 % of cuBLASLt or more at
every size from 2048 to 16384 that is a multiple of 128, with a geometric mean of at least 1.00 there;
at FP8, 90 % or more from 4096 to 16384; every awkward shape verified, and 80 % or more where a step
takes it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import analysis, plots
from ..results import ResultsError
from .common import provenance, report_text, text_table
from .contract import Figure, FigureFamily

LADDER = ("tc_mma", "tc_tma", "tc_ws", "tc_persistent", "tc_overlap", "tc_cluster", "tc_tiles")
FP8_STEP = "tc_fp8"
LIBRARY = "cublas"  # the GEMM yardstick: cuBLASLt at the tensor-core precisions
LADDER_SIZE = 8192  # where the published ladder was measured
BF16_GOAL, BF16_RANGE, BF16_MEAN = 95.0, (2048, 16384), 1.00
FP8_GOAL, FP8_RANGE = 90.0, (4096, 16384)
AWKWARD_GOAL = 80.0
STRETCH = 100.0  # BF16 at 8192

REFERENCE_RUN = "results/tensor-cores-h100/tensor-cores-h100.csv.gz"


def compared(df: pd.DataFrame) -> pd.DataFrame:
    """Our GEMM rows as % of cuBLASLt at the same shape, precision and layout (percent_of_library)."""
    pct = analysis.percent_of_library(df)
    pct = pct[pct.variant.isin(LADDER + (FP8_STEP,))]
    if pct.empty:
        raise ResultsError("the results hold no step of the tensor-core ladder beside cuBLASLt")
    return pct


def _square(pct: pd.DataFrame, dtype: str) -> pd.DataFrame:
    return pct[(pct.dtype == dtype) & (pct.m == pct.n) & (pct.n == pct.k)]


def fastest(pct: pd.DataFrame, dtype: str) -> pd.DataFrame:
    """Per square size n (the index), the fastest of ours at a precision: its variant and percent."""
    sq = _square(pct, dtype)
    if sq.empty:
        return pd.DataFrame(columns=["variant", "percent"])
    return sq.loc[sq.groupby("n").percent.idxmax()].set_index("n")[["variant", "percent"]].sort_index()


def _pct(v) -> str:
    return "-" if v is None or v != v else f"{v:.1f} %"


def ladder_rows(pct: pd.DataFrame, reference: dict) -> list[list[str]]:
    """Per step at BF16 and LADDER_SIZE: % of cuBLASLt, the gain over the step before (points), the
    published step's % where the reference names one, and the parameters it ran with."""
    rows_at = _square(pct, "bf16")
    rows_at = rows_at[rows_at.n == LADDER_SIZE]
    at = rows_at.groupby("variant").percent.mean()
    params = rows_at.groupby("variant").params.first()
    published = dict(reference.get("ladder", {}))
    rows, before = [], None
    for step in LADDER:
        mine = at.get(step)
        gain = "-" if mine is None or before is None else f"{mine - before:+.1f}"
        rows.append([step, _pct(mine), gain, f"{published[step]} %" if step in published else "-",
                     f"`{params[step]}`" if step in params else "-"])
        before = mine if mine is not None else before
    return rows


def _target_sizes(best: pd.DataFrame) -> pd.DataFrame:
    """The rows of fastest() that the BF16 target judges: sizes in its range that are multiples of 128."""
    lo, hi = BF16_RANGE
    return best[(best.index >= lo) & (best.index <= hi) & (best.index % 128 == 0)]


def padded_percent(df: pd.DataFrame) -> pd.DataFrame:
    """Our steps' padded rows as % of cuBLASLt on the shape as given (padded_percent_of_library)."""
    pct = analysis.padded_percent_of_library(df)
    return pct[pct.variant.isin(LADDER + (FP8_STEP,))]


def _with_padded(df: pd.DataFrame, pct: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([pct.assign(pad=0), padded_percent(df).assign(pad=1)], ignore_index=True)


def _awkward(df: pd.DataFrame) -> pd.DataFrame:
    """Our steps' rows at shapes with a dimension that is not a multiple of 128."""
    mine = df[df.variant.isin(LADDER + (FP8_STEP,))]
    return mine[(mine.m % 128 != 0) | (mine.n % 128 != 0) | (mine.k % 128 != 0)]


def awkward_target_rows(df: pd.DataFrame, pct: pd.DataFrame) -> list[list[str]]:
    """The awkward shapes' targets: every row a step ran there verified; the fastest of ours at
    AWKWARD_GOAL or more at each shape some step takes."""
    awkward = _awkward(df)
    if awkward.empty:
        return []
    bad = awkward[awkward.status.isin(["wrong", "failed"])]
    ran = awkward[awkward.status == "ok"]
    shapes = ran.groupby(["m", "n", "k", "dtype"]).size().index
    here = _with_padded(df, pct).set_index(["m", "n", "k", "dtype"])
    best = [here.loc[[s]].percent.max() for s in shapes if s in here.index]
    met = sum(b >= AWKWARD_GOAL for b in best)
    return [["awkward shapes: every row a step ran verified", f"{len(ran)} verified, {len(bad)} wrong or failed",
             "met" if bad.empty else "not met"],
            [f"awkward shapes a step takes: the fastest of ours >= {AWKWARD_GOAL:.0f} %", f"{met} of {len(best)} shapes",
             "met" if best and met == len(best) else "not met"]]


def target_rows(pct: pd.DataFrame) -> list[list[str]]:
    """The targets: what each asks, what the run measured, and whether it is met."""
    bf16, fp8 = fastest(pct, "bf16"), fastest(pct, "fp8e4m3")
    span = _target_sizes(bf16).percent
    lo, hi = BF16_RANGE
    rows = []
    if len(span):
        worst = f"worst {span.min():.1f} % at {span.idxmin()}; {int((span >= BF16_GOAL).sum())} of {len(span)} sizes"
        rows.append([f"BF16, each size of the run from {lo} to {hi} that is a multiple of 128: >= {BF16_GOAL:.0f} %",
                     worst, "met" if span.min() >= BF16_GOAL else "not met"])
        geo = float(np.exp(np.log(span / 100).mean()))
        rows.append([f"BF16, geometric mean there: >= {BF16_MEAN:.2f}", f"{geo:.3f}",
                     "met" if geo >= BF16_MEAN else "not met"])
    if LADDER_SIZE in bf16.index:
        v = bf16.percent[LADDER_SIZE]
        rows.append([f"BF16 at {LADDER_SIZE}: >= {STRETCH:.0f} % (stretch)", f"{v:.1f} % ({bf16.variant[LADDER_SIZE]})",
                     "met" if v >= STRETCH else "not met"])
    lo, hi = FP8_RANGE
    span = fp8[(fp8.index >= lo) & (fp8.index <= hi)].percent
    if len(span):
        rows.append([f"FP8 e4m3, {lo} to {hi}: >= {FP8_GOAL:.0f} %", f"worst {span.min():.1f} % at {span.idxmin()}",
                     "met" if span.min() >= FP8_GOAL else "not met"])
    return rows


def awkward_rows(df: pd.DataFrame, pct: pd.DataFrame) -> list[list[str]]:
    """Each shape of the run that is not a multiple of 128 in every dimension: how many steps ran it as
    given (verified) or skipped it, how many ran it padded to their tile (`--pad`, the padding timed in
    the device scope), and the fastest of ours there against cuBLASLt on the shape as given."""
    rows, pct = [], _with_padded(df, pct)
    for (m, n, k, dtype), g in _awkward(df).groupby(["m", "n", "k", "dtype"], sort=True):
        padded = g.pad.fillna(0).astype(bool) if "pad" in g else pd.Series(False, index=g.index)
        here = pct[(pct.m == m) & (pct.n == n) & (pct.k == k) & (pct.dtype == dtype)]
        best = here.loc[here.percent.idxmax()] if len(here) else None
        where = "" if best is None else " padded" if bool(best.get("pad") or False) else ""
        rows.append([f"{m}x{n}x{k}", dtype, _ran_text(g[~padded]), _ran_text(g[padded]),
                     "-" if best is None else f"{best.percent:.1f} % ({best.variant}{where})",
                     "-" if best is None else "met" if best.percent >= AWKWARD_GOAL else "not met"])
    return rows


def _ran_text(g: pd.DataFrame) -> str:
    """How many of these rows ran verified, and why the others were skipped, wrong or failed."""
    if g.empty:
        return "-"
    ran, skipped = g[g.status == "ok"], g[g.status == "skipped"]
    bad = g[g.status.isin(["wrong", "failed"])]
    why = "; ".join(sorted({str(r).split("; ")[0].split(" requires ")[-1] for r in skipped.reason}))
    text = f"{len(ran)} of {len(g)}" if len(ran) else "none"
    if why:
        text += f" ({len(skipped)} skipped, requiring {why})" if len(ran) else f" (each requires {why})"
    if len(bad):
        text += f"; {len(bad)} wrong or failed"
    return text


def summary(df: pd.DataFrame, meta: dict | None = None) -> tuple[str, list[str], list[list[str]]]:
    """The targets as a table: (title, columns, rows)."""
    return "The tensor-core ladder's targets", ["target", "measured", ""], target_rows(compared(df))


def fig_ladder(df: pd.DataFrame, meta: dict, dtype: str) -> plt.Figure:
    """Every step at one precision, % of cuBLASLt by square size, with the goal lines."""
    pct = _square(compared(df), dtype)
    if pct.empty:
        raise ResultsError(f"the results hold no square {dtype} rows of the ladder beside cuBLASLt")
    fig, ax = plt.subplots(figsize=(11, 6), layout="constrained")
    for variant in [v for v in LADDER + (FP8_STEP,) if v in set(pct.variant)]:
        g = pct[pct.variant == variant].groupby("n").percent.mean()
        ax.plot(g.index, g.values, marker=".", markersize=3, linewidth=1.2, color=plots.colour_of(variant),
                label=variant)
    goal = BF16_GOAL if dtype == "bf16" else FP8_GOAL
    ax.axhline(100, color="black", linewidth=1, label="100 % of cuBLASLt")
    ax.axhline(goal, color="black", linestyle="--", linewidth=1, label=f"{goal:.0f} % (the target)")
    plots._log2_sizes(ax)
    ax.set_ylabel(f"{dtype} GFLOP/s (median of samples) as % of cuBLASLt's (same run)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plots._title(ax, f"The tensor-core ladder at {dtype}, layout nt: each step against cuBLASLt", meta)
    return fig


def fig_fastest(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """The fastest of ours at every square size, BF16 and FP8, with the goals; sizes under them named."""
    pct = compared(df)
    fig, ax = plt.subplots(figsize=(11, 5.5), layout="constrained")
    for dtype, goal, (lo, hi), marker in (("bf16", BF16_GOAL, BF16_RANGE, "o"), ("fp8e4m3", FP8_GOAL, FP8_RANGE, "s")):
        best = fastest(pct, dtype)
        if best.empty:
            continue
        line, = ax.plot(best.index, best.percent, marker=marker, markersize=3, linewidth=1,
                        label=f"{dtype}: fastest of ours")
        # the sizes a target judges (lo to hi) that miss it, named below and above in turn
        under = best[(best.percent < goal) & (best.index >= lo) & (best.index <= hi)]
        for i, (n, r) in enumerate(under.iterrows()):
            ax.annotate(str(n), (n, r.percent), textcoords="offset points", xytext=(0, -9 if i % 2 == 0 else 5),
                        ha="center", fontsize=6, color=line.get_color())
    ax.axhline(100, color="black", linewidth=1, label="100 % of cuBLASLt")
    ax.axhline(BF16_GOAL, color="black", linestyle="--", linewidth=1, label=f"{BF16_GOAL:.0f} % (BF16 target)")
    ax.axhline(FP8_GOAL, color="black", linestyle=":", linewidth=1, label=f"{FP8_GOAL:.0f} % (FP8 target)")
    plots._log2_sizes(ax)
    ax.set_ylabel("GFLOP/s (median of samples) as % of cuBLASLt's at the same precision")
    ax.legend(fontsize=8, loc="lower right")
    plots._title(ax, "The fastest of ours at every square size against cuBLASLt; the sizes each target judges "
                 "that miss it named", meta)
    return fig


FIGURES = {
    "tc-ladder": FigureFamily("Tensor cores: each step of the ladder, % of cuBLASLt",
                              "Each step of the tensor-core ladder as % of cuBLASLt per square size, at BF16 and at FP8",
                              (Figure("ladder-bf16", lambda df, meta, *_: fig_ladder(df, meta, "bf16")),
                               Figure("ladder-fp8", lambda df, meta, *_: fig_ladder(df, meta, "fp8e4m3"))),
                              summary),
    "tc-fastest": FigureFamily("Tensor cores: the fastest of ours, % of cuBLASLt",
                               "The fastest step of ours at every square size as % of cuBLASLt, BF16 and FP8, with "
                               "the targets and the sizes under them named",
                               (Figure("fastest-vs-cublaslt", lambda df, meta, *_: fig_fastest(df, meta)),)),
}


STALL_COLUMNS = {"long_scoreboard": "memory", "barrier": "barrier", "wait": "fixed latency",
                 "math_pipe_throttle": "busy pipe", "mio_throttle": "shared-memory queue", "sleeping": "sleeping",
                 "short_scoreboard": "shared memory", "lg_throttle": "global queue", "no_instruction": "no instruction"}


def _counted(row: pd.Series, column: str) -> float:
    """A profile's value, 0 where the GPU's Nsight Compute lacks the counter (an empty cell)."""
    value = row.get(column)
    return 0.0 if value is None or pd.isna(value) else float(value)


def loss_rows(profile: pd.DataFrame | None) -> list[list[str]]:
    """Per step and profiled shape: the tensor pipes' use (% of peak over active cycles: mma.sync's
    and the warpgroup MMAs'), shared-memory bank conflicts per shared load, and the two warp states
    that held the warps most (stalls per issued instruction)."""
    if profile is None or "tensor_gmma_pct" not in profile:
        return []
    rows = []
    steps = profile[profile.variant.isin([*LADDER, FP8_STEP])]
    for (variant, m, n, k), g in steps.groupby(["variant", "m", "n", "k"], sort=False):
        r = g.iloc[0]
        pipe = max(_counted(r, "tensor_hmma_pct"), _counted(r, "tensor_gmma_pct"))
        stalls = sorted(((_counted(r, f"{c}_stall_per_issue"), name) for c, name in STALL_COLUMNS.items()),
                        reverse=True)[:2]
        conflicts = r.get("conflicts_per_shared_ld")
        rows.append([variant, f"{m}x{n}x{k}", f"{pipe:.1f} %", "-" if pd.isna(conflicts) else f"{conflicts:.2f}",
                     ", ".join(f"{name} {v:.2f}" for v, name in stalls)])
    order = {v: i for i, v in enumerate([*LADDER, FP8_STEP])}
    return sorted(rows, key=lambda row: order[row[0]])


def loss_lines(profile: pd.DataFrame | None, results_path: Path) -> list[str]:
    rows = loss_rows(profile)
    if not rows:
        return [f"No Nsight Compute profile of the steps beside this run (or one taken before the tensor-pipe "
                f"counters): `mmbench profile --config configs/tensor-cores.toml --points {LADDER_SIZE} --results "
                f"{results_path.name}` takes one (each step's kernels once under ncu), and this section then gives "
                "each step's tensor-pipe use, bank conflicts and stalls."]
    return ["From the run's Nsight Compute profile (each kernel once, caches flushed): the tensor pipes' use as % of "
            "their peak over the SMs' active cycles, bank conflicts per shared load (ldmatrix; wgmma reads shared "
            "memory through descriptors, not loads), and the two warp states that held the warps most, per issued "
            "instruction.", "",
            *text_table(["step", "shape", "tensor pipe", "conflicts / shared load", "top stalls (per issue)"], rows)]


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    """REPORT.md: the targets, the ladder beside the published one, the worst sizes, awkward shapes."""
    ok = analysis.ok_rows(df)
    pct = compared(ok)
    bf16 = fastest(pct, "bf16")
    lo, hi = BF16_RANGE
    worst = _target_sizes(bf16).sort_values("percent").head(10)
    small = bf16[bf16.index < lo].percent
    lines = [
        "# The tensor-core ladder against cuBLASLt",
        "",
        provenance(results_path, df, meta) + ". GFLOP/s (median of the samples) as % of cuBLASLt at the same "
        "shape, precision and layout (nt: A m x k, B n x k) in the same run.",
        "",
        "## Targets",
        "",
        *text_table(["target", "measured", ""], target_rows(pct) + awkward_target_rows(df, pct)),
        "",
        f"## The ladder at BF16, {LADDER_SIZE}",
        "",
        "Each step as % of cuBLASLt, its gain over the step before (percentage points), and the published "
        f"step it matches ({reference.get('ladder_source', 'no published ladder in the config')}); "
        f"the published mma.sync kernel reached about {reference.get('mma_sync_of_peak', '-')} % of the "
        "tensor-core peak, not of cuBLAS:",
        "",
        *text_table(["step", "% of cuBLASLt", "gain", "published", "parameters"], ladder_rows(pct, reference)),
        "",
        "## Where each step loses",
        "",
        *loss_lines(profile, results_path),
        "",
        f"## The worst BF16 sizes the target judges ({lo} to {hi}, multiples of 128; fastest of ours)",
        "",
        *text_table(["n", "fastest", "% of cuBLASLt"], [[str(n), r.variant, f"{r.percent:.1f} %"]
                                                        for n, r in worst.iterrows()]),
        "",
        *([f"Below {lo} (no target): the fastest of ours at {small.min():.1f} % to {small.max():.1f} % of cuBLASLt."]
          if len(small) else []),
        "",
        "## Awkward shapes",
        "",
        "Shapes with a dimension that is not a multiple of 128: every row the steps ran was verified against "
        "float64; a step that cannot take a shape as given (TMA needs 16-byte rows: k a multiple of 8 at BF16, of "
        "16 at FP8, and n of 8 for TMA stores) skips it, saying so. The config's padded sweeps run the steps on "
        "A and B zero-padded to their tile on the GPU (`--pad`), the zeroing and the copies timed with the kernel "
        "(device scope), compared with cuBLASLt on the shape as given (the padded column; - where the run has no "
        "padded rows):",
        "",
        *text_table(["shape", "precision", "steps that ran it as given", "padded", "fastest of ours",
                     f">= {AWKWARD_GOAL:.0f} %"], awkward_rows(df, pct)),
        "",
    ]
    return report_text(lines, figures)
