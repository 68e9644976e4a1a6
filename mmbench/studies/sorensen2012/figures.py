"""The Sørensen study's figures (its FIGURES families, `mmbench plot NAME`) and its reference run:
Fig. 1 right (the best kernel design per mesh cell, with the occupancy line: the rows a
thread-per-row kernel needs to fill this GPU), Fig. 3 (the best BLOCKSIZE, WORKSIZE_M, WORKSIZE_N per
cell), Fig. 4 (GFLOP/s against footprint for the families) and Fig. 5 (cuBLAS and the tuned kernel as
% of the device copy bandwidth over the mesh, on one scale, and their ratio), and fig6-hierarchy (the
GEMV kernels at every memory level from the run's Nsight Compute profile)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap, LogNorm, TwoSlopeNorm
from matplotlib.patches import Patch

from ... import hierarchy, plots
from ...analysis import ok_rows
from ...ops.gemv import MESH_CELLS, MESH_MAX, cell_points
from ...results import ResultsError
from ..contract import Figure, FigureFamily
from .measures import (CLASSES, LIBRARY, PARAMS, TUNED, cell_designs, copy_bandwidth, families, family_of,
                       family_shapes, mesh_cap_mib, mesh_params, mesh_values, occupancy_rows, shown_profile)


plt = plots.plt


# -- the figures ------------------------------------------------------------------------------------------
def _mesh_axes(ax, meta: dict, line: bool = True) -> None:
    """Log m (up) and n (right) over the mesh; the occupancy line dashed."""
    ticks = [0, 4, 8, 12, 16, 20, 24]
    ax.set_xticks([t - 0.5 for t in ticks], [f"$2^{{{round(t * 20 / 24)}}}$" for t in ticks])
    ax.set_yticks([t - 0.5 for t in ticks], [f"$2^{{{round(t * 20 / 24)}}}$" for t in ticks])
    ax.set_xlabel("columns n")
    ax.set_ylabel("rows m")
    ax.set_facecolor("black")  # cells beyond the memory cap, as the paper draws them
    rows = occupancy_rows(meta)
    if line and rows:
        at = math.log(rows) / math.log(MESH_MAX) * MESH_CELLS - 0.5
        ax.axhline(at, color="white", linestyle="--", linewidth=1.5)
        ax.text(MESH_CELLS - 0.6, at + 0.2, f"{rows} rows", color="white", ha="right", va="bottom", fontsize=8)


def fig_best_kernel(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    designs = cell_designs(ok_rows(df))
    if not designs.any():
        raise ResultsError("Fig. 1 needs gemv_tuned rows at the mesh's shapes")
    order = list(CLASSES)
    memory = (meta.get("gpu") or {}).get("memory_bytes")
    values = np.full(designs.shape, np.nan)
    for (i, j), d in np.ndenumerate(designs):
        smallest = min(4 * p.m * p.n for p in cell_points(i, j))
        values[i, j] = order.index(d) if d else len(order) if not memory or smallest <= memory else np.nan
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:olive", "lightgrey"]
    fig, ax = plt.subplots(figsize=(11, 6), layout="constrained")
    ax.imshow(np.ma.masked_invalid(values), origin="lower", cmap=ListedColormap(colours),
              vmin=-0.5, vmax=len(colours) - 0.5)
    _mesh_axes(ax, meta)
    cap = mesh_cap_mib(meta)
    handles = [Patch(color=c, label=f"{CLASSES[k]}: {int((designs == k).sum())} cells") for k, c in zip(order, colours)]
    handles += [Patch(color="lightgrey", label=f"not run: a matrix over the study's {cap or '?'} MiB cap"),
                Patch(color="black", label="not run: larger than the GPU's memory")]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False,
              title="design the tuned configuration runs\n(most of a cell's 3 x 3 shapes)", title_fontsize=8)
    plots._title(ax, "Sørensen Fig. 1 (right): the best kernel per mesh cell", meta)
    return fig


def fig_best_params(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    params = mesh_params(ok_rows(df))
    if params["BLOCKSIZE"].isna().all().all():
        raise ResultsError("Fig. 3 needs gemv_tuned rows at the mesh's shapes")
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2), layout="constrained")
    for ax, name in zip(axes, PARAMS):
        image = ax.imshow(np.ma.masked_invalid(params[name].to_numpy()), origin="lower", cmap="viridis")
        _mesh_axes(ax, meta, line=False)
        ax.set_title(name)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(f"Sørensen Fig. 3: the best parameters per mesh cell\n{(meta.get('gpu') or {}).get('name', '')}")
    return fig


def fig_families(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    fam = families(ok_rows(df), family_shapes(meta))
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    for (family, rows), colour in zip(fam.groupby("family", sort=False), ("tab:blue", "tab:orange", "tab:green")):
        mb = rows.footprint / 1e6
        ax.plot(mb, rows[f"gflops_{TUNED}"], "-o", color=colour, markersize=3, label=f"{family}: auto-tuned")
        ax.plot(mb, rows[f"gflops_{LIBRARY}"], "--", color=colour, label=f"{family}: cuBLAS")
    ax.set_xscale("log")
    ax.set_xlabel("memory footprint of A (MB), log scale")
    ax.set_ylabel("GFLOP/s (2 m n / mean time)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    plots._title(ax, "Sørensen Fig. 4: tall (100N x N), square (10N x 10N), wide (N x 100N)", meta)
    return fig


def fig_heatmaps(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    ok = ok_rows(df)
    copy = copy_bandwidth(ok)
    lib = 100 * mesh_values(ok, LIBRARY, "gbytes_per_s") / copy
    tuned = 100 * mesh_values(ok, TUNED, "gbytes_per_s") / copy
    if lib.isna().all().all() or tuned.isna().all().all():
        raise ResultsError("Fig. 5 needs gemv_tuned and cublas_gemv rows at the mesh's shapes")
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.4), layout="constrained")
    top = float(np.nanmax([lib.max().max(), tuned.max().max()]))
    norm = LogNorm(vmin=max(0.01, float(np.nanmin([lib.min().min(), tuned.min().min()]))), vmax=top)
    for ax, values, title in ((axes[0], lib, "cuBLAS SGEMV"), (axes[1], tuned, "auto-tuned")):
        image = ax.imshow(np.ma.masked_invalid(values.to_numpy()), origin="lower", cmap="jet", norm=norm)
        _mesh_axes(ax, meta)
        ax.set_title(f"{title}: % of the copy's {copy:.0f} GB/s")
    fig.colorbar(image, ax=axes[:2], shrink=0.8, label="% of device copy bandwidth (log scale)")
    ratio = np.log2((tuned / lib).to_numpy())
    span = float(np.nanmax(np.abs(ratio))) or 1.0
    image = axes[2].imshow(np.ma.masked_invalid(ratio), origin="lower", cmap="RdBu_r",
                           norm=TwoSlopeNorm(0.0, -span, span))
    _mesh_axes(axes[2], meta)
    axes[2].set_title("auto-tuned / cuBLAS (log2: red faster)")
    fig.colorbar(image, ax=axes[2], shrink=0.8, label="log2 ratio")
    fig.suptitle(f"Sørensen Fig. 5 over the 24 x 24 mesh\n{(meta.get('gpu') or {}).get('name', '')}, "
                 f"{str(meta.get('started_at', ''))[:10]}")
    return fig


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    """The GEMV kernels' hierarchical roofline: the shape that fits in the L2, then those past it."""
    sub, shapes = shown_profile(profile, meta)
    fig = hierarchy.fig_hierarchical_roofline(
        sub, meta, "Sørensen: GEMV at every memory level, Nsight Compute (caches flushed before each kernel: A "
        "comes from DRAM even where it would fit in L2)", variants=(TUNED, LIBRARY), most=len(shapes))
    # the panels in the helper's order (hierarchy.shapes_in), titled as GEMV shapes: m x n and the family
    table = hierarchy.levels(sub)
    for ax, (m, n, k) in zip(fig.axes, hierarchy.shapes_in(table[table.variant.isin([TUNED, LIBRARY])], {"gemv"},
                                                            len(shapes))):
        place = ax.get_title().partition(": ")[2]
        flushed = " (flushed: read from DRAM)" if "fits in" in place else ""
        ax.set_title(f"{family_of(m, n)} {m} x {n}: {place}{flushed}", fontsize=10)
    return fig


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/sorensen2012-h100/sorensen2012-h100.csv.gz"

