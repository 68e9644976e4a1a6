"""The Sørensen study's figures (its FIGURES families, `mmbench plot NAME`) and its reference run:
Fig. 1 left and right (the target region of each of the paper's four kernels, from its text, beside
the kernel design the tuned configuration runs per mesh cell, with the occupancy line: the rows a
thread-per-row kernel needs to fill this GPU), Fig. 3 (the best BLOCKSIZE, WORKSIZE_M, WORKSIZE_N per
cell), Fig. 4 (GFLOP/s against footprint for the families, cuBLAS left and the tuned kernel right, as
the paper's two panels, the sampled N stated) and Fig. 5 (cuBLAS and the tuned kernel as % of the device
copy bandwidth over the mesh, on one scale, and their ratio), and fig6-hierarchy (the GEMV kernels at
every memory level from the run's Nsight Compute profile, two panels a row)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap, LogNorm, TwoSlopeNorm
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.patheffects import withStroke
from matplotlib.ticker import FixedLocator, NullFormatter

from ... import hierarchy, plots
from ...analysis import ok_rows
from ...ops.gemv import FAMILIES, MESH_CELLS, MESH_MAX, cell_points
from ...results import ResultsError
from ..contract import Figure, FigureFamily
from .claims import FOUR, PAPER, centre, target_design
from .measures import (CLASSES, LIBRARY, PARAMS, TUNED, cell_designs, copy_bandwidth, cublas_version, families,
                       family_of, family_shapes, mesh_cap_mib, mesh_params, mesh_values, occupancy_rows, shown_profile)


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


# A design's colour, the same in both panels of Fig. 1 (and its legend): the paper's four, then 2d and ours
DESIGN_COLOURS = {"a": "tab:blue", "b": "tab:orange", "c": "tab:green", "e": "tab:red", "d": "tab:purple",
                  "w": "tab:olive"}
NOT_RUN = "lightgrey"  # cells over the study's cap (black: over the GPU's memory)


def target_regions(line: int) -> np.ndarray:
    """Fig. 1 left on the mesh: each cell's target kernel (a CLASSES key) at its centre, by the paper's
    text as the Fig. 1 verdict reads it (claims.target_design): 2e under ~50 rows, 2c above the
    occupancy line, 2a at n < 100, 2b elsewhere."""
    return np.array([[target_design(centre(i), centre(j), line) for j in range(MESH_CELLS)]
                     for i in range(MESH_CELLS)], dtype=object)


def _cells_run(designs: np.ndarray, meta: dict) -> np.ndarray:
    """Per cell: 1 where the run measured it, 0 where the study's cap left it out, NaN where its
    smallest matrix is larger than the GPU's memory."""
    memory = (meta.get("gpu") or {}).get("memory_bytes")
    out = np.ones(designs.shape)
    for (i, j), d in np.ndenumerate(designs):
        if not d:
            smallest = min(4 * p.m * p.n for p in cell_points(i, j))
            out[i, j] = 0.0 if not memory or smallest <= memory else np.nan
    return out


def _region_edges(ax, regions: np.ndarray, **style) -> None:
    """The edges between cells of different target regions, drawn along the cells' borders."""
    segments, size = [], regions.shape[0]
    for (i, j), r in np.ndenumerate(regions):
        if j + 1 < size and regions[i, j + 1] != r:
            segments.append([(j + 0.5, i - 0.5), (j + 0.5, i + 0.5)])
        if i + 1 < size and regions[i + 1, j] != r:
            segments.append([(j - 0.5, i + 0.5), (j + 0.5, i + 0.5)])
    ax.add_collection(LineCollection(segments, **style))


