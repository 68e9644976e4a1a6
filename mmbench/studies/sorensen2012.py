"""Sørensen 2012, "Auto-tuning Dense Matrix-Vector Multiplication for Graphics Processing Units":
the auto-tuned kernel against cuBLAS SGEMV over the 24 x 24 mesh and the tall, square and wide
families, the device copy as the yardstick.

Figures: Fig. 1 right (the best kernel design per mesh cell, with the occupancy line: the rows a
thread-per-row kernel needs to fill this GPU), Fig. 3 (the best BLOCKSIZE, WORKSIZE_M, WORKSIZE_N per
cell), Fig. 4 (GFLOP/s against footprint for the families) and Fig. 5 (cuBLAS and the tuned kernel as
% of the device copy bandwidth over the mesh, on one scale, and their ratio), and fig6-hierarchy (the
GEMV kernels at every memory level from the run's Nsight Compute profile). The tuned kernel's
configuration per cell is what the run used (its params column); the tuning rows (for the atomics
finding and the tuner's wall time) come from the file the tuning cache names for this GPU; the rows
companion (rows/gemv-rows, gemv_rows at WORKSIZE_M 1 and 4 with its profile) answers 3.3's mechanism.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .. import plots
from ..analysis import ok_rows
from ..ops.gemv import FAMILIES, MESH_CAP_MIB, MESH_CELLS, MESH_MAX, cell_name, cell_points, mesh_cell, parse_cell
from ..results import ResultsError
from ..variants import parse_params
from .common import Verdict, markdown_table, provenance, report_text, text_table, verdict_table
from .contract import Figure, FigureFamily

plt = plots.plt

TUNED, LIBRARY, COPY = "gemv_tuned", "cublas_gemv", "memcpy"
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


# -- every claim of the paper, section by section ---------------------------------------------------------
# The paper's numbers, quoted once (Sørensen 2012, sections named in each claim)
PAPER = {"occupancy_rows": 21504, "sms": 14, "threads_per_sm": 1536, "blocks_per_sm": 8, "skinny_n": 100,
         "columns_rows": 50, "kernels": 1536, "mesh": 24, "tuning_hours": 1.8, "bandwidth_gbs": 144,
         "fujimoto": (36, 86), "magma": (66, 141), "magma_t": 43}
# The designs a cell's tuned configuration is, at its shapes: the paper's four kernels of Fig. 1 (a, b, c, e),
# the versatile kernel's combination of b and c (d: Fig. 2d, which Fig. 1 does not class) and ours (w)
CLASSES = {"a": "one thread per row (Fig. 2a)", "b": "several threads per row (Fig. 2b)",
           "c": "several rows per thread (Fig. 2c)", "e": "several threads, several columns (Fig. 2e)",
           "d": "2b and 2c at once (Fig. 2d; not one of Fig. 1's four)",
           "w": "ours: columns of blocks, no atomics (not in the paper)"}
GRID_LEVEL = {"b", "d", "w"}  # more than one column of blocks adding into a row of y
HOLDS, PARTLY = 2 / 3, 1 / 3  # a share of cells at or above HOLDS: "yes"; at or above PARTLY: "partly"


def shape_design(m: int, n: int, params: str) -> str:
    """The design (a CLASSES key) that a gemv_tuned configuration runs at shape m x n: KERNEL 1 is Fig. 2e;
    KERNEL 0 and 2 with one column of blocks (n <= BLOCKSIZE WORKSIZE_N) are 2a or 2c (one row or
    WORKSIZE_M rows a thread); with more, KERNEL 0 is 2b (or 2d, WORKSIZE_M > 1) and KERNEL 2 is ours."""
    p = dict(parse_params(params))
    if p["KERNEL"] == 1:
        return "e"
    if -(-n // (p["BLOCKSIZE"] * p["WORKSIZE_N"])) == 1:
        return "a" if p["WORKSIZE_M"] == 1 else "c"
    if p["KERNEL"] == 2:
        return "w"
    return "b" if p["WORKSIZE_M"] == 1 else "d"


def cell_designs(ok: pd.DataFrame) -> np.ndarray:
    """Each mesh cell's design (a CLASSES key; "" where not measured): the one most of its 3 x 3 shapes
    run, as the run configured them."""
    rows = _gemv(ok, TUNED).drop_duplicates(["m", "n"], keep="last").set_index(["m", "n"]).params
    out = np.full((MESH_CELLS, MESH_CELLS), "", dtype=object)
    for i in range(MESH_CELLS):
        for j in range(MESH_CELLS):
            keys = [(p.m, p.n) for p in cell_points(i, j)]
            if all(k in rows.index for k in keys):
                out[i, j] = pd.Series([shape_design(m, n, rows[(m, n)]) for m, n in keys]).mode().iloc[0]
    return out


def _centre(k: int) -> float:
    """The geometric centre of mesh row or column k (rows or columns)."""
    return MESH_MAX ** ((k + 0.5) / MESH_CELLS)


def _share_verdict(share: float) -> str:
    return "yes" if share >= HOLDS else "partly" if share >= PARTLY else "no"


def _cells(designs: np.ndarray, keep) -> list[tuple[int, int]]:
    """The measured cells whose centre (m, n) passes keep(m, n)."""
    return [(i, j) for (i, j), d in np.ndenumerate(designs) if d and keep(_centre(i), _centre(j))]


def target_design(m: float, n: float, line: int) -> str:
    """The kernel of Fig. 1 left meant for a shape, from the paper's text: 2e under ~50 rows (3.4), 2c
    above the occupancy line (3.3), 2a for skinny A (n < 100, 3.1), 2b elsewhere (3.2)."""
    if m < PAPER["columns_rows"]:
        return "e"
    if m >= line:
        return "c"
    return "a" if n < PAPER["skinny_n"] else "b"


def claims_kernels(designs: np.ndarray, line: int) -> list[Verdict]:
    """Section 3 and Fig. 1 right: where each of the four kernels is best (the cells' designs)."""
    cells = _cells(designs, lambda m, n: True)
    fits = {"a": {"a"}, "b": {"b", "d", "w"}, "c": {"c", "d"}, "e": {"e"}}  # d has both 2b and 2c in it
    match = np.mean([designs[c] in fits[target_design(_centre(c[0]), _centre(c[1]), line)] for c in cells])
    counts = ", ".join(f"{k} {int((designs == k).sum())}" for k in CLASSES)
    a = [c for c in cells if designs[c] == "a"]
    skinny_a = np.mean([_centre(j) < PAPER["skinny_n"] for _, j in a]) if a else float("nan")
    region = _cells(designs, lambda m, n: PAPER["columns_rows"] <= m < line and n < PAPER["skinny_n"])
    won_a = np.mean([designs[c] == "a" for c in region]) if region else float("nan")
    grid = _cells(designs, lambda m, n: PAPER["columns_rows"] <= m < line and n > PAPER["skinny_n"])
    won_grid = np.mean([designs[c] in GRID_LEVEL for c in grid]) if grid else float("nan")
    above = _cells(designs, lambda m, n: m >= line)
    one_col = np.mean([designs[c] in {"a", "c"} for c in above]) if above else float("nan")
    return [
        Verdict("Fig. 1 right: each kernel is best about its target region (Fig. 1 left)", "\"corresponds reasonably "
                "well\" (4.1)", _share_verdict(match), f"{100 * match:.0f} % of {len(cells)} cells won by their region's "
                f"kernel (regions from the text: 2e under {PAPER['columns_rows']} rows, 2c above the line, 2a at n < "
                f"{PAPER['skinny_n']}, 2b elsewhere; 2d counts for 2b and 2c, ours for 2b); cells per design: {counts}"),
        Verdict("One thread per row is for tall and skinny A only (3.1)", "its cells have n < 100",
                _share_verdict(skinny_a), f"{len(a)} cells won by 2a; {100 * skinny_a:.0f} % of them have n < 100"),
        Verdict("Skinny A (n < 100) below the line: one thread per row is best despite low occupancy (3.1)",
                "2a best there", _share_verdict(won_a), f"2a wins {100 * won_a:.0f} % of the {len(region)} cells with "
                f"50 <= m < {line} and n < 100 (the rest: 2c, several rows a thread)"),
        Verdict("Rule of thumb: below the line and n > 100, grid-level parallelism outweighs the atomics' stalls (3.2)",
                "several threads per row (a 2D grid) best there", _share_verdict(won_grid),
                f"{100 * won_grid:.0f} % of the {len(grid)} cells with 50 <= m < {line} and n > 100 are won by a design "
                "with several columns of blocks (2b, 2d or ours)"),
        Verdict("Above the occupancy line more threads per row stop paying (3.3)", "one column of blocks above 21504 rows",
                _share_verdict(one_col), f"{100 * one_col:.0f} % of the {len(above)} cells above {line} rows run one "
                "column of blocks (2a or 2c)"),
    ]


def _best_by(tuning: pd.DataFrame, cells: set[str], key) -> pd.DataFrame:
    """The best tuning GFLOP/s per cell (rows) and value of key(params) (columns), over ok and pruned rows."""
    rows = tuning[tuning.status.isin(["ok", "pruned"]) & tuning.size_class.isin(cells)]
    rows = rows.assign(key=[key(dict(parse_params(p))) for p in rows.params])
    return rows.groupby(["size_class", "key"]).gflops.max().unstack()


def claims_tuned_designs(tuning: pd.DataFrame | None, designs: np.ndarray, line: int) -> list[Verdict]:
    """3.3 and 3.4 from the tuning rows: several rows a thread for very tall A, threads along columns for
    short A, and where the columns kernel wins."""
    short_e = [c for c in _cells(designs, lambda m, n: n > 4 * m) if designs[c] == "e"]
    tops = pd.Series([_centre(i) for i, _ in short_e]).groupby([j for _, j in short_e]).max() if short_e else pd.Series()
    top = float(tops.median()) if len(tops) else float("nan")
    lo, hi = PAPER["columns_rows"] / 2, PAPER["columns_rows"] * 2
    out = [Verdict("Several threads, several columns is best for wide A under ~50 rows (3.4)", "2e best below ~50 rows",
                   "yes" if lo <= top <= hi else "partly" if lo / 2 <= top <= hi * 2 else "no",
                   f"the highest wide cell (n > 4 m) that 2e wins is at m = {top:.0f} (median over the {len(tops)} columns "
                   f"where it wins; 'yes' within {lo:.0f} to {hi:.0f})")]
    if tuning is None:
        return out + [Verdict(f, "", "not checked", "no tuning file") for f in
                      ("Very tall A: several rows a thread pays (3.3)", "Short A: threads along columns pay (3.4)")]
    tall = {cell_name(i, j) for i, j in _cells(designs, lambda m, n: m >= 1e5)}
    wm = _best_by(tuning[tuning.params.str.contains("KERNEL=0")], tall, lambda p: p["WORKSIZE_M"] > 1)
    gain = (wm[True] / wm[False]).dropna() if {True, False} <= set(wm) else pd.Series(dtype=float)
    short = {cell_name(i, j) for i, j in _cells(designs, lambda m, n: m < 32)}
    col = _best_by(tuning, short, lambda p: p["KERNEL"] == 1)
    cgain = (col[True] / col[False]).dropna() if {True, False} <= set(col) else pd.Series(dtype=float)
    return out + [
        Verdict("Very tall A (hundreds of thousands of rows): several rows a thread is a major advantage (3.3)",
                "2c well ahead of 2a", _share_verdict(float((gain > 1).mean())) if len(gain) else "not checked",
                f"in the {len(gain)} tuned cells with m >= 1e5 the best versatile configuration with WORKSIZE_M > 1 beats "
                f"the best with WORKSIZE_M = 1 in {100 * (gain > 1).mean():.0f} % (median {gain.median():.2f} x)"),
        Verdict("A shorter than BLOCKSIZE leaves threads idle; threads along the columns avoid it (3.4)",
                "2e best for very wide, fat A", _share_verdict(float((cgain > 1).mean())) if len(cgain) else "not checked",
                f"in the {len(cgain)} tuned cells with m < 32 the best 2e configuration beats the best of the other designs "
                f"in {100 * (cgain > 1).mean():.0f} % (median {cgain.median():.2f} x)"),
    ]


def _adjacent_agreement(values: np.ndarray, designs: np.ndarray) -> tuple[float, float]:
    """Of neighbouring cells with the same design, the share with the same parameter value, and the share
    chance gives (the sum over the design's values of their squared frequencies, weighted by pairs)."""
    same, pairs, chance = 0, 0, 0.0
    for (i, j), d in np.ndenumerate(designs):
        for a, b in ((i + 1, j), (i, j + 1)):
            if a < MESH_CELLS and b < MESH_CELLS and d and designs[a, b] == d:
                pairs += 1
                same += values[i, j] == values[a, b]
                freq = pd.Series(values[designs == d]).value_counts(normalize=True)
                chance += float((freq ** 2).sum())
    return (same / pairs, chance / pairs) if pairs else (float("nan"), float("nan"))


def claims_parameters(ok: pd.DataFrame, designs: np.ndarray) -> list[Verdict]:
    """Fig. 3 (4.1): the best parameters differ between kernels, with no clear pattern otherwise."""
    params = mesh_params(ok)
    held = designs != ""
    labels = designs[held]
    between, pattern = [], []
    for name in PARAMS:
        values = params[name].to_numpy()
        v = pd.Series(values[held])
        total = ((v - v.mean()) ** 2).sum()
        within = ((v - v.groupby(labels).transform("mean")) ** 2).sum()
        between.append(1 - within / total if total else float("nan"))
        pattern.append(_adjacent_agreement(values, designs))
    differ = sum(b >= 0.25 for b in between)
    lift = [s - c for s, c in pattern]
    return [
        Verdict("Fig. 3: the best parameters differ distinctively between kernels", "(4.1)",
                "yes" if differ == 3 else "partly" if differ else "no",
                "the cell's design explains " + ", ".join(f"{100 * b:.0f} % of {n}'s variance" for n, b in zip(PARAMS, between))
                + " ('yes' when each is >= 25 %)"),
        Verdict("Fig. 3: no clear pattern otherwise", "(4.1)",
                "yes" if max(lift) < 0.2 else "partly" if min(lift) < 0.2 else "no",
                "neighbouring cells of one design share the value in " + ", ".join(
                    f"{100 * s:.0f} % ({n}; chance {100 * c:.0f} %)" for n, (s, c) in zip(PARAMS, pattern))
                + " ('yes' when every parameter is within 20 points of chance: a map with no pattern)"),
    ]


def claims_tuning(tuning: pd.DataFrame | None, tuning_meta: dict, cells: set[str]) -> list[Verdict]:
    """4.1: the tuning space, the mesh, the tuner's time, and how much a single configuration loses."""
    if tuning is None:
        return [Verdict("Auto-tuning is needed: no single configuration serves the mesh (4.1)", "", "not checked",
                        "no tuning file")]
    wall = sum(float(r.get("wall_s") or 0) for r in tuning_meta.get("invocations") or [])
    rows = tuning[tuning.status.isin(["ok", "pruned"])]
    speed = rows.pivot_table(index="params", columns="size_class", values="gflops", aggfunc="max")
    loss = np.log(speed / speed.max()).mean(axis=1, skipna=False).dropna()
    fixed = float(np.exp(loss.max())) if len(loss) else float("nan")
    tuned = len(set(tuning.size_class))
    return [
        Verdict("The space: 3 implementations x 8 BLOCKSIZE x 8 WORKSIZE_m x 8 WORKSIZE_n = 1536 kernels (4.1)",
                "1536", "yes" if tuning.params.nunique() == PAPER["kernels"] else "no",
                f"{tuning.params.nunique()} configurations; the third implementation is ours (KERNEL 2, wide without "
                "atomics): the paper does not say what its third is beside 2d and 2e"),
        Verdict("A 24 x 24 logarithmic mesh, each cell the mean of a 3 x 3 grid (4.1, Fig. 1 middle)", "576 cells",
                "partly" if tuned < MESH_CELLS ** 2 else "yes",
                f"{tuned} of {MESH_CELLS ** 2} cells tuned and {len(cells)} run: the mesh is capped at 1 GiB matrices "
                "(the paper's cap is its 3 GB card)"),
        Verdict("The tuner runs in 1.8 hours (4.1)", f"{PAPER['tuning_hours']} h on a C2050",
                "yes" if 0 < wall <= PAPER["tuning_hours"] * 3600 else "no",
                f"{wall:.0f} s ({wall / 3600:.2f} h) for {tuned} cells, with pruning (configurations under half the "
                "best's speed at a cell's pivot shape are not timed at its other shapes); 'yes': no longer than the paper's"),
        Verdict("The results are a strong advocacy for auto-tuning (4.1)", "no one configuration serves all cells",
                "yes" if fixed < 0.8 else "partly" if fixed < 0.95 else "no",
                f"the best single configuration over the {len(loss)} measured in every tuned cell reaches a geometric "
                f"mean of {100 * fixed:.0f} % of each cell's best ('yes' under 80 %)"),
    ]


def _spread(fam: pd.DataFrame, variant: str) -> float:
    """The median over N (footprints >= 1 MiB) of the fastest family's GFLOP/s over the slowest's."""
    big = fam[fam.footprint >= LIBRARY_CELL_BYTES]
    by_n = big.groupby("N")[f"gflops_{variant}"]
    return float((by_n.max() / by_n.min()).median())


def claims_families(fam: pd.DataFrame, ok: pd.DataFrame) -> list[Verdict]:
    """Fig. 4 (4.2) and the conclusion: shape independence, the tall drops, the rise with size, the library."""
    tuned, lib = _spread(fam, TUNED), _spread(fam, LIBRARY)
    rows = _gemv(ok, TUNED).drop_duplicates(["m", "n"], keep="last").set_index(["m", "n"]).params
    drops, rises = {}, []
    for family, f in fam.groupby("family"):
        g = f.sort_values("N")[f"gflops_{TUNED}"].to_numpy()
        drops[family] = [int(n) for n, a, b in zip(f.sort_values("N").N[1:], g[:-1], g[1:]) if b < 0.97 * a]
        below = g < 0.9 * g.max()  # steps before the curve reaches 90 % of its top
        rises += [b > a for a, b, low in zip(g[:-1], g[1:], below[:-1]) if low]
    tall_drops = [(100 * n, n) for n in drops.get("tall", [])]
    designs = [shape_design(m, n, rows[(m, n)]) for m, n in tall_drops if (m, n) in rows.index]
    big = fam[fam.footprint >= BIG]
    pct = (100 * big[f"gbytes_per_s_{LIBRARY}"] / big.copy_gbytes_per_s).groupby(big.family).median()
    rect = min(pct.get("tall", np.nan), pct.get("wide", np.nan)) / pct.get("square", np.nan)
    return [
        Verdict("Fig. 4: the tuned kernel's curves behave the same whatever the shape (4.2)", "tall, square and wide alike",
                "yes" if tuned <= 1.25 else "partly" if tuned < lib else "no",
                f"fastest family / slowest at each N (footprints >= 1 MiB, median): {tuned:.2f} ('yes' <= 1.25)"),
        Verdict("Fig. 4 left: the library's curves depend on the shape, a significant improvement by the tuned kernel (4.2)",
                "CUBLAS 4.0's tall, square and wide curves apart", "yes" if lib > 1.25 and lib > tuned else "partly"
                if lib > tuned else "no", f"cuBLAS's fastest family / slowest: {lib:.2f}, the tuned kernel's {tuned:.2f}"),
        Verdict("Fig. 4: drops in the tall curve, from the coarse mesh, where several rows a thread is best (4.2)",
                "drops in the tall curve only", "yes" if drops.get("tall") and all(d == "c" for d in designs) else
                "partly" if drops.get("tall") else "no", "drops of > 3 % from one N to the next: " + "; ".join(
                    f"{k} at N = {', '.join(map(str, v)) or 'none'}" for k, v in drops.items())
                + f"; the tall drops run {', '.join(CLASSES[d].split(' (')[0] for d in designs) or 'nothing'}"),
        Verdict("Performance rises with the size of A until the GPU is full (5)", "a rise, then a plateau",
                _share_verdict(float(np.mean(rises))) if rises else "not checked",
                f"{100 * np.mean(rises):.0f} % of the {len(rises)} steps of N before a family's curve reaches 90 % of its top "
                "rise"),
        Verdict("The libraries under-use the GPU for rectangular A (1, 5: they reach its potential for tall A only)",
                "rectangular (tall, wide) well below square", "yes" if rect < 0.8 else "partly" if rect < 0.95 else "no",
                "cuBLAS's median % of the copy at footprints >= 256 MiB: " + ", ".join(f"{k} {v:.0f} %" for k, v in
                                                                                      pct.items())
                + f"; the worse rectangular family over square: {rect:.2f}"),
    ]


def _dips(values: np.ndarray) -> int:
    """Cells under half the median of their anti-diagonal (same m n): the map's 'features'."""
    out = 0
    for d in range(2 * MESH_CELLS - 1):
        cells = [values[i, d - i] for i in range(MESH_CELLS) if 0 <= d - i < MESH_CELLS and not np.isnan(values[i, d - i])]
        out += sum(v < 0.5 * np.median(cells) for v in cells)
    return int(out)


def _mirror(values: np.ndarray) -> np.ndarray:
    """log2 of each cell over its mirror (m and n swapped), for the cells whose mirror was measured."""
    ratio = np.log2(values / values.T)
    return ratio[~np.isnan(ratio)]


def claims_mesh(ok: pd.DataFrame) -> list[Verdict]:
    """Fig. 5 (4.3): the features of the library's map, the tuned map's symmetry and its wide side."""
    tuned, lib = (mesh_values(ok, v, "gflops_mean").to_numpy() for v in (TUNED, LIBRARY))
    dt, dl = _dips(tuned), _dips(lib)
    sym_t, sym_l = (float(np.median(np.abs(_mirror(v)))) for v in (tuned, lib))
    wide = [tuned[i, j] / tuned[j, i] for i in range(MESH_CELLS) for j in range(i + 8, MESH_CELLS)
            if not np.isnan(tuned[i, j] / tuned[j, i])]
    w = float(np.median(wide)) if wide else float("nan")
    return [
        Verdict("Fig. 5: the libraries are not auto-tuned, hence features (dips) in their maps (4.3)", "features in CUBLAS's map",
                "yes" if dl > max(dt, 0) * 2 else "partly" if dl > dt else "no",
                f"cells under half their anti-diagonal's median GFLOP/s: cuBLAS {dl}, the tuned kernel {dt}"),
        Verdict("Fig. 5: the tuned kernel's map is almost symmetric in m and n (4.3, 'skew-symmetric')",
                "close to optimal shape dependence", "yes" if sym_t <= 0.25 else "partly" if sym_t < sym_l else "no",
                f"median |log2| of a cell over its mirror (m and n swapped): tuned {sym_t:.2f} (x {2 ** sym_t:.2f}), cuBLAS "
                f"{sym_l:.2f} ('yes' <= 0.25)"),
        Verdict("Fig. 5: very wide and fat A are slower than comparable tall and skinny A (4.3)", "wide below tall",
                "yes" if w < 0.9 else "partly" if w < 1 else "no",
                f"tuned GFLOP/s of a wide cell (n >= 2^6.7 m) over its mirrored tall cell: median {w:.2f} over "
                f"{len(wide)} pairs"),
    ]


NOT_HERE = "not testable here"
PROFILE = ("mmbench run -v gemv_rows --params WORKSIZE_M=1/4 -s 1000003x64 -o rows/gemv-rows.csv beside the run, then "
           "mmbench profile -v gemv_rows --results rows/gemv-rows.csv --points 1000003x64")
MAGMA = ("MAGMA is not run: comparing needs MAGMA built for this GPU, a `magma_gemv` baseline beside `cublas_gemv` in "
         "mmbench/ops/gemv.py (magmablas_sgemv on the same buffers) and the config's mesh sweep run with it")


def claims_context(ok: pd.DataFrame, meta: dict) -> list[Verdict]:
    """The paper's setting beside ours, the cited results as fractions of their bandwidth bound, and the
    claims this run cannot test, each with what would test it."""
    gpu = meta.get("gpu") or {}
    copy = copy_bandwidth(ok)
    peak = float(_gemv(ok, TUNED).gflops_mean.max())
    ours = f"ours: the tuned kernel's best {peak:.0f} GFLOP/s, {100 * peak / (copy / 2):.0f} % of the copy's bound ({copy:.0f} GB/s / 2)"
    bound = {k: 100 * PAPER[k][0] / (PAPER[k][1] / 2) for k in ("fujimoto", "magma")}
    setting = "setting"
    return [
        Verdict("Fermi: up to 16 SMs; full occupancy of a one-thread-per-row kernel needs 14 x 1536 = 21504 rows on the "
                "C2050 (1, 3.1)", "21504 rows", setting,
                f"{gpu.get('name')}: {gpu.get('sm_count')} SMs x {gpu.get('max_threads_per_sm')} resident threads = "
                f"{occupancy_rows(meta)} rows, the dashed line of Figs. 1 and 5"),
        Verdict("8 resident blocks an SM: 112 blocks fill the C2050 (3.2)", "112 blocks", setting,
                f"sm_90 holds 32 blocks an SM (CUDA's occupancy table): {32 * (gpu.get('sm_count') or 0)} blocks"),
        Verdict("The C2050: 448 cores, 1.03 TFLOP/s ('GFlops' in the paper), 144 GB/s with ECC; transfers not timed; "
                "matrices not padded (4, 4.3)", "144 GB/s", setting,
                f"the device copy measures {copy:.0f} GB/s (bytes read and written); kernel time only, cold L2; no "
                "padding (every mesh shape as it is)"),
        Verdict("Fujimoto 2008: 36 GFLOP/s on an 8800GTX of 86 GB/s (2)", f"{bound['fujimoto']:.0f} % of its bound",
                NOT_HERE, f"another GPU and kernel: testing needs an 8800GTX and Fujimoto's kernel; {ours}"),
        Verdict("MAGMA 2009: 66 GFLOP/s for square A on a 141 GB/s card, well above CUBLAS 2.3 (2)",
                f"{bound['magma']:.0f} % of its bound", NOT_HERE, f"another GPU and library; {MAGMA}"),
        Verdict("MAGMA's transposed kernel: 43 GFLOP/s, more than twice CUBLAS 2.3 (2)", "43 GFLOP/s", NOT_HERE,
                "y = A^T x is not run: it needs a transposed GEMV (an op parameter and cuBLAS with CUBLAS_OP_T) and MAGMA"),
        Verdict("A shared-memory reduction gains nothing significant over atomicAdd on the C2050 (3.4)", "C2050 only",
                NOT_HERE, "our 2e kernel already adds a row's partial sums in shared memory (atomicAdd on shared) and "
                "once a block into y; testing needs a 2e variant with one global atomicAdd a thread, tuned beside it"),
        Verdict("MAGMA 1.0 looks like a one-thread-per-row kernel (4.3)", "inferred from Fig. 5", NOT_HERE, MAGMA),
    ]


# -- what the profiles answer (issue 32) -------------------------------------------------------------------
ROWS_GAIN = 1.1  # WORKSIZE_M = 4 at least 10 % faster than 1: a gain ('no' under it)
ROWS_MAINLY = 0.5  # 'mainly': the shared loads are at least half the warp instructions the rows saved


def rows_numbers(df: pd.DataFrame, profile: pd.DataFrame | None) -> dict | None:
    """gemv_rows at WORKSIZE_M = 1 and 4 (the rows companion): the time gain, each one's shared-load
    instructions and shared bytes per row of A, the warp instructions saved, and shared memory's share
    of its peak at WORKSIZE_M = 1; None where the run or its profile lacks either."""
    from ..hierarchy import levels

    ok = df[(df.status == "ok") & (df.variant == "gemv_rows")]
    if profile is None or ok.empty:
        return None
    prof = profile[profile.variant == "gemv_rows"].copy()
    prof["wm"] = [dict(parse_params(p)).get("WORKSIZE_M") for p in prof.params]
    ok = ok.assign(wm=[dict(parse_params(p)).get("WORKSIZE_M") for p in ok.params])
    if not ({1, 4} <= set(prof.wm) and {1, 4} <= set(ok.wm)):
        return None
    one, four = (prof[prof.wm == w].iloc[0] for w in (1, 4))
    shared_pct = levels(prof[prof.wm == 1]).shared_pct.iloc[0]
    return {"m": int(one.m), "n": int(one.n), "params": (one.params, four.params),
            "time_ms": tuple(float(ok[ok.wm == w].time_ms_mean.iloc[0]) for w in (1, 4)),
            "gain": float(ok[ok.wm == 1].time_ms_mean.iloc[0] / ok[ok.wm == 4].time_ms_mean.iloc[0]),
            "ld_per_row": (one.shared_ld_inst / one.m, four.shared_ld_inst / four.m),
            "bytes_per_row": (one.shared_bytes / one.m, four.shared_bytes / four.m),
            "warp_inst": (float(one.warp_inst), float(four.warp_inst)),
            "saved_share": float((one.shared_ld_inst - four.shared_ld_inst) / (one.warp_inst - four.warp_inst)),
            "shared_pct": float(shared_pct), "dram_gbs": tuple(float((r.dram_bytes_read + r.dram_bytes_write) / r.gpu_time_ns)
                                                               for r in (one, four))}


def rows_verdict(gain: float, fewer_loads: bool, saved_share: float) -> str:
    """3.3's mechanism: 'no' without a gain or without fewer shared reads; 'yes' when the shared loads
    are most of the instructions saved; 'partly' when the gain comes with fewer shared reads that are
    only a small part of what the extra rows saved."""
    if gain < ROWS_GAIN or not fewer_loads:
        return "no"
    return "yes" if saved_share >= ROWS_MAINLY else "partly"


def claim_rows(numbers: dict | None) -> Verdict:
    finding = "Several rows a thread gains mainly by fewer shared-memory reads of x (3.3)"
    if numbers is None:
        return Verdict(finding, "mechanism", NOT_HERE, f"needs gemv_rows at WORKSIZE_M = 1 and 4 and its profile: {PROFILE}")
    n = numbers
    ld, by = n["ld_per_row"], n["bytes_per_row"]
    holds = rows_verdict(n["gain"], ld[1] < ld[0], n["saved_share"])
    return Verdict(finding, "mechanism", holds,
                   f"gemv_rows at {n['m']} x {n['n']} (BLOCKSIZE {dict(parse_params(n['params'][0])).get('BLOCKSIZE')}, "
                   f"the rows companion): WORKSIZE_M = 4 takes "
                   f"{n['time_ms'][1] * 1e3:.0f} us against {n['time_ms'][0] * 1e3:.0f} us at 1 ({n['gain']:.2f} x; a gain "
                   f"from {ROWS_GAIN:g} x), with {ld[0] / ld[1]:.0f} x fewer shared-load instructions a row ({ld[0]:.3f} to "
                   f"{ld[1]:.3f}) and {by[0] / by[1]:.0f} x fewer shared bytes ({by[0]:.1f} to {by[1]:.1f} B a row, loads and "
                   f"stores: the loads are wider as well as fewer). But shared memory ran at {n['shared_pct']:.1f} % of its peak "
                   f"at WORKSIZE_M = 1, and the shared loads are {100 * n['saved_share']:.0f} % of the "
                   f"{(n['warp_inst'][0] - n['warp_inst'][1]) / 1e6:.1f} M warp instructions the rows saved (all "
                   f"{n['warp_inst'][0] / n['warp_inst'][1]:.1f} x fewer; 'yes' from {100 * ROWS_MAINLY:.0f} %): the gain "
                   f"comes with fewer shared reads, but the profile points rather to fewer instructions a row overall; "
                   f"DRAM {n['dram_gbs'][0]:.0f} to {n['dram_gbs'][1]:.0f} GB/s for the same bytes")


SPLIT_K = ("splitkreduce", "reduce")  # a second kernel that adds partial sums: columns split over blocks


def cublas_launches(profile: pd.DataFrame | None) -> pd.DataFrame:
    """The kernels cuBLAS launched at each profiled shape (Nsight Compute's `kernels` column): the
    shape's family (tall, square or wide), its kernels' short names, and whether it splits the columns
    (a reduction kernel after the GEMV's)."""
    if profile is None or "kernels" not in profile:
        return pd.DataFrame(columns=["family", "m", "n", "names", "split"])
    out = []
    for r in profile[profile.variant == LIBRARY].itertuples():
        names = [_short_kernel(k) for k in str(r.kernels).split(";")]
        out.append({"family": family_of(r.m, r.n) or "other", "m": int(r.m), "n": int(r.n), "names": names,
                    "split": any(w in name.lower() for name in names for w in SPLIT_K)})
    return pd.DataFrame(out, columns=["family", "m", "n", "names", "split"])


def family_of(m: int, n: int) -> str:
    """The family (tall, square, wide) whose proportions a shape has; "" for none."""
    return next((f for f, (fm, fn) in FAMILIES.items() if m * fn == n * fm), "")


def _short_kernel(name: str) -> str:
    """A demangled kernel name without its return type, namespaces' template arguments and parameters;
    cuBLAS's GEMV template keeps its integer arguments (which instance ran)."""
    import re

    numbers = re.search(r"float, ((?:\d+, )+\d+), cublasGemvParams", name)
    bare = name
    while re.search(r"<[^<>]*>", bare):
        bare = re.sub(r"<[^<>]*>", "", bare)
    bare = bare.split("(")[0].split()[-1]
    return f"{bare}<..., {numbers.group(1)}, cublasGemvParamsEx<...>>" if numbers else bare


def claim_cublas(launches: pd.DataFrame, meta: dict) -> Verdict:
    """4.3: is today's cuBLAS a thread-per-row kernel? A shape where it splits the columns over blocks and
    reduces says no; one GEMV kernel alone cannot say (the profile has no grid sizes)."""
    finding, paper = "CUBLAS 4.0 looks like a one-thread-per-row kernel (4.3)", "inferred from Fig. 5"
    version = _cublas_version(meta)
    if launches.empty:
        return Verdict(finding, paper, NOT_HERE, "needs a profile of cublas_gemv at tall, square and wide shapes "
                       "(mmbench profile -v cublas_gemv --points tall:1448,square:1448,wide:1448): its kernels' names")
    by = {}
    for r in launches.itertuples():
        by.setdefault((" then ".join(f"`{k}`" for k in r.names), r.split), []).append(f"{r.family} {r.m} x {r.n}")
    said = "; ".join(f"{', '.join(shapes)}: {names}" for (names, _), shapes in by.items())
    split = launches[launches.split]
    whole = launches[~launches.split]
    holds = "no" if len(split) else NOT_HERE
    return Verdict(finding, paper, holds,
                   f"today's {version} (not 4.0) launches, by Nsight Compute's names: {said}. "
                   + (f"At the {', '.join(sorted(set(split.family)))} shapes it splits each row's columns over blocks "
                      "and adds the parts in a second kernel (split-K): several threads a row, not one. " if len(split) else "")
                   + (f"At the {', '.join(sorted(set(whole.family)))} shapes one GEMV kernel runs, whose name does not "
                      "say how threads map to rows, and the profile has no grid sizes (Nsight Compute's "
                      "launch__grid_size and launch__block_size would tell). " if len(whole) else "")
                   + "CUBLAS 4.0 itself is not run")


def _cublas_version(meta: dict) -> str:
    """cuBLAS's version as the run recorded it (CUBLAS_VERSION: major 10000 + minor 100 + patch)."""
    v = (meta.get(LIBRARY) or {}).get("version")
    return f"cuBLAS {int(v) // 10000}.{int(v) // 100 % 100}" if v else "cuBLAS"


def claims_abstract(target_rows: list[list[str]], verdicts_so_far: list[Verdict]) -> list[Verdict]:
    """The abstract's two claims, from the targets and the findings they rest on."""
    cells, geo = target_rows[1], target_rows[2]
    grid = [v for v in verdicts_so_far if v.finding.startswith("Rule of thumb")]
    return [
        Verdict("Abstract: high GEMV performance is a matter of using the GPU's fine-grained parallelism fully",
                "grid-level parallelism where rows are few", grid[0].holds if grid else "not checked",
                "as the rule of thumb below (3.2)"),
        Verdict("Abstract: auto-tuning makes the kernel perform well for all shapes and sizes",
                "good at every shape", "yes" if cells[2] == "yes" and geo[2] == "yes" else "partly",
                f"tuned >= cuBLAS in {cells[1]} of the cells >= 1 MiB; geometric mean {geo[1]} cuBLAS over the cells"),
    ]


def claims(ok: pd.DataFrame, meta: dict, tuning: pd.DataFrame | None, tuning_meta: dict,
           shapes: set[tuple[int, int]] | None, profile: pd.DataFrame | None = None, rows=None) -> list[Verdict]:
    """Every claim of the paper, in its order: the abstract, sections 1 to 5, the figures; `profile` is
    the run's Nsight Compute profile, `rows` its gemv_rows companion (studies.common.Companion)."""
    designs = cell_designs(ok)
    line = occupancy_rows(meta) or PAPER["occupancy_rows"]
    fam = families(ok, shapes)
    body = [*claims_kernels(designs, line), *claims_tuned_designs(tuning, designs, line),
            *claims_tuning(tuning, tuning_meta, run_cells(ok)), *verdicts(ok, meta, tuning),
            *claims_parameters(ok, designs), *claims_families(fam, ok), *claims_mesh(ok)]
    # the profiles' answers beside the claims they explain: 3.3's mechanism, 4.3's reading of the library
    _after(body, "Very tall A", claim_rows(rows_numbers(rows.df, rows.profile) if rows else None))
    _after(body, "The library performs well", claim_cublas(cublas_launches(profile), meta))
    return [*claims_abstract(targets(ok, shapes), body), *body, *claims_context(ok, meta)]


def _after(rows: list[Verdict], start: str, verdict: Verdict) -> None:
    """Put a verdict after the one whose finding begins with `start` (at the end where none does)."""
    at = next((i + 1 for i, v in enumerate(rows) if v.finding.startswith(start)), len(rows))
    rows.insert(at, verdict)


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


def mesh_cap_mib(meta: dict) -> int | None:
    """The mesh's cap in MiB from the run's config (its `mesh:MIB` sweep); None where it names none."""
    from ..config import ConfigError, load_config

    try:
        sweeps = load_config(meta["config"]).sweeps if meta.get("config") else ()
    except (ConfigError, OSError):
        return None
    caps = [item.partition(":")[2] for sw in sweeps for item in sw.sizes.split(",") if item.startswith("mesh")]
    return int(caps[0] or MESH_CAP_MIB) if caps else None


def fig_best_kernel(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    designs = cell_designs(ok_rows(df))
    if not designs.any():
        raise ResultsError("Fig. 1 needs gemv_tuned rows at the mesh's shapes")
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

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


def hierarchy_shapes(profile: pd.DataFrame | None, meta: dict) -> tuple[list[tuple], list[tuple]]:
    """The profiled GEMV shapes past the L2 (every one) and the one that fits in it that the report
    and figure show (the square one where there is one, else the largest), as (m, n, k)."""
    from ..hierarchy import levels, working_set_mb

    table = levels(profile)
    table = table[table.variant.isin([TUNED, LIBRARY])]
    l2 = (meta.get("gpu") or {}).get("l2_bytes") or float("inf")
    shapes = sorted({(int(m), int(n), int(k)) for m, n, k in zip(table.m, table.n, table.k)}, key=lambda s: (s[0] * s[1], s))
    past = [sh for sh in shapes if working_set_mb("gemv", *sh) * 1e6 > l2]
    fits = [sh for sh in shapes if sh not in past]
    inside = [sh for sh in fits if sh[0] == sh[1]] or fits[-1:]
    return past, inside[-1:]


def shown_profile(profile: pd.DataFrame | None, meta: dict) -> tuple[pd.DataFrame, set[tuple[int, int]]]:
    """The profile's rows at the shapes the figure shows (hierarchy_shapes), and those shapes as (m, n):
    the figure's roofs are their medians, and the report quotes the same."""
    past, inside = hierarchy_shapes(profile, meta)
    shapes = {(m, n) for m, n, _ in inside + past}
    return profile[[(int(m), int(n)) in shapes for m, n in zip(profile.m, profile.n)]], shapes


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    """The GEMV kernels' hierarchical roofline: the shape that fits in the L2, then those past it."""
    from .. import hierarchy

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
ALT_TEXT = {"fig1-best-kernel": "best kernel per cell", "fig3-best-params": "best parameters per cell",
            "fig4-families": "GFLOP/s against footprint", "fig5-mesh": "heatmaps over the mesh",
            "fig6-hierarchy": "hierarchical roofline of the GEMV kernels"}


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    from .common import companion

    ok = ok_rows(df)
    tuning, tuning_meta = tuning_rows(meta, beside=results_path.parent)
    shapes = family_shapes(meta)
    rows = companion(results_path, "rows", "gemv-rows")
    profile_meta = _profile_meta(results_path)
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
        "## Every claim of the paper, checked",
        "",
        *_claim_lines(claims(ok, meta, tuning, tuning_meta, shapes, profile, rows)),
        "",
        "## Where we depart from the paper",
        "",
        *departures(meta, profile_meta, rows),
        "",
        "## Memory hierarchy (Nsight Compute)",
        "",
        *hierarchy_lines(profile, meta, profile_meta, "fig6-hierarchy" in figures),
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


def _claim_lines(rows: list[Verdict]) -> list[str]:
    """The claims' count by verdict, then their table."""
    counts = pd.Series([v.holds for v in rows]).value_counts()
    return [f"{len(rows)} claims, in the paper's order (abstract, sections 1 to 5, Figs. 1 to 5), then its setting and the "
            "claims this run cannot test: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + ". 'setting' rows set "
            "the paper's hardware beside ours; a threshold that decides a verdict is given with its numbers.", "",
            *verdict_table(rows)]


DEPARTURES = [  # those the run's settings do not change; departures() adds the rest
    "- **The third design is ours.** The paper's tuner picks among \"3 implementations\" without naming the third "
    "beside 2d and 2e; ours is KERNEL 2 (`wide_onepass` in kernels/common/gemv.cuh): with several columns of blocks, "
    "each writes its partial sums to a workspace and the last block of each row of blocks adds them in a fixed order, "
    "no atomics. It decides the atomics verdict (wide cells: the best design without atomics against the best with), "
    "and where it runs one column of blocks it is the same code as 2a or 2c, so Fig. 1 classes it so.",
    "- **Fig. 1 is classed by what each configuration runs**, not by the kernel the tuner picked: the versatile kernel "
    "(KERNEL 0) is 2a, 2b or 2c at the cell's shapes, or 2d, both at once (several rows a thread and several columns "
    "of blocks), which the paper's Fig. 1 does not class and which takes most of the cells the paper gives 2b.",
    "- **The mesh is capped at 1 GiB matrices** (`mesh:1024` in configs/sorensen2012.toml): 456 of the 576 cells; "
    "the grey cells of Fig. 1 were not run, the black ones would not fit the GPU. The paper's black cells are its "
    "3 GB card's. Every mesh verdict (Figs. 1, 3, 5, the targets) is over the 456 cells.",
    "- **MAGMA is not run**: Fig. 5 has no MAGMA panel and every library verdict is cuBLAS's ({cublas}, not 4.0). "
    "Comparing needs MAGMA built for sm_90, a `magma_gemv` baseline beside `cublas_gemv` in mmbench/ops/gemv.py "
    "calling magmablas_sgemv on the same buffers, and `mmbench run --config configs/sorensen2012.toml` with it in "
    "the mesh and families sweeps.",
    "- **Our kernels add to the paper's text** (kernels/gemv/, kernels/common/gemv.cuh): `__restrict__` on every "
    "pointer; `__launch_bounds__(BLOCKSIZE)`; `#pragma unroll 8` over a chunk's columns and a full unroll over a "
    "thread's WORKSIZE_M rows (fmaf, each row guarded rather than left by a break); 2e adds a row's partial sums in "
    "shared memory (atomicAdd on shared), then once a block into y, and falls back to a thread per row where "
    "m > BLOCKSIZE; early returns: rows past m in `reduce_parts`, and in `wide_onepass` a one-column grid and every "
    "block but a row's last. Where more than one column of blocks adds into y, the harness zeroes y inside the timed "
    "launch.",
    "- **The tuner**: brute force over the 1536 configurations, each the mean of one timed launch at each of the "
    "cell's shapes; configurations that spill registers are skipped, and those under half the best's speed at a "
    "cell's pivot shape are not timed at its other shapes (pruned). The paper searches exhaustively (4.1; its "
    "conclusion says heuristic).",
    "- **Timing**: cold L2 (emptied by a read), 3 warm-ups, then 10 timed runs; GFLOP/s from the mean time, as the "
    "paper's \"ten subsequent calls\", GB/s from the median. The occupancy line is this GPU's (132 x 2048 = "
    "270336 rows), not 21504.",
]


def departures(meta: dict, profile_meta: dict, rows) -> list[str]:
    """DEPARTURES with the library's version from the run, then the profiles' and the rows companion's
    settings where the run has them."""
    out = [line.replace("{cublas}", _cublas_version(meta).removeprefix("cuBLAS ")) for line in DEPARTURES]
    ncu = profile_meta.get("ncu") or {}
    if ncu:
        ours = (meta.get("software") or {}).get("kernel_sources") or {}
        theirs = (profile_meta.get("software") or {}).get("kernel_sources") or {}
        gemv = [k for k in theirs if k.startswith("gemv/") or k == "common/gemv.cuh"]
        same = all(ours.get(k) == theirs[k] for k in gemv) if ours and gemv else None
        out.append(
            f"- **Profiles** (Nsight Compute {ncu.get('version', '?').split(' (')[0].removeprefix('Version ')}, "
            f"{str(profile_meta.get('profiled_at', ''))[:10]}, commit `{str((profile_meta.get('git') or {}).get('commit'))[:7]}`): "
            f"each kernel launched once, caches flushed before it (`--cache-control {ncu.get('cache_control')}`), clocks "
            f"not locked (`--clock-control {ncu.get('clock_control')}`); times there are Nsight Compute's, not the run's "
            "events. The paper profiles nothing. "
            + ("The GEMV kernels' sources are the run's (same hashes)." if same else
               "The GEMV kernels' sources differ from the run's (their hashes)." if same is False else ""))
    if rows is not None:
        settings = rows.meta.get("settings") or {}
        out.append(
            f"- **The rows companion** (`rows/{rows.path.name}`, {str(rows.meta.get('started_at', ''))[:10]}): "
            f"`gemv_rows` (Fig. 2c alone, not the tuned kernel) at {' and '.join(f'`{p}`' for p in sorted(set(rows.df.params)))}, one shape "
            f"({', '.join(sorted({f'{m} x {n}' for m, n in zip(rows.df.m, rows.df.n)}))}), {settings.get('runs')} runs "
            f"after {settings.get('warmup')} warm-ups, {settings.get('cache')} L2, and its profile: the paper's 3.3 "
            "states the mechanism for very tall A in general; we test one very tall shape.")
    return out


def _profile_meta(results_path: Path) -> dict:
    """The profile's metadata beside a run (NAME.profile.meta.json), {} where there is none."""
    import json

    from ..results import sibling

    path = sibling(results_path, ".profile.meta.json")
    return json.loads(path.read_text()) if path.exists() else {}


def _level_block(profile: pd.DataFrame, shapes: list[tuple], head: str) -> list[str]:
    """A level table of the GEMV kernels at these shapes, a row a shape and kernel, under a head."""
    from .. import hierarchy

    cells = []
    for sh in shapes:
        for r in hierarchy.level_rows(profile, sh, variants=[TUNED, LIBRARY]):
            cells.append([f"{family_of(sh[0], sh[1])} {sh[0]} x {sh[1]}: {r[0]}", *r[1:]])
    return [head, "", *text_table(["shape: kernel", *hierarchy.LEVEL_COLUMNS[1:]], cells), ""]


def _span(rows: pd.DataFrame, column: str) -> str:
    lo, hi = rows[column].min(), rows[column].max()
    return f"{lo:.0f} %" if round(lo) == round(hi) else f"{lo:.0f} to {hi:.0f} %"


def _inside_lines(profile: pd.DataFrame, table: pd.DataFrame, inside: list[tuple], l2) -> list[str]:
    """The hierarchy section's part on the shapes whose operands would fit in the L2."""
    from .. import hierarchy

    small = table[[hierarchy.working_set_mb("gemv", m, n, k) * 1e6 <= (l2 or 0) for m, n, k in
                   zip(table.m, table.n, table.k)]]
    ws = hierarchy.working_set_mb("gemv", *inside[0])
    read = 100 * small.dram_bytes / [hierarchy.working_set_mb("gemv", m, n, k) * 1e6 for m, n, k in
                                     zip(small.m, small.n, small.k)]
    return [*_level_block(profile, inside, f"A shape that fits in the L2 (operands {ws:.1f} MB):"),
            f"At the {len(set(zip(small.m, small.n)))} shapes whose operands ({ws:.1f} MB) would fit in the L2, the "
            f"flushed caches send A to DRAM all the same (DRAM moved {read.min():.0f} to {read.max():.0f} % of the "
            f"operands' bytes), as in the run's cold-L2 timing. The kernels last {small.time_us.min():.0f} to "
            f"{small.time_us.max():.0f} us and reach {_span(small[small.variant == TUNED], 'dram_pct')} of DRAM's peak "
            f"(tuned), {_span(small[small.variant == LIBRARY], 'dram_pct')} (cuBLAS), L2 at most "
            f"{small.l2_pct.max():.0f} %: "
            + ("no level reaches half its roof, so no bandwidth limits them (a kernel this short does not fill the "
               "memory system)." if small[[f"{lv}_pct" for lv in hierarchy.LEVELS]].max().max() < 50 else
               f"the closest roof is {', '.join(sorted(set(small.bound)))}."), ""]


def hierarchy_lines(profile: pd.DataFrame | None, meta: dict, profile_meta: dict, drawn: bool) -> list[str]:
    """The report's memory-hierarchy section: what was profiled, the level tables past the L2 and in
    it, and what they show, from the profile."""
    from .. import hierarchy

    try:
        past, inside = hierarchy_shapes(profile, meta)
        table = hierarchy.levels(profile)
    except ResultsError as exc:
        return [f"No hierarchy: {exc}. It takes `mmbench profile -v {TUNED},{LIBRARY} --results RUN --points "
                "tall:128,square:128,wide:128,tall:1448,square:1448,wide:1448`."]
    table = table[table.variant.isin([TUNED, LIBRARY])]
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    command = profile_meta.get("command") or ["mmbench", "profile"]
    out = [f"`{' '.join([Path(command[0]).name, *command[1:]])}`: "
           f"Nsight Compute's counts for the tuned kernel (the configuration the run used at each shape) and cuBLAS, "
           "caches flushed before each kernel (the Profiles departure above). Every level's bytes are Nsight Compute's; "
           "the intensity is the kernel's FP32 operations over them"
           + (". The figure: fig6-hierarchy.png (below)." if drawn else "."), ""]

    if past:
        rows = table[[(m, n) in {(a, b) for a, b, _ in past} for m, n in zip(table.m, table.n)]]
        tuned, lib = rows[rows.variant == TUNED], rows[rows.variant == LIBRARY]
        ws = hierarchy.working_set_mb("gemv", *past[0])
        out += _level_block(profile, past, f"Past the L2 (operands {ws:.0f} MB{f', the L2 {l2 / 1e6:.0f} MB' if l2 else ''}):")
        peak = hierarchy.ceilings(hierarchy.checked(shown_profile(profile, meta)[0]))["dram"]  # the figure's roof
        key = ["m", "n"]
        closer = (tuned.set_index(key).dram_pct > lib.set_index(key).dram_pct.reindex(tuned.set_index(key).index)).all()
        out += [f"Past the L2 every kernel's closest roof is "
                f"{' and '.join(hierarchy.NAMES.get(b, b) for b in sorted(set(rows.bound)))}: the tuned kernel reaches "
                f"{_span(tuned, 'dram_pct')} of DRAM's peak ({peak / 1e9:.0f} GB/s), cuBLAS {_span(lib, 'dram_pct')}, at "
                f"{rows.dram_intensity.min():.2f} to {rows.dram_intensity.max():.2f} FLOP per DRAM byte (2 FLOP per "
                f"4-byte element of A); L2 is at {_span(rows, 'l2_pct')} of its peak, shared memory and L1 at most "
                f"{rows.shared_pct.max():.1f} % and {rows.l1_pct.max():.0f} %, FP32 at most {rows.fp32_pct.max():.1f} %. "
                + ("The tuned kernel sits closer under the DRAM roof than cuBLAS at every one of these shapes."
                   if closer else "The tuned kernel is not closer under the DRAM roof than cuBLAS at every one of "
                   "these shapes."), ""]
    if inside:
        out += _inside_lines(profile, table, inside, l2)
    return out[:-1]


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
