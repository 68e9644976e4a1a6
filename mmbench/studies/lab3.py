"""The Lab 3 study: transposes against the device copy, and the lab's matrix multiplications.

REPORT.md holds both of the lab's tables beside ours (computation time in ms, median of the
samples), the transposes' bandwidth against memcpy, two figures, and each of the lab's claims
checked against our numbers.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import hierarchy, plots
from ..analysis import ok_rows
from ..results import ResultsError
from ..sizes import row_shape
from ..variants import REGISTRY
from .common import Verdict, companion, markdown_table, provenance, report_text, text_table, verdict_table
from .contract import Figure, FigureFamily

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend

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


def side_by_side(ours: pd.DataFrame, lab: dict, names: dict, sizes: list[int]) -> pd.DataFrame:
    """The lab's columns and ours for the same kernels, at the lab's sizes."""
    out = pd.DataFrame(index=pd.Index(sizes, name="n"))
    for lab_name, times in lab.items():
        out[f"lab {lab_name}"] = times
        ours_name = _label(*names[lab_name]) if lab_name in names else None
        if ours_name in ours:
            out[f"ours {lab_name}"] = ours[ours_name].reindex(sizes)
    return out


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    both = a.index.intersection(b.index)
    return (a[both] / b[both]).dropna()


def _span(r: pd.Series, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(r.min())} to {fmt.format(r.max())}" if len(r) else "-"


CONFLICTED, CLEAN = 8.0, 0.5  # conflicts per shared instruction: a many-way conflict, and none to speak of


def conflicts(profile: pd.DataFrame | None, variant: str, params: str = "") -> pd.Series:
    """Bank conflicts per shared-memory instruction by size n, from a Nsight Compute profile
    (`mmbench profile`): of loads or of stores, whichever conflicts more (a transpose conflicts
    on one side only)."""
    if profile is None or "conflicts_per_shared_ld" not in profile:
        return pd.Series(dtype=float)
    rows = profile[(profile.variant == variant) & (profile.params.fillna("") == params)]
    # square sizes only (the lab's tables); one value per n, the worst if a shape was profiled twice
    rows = rows[rows.m == rows.n] if "m" in rows else rows
    return rows.groupby("n")[["conflicts_per_shared_ld", "conflicts_per_shared_st"]].max().max(axis=1).sort_index()


def _unprofiled(profile: pd.DataFrame | None, *variants: str) -> str:
    """Why a padding verdict has no conflict counts to go on."""
    if profile is None:
        return "no Nsight Compute profile beside these results (`mmbench profile`), so the conflicts themselves are not counted"
    if "conflicts_per_shared_ld" not in profile:
        return "the profile beside these results predates the bank-conflict counts (`mmbench profile` again)"
    return f"the profile beside these results has no rows of {' and '.join(variants)} at a common size"


ORDER_OF_10 = (10 ** 0.5, 10 ** 1.5)  # "on the order of 10 times": within half a decade of 10
STEADY_CV = 0.05  # "the computation times don't change much from run to run": spread under 5 % of the mean


def _lab_ratio(reference: dict | None, slow: str, fast: str) -> pd.Series:
    """The lab's own time ratio slow / fast at its sizes, from its table."""
    table, sizes = (reference or {}).get("matmul_ms", {}), (reference or {}).get("sizes", [])
    if slow not in table or fast not in table:
        return pd.Series(dtype=float)
    return pd.Series(table[slow], index=sizes) / pd.Series(table[fast], index=sizes)


def shared_ten_times(m: pd.DataFrame, reference: dict | None) -> list[Verdict]:
    """The lab's headline: its shared matmul about 10x faster than the naive GPU and the cache versions."""
    out, shared = [], m.get(_label("matmul_shared", "PAD=0"), pd.Series(dtype=float))
    for lab_name, variant in (("Naive GPU", "naive"), ("Cache GPU", "matmul_cache"),
                              ("Shared-Cache-Optimized GPU", "matmul_shared_cache")):
        r = _ratio(m.get(_label(variant), pd.Series(dtype=float)), shared)
        theirs = _lab_ratio(reference, lab_name, "Shared GPU")
        near = (r >= ORDER_OF_10[0]) & (r <= ORDER_OF_10[1])
        out.append(Verdict(f"Shared GPU on the order of 10x faster than {lab_name}",
                           "\"on the order of 10 times faster than both the naive GPU version and our attempts at a cache GPU version\"",
                           "not checked" if r.empty else "yes" if near.all() else "no" if not near.any() else "partly",
                           f"{lab_name} time / Shared GPU time {_span(r, '{:.2f}')} (3.2 to 32 counts as about 10)"
                           + (f"; the lab's own table: {_span(theirs, '{:.1f}')}" if len(theirs) else "")
                           + ("; our Naive GPU is Zosa's CUDA-Naive, not the lab's (see below)" if variant == "naive" else "")))
    return out


