"""Lab 3's tables from the results, shared by its claims, figures and report: the series that stand
for the lab's columns, their labels, the medians by size of each transpose and matrix
multiplication, the profile's rows by size and the tile sweep by tile."""

from __future__ import annotations

import pandas as pd

from ...variants import REGISTRY

TRANSPOSES = ("memcpy", "transpose_naive", "transpose_shmem", "transpose_shmem_unpadded", "transpose_optimized",
              "transpose_tiled", "transpose_vec", "transpose_swizzle", "transpose_pipe", "numpy_transpose",
              "cpu_naive_transpose")
MATMULS = (("cpu_naive_matmul", ""), ("naive", ""), ("matmul_cache", ""), ("matmul_shared_cache", ""), ("matmul_shared", "PAD=0"),
           ("matmul_shared", "PAD=1"), ("cublas", ""))
LAB_OWN = {v for v, _ in MATMULS if REGISTRY.get(v) and REGISTRY[v].paper == "lab3"}  # not the shared naive, cuBLAS
# Our series that stand for the lab's columns
LAB_TRANSPOSE = {"Naive CPU": ("cpu_naive_transpose", ""), "GPU memcpy": ("memcpy", ""),
                 "Naive GPU": ("transpose_naive", ""), "shmem GPU": ("transpose_shmem", ""),
                 "Optimized GPU": ("transpose_optimized", "")}
LAB_MATMUL = {"Naive CPU": ("cpu_naive_matmul", ""), "Naive GPU": ("naive", ""), "Cache GPU": ("matmul_cache", ""),
              "Shared-Cache-Optimized GPU": ("matmul_shared_cache", ""), "Shared GPU": ("matmul_shared", "PAD=0")}


def _label(variant: str, params: str = "") -> str:
    label = REGISTRY[variant].label if variant in REGISTRY else variant
    if variant == "matmul_shared":
        return f"{label}, A's tile [32][{32 + int(params.split('=')[1])}]"
    return label


def _by_size(ok: pd.DataFrame, op: str, variant: str, column: str, params: str | None = None) -> pd.Series:
    rows = ok[(ok.op == op) & (ok.variant == variant)]
    if params:
        rows = rows[rows.params.str.contains(params, regex=False)]
    return rows.groupby("n")[column].median()


def transpose_times(ok: pd.DataFrame) -> pd.DataFrame:
    """ms (median of samples) by square size, one column per transpose and memcpy."""
    cols = {_label(v): _by_size(ok, "copy" if v == "memcpy" else "transpose", v, "time_ms_median") for v in TRANSPOSES}
    out = pd.DataFrame({k: v for k, v in cols.items() if len(v)})
    out.index.name = "n"
    return out


def transpose_bandwidth(ok: pd.DataFrame) -> pd.DataFrame:
    """GB/s by size, and each transpose as % of memcpy in the same run."""
    bw = {_label(v): _by_size(ok, "copy" if v == "memcpy" else "transpose", v, "gbytes_per_s") for v in TRANSPOSES}
    bw = pd.DataFrame({k: v for k, v in bw.items() if len(v)})
    bw.index.name = "n"
    return bw


def matmul_times(ok: pd.DataFrame) -> pd.DataFrame:
    cols = {_label(v, p): _by_size(ok, "gemm", v, "time_ms_median", p or None) for v, p in MATMULS}
    out = pd.DataFrame({k: v for k, v in cols.items() if len(v)})
    out.index.name = "n"
    return out


def _span(r: pd.Series, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(r.min())} to {fmt.format(r.max())}" if len(r) else "-"


def _square(profile: pd.DataFrame, variant: str, params: str | None = "") -> pd.DataFrame:
    """A variant's profile rows at square sizes, by n (params None: whichever it ran with)."""
    rows = profile[profile.variant == variant]
    rows = rows if params is None else rows[rows.params.fillna("") == params]
    return rows[rows.m == rows.n].groupby("n").sum(numeric_only=True).sort_index()


def _params(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (p.split("=") for p in str(text).split(",") if p)}


def tile_sweep(tiles: pd.DataFrame) -> pd.DataFrame:
    """The tile sweep (transpose_tiled, ok rows): GB/s (median) by size n and tile side, at the lab's
    1 x 4 strips (ROWS = TILE / 4: each thread four rows of the tile, 32 x 8 threads at tile 32) and
    at the tile's fastest ROWS; one row per (view, n, tile), with the ROWS it took."""
    rows = tiles[tiles.variant == "transpose_tiled"]
    p = rows.params.map(_params)
    bw = (rows.assign(tile=p.map(lambda d: d["TILE"]), rows=p.map(lambda d: d["ROWS"]))
          .groupby(["n", "tile", "rows"]).gbytes_per_s.median().reset_index())
    strips = bw[bw.rows == bw.tile // 4].assign(view="strips")
    best = bw.loc[bw.groupby(["n", "tile"]).gbytes_per_s.idxmax()].assign(view="best")
    return pd.concat([strips, best], ignore_index=True)[["view", "n", "tile", "rows", "gbytes_per_s"]]


LAB_TRANSPOSE_KERNELS = ("transpose_naive", "transpose_shmem", "transpose_shmem_unpadded", "transpose_optimized")
# The tuned transposes (tiled, vectors, swizzled, pipelined) were profiled at their default parameters, not
# the ones the run timed (see the departures), so the hierarchy figures and tables leave them out.
MATMUL_KERNELS = tuple(dict.fromkeys(v for v, _ in MATMULS if v in REGISTRY and REGISTRY[v].backend != "cpu"))