def _draw_targets(ax, regions: np.ndarray, run: np.ndarray, meta: dict) -> None:
    """Fig. 1 left: the target regions in their kernel's colour, each named inside it; cells the run
    did not measure faded (over the cap) or black (over the GPU's memory)."""
    order = list(DESIGN_COLOURS)
    ax.imshow(np.vectorize(order.index)(regions), origin="lower", cmap=ListedColormap(list(DESIGN_COLOURS.values())),
              vmin=-0.5, vmax=len(order) - 0.5)
    veil = np.zeros((*run.shape, 4))
    veil[run == 0] = (1, 1, 1, 0.6)
    veil[np.isnan(run)] = (0, 0, 0, 1)
    ax.imshow(veil, origin="lower")
    _mesh_axes(ax, meta)
    for key in FOUR:
        cells = np.argwhere(regions == key)
        if len(cells):
            i, j = cells.mean(axis=0)
            name = CLASSES[key].replace(" (Fig. 2", "\n(Fig. 2") if np.ptp(cells[:, 0]) > 2 else CLASSES[key]
            ax.text(j, i, name, ha="center", va="center", fontsize=10, color="white", fontweight="bold",
                    path_effects=[withStroke(linewidth=2.5, foreground="black")])


def fig_best_kernel(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    """Fig. 1 left (the target regions, from the paper's text) beside Fig. 1 right (the design the tuned
    configuration runs per cell), the left's region edges drawn over the right, one legend below both."""
    designs = cell_designs(ok_rows(df))
    if not designs.any():
        raise ResultsError("Fig. 1 needs gemv_tuned rows at the mesh's shapes")
    line = occupancy_rows(meta) or PAPER["occupancy_rows"]
    regions, run = target_regions(line), _cells_run(designs, meta)
    order = list(DESIGN_COLOURS)
    values = np.array([[order.index(d) if d else len(order) if r == 0 else np.nan for d, r in zip(*row)]
                       for row in zip(designs, run)], dtype=float)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 8), layout="constrained")
    _draw_targets(left, regions, run, meta)
    right.imshow(np.ma.masked_invalid(values), origin="lower", cmap=ListedColormap([*DESIGN_COLOURS.values(), NOT_RUN]),
                 vmin=-0.5, vmax=len(order) + 0.5)
    _mesh_axes(right, meta)
    _region_edges(right, regions, colors="black", linewidths=1.6)
    measured = designs != ""
    won = int((designs[measured] == regions[measured]).sum())
    left.set_title(f"Fig. 1 left: the target regions, from the text (by cell centre)\n2e under "
                   f"{PAPER['columns_rows']} rows, 2c above the line, 2a at n < {PAPER['skinny_n']}, 2b elsewhere",
                   fontsize=10)
    right.set_title(f"Fig. 1 right: the design each cell's tuned configuration runs\n{won} of {int(measured.sum())} "
                    f"cells ({100 * won / max(1, measured.sum()):.0f} %) won by their region's kernel", fontsize=10)
    cap = mesh_cap_mib(meta)
    handles = [Patch(color=c, label=f"{CLASSES[k]}: {int((designs == k).sum())} cells") for k, c in DESIGN_COLOURS.items()]
    handles += [Patch(color=NOT_RUN, label=f"not run: a matrix over the study's {cap or '?'} MiB cap (faded on the left)"),
                Patch(color="black", label="not run: larger than the GPU's memory"),
                Line2D([], [], color="black", linewidth=1.6, label="right: the edges of the left's regions")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=9, frameon=False,
               title="colour: a design; left, the cells it is meant for; right, the cells it runs in (most of a "
                     "cell's 3 x 3 shapes), counted", title_fontsize=9)
    fig.suptitle(f"Sørensen Fig. 1: the kernel meant for each shape and the one the tuner picked\n"
                 f"{(meta.get('gpu') or {}).get('name', '')}, {str(meta.get('started_at', ''))[:10]}", fontsize=12)
    return fig