def steady_times(ok: pd.DataFrame) -> Verdict:
    """The lab: times "don't change much from run to run" (both tables)."""
    gpu = ok[ok.backend.isin(("cuda", "driver"))] if "backend" in ok else ok
    cv = gpu.cv.dropna()
    steady = cv < STEADY_CV
    return Verdict("Times barely change from run to run", "\"The computation times don't change much from run to run\"",
                   "not checked" if cv.empty else "yes" if steady.all() else "no" if not steady.any() else "partly",
                   f"standard deviation / mean of the 10 samples, GPU points: median {cv.median():.1%}, largest "
                   f"{cv.max():.1%}; under {STEADY_CV:.0%} at {int(steady.sum())} of {len(cv)}")


def matmul_conflict(profile: pd.DataFrame | None) -> Verdict:
    """The lab: a 32-way bank conflict in the shared matmul's products, after A's tile is loaded."""
    c0 = conflicts(profile, "matmul_shared", "PAD=0")
    return Verdict("A 32-way bank conflict in the shared matmul's products", "\"there is a 32 way bank conflict\" reading shared A",
                   "not checked" if c0.empty else "yes" if (c0 >= 31 - CLEAN).all() else "partly" if (c0 >= CLEAN).all() else "no",
                   ("Nsight Compute, extra wavefronts per shared-memory instruction (loads of A's and B's tiles and the "
                    "stores together; 31 would be every instruction 32-way): " + "; ".join(f"n={n}: {v:.2f}" for n, v in c0.items())
                    + ": A's reads conflict, B's broadcast reads and the stores do not, so the average is below 31")
                   if len(c0) else _unprofiled(profile, "matmul_shared"))


# What would check each of the claims below when its data is missing (a user's own run has no
# profile or tile sweep beside it).
UNTESTED = (
    ("Block size 32 is the best choice for the transposes", "\"Parameter choices\"",
     "the tile sweep beside the reference run: `mmbench run --config configs/companions/lab3-tiles.toml "
     "-o results/lab3-h200/tiles/lab3-tiles.csv`"),
    ("The naive transpose uses the warps well but does not coalesce", "\"Naive GPU\"",
     "sectors per global request and divergent branches of transpose_naive: "
     "`mmbench profile --config configs/lab3.toml --points 1024,4096`"),
    ("Shared-memory conflicts cost less than global ones would", "\"Other notes about Shared Matrix Multiply\"",
     "the unpadded shared transpose's conflicts against the naive one's uncoalesced stores, in time and counts: "
     "`mmbench profile --config configs/lab3.toml --points 1024,4096`"),
)


def _untested(i: int) -> Verdict:
    claim, where, what = UNTESTED[i]
    return Verdict(claim, where, "not checked", f"what would check it: {what}")


def _params(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (p.split("=") for p in str(text).split(",") if p)}


TILE_TOL = 0.05  # tile 32 counts as the best when within 5 % of the fastest tile (the sweep's samples spread 0 to 9 %)
TILES_COMPANION = ("tiles", "lab3-tiles")  # the tile sweep beside the reference run: folder, name


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


