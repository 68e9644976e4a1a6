"""The Sørensen study's tables from a run, shared by its claims, figures and report: the mesh cells
(each the mean of its 3 x 3 shapes), the tuned kernel's configuration per cell (what the run used: its
params column) and the design it runs (CLASSES), the families against the device copy, the occupancy
line, the tuning rows (from the file the tuning cache names for this GPU) and the profiled shapes the
hierarchy figure and section show."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ...config import ConfigError, load_config
from ...engine.batched_local import read_rows
from ...hierarchy import levels, working_set_mb
from ...ops import get_op
from ...ops.gemv import FAMILIES, MESH_CAP_MIB, MESH_CELLS, cell_name, cell_points, mesh_cell
from ...results import ResultsError, read_metadata
from ...tuning.cache import TuneError, read_caches
from ...variants import parse_params


TUNED, LIBRARY, COPY = "gemv_tuned", "cublas_gemv", "memcpy"
PARAMS = ("BLOCKSIZE", "WORKSIZE_M", "WORKSIZE_N")
# Resident threads per SM where the metadata predates recording it (CUDA's occupancy tables)
RESIDENT_THREADS = {"sm_20": 1536, "sm_70": 2048, "sm_80": 2048, "sm_86": 1536, "sm_89": 1536, "sm_90": 2048}
BIG = 256 * 2**20  # the target's footprint: the tuned kernel >= 90 % of the copy from here up
LIBRARY_CELL_BYTES = 2**20  # the cuBLAS target counts cells whose matrices are all at least this large


# The designs a cell's tuned configuration is, at its shapes: the paper's four kernels of Fig. 1 (a, b, c, e),
# the versatile kernel's combination of b and c (d: Fig. 2d, which Fig. 1 does not class) and ours (w)
CLASSES = {"a": "one thread per row (Fig. 2a)", "b": "several threads per row (Fig. 2b)",
           "c": "several rows per thread (Fig. 2c)", "e": "several threads, several columns (Fig. 2e)",
           "d": "2b and 2c at once (Fig. 2d; not one of Fig. 1's four)",
           "w": "ours: columns of blocks, no atomics (not in the paper)"}


# -- the data ----------------------------------------------------------------------------------------
def occupancy_rows(meta: dict) -> int | None:
    """Rows a one-thread-per-row kernel needs to fill the GPU: SMs x resident threads per SM (the
    paper's dashed line, 14 x 1536 = 21504 on a C2050)."""
    gpu = meta.get("gpu") or {}
    threads = gpu.get("max_threads_per_sm") or RESIDENT_THREADS.get(gpu.get("arch"))
    return gpu["sm_count"] * threads if gpu.get("sm_count") and threads else None


def variant_rows(ok: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The run's GEMV rows of one variant."""
    return ok[(ok.op == "gemv") & (ok.variant == variant)]


def mesh_values(ok: pd.DataFrame, variant: str, column: str) -> pd.DataFrame:
    """A MESH_CELLS x MESH_CELLS table (rows: m's cell, columns: n's cell) of the mean of a column
    over each cell's 3 x 3 shapes, as the paper scores a cell; NaN where a shape of the cell was
    not measured (beyond the memory cap: the paper's black cells)."""
    rows = variant_rows(ok, variant).drop_duplicates(["m", "n"], keep="last").set_index(["m", "n"])[column]
    out = np.full((MESH_CELLS, MESH_CELLS), np.nan)
    for i in range(MESH_CELLS):
        for j in range(MESH_CELLS):
            keys = [(p.m, p.n) for p in cell_points(i, j)]
            if all(k in rows.index for k in keys):
                out[i, j] = float(np.mean([rows[k] for k in keys]))
    return pd.DataFrame(out, index=pd.Index(range(MESH_CELLS), name="m cell"), columns=range(MESH_CELLS))


def mesh_params(ok: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The tuned kernel's configuration per cell (KERNEL and the three sizes), as the run used it."""
    rows = variant_rows(ok, TUNED)
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
            rows = variant_rows(ok, variant)
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
    rows = variant_rows(ok, TUNED).drop_duplicates(["m", "n"], keep="last").set_index(["m", "n"]).params
    out = np.full((MESH_CELLS, MESH_CELLS), "", dtype=object)
    for i in range(MESH_CELLS):
        for j in range(MESH_CELLS):
            keys = [(p.m, p.n) for p in cell_points(i, j)]
            if all(k in rows.index for k in keys):
                out[i, j] = pd.Series([shape_design(m, n, rows[(m, n)]) for m, n in keys]).mode().iloc[0]
    return out


def big_matrix(rows: list[int]) -> np.ndarray:
    """Which cells of the given mesh rows have matrices of at least 1 MiB (all their shapes)."""
    return np.array([[min(4 * p.m * p.n for p in cell_points(i, j)) >= LIBRARY_CELL_BYTES for j in range(MESH_CELLS)]
                     for i in rows], dtype=bool)


def mesh_cap_mib(meta: dict) -> int | None:
    """The mesh's cap in MiB from the run's config (its `mesh:MIB` sweep); None where it names none."""
    try:
        sweeps = load_config(meta["config"]).sweeps if meta.get("config") else ()
    except (ConfigError, OSError):
        return None
    caps = [item.partition(":")[2] for sw in sweeps for item in sw.sizes.split(",") if item.startswith("mesh")]
    return int(caps[0] or MESH_CAP_MIB) if caps else None


def family_of(m: int, n: int) -> str:
    """The family (tall, square, wide) whose proportions a shape has; "" for none."""
    return next((f for f, (fm, fn) in FAMILIES.items() if m * fn == n * fm), "")


def cublas_version(meta: dict) -> str:
    """cuBLAS's version as the run recorded it (CUBLAS_VERSION: major 10000 + minor 100 + patch)."""
    v = (meta.get(LIBRARY) or {}).get("version")
    return f"cuBLAS {int(v) // 10000}.{int(v) // 100 % 100}" if v else "cuBLAS"


def hierarchy_shapes(profile: pd.DataFrame | None, meta: dict) -> tuple[list[tuple], list[tuple]]:
    """The profiled GEMV shapes past the L2 (every one) and the one that fits in it that the report
    and figure show (the square one where there is one, else the largest), as (m, n, k)."""
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
