"""Lab 3's figures: the transposes' bandwidth against the device copy, the matrix multiplications'
time, and the profile's hierarchical roofline and memory levels; FIGURES, their families
(`mmbench plot NAME`)."""

from __future__ import annotations

import pandas as pd

from ... import hierarchy, plots
from ...analysis import ok_rows
from ...results import ResultsError
from ..contract import Figure, FigureFamily
from .measures import (LAB_OWN, LAB_TRANSPOSE_KERNELS, MATMUL_KERNELS, MATMULS, _label, matmul_times,
                       transpose_bandwidth)

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend


def _figure(df: pd.DataFrame, meta: dict, title: str, ylabel: str, dashed: str | None = None) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    for i, name in enumerate(df.columns):
        series = df[name].dropna()
        ax.plot(series.index, series.values, marker="o", markersize=3, linewidth=1.3, label=name,
                color="black" if name == dashed else plt.get_cmap("tab10").colors[i % 10],
                linestyle="--" if name == dashed else "-")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("matrix size n (n x n), log2 scale")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    plots._title(ax, title, meta)
    return fig


def fig_transpose_bandwidth(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    bw = transpose_bandwidth(ok_rows(df))
    if bw.drop(columns=[_label("memcpy")], errors="ignore").empty:  # the copy alone is the yardstick of nothing
        raise ResultsError("the bandwidth figure needs transpose rows")
    fig = _figure(bw, meta, "Lab 3: transpose bandwidth against the device copy", "GB/s (2 x 4 x n^2 bytes, median), log scale",
                  dashed=_label("memcpy"))
    fig.axes[0].set_yscale("log")  # the CPU transposes (0.4 to 5 GB/s) would lie on the axis under 4000 GB/s
    return fig


def fig_matmul_time(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    m = matmul_times(ok_rows(df))
    if not set(m.columns) & {_label(v, p) for v, p in MATMULS if v in LAB_OWN}:  # naive and cuBLAS alone: not the lab's
        raise ResultsError(f"the time figure needs the lab's matmul rows ({', '.join(sorted(LAB_OWN))})")
    fig = _figure(m, meta, "Lab 3: matrix multiplication time", "ms (median of samples), log scale")
    fig.axes[0].set_yscale("log")
    return fig


def fig_matmul_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    """The shared hierarchical roofline, each kernel named at the right end of its line: the figure
    colours by variant, so the two paddings of the shared matmul would be one colour, and the two
    cache versions' lines lie on each other."""
    fig = hierarchy.fig_hierarchical_roofline(profile, meta, "Lab 3: the matrix multiplications at each memory level "
                                              "(Nsight Compute, caches flushed)", variants=MATMUL_KERNELS)
    table = hierarchy.levels(profile)
    table = table[(table.gflops > 0) & table.variant.isin(MATMUL_KERNELS)]
    intensities = [f"{level}_intensity" for level in hierarchy.LEVELS]
    for ax, shape in zip(fig.axes, hierarchy.shapes_in(table, set(table.op))):
        rows = table[(table.m == shape[0]) & (table.n == shape[1]) & (table.k == shape[2])].sort_values("gflops")
        below = 0.0
        for row in rows.itertuples():
            close = below and row.gflops < 1.2 * below  # two lines at about one height: the second label above
            ax.annotate(_label(row.variant, row.params), (max(getattr(row, c) for c in intensities if pd.notna(getattr(row, c))),
                                                           row.gflops),
                        xytext=(7, 7 if close else -1), textcoords="offset points", fontsize=7.5, va="center")
            below = row.gflops
    return fig


def fig_transpose_levels(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return hierarchy.fig_memory_levels(profile, meta, "Lab 3: the lab's transposes at each memory level "
                                       "(Nsight Compute, caches flushed)", variants=LAB_TRANSPOSE_KERNELS)


FIGURES = {  # `mmbench plot NAME`; the report embeds them
    "transpose-bandwidth": FigureFamily("Lab 3: transpose GB/s by size, copy dashed", "Lab 3: transpose GB/s by size, the device copy dashed",
                                        (Figure("fig-transpose-bandwidth", fig_transpose_bandwidth),)),
    "matmul-time": FigureFamily("Lab 3: matrix multiplication time by size", "Lab 3: matrix multiplication time by size, log scale",
                                (Figure("fig-matmul-time", fig_matmul_time),)),
    "lab3-hierarchy": FigureFamily("Lab 3: matmuls' hierarchical roofline (profile)",
                                   "Lab 3: the matrix multiplications' intensity at shared memory, L1, L2 and DRAM under "
                                   "each level's roof, from the Nsight Compute profile beside the run",
                                   (Figure("fig-matmul-hierarchy", fig_matmul_hierarchy),)),
    "lab3-memory-levels": FigureFamily("Lab 3: transposes' % of each level's peak (profile)",
                                       "Lab 3: the lab's transposes' bandwidth at shared memory, L1, L2 and DRAM as a "
                                       "share of each level's peak, from the Nsight Compute profile beside the run",
                                       (Figure("fig-transpose-levels", fig_transpose_levels),)),
}
