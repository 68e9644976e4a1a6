"""Zosa 2017's figures: Figure 1 (block sizes), Figure 2 (every version over all sizes), Figures 3
and 4 (the roofline), Figure 5 (speed-ups), the hierarchical roofline, and their FIGURES families."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import analysis, hierarchy, plots
from ...results import ResultsError
from ..contract import Figure, FigureFamily
from .measures import best_series
from .paper import FIG1_SIZES

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend


# -- its figures -------------------------------------------------------------------------------------
def fig_block_sizes(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 1: CUDA-Best GFLOP/s at 256, 512, 1024, 2048 for each block size."""
    ok = analysis.ok_rows(df)
    series = sorted((s for s in analysis.series_list(ok) if s.variant == "best"), key=lambda s: s.block or 0)
    if not series:
        raise ResultsError("Figure 1 needs CUDA-Best ('best') rows")
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    x = np.arange(len(FIG1_SIZES))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        values = analysis.curve(ok, s).reindex(FIG1_SIZES)
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=s.label,
                      color=plots.style(s)["color"], alpha=0.35 + 0.65 * (i + 1) / len(series), edgecolor="black", linewidth=0.5)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=2)
    ax.set_xticks(x, [str(n) for n in FIG1_SIZES])
    ax.set_xlabel("matrix size n (n x n x n)")
    ax.set_ylabel("GFLOP/s (mean of samples)")
    ax.legend(title="block size")
    ax.grid(True, axis="y", alpha=0.3)
    plots._title(ax, "Figure 1: CUDA-Best by thread-block size", meta)
    return fig


def fig_gflops(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 2: GFLOP/s of every variant and baseline over all square sizes."""
    sizes = analysis.square(analysis.ok_rows(df)).n.nunique()
    fig = plots.fig_curves(df, meta, f"Figure 2: SGEMM performance over {sizes} sizes")
    # Log GFLOP/s: multicore BLAS (hundreds) and CUDA-1u would lie flat under cuBLAS's 50000 on a
    # linear axis, and their crossing is one of the paper's findings.
    fig.axes[0].set_yscale("log")
    fig.axes[0].set_ylabel("GFLOP/s (mean of samples), log scale")
    return fig


def fig_speedup(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 5: CUDA-Best over multicore BLAS, and cuBLAS over CUDA-Best, by size."""
    ok = analysis.ok_rows(df)
    best = best_series(ok)
    blas, cublas = analysis.find(ok, "blas"), analysis.find(ok, "cublas")
    panels = [(best, blas, f"{best.label} / BLAS (multicore)"), (cublas, best, f"cuBLAS / {best.label}")]
    panels = [p for p in panels if p[0] is not None and p[1] is not None]
    if not panels:
        raise ResultsError("Figure 5 needs CUDA-Best with BLAS or cuBLAS rows")
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels) + 0.6), layout="constrained", squeeze=False)
    for ax, (top, bottom, label) in zip(axes[:, 0], panels):
        r = analysis.ratio(ok, top, bottom)
        ax.plot(r.index, r.values, marker=".", markersize=3, color=plots.style(top)["color"], label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        plots._log2_sizes(ax)
        ax.set_ylabel("speed-up (ratio of GFLOP/s)")
        ax.legend(loc="upper left")
    plots._title(axes[0, 0], "Figure 5: speed-up ratios", meta)
    return fig


def fig_roofline(df: pd.DataFrame, meta: dict, profile: pd.DataFrame | None, size: int | None) -> plt.Figure:
    """Figures 3 and 4 in one, at n = size (default: analysis.roofline_size, the largest profiled
    size where the most series ran), with every operation of the run."""
    return plots.fig_roofline(df, meta, profile, size, title="Figures 3-4: roofline")


def fig_hierarchy(meta: dict, profile: pd.DataFrame | None) -> plt.Figure:
    """Every version at its intensity against each memory level, at the two largest profiled sizes:
    the run's largest, whose operands fit in the L2, and one past the L2."""
    return hierarchy.fig_hierarchical_roofline(profile, meta, "Zosa 2017's versions on the memory hierarchy "
                                               "(Nsight Compute, caches flushed before each kernel)", most=2)


FIGURES = {  # `mmbench plot NAME`; the report embeds them all
    "gflops": FigureFamily("Zosa Figs. 1-2: GFLOP/s by block size, by size", "Figures 1 and 2: GFLOP/s by block size and over all sizes",
                           (Figure("fig1-block-sizes", lambda df, meta, profile, size: fig_block_sizes(df, meta)),
                            Figure("fig2-gflops", lambda df, meta, profile, size: fig_gflops(df, meta)))),
    "roofline": FigureFamily("Zosa Figs. 3-4: roofline, datasheet and measured", "Figures 3 and 4: roofline with datasheet and measured ceilings",
                             (Figure("fig3-4-roofline", fig_roofline),), options=("size",)),
    "zosa-hierarchy": FigureFamily("Zosa: hierarchical roofline, in and past the L2", "Hierarchical roofline from Nsight "
                                   "Compute's byte counts: every version at shared memory, L1, L2 and DRAM, at n = 2048 "
                                   "(operands in the L2) and 4096 (past it)",
                                   (Figure("fig-hierarchical-roofline", lambda df, meta, profile, size: fig_hierarchy(meta, profile)),)),
    "speedup": FigureFamily("Zosa Fig. 5: CUDA-Best over BLAS, cuBLAS over it", "Figure 5: CUDA-Best over BLAS, and cuBLAS over CUDA-Best",
                            (Figure("fig5-speedup", lambda df, meta, profile, size: fig_speedup(df, meta)),)),
}
