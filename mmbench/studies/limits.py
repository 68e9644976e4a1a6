"""The limits study (configs/limits.toml): how far each SGEMM technique stands from cuBLAS on
today's GPU, measured as GFLOP/s in % of cuBLAS (pure FP32) in the same run.

Its targets: n = 4096 (large and aligned), n = 2049 (just past a power of two: edge tiles), and the
geometric mean over the Zosa paper's sizes from 512 (the 146 sizes of 512:2049).
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import analysis, plots
from ..sizes import parse_sizes
from .common import provenance, report_text, text_table
from .contract import Figure, FigureFamily

TARGET_SIZES = (4096, 2049)
PAPER_SIZES = "512:2049"  # the paper's sizes from 512


def targets(df: pd.DataFrame) -> pd.DataFrame:
    """Per series: % of cuBLAS at the target sizes and the geometric mean over the paper sizes."""
    return analysis.target_summary(analysis.percent_of(df, "cublas"), TARGET_SIZES,
                                   [s.n for s in parse_sizes(PAPER_SIZES)])


def _percent(v) -> str:
    return "-" if v is None or v != v else f"{v:.1f} %"


def summary(df: pd.DataFrame, meta: dict | None = None) -> tuple[str, list[str], list[list[str]]]:
    """The targets as a table: (title, columns, rows)."""
    columns = ["series", *(f"n = {n}" for n in TARGET_SIZES), "geomean, paper sizes >= 512"]
    rows = [[r["series"], *(_percent(r[f"at_{n}"]) for n in TARGET_SIZES), f"{_percent(r['geomean'])} ({r['sizes']})"]
            for r in targets(df).to_dict("records")]
    return "GFLOP/s as % of cuBLAS", columns, rows


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/limits-h200/limits-h200.csv.gz"

def fig_fastest(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """The fastest of ours at every size as % of cuBLAS, coloured by the series that won there, with
    the 95 % and 100 % lines and every size under 95 % named."""
    ok = analysis.ok_rows(df)
    rows = fastest_rows(ok)
    best, won = rows.percent, rows.variant
    fig, ax = plt.subplots(figsize=(11, 5.5), layout="constrained")
    for variant in dict.fromkeys(won):
        at = won[won == variant].index
        ax.scatter(at, best[at], s=16, color=plots.colour_of(variant), zorder=2, label=f"{variant} fastest")
    for goal, dash in zip(GOALS, ("--", ":")):
        ax.axhline(goal, color="black", linestyle=dash, linewidth=1, label=f"{goal:.0f} % of cuBLAS")
    under = best[best < GOALS[0]]
    for i, cluster in enumerate(_clusters(list(under.index))):
        if len(cluster) == 1:  # alone: below and above in turn, so neighbours' names stay apart
            n = cluster[0]
            ax.annotate(str(n), (n, under[n]), textcoords="offset points", xytext=(0, -10 if i % 2 == 0 else 5),
                        ha="center", fontsize=6, color="0.25")
        else:  # sizes too close to name one by one: one label under the group, three sizes a line
            lowest = min(cluster, key=lambda n: under[n])
            text = "\n".join(", ".join(str(n) for n in cluster[j:j + 3]) for j in range(0, len(cluster), 3))
            ax.annotate(text, (lowest, under[lowest]), textcoords="offset points", xytext=(0, -8), ha="center",
                        va="top", fontsize=6, color="0.25")
    plots._log2_sizes(ax)
    ax.set_ylabel("fastest of ours, GFLOP/s as % of cuBLAS's (same run)")
    ax.legend(fontsize=8, loc="lower right")
    geo = float(np.exp(np.log(best / 100).mean()))
    plots._title(ax, f"The fastest of ours at every size: {int((best >= GOALS[0]).sum())} of {len(best)} sizes at "
                f"{GOALS[0]:.0f} % of cuBLAS or more\nworst {best.min():.1f} % at {best.idxmin()}, geometric mean "
                f"{geo:.3f}; the sizes under {GOALS[0]:.0f} % named", meta)
    return fig


def _clusters(sizes: list[int], apart: float = 0.05) -> list[list[int]]:
    """Sizes grouped where each is within `apart` (in log2) of the one before it: on a log2 axis their
    names would overlap."""
    groups: list[list[int]] = []
    for n in sorted(sizes):
        if groups and np.log2(n) - np.log2(groups[-1][-1]) < apart:
            groups[-1].append(n)
        else:
            groups.append([n])
    return groups


FIGURES = {
    "vs-cublas": FigureFamily("Limits: % of cuBLAS per size per variant", "Percent of cuBLAS per size per variant, with the targets' ratios printed",
                              (Figure("vs-cublas", lambda df, meta, *_: plots.fig_vs_cublas(df, meta)),),
                              summary),
    "fastest": FigureFamily("Limits: the fastest of ours per size, % of cuBLAS", "The fastest series of ours beyond "
                            "the paper's kernel at every size, as % of cuBLAS, with the sizes under 95 % named",
                            (Figure("fastest-vs-cublas", lambda df, meta, *_: fig_fastest(df, meta)),)),
}


PAPER_SERIES = ("best",)  # the paper's kernel: the ladder is what goes past it
GOALS = (95.0, 100.0)  # issue 33: every size at 95 % of cuBLAS at least, the stretch at 100 %


def fastest_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Per size n (the index): the fastest series of ours beyond the paper's kernel, its variant and
    its GFLOP/s in % of cuBLAS in the same run."""
    pct = analysis.percent_of(df, "cublas")
    pct = pct[~pct.variant.isin(PAPER_SERIES)]
    return pct.loc[pct.groupby("n").percent.idxmax()].set_index("n")[["variant", "percent"]].sort_index()