def fig_best_params(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
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


FAMILY_STYLE = {"square": ("tab:blue", "o"), "tall": ("tab:orange", "s"), "wide": ("tab:green", "^")}
ZOOM_MB = 10  # Fig. 4's lower row: the footprints from here up, GFLOP/s on a linear axis


def _sampling(fam: pd.DataFrame) -> str:
    """What the families sampled, as the figure states it: the N of each family (one list where they agree)."""
    per = {f: sorted(rows.N.astype(int)) for f, rows in fam.groupby("family")}
    lists = {", ".join(map(str, ns)) for ns in per.values()}
    listed = (f"N = {lists.pop()}" if len(lists) == 1 else
              "; ".join(f"{f}: N = {', '.join(map(str, ns))}" for f, ns in per.items()))
    most = max(len(ns) for ns in per.values())
    return (f"Sampled: {listed} ({most} N a family, a marker each; footprint 400 N\u00b2 bytes). The paper steps N "
            f"by 10 from {PAPER['first_n']}: drops between our N, such as its tall curve's (4.2), cannot show here.")


def _family_panel(ax, fam: pd.DataFrame, variant: str, zoom: bool) -> None:
    """One kernel's three family curves; the lower row only from ZOOM_MB up, on a linear axis."""
    for family, rows in fam.groupby("family"):
        colour, marker = FAMILY_STYLE.get(family, ("tab:grey", "x"))
        rows = rows[rows.footprint >= ZOOM_MB * 1e6] if zoom else rows
        ax.plot(rows.footprint / 1e6, rows[f"gflops_{variant}"], "-", marker=marker, color=colour, markersize=5,
                linewidth=1.6, label=family)
    ax.set_xscale("log")
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    if zoom:  # under two decades: plain numbers at 1, 2, 5 a decade
        ticks = [v * 10 ** e for e in range(0, 5) for v in (1, 2, 5) if v * 10 ** e >= ZOOM_MB]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_yscale("log")


def fig_families(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    """Fig. 4 as the paper draws it: cuBLAS left, the auto-tuned kernel right, tall, square and wide in
    each; GFLOP/s on a log axis over every footprint (upper row) and on a linear one from ZOOM_MB up
    (lower row), where the curves' plateaus and drops are; the sampled N stated below."""
    fam = families(ok_rows(df), family_shapes(meta))
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5), layout="constrained", sharey="row", height_ratios=(3, 2))
    for col, (variant, name) in enumerate(((LIBRARY, f"{cublas_version(meta)} SGEMV (the paper's left: CUBLAS 4.0)"),
                                           (TUNED, "the auto-tuned kernel (the paper's right)"))):
        _family_panel(axes[0, col], fam, variant, zoom=False)
        _family_panel(axes[1, col], fam, variant, zoom=True)
        axes[0, col].set_title(name, fontsize=11)
        axes[1, col].set_title(f"{name.split(' (')[0]}: from {ZOOM_MB} MB, linear GFLOP/s", fontsize=10)
        for ax in axes[:, col]:
            ax.set_xlabel("memory footprint of A (MB), log scale")
    first = min(4 * fm * fn for fm, fn in FAMILIES.values()) * PAPER["first_n"] ** 2 / 1e6  # the paper's smallest
    lo, hi = min(ax.get_xlim()[0] for ax in axes[0]), max(ax.get_xlim()[1] for ax in axes[0])
    for ax in axes[0]:
        ax.axvspan(lo, first, color="0.92", zorder=0, label=f"under the paper's N = {PAPER['first_n']}")
        ax.set_xlim(lo, hi)
    axes[0, 0].set_ylabel("GFLOP/s (2 m n / mean time), log scale")
    axes[1, 0].set_ylabel("GFLOP/s, linear scale")
    axes[0, 0].legend(fontsize=10, loc="upper left")
    fig.suptitle(f"Sørensen Fig. 4: tall (100N x N), square (10N x 10N), wide (N x 100N)\n"
                 f"{(meta.get('gpu') or {}).get('name', '')}, {str(meta.get('started_at', ''))[:10]}", fontsize=12)
    fig.supxlabel(_sampling(fam), fontsize=9.5, wrap=True)
    return fig