def tile_32_share(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per view and size: the fastest tile and tile 32's bandwidth as a share of the fastest's."""
    out = []
    for (view, n), g in sweep.groupby(["view", "n"], sort=False):
        top = g.loc[g.gbytes_per_s.idxmax()]
        at32 = g[g.tile == 32].gbytes_per_s
        out.append({"view": view, "n": n, "fastest": int(top.tile), "fastest_rows": int(top.rows),
                    "share": float(at32.iloc[0] / top.gbytes_per_s) if len(at32) else float("nan")})
    return pd.DataFrame(out)


def best_tile(tiles: pd.DataFrame | None) -> Verdict:
    """The lab: "The best choice for block size is 32", read as the tile's side, from the tile sweep."""
    sweep = tile_sweep(tiles) if tiles is not None and len(tiles) else pd.DataFrame()
    if sweep.empty or 32 not in set(sweep.tile):
        return _untested(0)
    share = tile_32_share(sweep)
    near = share.share >= 1 - TILE_TOL

    def view(name: str, words: str) -> str:
        v, ok = share[share.view == name], near[share.view == name]
        worst = v.loc[v.share.idxmin()]
        return (f"{words}: tile 32 the fastest at {int((v.fastest == 32).sum())} of {len(v)} sizes, within "
                f"{TILE_TOL:.0%} of the fastest at {int(ok.sum())} of {len(v)}"
                + (f" (least: {worst.share:.1%} of tile {worst.fastest}'s, ROWS={worst.fastest_rows}, at n={worst.n})"
                   if worst.share < 1 else ""))

    return Verdict(UNTESTED[0][0], UNTESTED[0][1],
                   "yes" if near.all() else "no" if not near.any() else "partly",
                   "tile sweep (transpose_tiled, [TILE][TILE + 1], tiles 8 to 64, 512 to 16384), GB/s (median); "
                   + view("strips", "at the lab's 1 x 4 strips (ROWS = TILE / 4)") + "; "
                   + view("best", "at each tile's fastest ROWS") + "; the tile-sweep table below")


UNCOALESCED = 16  # sectors per global request: 4 is a warp's 32 floats in four 32-B sectors, 32 a sector per lane


def _square(profile: pd.DataFrame, variant: str) -> pd.DataFrame:
    rows = profile[(profile.variant == variant) & (profile.params.fillna("") == "")]
    return rows[rows.m == rows.n].groupby("n").sum(numeric_only=True).sort_index()


def naive_coalescing(profile: pd.DataFrame | None) -> Verdict:
    """The lab: its naive transpose "uses the warps well, but does not coalesce memory". Warps used
    well: no divergent branch; not coalesced: a sector or more per lane on one side at least."""
    if profile is None or "sectors_per_global_st" not in profile:
        return _untested(1)
    naive, shmem = _square(profile, "transpose_naive"), _square(profile, "transpose_shmem")
    if naive.empty:
        return _untested(1)
    st, ld = naive.global_st_sectors / naive.global_st_requests, naive.global_ld_sectors / naive.global_ld_requests
    scattered = (st >= UNCOALESCED) | (ld >= UNCOALESCED)
    divergent = naive.divergent_branches
    sides = [scattered.all(), (divergent == 0).all()]
    at = shmem.index.intersection(naive.index)
    return Verdict(UNTESTED[1][0], UNTESTED[1][1], "yes" if all(sides) else "no" if not any(sides) else "partly",
                   "Nsight Compute, 32-B sectors per global request (4: a warp's 32 floats coalesced; 32: a sector a "
                   f"lane; {UNCOALESCED} or more counts as not coalesced), transpose_naive stores / loads: "
                   + "; ".join(f"n={n}: {st[n]:.1f} / {ld[n]:.1f}" for n in naive.index)
                   + (" (shmem GPU: " + "; ".join(
                       f"n={n}: {shmem.global_st_sectors[n] / shmem.global_st_requests[n]:.1f} / "
                       f"{shmem.global_ld_sectors[n] / shmem.global_ld_requests[n]:.1f}" for n in at) + ")" if len(at) else "")
                   + ": its reads along the rows coalesce, its writes down the columns do not; warps used well, read "
                   "as no divergence: divergent branches "
                   + "; ".join(f"n={n}: {int(divergent[n])} of {int(naive.branch_inst[n])}" for n in naive.index))


def conflicts_vs_global(profile: pd.DataFrame | None) -> Verdict:
    """The lab: bank conflicts in shared memory cost less than they would in global memory. The
    profile's nearest test: the unpadded shared transpose (a 32-way conflict on its shared reads,
    coalesced global traffic) and the naive one (no shared memory, a sector a lane on its global
    writes), each against the padded one, which has neither; the extra time per extra transaction."""
    if profile is None or "global_st_sectors" not in profile:
        return _untested(2)
    pad, unpad, naive = (_square(profile, v) for v in ("transpose_shmem", "transpose_shmem_unpadded", "transpose_naive"))
    at = pad.index.intersection(unpad.index).intersection(naive.index)
    if at.empty:
        return _untested(2)
    pad, unpad, naive = pad.loc[at], unpad.loc[at], naive.loc[at]
    waves = (unpad.shared_ld_conflicts + unpad.shared_st_conflicts) - (pad.shared_ld_conflicts + pad.shared_st_conflicts)
    sectors = naive.global_st_sectors - pad.global_st_sectors
    conflict_ps = (unpad.gpu_time_ns - pad.gpu_time_ns) / waves * 1e3
    global_ps = (naive.gpu_time_ns - pad.gpu_time_ns) / sectors * 1e3
    cheaper = conflict_ps < global_ps
    return Verdict(UNTESTED[2][0], UNTESTED[2][1], "yes" if cheaper.all() else "no" if not cheaper.any() else "partly",
                   "Nsight Compute (caches flushed, one launch), each against the padded shmem transpose: the unpadded "
                   "one's extra shared wavefronts (its 32-way conflict) and the naive one's extra global store sectors "
                   "(a sector a lane), time added / count: "
                   + "; ".join(f"n={n}: {1e-3 * (unpad.gpu_time_ns[n] - pad.gpu_time_ns[n]):.1f} us / {waves[n] / 1e6:.1f} M "
                               f"= {conflict_ps[n]:.1f} ps a wavefront against {1e-3 * (naive.gpu_time_ns[n] - pad.gpu_time_ns[n]):.1f}"
                               f" us / {sectors[n] / 1e6:.1f} M = {global_ps[n]:.1f} ps a sector ({global_ps[n] / conflict_ps[n]:.1f}x)"
                               for n in at)
                   + "; the lab's own transposes, not an isolated test: the naive one also differs in its 64 x 64 "
                   "submatrices and has no shared memory or barrier; the lab's claim is about its matmul, whose "
                   "conflict has no global twin")


def verdicts(ok: pd.DataFrame, profile: pd.DataFrame | None = None, reference: dict | None = None,
             tiles: pd.DataFrame | None = None) -> list[Verdict]:
    """Each claim of the lab, checked on our numbers (times: median of samples; `tiles`: the tile
    sweep's ok rows, when it was run)."""
    t = transpose_times(ok)
    m = matmul_times(ok)
    out = []

    def col(df, name):
        return df[name] if name in df else pd.Series(dtype=float)

    memcpy, shmem, naive = col(t, _label("memcpy")), col(t, _label("transpose_shmem")), col(t, _label("transpose_naive"))
    r = _ratio(shmem, memcpy)
    big = r[r.index >= 2048]
    out.append(Verdict("shmem about equal to GPU memcpy", "\"about the same or better than GPU memcpy\"",
                       "yes" if len(r) and (r <= 1.10).all() else "partly" if len(r) and (r <= 1.10).any() else
                       "no" if len(r) else "not checked",
                       f"shmem time / memcpy time {_span(r)} ({_span(big)} from 2048)"))
    r = _ratio(naive, shmem)
    out.append(Verdict("shmem about 3x faster than naive", "\"about 3 times as fast as the naive GPU version\"",
                       "not checked" if r.empty else "yes" if ((r > 2) & (r < 4)).all() else "no",
                       f"naive time / shmem time {_span(r)}"))
    r = _ratio(col(t, _label("transpose_optimized")), shmem)
    out.append(Verdict("Unrolling adds little", "\"the effect on efficiency is minimal\"",
                       "not checked" if r.empty else "yes" if ((r > 0.95) & (r < 1.05)).all() else "no",
                       f"optimized time / shmem time {_span(r, '{:.3f}')}"))
    r = _ratio(col(t, _label("transpose_shmem_unpadded")), shmem)
    unpadded, padded = conflicts(profile, "transpose_shmem_unpadded"), conflicts(profile, "transpose_shmem")
    both = unpadded.index.intersection(padded.index)
    removed = (unpadded[both] >= CONFLICTED) & (padded[both] <= CLEAN)
    out.append(Verdict("Padding the tile to [32][33] removes a 32-way bank conflict", "section \"Parameter choices\"",
                       ("yes" if removed.all() else "no" if not removed.any() else "partly") if len(both) else
                       "not checked",
                       f"unpadded time / padded time {_span(r)}; "
                       + ("Nsight Compute, bank conflicts per shared-memory instruction, unpadded / padded: "
                          + "; ".join(f"n={n}: {unpadded[n]:.1f} / {padded[n]:.1f}" for n in both) if len(both) else
                          _unprofiled(profile, "transpose_shmem_unpadded", "transpose_shmem"))))
    out += matmul_verdicts(m, profile, reference)
    out.append(steady_times(ok))
    out += [best_tile(tiles), naive_coalescing(profile), conflicts_vs_global(profile)]
    return out


def matmul_verdicts(m: pd.DataFrame, profile: pd.DataFrame | None, reference: dict | None) -> list[Verdict]:
    """The lab's claims about its matrix multiplications."""
    out = []

    def col(df, name):
        return df[name] if name in df else pd.Series(dtype=float)

    pad0, pad1 = col(m, _label("matmul_shared", "PAD=0")), col(m, _label("matmul_shared", "PAD=1"))
    r = _ratio(pad1, pad0)
    c0, c1 = conflicts(profile, "matmul_shared", "PAD=0"), conflicts(profile, "matmul_shared", "PAD=1")
    at = c0.index.intersection(c1.index)
    out.append(Verdict("Padding A's tile slows the shared matmul", "\"the efficiency actually significantly decreases\"",
                       "not checked" if r.empty else "yes" if (r > 1).all() else "no" if (r < 1).all() else "partly",
                       f"padded time / unpadded time {_span(r)}"
                       + ("; bank conflicts per shared-memory instruction, unpadded / padded: "
                          + "; ".join(f"n={n}: {c0[n]:.2f} / {c1[n]:.2f}" for n in at) if len(at) else "")))
    out.append(matmul_conflict(profile))
    mnaive = col(m, _label("naive"))
    for name in ("matmul_cache", "matmul_shared_cache"):
        r = _ratio(col(m, _label(name)), mnaive)
        at = r.get(4096)
        theirs = _lab_ratio(reference, _label(name), "Naive GPU")
        out.append(Verdict(f"{_label(name)} about 85 % faster than naive at 4096", "Results notes",
                           "not checked" if at is None else "yes" if at < 0.6 else "no",
                           f"{_label(name)} time / naive time {_span(r)}" + (f" ({at:.1f} at 4096)" if at else "")
                           + (f"; the lab's own table gives {theirs.get(4096, float('nan')):.2f} at 4096 (its table says "
                              f"{1 / theirs.get(4096, float('nan')) - 1:.0%} faster, not 85 %)" if len(theirs) else "") + "; our naive is Zosa's CUDA-Naive"))
    r = _ratio(col(m, _label("matmul_shared_cache")), col(m, _label("matmul_cache")))
    out.append(Verdict("Staging B in shared memory improves the cache version", "\"an improvement in ... shared memory cache coherent version\"",
                       "not checked" if r.empty else "yes" if (r < 1).all() else "no" if (r >= 1).all() else "partly",
                       f"Shared-Cache time / Cache time {_span(r, '{:.3f}')}; faster at {int((r < 1).sum())} of {len(r)} sizes"))
    out += shared_ten_times(m, reference)
    return out


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


LAB_TRANSPOSE_KERNELS = ("transpose_naive", "transpose_shmem", "transpose_shmem_unpadded", "transpose_optimized")
# The tuned transposes (tiled, vectors, swizzled, pipelined) were profiled at their default parameters, not
# the ones the run timed (see the departures), so the hierarchy figures and tables leave them out.
MATMUL_KERNELS = tuple(dict.fromkeys(v for v, _ in MATMULS if v in REGISTRY and REGISTRY[v].backend != "cpu"))


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


def _largest(table: pd.DataFrame) -> tuple:
    return hierarchy.shapes_in(table, set(table.op), 1)[-1]


def hierarchy_lines(profile: pd.DataFrame | None, meta: dict) -> list[str]:
    """The report's memory-hierarchy section: a level table at the largest profiled size of the
    matmuls and of the lab's transposes, and what the tables say, from the numbers."""
    try:
        table = hierarchy.levels(profile)
    except ResultsError as e:
        return [f"Not drawn: {e}."]
    mm = table[table.variant.isin(MATMUL_KERNELS)]
    tr = table[table.variant.isin(LAB_TRANSPOSE_KERNELS)]
    lines = ["Nsight Compute's byte counts at each level over its kernel time, against the level's peak (one launch "
             "each, caches flushed, clocks not locked); the figures below draw them.", ""]
    if not mm.empty:
        shape = _largest(mm)
        at = mm[(mm.m == shape[0]) & (mm.n == shape[1]) & (mm.k == shape[2])].set_index(["variant", "params"])
        lines += [f"Matrix multiplications at {hierarchy.panel_title(at.reset_index().iloc[0], meta)}:", "",
                  *text_table(hierarchy.LEVEL_COLUMNS, hierarchy.level_rows(profile, shape, MATMUL_KERNELS)), ""]
        lab = at.loc[[i for i in at.index if i[0] in LAB_OWN]]
        top = lab[["fp32_pct", *(f"{level}_pct" for level in hierarchy.LEVELS)]].max(axis=1)
        worst = top.idxmax()
        roof = lab.loc[worst, "bound"]
        lines += [f"The lab's own kernels reach at most {top.max():.0f} % of a roof ({_label(*worst)}, "
                  f"{'FP32' if roof == 'fp32' else hierarchy.NAMES[roof]})."]
        if {("matmul_shared", "PAD=0"), ("matmul_shared", "PAD=1"), ("matmul_cache", "")} <= set(at.index):
            pad0, pad1, cache = at.loc[("matmul_shared", "PAD=0")], at.loc[("matmul_shared", "PAD=1")], at.loc[("matmul_cache", "")]
            lines[-1] += (f" The shared one with A's tile [32][32] reaches {pad0.shared_pct:.0f} % of shared memory's peak and "
                          f"{pad0.fp32_pct:.1f} % of FP32's, with [32][33] {pad1.shared_pct:.0f} % and {pad1.fp32_pct:.1f} %, "
                          f"at the same {pad0.shared_intensity:.2f} and {pad1.shared_intensity:.2f} FLOP per shared byte: "
                          "the padding changes how fast shared memory serves the kernel, not how much it asks of it. The "
                          f"cache versions move {2 / cache.l2_intensity:.0f} bytes through L2 a multiply-add "
                          f"({cache.l2_intensity:.3f} FLOP per L2 byte, {cache.l2_pct:.0f} % of L2's peak): each "
                          "multiply-add is an atomicAdd into C, which global memory performs in L2.")
        if ("cublas", "") in at.index:
            lines[-1] += f" cuBLAS reaches {at.loc[('cublas', '')].fp32_pct:.0f} % of FP32's peak."
        lines.append("")
    if not tr.empty:
        shape, *smaller = hierarchy.shapes_in(tr, set(tr.op), 2)[::-1]
        rows = tr[(tr.m == shape[0]) & (tr.n == shape[1]) & (tr.k == shape[2])].set_index("variant")
        lines += [f"The lab's transposes at {hierarchy.panel_title(rows.reset_index().iloc[0], meta)}"
                  + "".join(f" (the figure has {row_shape(*s)} too)" for s in smaller) + ":", "",
                  *text_table(hierarchy.LEVEL_COLUMNS, hierarchy.level_rows(profile, shape, LAB_TRANSPOSE_KERNELS)), ""]
        if {"transpose_naive", "transpose_shmem", "transpose_shmem_unpadded"} <= set(rows.index):
            naive, pad, unpad = rows.loc["transpose_naive"], rows.loc["transpose_shmem"], rows.loc["transpose_shmem_unpadded"]
            sectors = {v: _square(profile, v).global_st_sectors.get(shape[1], float("nan"))
                       for v in ("transpose_naive", "transpose_shmem")}
            lines += [f"shmem GPU moves DRAM at {pad.dram_pct:.0f} % of its peak, the unpadded one at {unpad.dram_pct:.0f} % "
                      f"and naive at {naive.dram_pct:.0f} %, whose closest roof is {hierarchy.NAMES[naive.bound]} "
                      f"({naive[naive.bound + '_pct']:.0f} %): its L2 moves {naive.l2_bytes / naive.dram_bytes:.1f}x the "
                      f"bytes DRAM does (shmem GPU's {pad.l2_bytes / pad.dram_bytes:.1f}x), and its stores take "
                      f"{sectors['transpose_naive'] / sectors['transpose_shmem']:.0f}x the sectors of shmem GPU's.", ""]
    return lines


DEPARTURES = (
    "- **Naive GPU matmul.** The lab's naive kernel is not given; ours is Zosa 2017's CUDA-Naive (`naive`, one "
    "thread per element of C in 32 x 32 blocks, `__restrict__`, `__launch_bounds__`, an early return past the edge). "
    "It takes 0.049 ms at 512 where the lab's took 26.6 ms (about 10 GFLOP/s), so every verdict that divides by the "
    "naive time (the cache versions 85 % faster, the shared one 10x faster than naive) rests on that choice. Can the "
    "lab's kernel be rebuilt from its text? The text says an ijk loop where \"each node is given to c matrix elements\" "
    "and the inner loop walks a row of A and a column of B: that is a thread per element (ours), unless \"node\" means "
    "something coarser, and it names no launch geometry. The lab's own times go up 7.7 to 8.0x per doubling of n from "
    "512 and stay 34x its shared kernel's at every size, which a thread per element only gives when it is starved of "
    "parallelism or its loads never coalesce; the text does not say which. We conclude it cannot be reconstructed from "
    "the text; candidates (a thread per element with threadIdx.x down the rows, so no load coalesces; a thread per row "
    "of C) would have to be added as variants and run (`mmbench run --config configs/lab3.toml`, a GPU run) and the one "
    "whose naive/shared and cache/naive ratios match the lab's table (34x and 0.6x) kept, which is fitting, not "
    "reconstruction. Not done here.",
    "- **Shared GPU matmul (`matmul_shared`) is a reconstruction** built to show the lab's bank conflict: thread "
    "(x, y) computes C[i0 + x][j0 + y], so a warp reads a column of A's tile (the 32-way conflict with a [32][32] tile), "
    "reads B's tile as one broadcast word, and writes C down a column (uncoalesced). The lab says only that 32 x 32 "
    "tiles of A and B are loaded and that A's reads conflict; this mapping is ours, and the padding verdict (padding "
    "speeds ours up 3 to 4x where the lab's slowed) is about it.",
    "- **Cache GPU and Shared-Cache-Optimized GPU** follow the lab's description (a thread per element of A, rows of "
    "B and C walked left to right, atomicAdd into C; B staged in shared memory in the second); the 32 x 8 blocks, the "
    "[32][33] staging tile and `__restrict__` are ours.",
    "- **Transposes.** The naive one moves 64 x 64 submatrices with 64 x 16 threads, each a 1 x 4 strip (the lab's "
    "\"32 one by four blocks\" per submatrix is read as 32-thread rows); the shared ones use 32 x 8 threads over a 32 "
    "x 32 tile, four rows each; all take `__restrict__` pointers and guard the edges. Optimized GPU adds only "
    "`#pragma unroll`, as the lab's did.",
    "- **Nsight Compute profile** (`lab3-h200.profile.csv`, its `.profile.meta.json` gives the command and ncu's "
    "version): every GPU series at n = 1024 and 4096, one launch each, caches flushed before each kernel "
    "(`--cache-control all`), clocks not locked; its times are Nsight Compute's kernel durations, not the run's "
    "medians. The tuned transposes (tiled, vectors, swizzled, pipelined) were profiled at their default parameters, "
    "not those the run timed (its `params` column), so the hierarchy figures and tables keep to the lab's four; the "
    "profile's tiled row is TILE=32, ROWS=8, PAD=1, the tile sweep's lab design.",
    "- **Tile sweep** (`tiles/lab3-tiles.csv`, configs/companions/lab3-tiles.toml, a companion run with the "
    "reference run's settings: 10 samples after 3 warm-ups, cold L2, its own memcpy): \"block size\" is read as "
    "the tile's side. The lab's kernel cannot take another tile, so the sweep runs `transpose_tiled` "
    "(kernels/transpose/tiled.cu), which at TILE=32, ROWS=8, PAD=1 is the lab's design: the same [32][33] tile, "
    "32 x 8 threads each moving rows y, y + 8, y + 16 and y + 24, the same indices and edge guards. It differs in "
    "`#pragma unroll` over a loop whose trip count depends on threadIdx.y (transpose_shmem has a fixed four) and "
    "`__launch_bounds__`, and it is slower: see the tile-sweep section.",
    "- **Timing.** The lab gives \"example\" times; ours are medians of 10 samples after 3 warm-ups with a cold L2, "
    "and Naive CPU is a single-threaded compiled C loop whose sizes past the CPU time budget are skipped rows.",
)


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/lab3-h200/lab3-h200.csv"

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
ALT_TEXT = {"fig-transpose-bandwidth": "transpose bandwidth", "fig-matmul-time": "matmul time",
            "fig-matmul-hierarchy": "hierarchical roofline of the matrix multiplications",
            "fig-transpose-levels": "the transposes' share of each memory level's peak"}


def tile_lines(results_path: Path, pct_ref: pd.DataFrame, profile: pd.DataFrame | None) -> tuple[pd.DataFrame | None, list[str]]:
    """The tile sweep beside the reference run (its ok rows, or None) and the report's section on it:
    GB/s by size at each tile, at the lab's strips and at each tile's fastest ROWS, and the lab's
    design in the sweep (TILE=32, ROWS=8) against transpose_shmem in the reference run, as % of memcpy."""
    comp = companion(results_path, *TILES_COMPANION)
    if comp is None:
        return None, ["No tile sweep beside these results (" + UNTESTED[0][2].split(": ", 1)[1] + ")."]
    ok = ok_rows(comp.df)
    sweep = tile_sweep(ok)
    memcpy = _by_size(ok, "copy", "memcpy", "gbytes_per_s")
    tiles = sorted(set(sweep.tile))
    cells = []
    for n in sorted(set(sweep.n)):
        row = [str(n), f"{memcpy.get(n, float('nan')):,.0f}"]
        for view in ("strips", "best"):
            at = sweep[(sweep.view == view) & (sweep.n == n)].set_index("tile")
            top = at.gbytes_per_s.idxmax()
            for tile in tiles:
                if tile not in at.index:
                    row.append("-")
                    continue
                text = f"{at.gbytes_per_s[tile]:,.0f}" + (f" ({int(at.rows[tile])})" if view == "best" else "")
                row.append(f"**{text}**" if tile == top else text)
        cells.append(row)
    columns = ["n", "memcpy", *(f"tile {t}, ROWS {t // 4}" for t in tiles), *(f"tile {t}, fastest (ROWS)" for t in tiles)]
    lab = sweep[(sweep.view == "strips") & (sweep.tile == 32)].set_index("n").gbytes_per_s
    lab_pct = (100 * lab / memcpy).dropna()
    shmem_pct = pct_ref.get(_label("transpose_shmem"), pd.Series(dtype=float))
    both = lab_pct.index.intersection(shmem_pct.index)
    gap = (lab_pct[both] - shmem_pct[both])
    timed = pd.DataFrame()
    if profile is not None:
        lab_rows = profile[(profile.variant == "transpose_tiled") & (profile.params == "PAD=1,ROWS=8,TILE=32")]
        timed = pd.DataFrame({"tiled": lab_rows[lab_rows.m == lab_rows.n].groupby("n").gpu_time_ns.min(),
                              "shmem": _square(profile, "transpose_shmem").gpu_time_ns}).dropna()
    return ok, [
        provenance(comp.path, comp.df, comp.meta) + ". GB/s of 2 x 4 x n^2 bytes (median); the fastest tile of each "
        "group in bold; ROWS = TILE / 4 is the lab's 1 x 4 strips, \"fastest\" the best of every ROWS the tile allows "
        "(1 to TILE / 2 or TILE).",
        "",
        *text_table(columns, cells),
        "",
        f"The lab's design in the sweep (TILE=32, ROWS=8) reaches {_span(lab_pct[both], '{:.0f}')} % of the sweep's "
        f"memcpy; transpose_shmem reaches {_span(shmem_pct[both], '{:.0f}')} % of the reference run's: "
        f"{_span(-gap, '{:.0f}')} points {'less' if (gap < 0).all() else 'more' if (gap > 0).all() else 'apart'} for the "
        "sweep's kernel"
        + ("; in the profile, " + "; ".join(f"n={n}: {r.tiled / 1e3:.1f} us against transpose_shmem's {r.shmem / 1e3:.1f} us"
                                           for n, r in timed.iterrows()) if len(timed) else "")
        + ". So the ranking of tiles is that of `transpose_tiled`, a close copy of the lab's kernel, not of the kernel itself.",
        "",
    ]


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    t, bw, m = transpose_times(ok), transpose_bandwidth(ok), matmul_times(ok)
    if t.empty and m.empty:
        raise ResultsError("the Lab 3 report needs transpose or matmul rows")
    sizes = list(reference.get("sizes") or [])
    pct = (100 * bw.div(bw[_label("memcpy")], axis=0)).drop(columns=[_label("memcpy")]) if _label("memcpy") in bw else bw
    tiles, tile_text = tile_lines(results_path, pct, profile)
    vs = verdicts(ok, profile, reference, tiles)
    lines = [
        "# Lab 3 on today's GPU: transpose and matrix multiplication",
        "",
        provenance(results_path, df, meta) + f". The lab ran on {reference.get('device', 'its GPU')}. Times are "
        "medians of the samples, cold L2; every point was verified (transposes exactly, products against float64).",
        "",
        "## The lab's claims, checked",
        "",
        *verdict_table(vs),
        "",
        f"{len(vs)} claims: " + ", ".join(f"{sum(v.holds == h for v in vs)} {h}" for h in ("yes", "partly", "no", "not checked")) + ".",
        "",
        "## What we ran differently from the lab",
        "",
        *DEPARTURES,
        "",
        "## Transpose: computation time (ms), the lab's and ours",
        "",
        markdown_table(side_by_side(t, reference.get("transpose_ms", {}), LAB_TRANSPOSE, sizes)) if sizes else "",
        "",
        "All of ours, every size:",
        "",
        markdown_table(t),
        "",
        "## Transpose bandwidth (GB/s of 2 x 4 x n^2 bytes) and % of memcpy in the same run",
        "",
        markdown_table(bw),
        "",
        markdown_table(pct),
        "",
        "## Matrix multiplication: computation time (ms), the lab's and ours",
        "",
        markdown_table(side_by_side(m, reference.get("matmul_ms", {}), LAB_MATMUL, sizes)) if sizes else "",
        "",
        ("Naive CPU is a single-threaded compiled C loop (kernels/cpu/naive.c); a size it would not finish within "
         "the run's CPU time budget is a skipped row with its estimate (see the CSV's reason column)."
         if _label("cpu_naive_matmul") in m or _label("cpu_naive_transpose") in t else
         "The lab's Naive CPU column was not run in these results."),
        "",
        "## Tile sweep: the lab's shared transpose at tiles of 8 to 64",
        "",
        *tile_text,
        "## Memory hierarchy (Nsight Compute)",
        "",
        *hierarchy_lines(profile, meta),
    ]
    return report_text(lines, figures, ALT_TEXT)