def fastest(df: pd.DataFrame) -> pd.Series:
    """Per size n: the fastest of ours in % of cuBLAS (fastest_rows' percent)."""
    return fastest_rows(df).percent


def fastest_summary(best: pd.Series) -> list[str]:
    """The issue's table: sizes at >= 95 % and >= 100 %, the worst, the geometric mean."""
    geo = float(np.exp(np.log(best / 100).mean()))
    worst = f"{best.min():.1f} % at {best.idxmin()}"
    return text_table(["sizes", *(f">= {g:.0f} %" for g in GOALS), "worst", "geometric mean"],
                      [[str(len(best)), *(str(int((best >= g).sum())) for g in GOALS), worst, f"{geo:.3f}"]])


def kernel_shape(name: str) -> str:
    """A cuBLAS kernel's name in short: its tile (m x n x k) and stages, as xmma and CUTLASS names
    spell them; the name itself where neither pattern is found."""
    xmma = re.search(r"tilesize(\d+x\d+x\d+)_stage(\d+)", name)
    if xmma:
        return f"xmma {xmma[1]}, {xmma[2]} stages" + (", its split-K reduction" if "split_k" in name else "")
    cutlass = re.search(r"cutlass_\d+_simt_sgemm_(\d+x\d+)_(\d+)x(\d+)", name)
    if cutlass:
        return f"CUTLASS SIMT {cutlass[1]}x{cutlass[2]}, {cutlass[3]} stages"
    return name


def cublas_kernels(profile: pd.DataFrame | None) -> list[list[str]]:
    """cuBLAS's kernels per profiled size, as Nsight Compute named them (the profile beside the
    run: `mmbench profile -v cublas --results RUN --points ...`), each in short."""
    if profile is None or "kernels" not in profile:
        return []
    rows = profile[profile.variant == "cublas"].sort_values("n")
    return [[str(r.n), "; ".join(kernel_shape(k) for k in str(r.kernels).split(";"))] for r in rows.itertuples()]


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    """REPORT.md: the targets per series, where the fastest stands over every size, the figure."""
    ok = analysis.ok_rows(df)
    title, columns, rows = summary(ok)
    pct = analysis.percent_of(ok, "cublas")
    paper = [s.n for s in parse_sizes(PAPER_SIZES)]
    per_series = []
    for series, g in pct.groupby("series", sort=False):
        on = g.groupby("n").percent.mean().reindex(paper).dropna()
        if len(on):
            per_series.append([series, str(len(on)), str(int((on >= 100).sum())),
                               f"{on.min():.1f} % at {on.idxmin()}", f"{on.max():.1f} % at {on.idxmax()}"])
    lines = [
        "# The SGEMM ladder against cuBLAS",
        "",
        provenance(results_path, df, meta) + ". GFLOP/s (mean "
        "of the samples) as % of cuBLAS SGEMM in pure FP32 mode at the same size in the same run.",
        "",
        f"## {title}",
        "",
        *text_table(columns, rows),
        "",
        f"## Over the paper sizes ({PAPER_SIZES})",
        "",
        *text_table(["series", "sizes", "at or above cuBLAS", "lowest", "highest"], per_series),
        "",
        "## The fastest of ours at every size",
        "",
        f"Per size, the fastest series beyond the paper's kernel ({', '.join(PAPER_SERIES)}) against cuBLAS, over "
        "every size of the run:",
        "",
        *fastest_summary(best := fastest(ok)),
        "",
        f"Under {GOALS[0]:.0f} %: " + (", ".join(f"{n} ({v:.1f} %)" for n, v in best[best < GOALS[0]].items()) or "none") + ".",
        "",
    ]
    kernels = cublas_kernels(profile)
    if kernels:
        lines += ["## cuBLAS's kernel by size (Nsight Compute)", "",
                  "What cuBLAS launched for one call at each profiled size: the tile (m x n x k) and pipeline "
                  "stages its kernel names carry (the full names are in the profile beside the run):", "",
                  *text_table(["n", "cuBLAS's kernels"], kernels), ""]
    return report_text(lines, figures)
