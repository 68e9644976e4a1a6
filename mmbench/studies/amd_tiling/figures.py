"""The AMD tiling study's figures: the speedup of each step over naive and its % of cuBLAS per shape
family, the tile sweep's GFLOP/s and the hierarchical roofline; and their families (FIGURES)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import plots
from ...analysis import ok_rows, series_of
from ...hierarchy import fig_hierarchical_roofline
from ..contract import Figure, FigureFamily
from .measures import ALIGN, FAMILIES, KERNEL_NAMES, aligned, family, percent_of_cublas, speedups, tile_table

plt = plots.plt

COLOURS = {"naive": "tab:brown", "LDS tiling (16 x 16)": "tab:purple", "register tiling (4 x 4 a thread)": "tab:red",
           "cuBLAS": "tab:olive"}


def _family_panels(series: dict[str, pd.Series], meta: dict, title: str, ylabel: str, hline: float,
                   log_y: bool = False) -> plt.Figure:
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), layout="constrained")
    for ax, (name, dim, label) in zip(axes.flat, FAMILIES):
        drawn = False
        for step, values in series.items():
            cut = family(values, name)
            if cut.empty:
                continue
            drawn = True
            colour = COLOURS.get(step, "black")
            ax.plot(cut.index, cut.values, color=colour, linewidth=1.2, label=step)
            on = np.array([aligned(int(x)) for x in cut.index])
            ax.scatter(cut.index[on], cut.values[on], color=colour, s=22, zorder=3)
            ax.scatter(cut.index[~on], cut.values[~on], facecolors="white", edgecolors=colour, s=22, zorder=3)
        ax.axhline(hline, color="gray", linewidth=0.8, linestyle="--")
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log", base=2)
            ax.yaxis.set_major_formatter(plots.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel(f"{dim} (filled: aligned to {ALIGN}; hollow: not)")
        ax.set_ylabel(ylabel)
        ax.set_title(label, fontsize=10)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(fontsize=7)
    fig.suptitle(f"{title}\n{(meta.get('gpu') or {}).get('name', 'no GPU')}, {str(meta.get('started_at', ''))[:10]}",
                 fontsize=11)
    return fig


def fig_speedup(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return _family_panels(speedups(ok_rows(df)), meta, "AMD tiling tutorial: speedup of each step over naive",
                          "speedup over naive (naive time / time), log2 scale", 1.0, log_y=True)


def fig_percent_cublas(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return _family_panels(percent_of_cublas(ok_rows(df)), meta, "AMD tiling tutorial: GFLOP/s as % of cuBLAS",
                          "% of cuBLAS GFLOP/s (same shape)", 100.0)


def fig_tiles(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    table = tile_table(df)
    fig, ax = plt.subplots(figsize=(8, max(5, 0.32 * len(table) + 2)), layout="constrained")
    plots.heatmap(ax, table, "GFLOP/s (median)", fmt="{:.0f}")
    ax.set_xlabel("shape (m x n x k)")
    ax.set_ylabel("tile configuration")
    plots._title(ax, "AMD tiling tutorial: which tile sizes pay off", meta)
    return fig


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    fig = fig_hierarchical_roofline(profile, meta, "AMD tiling tutorial: naive, LDS tiling, register tiling "
                                    "(WARP = 32) and cuBLAS at every memory level (Nsight Compute)", most=2)
    # the shared figure names kernels by mmbench's series labels; a reader of this study knows the tutorial's
    # (those drawn: two kernels of one label are told apart by their parameters and keep them)
    drawn = set(zip(profile.variant, profile.params.fillna("")))
    names = {series_of(v, p).label: name for (v, p), name in KERNEL_NAMES.items() if (v, p) in drawn}
    for text in fig.legends[0].get_texts():
        text.set_text(names.get(text.get_text(), text.get_text()))
    return fig


FIGURES = {
    "amd-speedup": FigureFamily("AMD tiling: LDS and register tiling over naive", "AMD tiling: speedup of LDS and register tiling over naive, per shape family",
                                (Figure("fig-amd-speedup", fig_speedup),)),
    "amd-cublas": FigureFamily("AMD tiling: each step as % of cuBLAS", "AMD tiling: each step's GFLOP/s as % of cuBLAS, per shape family",
                               (Figure("fig-amd-percent-cublas", fig_percent_cublas),)),
    "amd-tiles": FigureFamily("AMD tiling: GFLOP/s of each tile configuration", "AMD tiling: GFLOP/s of each tile configuration at the tuning shapes",
                              (Figure("fig-amd-tiles", fig_tiles),)),
    "amd-hierarchy": FigureFamily("AMD tiling: hierarchical roofline from a profile", "AMD tiling: each kernel's "
                                  "intensity at shared memory, L1, L2 and DRAM under each level's roof, from the "
                                  "Nsight Compute profile beside the run",
                                  (Figure("fig-amd-hierarchy", fig_hierarchy),)),
}