FIGURES = {  # `mmbench plot NAME`; the report embeds them
    "gemv-kernels": FigureFamily("Sørensen Figs. 1, 3: tuned design per mesh cell", "Sørensen Fig. 1 right and Fig. 3: the tuned kernel's design and parameters per mesh cell",
                                 (Figure("fig1-best-kernel", fig_best_kernel), Figure("fig3-best-params", fig_best_params))),
    "gemv-families": FigureFamily("Sørensen Fig. 4: GFLOP/s by footprint, vs cuBLAS", "Sørensen Fig. 4: GFLOP/s against footprint, tall, square and wide, cuBLAS dashed",
                                  (Figure("fig4-families", fig_families),)),
    "gemv-mesh": FigureFamily("Sørensen Fig. 5: mesh as % of the copy, vs cuBLAS", "Sørensen Fig. 5: cuBLAS and the tuned kernel over the mesh as % of the copy, and their ratio",
                              (Figure("fig5-mesh", fig_heatmaps),)),
    "sorensen-hierarchy": FigureFamily("Sørensen: GEMV's hierarchical roofline (Nsight Compute)",
                                       "Sørensen: the tuned kernel and cuBLAS at every memory level (shared, L1, L2, "
                                       "DRAM) from the run's Nsight Compute profile, in L2 and past it",
                                       (Figure("fig6-hierarchy", fig_hierarchy),)),
}
