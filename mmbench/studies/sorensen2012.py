"""Sørensen 2012, "Auto-tuning Dense Matrix-Vector Multiplication for Graphics Processing Units":
the auto-tuned kernel against cuBLAS SGEMV over the 24 x 24 mesh and the tall, square and wide
families, the device copy as the yardstick.

Figures: Fig. 1 right (the best kernel design per mesh cell, with the occupancy line: the rows a
thread-per-row kernel needs to fill this GPU), Fig. 3 (the best BLOCKSIZE, WORKSIZE_M, WORKSIZE_N per
cell), Fig. 4 (GFLOP/s against footprint for the families) and Fig. 5 (cuBLAS and the tuned kernel as
% of the device copy bandwidth over the mesh, on one scale, and their ratio). The tuned kernel's
configuration per cell is what the run used (its params column); the tuning rows (for the atomics
finding and the tuner's wall time) come from the file the tuning cache names for this GPU.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .. import plots
from ..analysis import ok_rows
from ..ops.gemv import FAMILIES, MESH_CELLS, MESH_MAX, cell_name, cell_points, mesh_cell, parse_cell
from ..results import ResultsError
from ..variants import parse_params
from .common import Verdict, markdown_table, provenance, report_text, text_table, verdict_table
from .contract import Figure, FigureFamily

plt = plots.plt

TUNED, LIBRARY, COPY = "gemv_tuned", "cublas_gemv", "memcpy"
DESIGNS = {0: "versatile (Fig. 2d)", 1: "threads along columns (Fig. 2e)", 2: "wide, no atomics"}
PARAMS = ("BLOCKSIZE", "WORKSIZE_M", "WORKSIZE_N")
# Resident threads per SM where the metadata predates recording it (CUDA's occupancy tables)
RESIDENT_THREADS = {"sm_20": 1536, "sm_70": 2048, "sm_80": 2048, "sm_86": 1536, "sm_89": 1536, "sm_90": 2048}
BIG = 256 * 2**20  # the target's footprint: the tuned kernel >= 90 % of the copy from here up
LIBRARY_CELL_BYTES = 2**20  # the cuBLAS target counts cells whose matrices are all at least this large


# -- the data ----------------------------------------------------------------------------------------
def occupancy_rows(meta: dict) -> int | None:
    """Rows a one-thread-per-row kernel needs to fill the GPU: SMs x resident threads per SM (the
    paper's dashed line, 14 x 1536 = 21504 on a C2050)."""
    gpu = meta.get("gpu") or {}
    threads = gpu.get("max_threads_per_sm") or RESIDENT_THREADS.get(gpu.get("arch"))
    return gpu["sm_count"] * threads if gpu.get("sm_count") and threads else None


def _gemv(ok: pd.DataFrame, variant: str) -> pd.DataFrame:
    return ok[(ok.op == "gemv") & (ok.variant == variant)]


def mesh_values(ok: pd.DataFrame, variant: str, column: str) -> pd.DataFrame:
    """A MESH_CELLS x MESH_CELLS table (rows: m's cell, columns: n's cell) of the mean of a column
    over each cell's 3 x 3 shapes, as the paper scores a cell; NaN where a shape of the cell was
    not measured (beyond the memory cap: the paper's black cells)."""
    rows = _gemv(ok, variant).drop_duplicates(["m", "n"], keep="last").set_index(["m", "n"])[column]
    out = np.full((MESH_CELLS, MESH_CELLS), np.nan)
    for i in range(MESH_CELLS):
        for j in range(MESH_CELLS):
            keys = [(p.m, p.n) for p in cell_points(i, j)]
            if all(k in rows.index for k in keys):
                out[i, j] = float(np.mean([rows[k] for k in keys]))
    return pd.DataFrame(out, index=pd.Index(range(MESH_CELLS), name="m cell"), columns=range(MESH_CELLS))


def mesh_params(ok: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The tuned kernel's configuration per cell (KERNEL and the three sizes), as the run used it."""
    rows = _gemv(ok, TUNED)
    # numpy arrays filled, then framed: a DataFrame's cell assignment is a thousand times slower
    out = {name: np.full((MESH_CELLS, MESH_CELLS), np.nan) for name in ("KERNEL", *PARAMS)}
    for m, n, params in zip(rows.m, rows.n, rows.params):
        i, j = mesh_cell(int(m), int(n))
        if any((p.m, p.n) == (m, n) for p in cell_points(i, j)):
            for name, value in parse_params(params):
                if name in out:
                    out[name][i, j] = value
    return {name: pd.DataFrame(values) for name, values in out.items()}


def run_cells(ok: pd.DataFrame) -> set[str]:
    """The mesh cells whose 3 x 3 shapes the run measured for the tuned kernel."""
    values = mesh_values(ok, TUNED, "gflops_mean").to_numpy()
    return {cell_name(i, j) for (i, j), v in np.ndenumerate(values) if not np.isnan(v)}


def copy_bandwidth(ok: pd.DataFrame) -> float:
    """The device copy's bandwidth in the run: its best GB/s (bytes read and written)."""
    rows = ok[(ok.op == "copy") & (ok.variant == COPY)]
    if rows.empty:
        raise ResultsError("the GEMV study needs memcpy rows in the same run (the yardstick)")
    return float(rows.gbytes_per_s.max())


def family_shapes(meta: dict) -> set[tuple[int, int]] | None:
    """The shapes of the run's "families" sweep, read from the config its metadata names (a mesh
    shape may also be of the form 10N x 10N); None where the metadata names no such config."""
    from ..config import ConfigError, load_config
    from ..ops import get_op

    try:
        sweeps = load_config(meta["config"]).sweeps if meta.get("config") else ()
    except (ConfigError, OSError):
        return None
    specs = [sw.sizes for sw in sweeps if sw.name == "families"]
    return {(sh.m, sh.n) for spec in specs for sh in get_op("gemv").parse_sizes(spec)} or None


def families(ok: pd.DataFrame, shapes: set[tuple[int, int]] | None = None) -> pd.DataFrame:
    """Rows of the tall, square and wide families (among shapes, when given): family, N, footprint
    (bytes of A), the GFLOP/s and GB/s of the tuned kernel and of cuBLAS, and the copy's GB/s at that
    footprint."""
    copies = ok[(ok.op == "copy") & (ok.variant == COPY)]
    copy_by_bytes = copies.assign(footprint=4 * copies.m * copies.n).groupby("footprint").gbytes_per_s.max()
    out = []
    for family, (fm, fn) in FAMILIES.items():
        for variant in (TUNED, LIBRARY):
            rows = _gemv(ok, variant)
            rows = rows[(rows.m * fn == rows.n * fm) & (rows.m % fm == 0) & (rows.n % fn == 0)]
            for m, n, gflops, gbps in zip(rows.m, rows.n, rows.gflops_mean, rows.gbytes_per_s):
                if shapes and (int(m), int(n)) not in shapes:
                    continue
                out.append({"family": family, "N": int(m) // fm, "footprint": 4 * int(m) * int(n), "variant": variant,
                            "gflops": gflops, "gbytes_per_s": gbps})
    if not out:
        raise ResultsError("the GEMV study needs the tall, square and wide families' rows")
    df = pd.DataFrame(out).pivot_table(index=["family", "N", "footprint"], columns="variant",
                                       values=["gflops", "gbytes_per_s"]).reset_index()
    df.columns = ["_".join(c for c in col if c) for col in df.columns]
    df["copy_gbytes_per_s"] = df.footprint.map(copy_by_bytes)
    return df.sort_values(["family", "N"]).reset_index(drop=True)


def tuning_rows(meta: dict, caches: Sequence | None = None, beside: Path | None = None) -> tuple[pd.DataFrame | None, dict]:
    """The batched tuning rows of gemv_tuned on this run's GPU and kernel source (the file its
    tuning-cache entries name: in the user's cache or the shipped one, tuning.cache.read_caches() unless
    `caches` are given) and that file's metadata; (None, {}) where there are none. A copy in the
    run's own folder (`beside`/tuning/, as a reference run keeps it) comes first."""
    from ..engine.batched_local import read_rows
    from ..results import read_metadata
    from ..tuning.cache import TuneError, read_caches

    try:
        caches = read_caches() if caches is None else caches
    except TuneError as exc:  # a user cache that is not one: the report says so in one line
        raise ResultsError(str(exc)) from None
    gpu = (meta.get("gpu") or {}).get("name")
    # the source the run measured: a tuning of another version of the kernel is not this run's
    hashes = {k.get("source_hash") for name, k in (meta.get("kernels") or {}).items() if name.startswith(f"{TUNED}[")}
    entries = [e for c in caches for e in c.entries.values()
               if e.get("variant") == TUNED and e.get("device") == gpu
               and (not hashes or {e.get("source_hash"), e.get("rehashed_from")} & hashes)]
    files = sorted({e["results"] for e in entries if str(e.get("results", "")).endswith(".csv.gz")})
    for name in reversed(files):
        for path in ([beside / "tuning" / Path(name).name] if beside else []) + [Path(name)]:
            plain = path.with_name(path.name[:-3])
            if path.exists():
                return read_rows(plain), read_metadata(plain)
    return None, {}


# -- the targets and findings ---------------------------------------------------------------------------
def targets(ok: pd.DataFrame, shapes: set[tuple[int, int]] | None = None) -> list[list[str]]:
    """The issue's targets as (target, measured, met) rows."""
    fam = families(ok, shapes)
    big = fam[fam.footprint >= BIG].copy()
    big["pct"] = 100 * big[f"gbytes_per_s_{TUNED}"] / big.copy_gbytes_per_s
    worst = big.groupby("family").pct.min()
    t1 = bool(len(worst) == 3 and (worst >= 90).all())
    tuned, lib = mesh_values(ok, TUNED, "gflops_mean"), mesh_values(ok, LIBRARY, "gflops_mean")
    ratio = (tuned / lib).to_numpy()
    big_cells = big_matrix(list(range(MESH_CELLS)))
    measured = ~np.isnan(ratio)
    share = float((ratio[measured & big_cells] >= 1.0).mean()) if (measured & big_cells).any() else float("nan")
    geo = float(np.exp(np.log(ratio[measured]).mean())) if measured.any() else float("nan")
    return [
        ["tuned >= 90 % of the copy at footprints >= 256 MiB (worst of tall, square, wide)",
         ", ".join(f"{f} {v:.1f} %" for f, v in worst.items()), "yes" if t1 else "no"],
        [f"tuned >= cuBLAS in >= 90 % of the cells with matrices >= 1 MiB ({int((measured & big_cells).sum())} cells)",
         f"{100 * share:.1f} %", "yes" if share >= 0.9 else "no"],
        [f"geometric mean over all {int(measured.sum())} measured cells >= 1.0 x cuBLAS", f"{geo:.3f} x",
         "yes" if geo >= 1.0 else "no"],
    ]


def _anti_diagonal_r2(values: np.ndarray) -> float:
    """Share of the variance of log performance over the cells explained by the number of elements
    alone (cells grouped by i + j, the mesh's anti-diagonals): near 1 when only m n matters."""
    logs = pd.DataFrame([(i + j, math.log(v)) for (i, j), v in np.ndenumerate(values) if v > 0 and not np.isnan(v)],
                        columns=["diag", "log"])
    total = ((logs["log"] - logs["log"].mean()) ** 2).sum()
    within = ((logs["log"] - logs.groupby("diag")["log"].transform("mean")) ** 2).sum()
    return float(1 - within / total) if total else float("nan")


def verdicts(ok: pd.DataFrame, meta: dict, tuning: pd.DataFrame | None) -> list[Verdict]:
    out = []
    line = occupancy_rows(meta)
    lib, tuned = mesh_values(ok, LIBRARY, "gbytes_per_s"), mesh_values(ok, TUNED, "gbytes_per_s")
    copy = copy_bandwidth(ok)
    if line:
        above = [i for i in range(MESH_CELLS) if min(p.m for p in cell_points(i, 0)) >= line]
        below = [i for i in range(MESH_CELLS) if max(p.m for p in cell_points(i, 0)) < line]
        def big(rows: list[int]) -> float:  # cuBLAS's median % of the copy over these rows' cells >= 1 MiB
            values = lib.iloc[rows].to_numpy()[big_matrix(rows)]
            values = values[~np.isnan(values)]
            return float(np.median(values)) / copy * 100 if values.size else float("nan")

        a, b = big(above), big(below)
        wide_cells = [(i, j) for i in range(MESH_CELLS) for j in range(MESH_CELLS) if j >= i + 8 and not np.isnan(lib.iloc[i, j])]
        tall_cells = [(i, j) for i in range(MESH_CELLS) for j in range(MESH_CELLS) if i >= j + 8 and not np.isnan(lib.iloc[i, j])]
        w = np.median([lib.iloc[i, j] / tuned.iloc[i, j] for i, j in wide_cells]) if wide_cells else float("nan")
        t = np.median([lib.iloc[i, j] / tuned.iloc[i, j] for i, j in tall_cells]) if tall_cells else float("nan")
        out.append(Verdict("The library performs well only above the occupancy line, and poorly for wide shapes",
                           "CUBLAS 4.0 and MAGMA 1.0 good only above 21504 rows; wide shapes far from the hardware's potential",
                           "yes" if a > 1.5 * b and w < t else "partly" if a > 1.5 * b or w < t else "no",
                           f"occupancy line {line} rows ({(meta.get('gpu') or {}).get('sm_count')} SMs); cuBLAS median "
                           f"{a:.0f} % of the copy in cells above it, {b:.0f} % below (cells >= 1 MiB); cuBLAS / tuned "
                           f"median {w:.2f} in wide cells (n >= 2^{8 * 20 / 24:.1f} m), {t:.2f} in tall ones"))
    gflops = mesh_values(ok, TUNED, "gflops_mean").to_numpy()
    lib_gflops = mesh_values(ok, LIBRARY, "gflops_mean").to_numpy()
    r2, r2_lib = _anti_diagonal_r2(gflops), _anti_diagonal_r2(lib_gflops)
    out.append(Verdict("The tuned kernel's performance depends mainly on the number of elements, not the shape",
                       "a near skew-symmetric map (Fig. 5)", "yes" if r2 >= 0.9 else "partly" if r2 >= 0.75 else "no",
                       f"m n alone (the mesh's anti-diagonals) explains {100 * r2:.0f} % of the variance of log GFLOP/s "
                       f"over the cells for the tuned kernel, {100 * r2_lib:.0f} % for cuBLAS"))
    params = mesh_params(ok)
    used = {name: sorted(int(v) for v in np.unique(params[name].to_numpy()[~np.isnan(params[name].to_numpy())]))
            for name in PARAMS}
    full = {"BLOCKSIZE": 8, "WORKSIZE_M": 8, "WORKSIZE_N": 8}
    out.append(Verdict("Every tuning parameter's full range gets used", "all values of BLOCKSIZE, WORKSIZE_m and "
                       "WORKSIZE_n appear in Fig. 3", "yes" if all(len(used[k]) == full[k] for k in PARAMS) else "partly",
                       "; ".join(f"{k}: {len(used[k])} of {full[k]} values ({', '.join(map(str, used[k]))})" for k in PARAMS)))
    if tuning is not None:
        # a pruned configuration keeps its speed at the cell's pivot: a design whose every configuration
        # was pruned there still has its (slow) best
        ok_t = tuning[tuning.status.isin(["ok", "pruned"])].copy()
        ok_t["KERNEL"] = [dict(parse_params(p))["KERNEL"] for p in ok_t.params]
        best = ok_t.groupby(["size_class", "KERNEL"]).gflops.max().unstack()
        wide = [c for c in best.index if parse_cell(c)[1] >= parse_cell(c)[0] + 8]
        if wide and 2 in best:
            atomic = best.loc[wide, [k for k in (0, 1) if k in best]].max(axis=1)
            gain = best.loc[wide, 2] / atomic
            out.append(Verdict("Atomics cost the wide shapes", "the several-threads-per-row kernel's atomicAdd stalls "
                               "threads of one row", "yes" if (gain > 1).mean() >= 0.5 else "no",
                               f"in {len(wide)} wide cells the best kernel without atomics (a workspace that the last block "
                               "of each row of blocks adds up) "
                               f"is faster than the best with atomics in {100 * (gain > 1).mean():.0f} % of them (median "
                               f"{gain.median():.2f} x)"))
    else:
        out.append(Verdict("Atomics cost the wide shapes", "atomicAdd stalls", "not checked",
                           "no tuning file for this GPU in the tuning cache"))
    return out


def big_matrix(rows: list[int]) -> np.ndarray:
    """Which cells of the given mesh rows have matrices of at least 1 MiB (all their shapes)."""
    return np.array([[min(4 * p.m * p.n for p in cell_points(i, j)) >= LIBRARY_CELL_BYTES for j in range(MESH_CELLS)]
                     for i in rows], dtype=bool)



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
    kernel = mesh_params(ok_rows(df))["KERNEL"]
    if kernel.isna().all().all():
        raise ResultsError("Fig. 1 needs gemv_tuned rows at the mesh's shapes")
    from matplotlib.colors import ListedColormap

    fig, ax = plt.subplots(figsize=(7, 6), layout="constrained")
    colours = ["tab:blue", "tab:orange", "tab:green"]
    ax.imshow(np.ma.masked_invalid(kernel.to_numpy()), origin="lower", cmap=ListedColormap(colours), vmin=-0.5, vmax=2.5)
    _mesh_axes(ax, meta)
    for k, c in zip(DESIGNS, colours):
        ax.plot([], [], "s", color=c, label=DESIGNS[k])
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
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
    from matplotlib.colors import LogNorm, TwoSlopeNorm

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


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/sorensen2012-h100/sorensen2012-h100.csv.gz"

FIGURES = {  # `mmbench plot NAME`; the report embeds them
    "gemv-kernels": FigureFamily("Sørensen Figs. 1, 3: tuned design per mesh cell", "Sørensen Fig. 1 right and Fig. 3: the tuned kernel's design and parameters per mesh cell",
                                 (Figure("fig1-best-kernel", fig_best_kernel), Figure("fig3-best-params", fig_best_params))),
    "gemv-families": FigureFamily("Sørensen Fig. 4: GFLOP/s by footprint, vs cuBLAS", "Sørensen Fig. 4: GFLOP/s against footprint, tall, square and wide, cuBLAS dashed",
                                  (Figure("fig4-families", fig_families),)),
    "gemv-mesh": FigureFamily("Sørensen Fig. 5: mesh as % of the copy, vs cuBLAS", "Sørensen Fig. 5: cuBLAS and the tuned kernel over the mesh as % of the copy, and their ratio",
                              (Figure("fig5-mesh", fig_heatmaps),)),
}
ALT_TEXT = {"fig1-best-kernel": "best kernel per cell", "fig3-best-params": "best parameters per cell",
            "fig4-families": "GFLOP/s against footprint", "fig5-mesh": "heatmaps over the mesh"}


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    tuning, tuning_meta = tuning_rows(meta, beside=results_path.parent)
    shapes = family_shapes(meta)
    fam = families(ok, shapes)
    fam_table = fam.assign(MB=(fam.footprint / 1e6).round(3),
                           pct_copy=100 * fam[f"gbytes_per_s_{TUNED}"] / fam.copy_gbytes_per_s,
                           vs_cublas=fam[f"gflops_{TUNED}"] / fam[f"gflops_{LIBRARY}"])
    fam_table["N"] = fam_table.N.astype(int).astype(str)
    fam_table = fam_table[["family", "N", "MB", f"gflops_{TUNED}", f"gflops_{LIBRARY}", "vs_cublas",
                           f"gbytes_per_s_{TUNED}", "copy_gbytes_per_s", "pct_copy"]].set_index("family")
    awkward = df[(df.op == "gemv") & (df.variant.isin([TUNED, LIBRARY]))]
    lines = [
        "# Sørensen 2012 on today's GPU: auto-tuned SGEMV against cuBLAS",
        "",
        provenance(results_path, df, meta, counts=f", {int((awkward.status != 'ok').sum())} GEMV points not ok")
        + f", {(meta.get('settings') or {}).get('cache', '?')} L2. GFLOP/s are 2 m n over the mean time; GB/s are "
        "4 (m n + m + n) bytes over the median time; a mesh cell is the mean over its 3 x 3 shapes, as the paper "
        "scores it. The copy is cuMemcpyDtoD (bytes read and written).",
        "",
        "## Targets",
        "",
        *text_table(["target", "measured", "met"], targets(ok, shapes)),
        "",
        "## The paper's findings, checked",
        "",
        *verdict_table(verdicts(ok, meta, tuning)),
        "",
        "## The mesh tuning",
        "",
        *(_tuning_lines(tuning, tuning_meta, run_cells(ok)) if tuning is not None
          else ["No tuning file for this GPU in the cache."]),
        "",
        "## Fig. 4's families: the tuned kernel, cuBLAS and the copy",
        "",
        markdown_table(fam_table),
        "",
    ]
    return report_text(lines, figures, ALT_TEXT)


def _tuning_lines(tuning: pd.DataFrame, meta: dict, run_cells: set[str]) -> list[str]:
    runs = meta.get("invocations") or []
    wall = sum(float(r.get("wall_s") or 0) for r in runs)
    compiling = sum(float(r.get("compile_s") or 0) for r in runs)
    counts = tuning.status.value_counts().to_dict()
    prune = (meta.get("settings") or {}).get("prune")
    tuned = set(tuning.size_class)
    lines = [f"{len(tuned)} cells x {tuning.params.nunique()} configurations = {len(tuning)} rows "
             f"({', '.join(f'{n} {s}' for s, n in counts.items())}), each the mean of one timed launch at each of the "
             f"cell's shapes, checked on the GPU; {len(runs)} device call(s), {wall:.0f} s in all, of which "
             f"{compiling:.0f} s compiling and loading the kernels (the paper's tuner: 1.8 h on a C2050). Skipped "
             "configurations spill registers (the tuner's rule) or are a design not meant for the shape (threads along "
             "columns where m > BLOCKSIZE)" + (f"; pruned ones were under {prune:g} of the best's speed at the cell's "
                                                "pivot shape and were not timed at its other shapes." if prune else ".")]
    untuned = sorted(run_cells - tuned)
    if untuned:
        lines.append(f"{len(untuned)} of the run's {len(run_cells)} cells were not tuned (the tuning was not finished: "
                     f"{untuned[0]} to {untuned[-1]}); there the run took the nearest tuned cell's configuration.")
    return lines