def fig_heatmaps(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
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


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    """The GEMV kernels' hierarchical roofline: the shape that fits in the L2, then those past it, in a
    grid of two panels a row (the shared helper draws one row) with text a reader can read."""
    sub, shapes = shown_profile(profile, meta)
    fig = hierarchy.fig_hierarchical_roofline(
        sub, meta, "Sørensen: GEMV at every memory level, Nsight Compute (caches flushed before each kernel: A "
        "comes from DRAM even where it would fit in L2)", variants=(TUNED, LIBRARY), most=len(shapes))
    # the panels in the helper's order (hierarchy.shapes_in), titled as GEMV shapes: m x n and the family
    table = hierarchy.levels(sub)
    panels = fig.axes
    for ax, (m, n, k) in zip(panels, hierarchy.shapes_in(table[table.variant.isin([TUNED, LIBRARY])], {"gemv"},
                                                         len(shapes))):
        place = ax.get_title().partition(": ")[2]
        flushed = "\n(flushed: read from DRAM)" if "fits in" in place else ""
        ax.set_title(f"{family_of(m, n)} {m} x {n}: {place}{flushed}", fontsize=12)
    _in_grid(fig, panels)
    return fig


def _in_grid(fig: plt.Figure, panels: list, columns: int = 2) -> None:
    """The helper's one row of panels laid out `columns` a row, at a size where its text reads: tick and
    axis labels, legend and title enlarged; every panel keeps its y tick labels and the first of a row its
    y label."""
    rows = -(-len(panels) // columns)
    grid = fig.add_gridspec(rows, min(columns, len(panels)))
    label = panels[0].get_ylabel()
    fig.set_size_inches(6.6 * min(columns, len(panels)), 5.2 * rows + 1.6)
    for i, ax in enumerate(panels):
        ax.set_subplotspec(grid[i // columns, i % columns])
        ax.tick_params(labelsize=11, labelleft=True)
        ax.xaxis.label.set_fontsize(11)
        ax.set_ylabel(label.replace(" (Nsight", "\n(Nsight") if i % columns == 0 else "", fontsize=11)
    for legend in fig.legends:
        for text in legend.get_texts():
            text.set_fontsize(10.5)
    if fig._suptitle is not None:
        fig._suptitle.set_fontsize(13)


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/sorensen2012-h100/sorensen2012-h100.csv.gz"

FIGURES = {  # `mmbench plot NAME`; the report embeds them
    "gemv-kernels": FigureFamily("Sørensen Figs. 1, 3: tuned design per mesh cell", "Sørensen Fig. 1 left and right and Fig. 3: each kernel's target region, the tuned kernel's design and parameters per mesh cell",
                                 (Figure("fig1-best-kernel", fig_best_kernel), Figure("fig3-best-params", fig_best_params))),
    "gemv-families": FigureFamily("Sørensen Fig. 4: GFLOP/s by footprint, vs cuBLAS", "Sørensen Fig. 4: GFLOP/s against footprint, tall, square and wide, cuBLAS left and the tuned kernel right",
                                  (Figure("fig4-families", fig_families),)),
    "gemv-mesh": FigureFamily("Sørensen Fig. 5: mesh as % of the copy, vs cuBLAS", "Sørensen Fig. 5: cuBLAS and the tuned kernel over the mesh as % of the copy, and their ratio",
                              (Figure("fig5-mesh", fig_heatmaps),)),
    "sorensen-hierarchy": FigureFamily("Sørensen: GEMV's hierarchical roofline (Nsight Compute)",
                                       "Sørensen: the tuned kernel and cuBLAS at every memory level (shared, L1, L2, "
                                       "DRAM) from the run's Nsight Compute profile, in L2 and past it",
                                       (Figure("fig6-hierarchy", fig_hierarchy),)),
}
