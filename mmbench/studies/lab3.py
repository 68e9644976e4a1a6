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
from .rule import (ABOUT_RULE, BY_CONSTRUCTION, NOT_CHECKED, NOT_TESTABLE, SHARE_RULE, SIZE_RULE, YES, by_about,
                   by_share, by_size, claims_line, other_scopes, weakest)

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend

# The rule each verdict applies, as its "judged by" cell cites it (mmbench/studies/rule.py)
SHARE_CITE = f"share rule ({SHARE_RULE})"
SIZE_CITE = f"size rule ({SIZE_RULE})"
ABOUT_CITE = f"about rule ({ABOUT_RULE})"

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


CLEAN = 0.5  # extra wavefronts per shared-memory instruction: none to speak of
SERIAL = 32  # wavefronts of a warp's shared load when every lane is served alone: the 32-way conflict


def conflicts(profile: pd.DataFrame | None, variant: str, params: str = "", side: str | None = None) -> pd.Series:
    """Bank conflicts per shared-memory instruction by size n, from a Nsight Compute profile
    (`mmbench profile`): of `side` ("ld" or "st"), or of whichever conflicts more."""
    if profile is None or "conflicts_per_shared_ld" not in profile:
        return pd.Series(dtype=float)
    rows = profile[(profile.variant == variant) & (profile.params.fillna("") == params)]
    # square sizes only (the lab's tables); one value per n, the worst if a shape was profiled twice
    rows = rows[rows.m == rows.n] if "m" in rows else rows
    sides = [f"conflicts_per_shared_{s}" for s in ((side,) if side else ("ld", "st"))]
    return rows.groupby("n")[sides].max().max(axis=1).sort_index()


def _unprofiled(profile: pd.DataFrame | None, *variants: str, need: tuple[str, ...] = ("conflicts_per_shared_ld",)) -> str:
    """Why a verdict has no counts to go on."""
    if profile is None:
        return "no Nsight Compute profile beside these results (`mmbench profile`), so the counts themselves are not taken"
    if not set(need) <= set(profile.columns):
        return "the profile beside these results predates these counts (`mmbench profile` again)"
    return f"the profile beside these results has no rows of {' and '.join(variants)} at a common size"


STEADY_CV = 0.05  # "the computation times don't change much from run to run": spread under 5 % of the mean
SAME = 0.10  # "about the same" time: within 10 %
NOTE_SIZE = 4096  # the lab's notes on its cache versions: "for 4096*4096 matrix"
NOTES = {"matmul_cache": 85.14, "matmul_shared_cache": 85.67}  # % faster than the naive version, the lab's notes


def _at(s: pd.Series, sizes: list[int] | None) -> pd.Series:
    """A series by size n at the lab's sizes (all of it where none are given)."""
    return s[s.index.isin(sizes)] if sizes else s


def _beyond(s: pd.Series, sizes: list[int] | None) -> pd.Series:
    return s[~s.index.isin(sizes)] if sizes else s.iloc[:0]


def _share(held: pd.Series) -> str:
    """rule.by_share over the sizes of `held` (a boolean by size)."""
    return by_share(int(held.sum()), len(held))


def _built(held: pd.Series) -> str:
    """A claim our kernel was built to make true: by construction where the counts bear it out,
    else the finding they give (the construction failed)."""
    found = _share(held)
    return BY_CONSTRUCTION if found == YES else found


def _each(s: pd.Series, fmt: str = "{:.2f}") -> str:
    """The values in size order, then the sizes they span."""
    if s.empty:
        return "-"
    return ", ".join(fmt.format(v) for v in s) + f" (n = {s.index.min()} to {s.index.max()})"


def _setting(sizes: list[int] | None, s: pd.Series) -> str:
    """The judged sizes, for the "judged by" cell."""
    return f"the lab's {len(s)} sizes" if sizes else f"{len(s)} sizes"


def _lab_ratio(reference: dict | None, slow: str, fast: str, table: str = "matmul_ms") -> pd.Series:
    """The lab's own time ratio slow / fast at its sizes, from its table (`table`: its key in the reference)."""
    table, sizes = (reference or {}).get(table, {}), (reference or {}).get("sizes", [])
    if slow not in table or fast not in table:
        return pd.Series(dtype=float)
    return pd.Series(table[slow], index=sizes) / pd.Series(table[fast], index=sizes)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df else pd.Series(dtype=float)


def _about(r: pd.Series, paper: float) -> pd.Series:
    """rule.by_about at each size: an estimate of the paper's ("about 3x") against our factor there."""
    return r.map(lambda x: by_about(x, paper))


def _outcomes(o: pd.Series) -> str:
    """Outcomes by size, as the numbers cell gives them."""
    if o.empty:
        return "-"
    return f"{o.iloc[0]} at each size" if o.nunique() == 1 else ", ".join(o) + f" (n = {o.index.min()} to {o.index.max()})"


def shared_ten_times(m: pd.DataFrame, reference: dict | None, sizes: list[int] | None = None) -> list[Verdict]:
    """The lab's headline: its shared matmul on the order of 10x faster than the naive GPU and the
    cache versions; an estimate of 10x, judged at each size (rule.by_about), then over them (rule.by_share)."""
    out, shared = [], _col(m, _label("matmul_shared", "PAD=0"))
    for lab_name, variant in (("Naive GPU", "naive"), ("Cache GPU", "matmul_cache"),
                              ("Shared-Cache-Optimized GPU", "matmul_shared_cache")):
        r = _at(_ratio(_col(m, _label(variant)), shared), sizes)
        theirs = _lab_ratio(reference, lab_name, "Shared GPU")
        out.append(Verdict(f"Shared GPU on the order of 10x faster than {lab_name}",
                           "\"on the order of 10 times faster than both the naive GPU version and our attempts at a cache GPU version\"",
                           NOT_CHECKED if r.empty else _share(_about(r, 10) == YES),
                           f"{lab_name} time / Shared GPU time {_each(r)}: within 1.5x of 10 at "
                           f"{int((_about(r, 10) == YES).sum())} of {len(r)} sizes"
                           + (f"; the lab's own table: {_span(theirs, '{:.1f}')} (by the same rule: "
                              f"{_outcomes(_about(theirs, 10))})" if len(theirs) else "")
                           + ("; our Naive GPU is Zosa's CUDA-Naive, not the lab's (see below)" if variant == "naive" else ""),
                           f"our matmul_shared ([32][32]) against our {variant}, {_setting(sizes, r)}; \"on the order of 10 "
                           f"times\" read as an estimate of 10x: {ABOUT_CITE}, at each size; {SHARE_CITE}"))
    return out


def steady_times(ok: pd.DataFrame, table: str, sizes: list[int] | None = None) -> Verdict:
    """The lab: times "don't change much from run to run", of one of its tables (its series at its
    sizes): the 10 samples of each point stand for runs."""
    series = LAB_TRANSPOSE if table == "transpose" else LAB_MATMUL
    points = []
    for lab_name, (variant, params) in series.items():
        rows = ok[ok.variant == variant]
        rows = rows[rows.params.str.contains(params, regex=False)] if params else rows
        points += [(lab_name, n, cv) for n, cv in rows.groupby("n").cv.max().dropna().items() if not sizes or n in sizes]
    cv = pd.Series([p[2] for p in points], dtype=float)
    steady = cv < STEADY_CV
    unsteady = [f"{name} at {n} ({c:.1%})" for name, n, c in points if c >= STEADY_CV]
    return Verdict(f"{'Transpose' if table == 'transpose' else 'Matrix multiplication'} times barely change from run to run",
                   "\"The computation times don't change much from run to run\"" if table == "transpose" else
                   "\"Any given run will differ only slightly in computation time\"",
                   NOT_CHECKED if cv.empty else _share(steady),
                   f"standard deviation / mean of each point's 10 samples: median {cv.median():.1%}, largest {cv.max():.1%}; "
                   f"under {STEADY_CV:.0%} at {int(steady.sum())} of {len(cv)}"
                   + (f"; over it: {', '.join(unsteady)}" if unsteady else "")
                   + "; a second run (`mmbench run --config configs/lab3.toml`) would measure run to run itself",
                   f"the lab's {len(series)} series of its {table} table at {'its' if sizes else 'every'} size{'s' * bool(sizes)}, samples "
                   f"of one run; spread < {STEADY_CV:.0%}; {SHARE_CITE}")


def a_tile_loads(profile: pd.DataFrame | None, pad: int) -> pd.DataFrame:
    """matmul_shared's reads of A's tile in the products, by size n, from the profile's counts: how
    many, how wide (bytes a lane), their extra wavefronts a load and the most they can have (every
    lane alone), and the stores' extra wavefronts a store. A warp makes, a tile of k, 32 scalar reads
    of B's tile (one word for the whole warp, a broadcast: no conflict) and reads a row of A's tile
    (32 floats a lane) in what remains of its shared loads, so the loads' conflicts are A's."""
    need = {"m", "k", "shared_ld_inst", "shared_ld_conflicts", "shared_st_inst", "shared_st_conflicts"}
    if profile is None or not need <= set(profile.columns):
        return pd.DataFrame()
    rows = profile[(profile.variant == "matmul_shared") & (profile.params.fillna("") == f"PAD={pad}")]
    rows = rows[rows.m == rows.n].groupby("n").max(numeric_only=True)
    warp_tiles = rows.m * rows.index / 32 * -(-rows.k // 32)  # a thread an element of C; tiles of 32 along k
    a_loads = rows.shared_ld_inst - 32 * warp_tiles
    width = 4 * 32 * warp_tiles / a_loads  # bytes a lane a load: 16 where the compiler made 128-bit loads
    ideal = 32 * width / 128  # wavefronts of a conflict-free load (128 bytes a wavefront)
    return pd.DataFrame({"a_loads": a_loads, "width": width, "ideal": ideal, "full": SERIAL - ideal,
                         "extra": rows.shared_ld_conflicts / a_loads,
                         "st": rows.shared_st_conflicts / rows.shared_st_inst}).dropna()


def _a_text(a: pd.DataFrame) -> str:
    return "; ".join(f"n={n}: {r.extra:.2f} extra wavefronts of the {r.full:.0f} possible ({r.a_loads / 1e6:.1f} M loads of "
                     f"{r.width:.0f} B a lane: {r.ideal + r.extra:.0f} wavefront{'s' * (round(r.ideal + r.extra) != 1)} where "
                     f"{r.ideal:.0f} would do)"
                     for n, r in a.iterrows())


def matmul_conflict(profile: pd.DataFrame | None) -> Verdict:
    """The lab: a 32-way bank conflict in the shared matmul's products, read per load of A's tile
    (the load the claim speaks of), not averaged over B's broadcasts."""
    a, c0 = a_tile_loads(profile, 0), conflicts(profile, "matmul_shared", "PAD=0", "ld")
    test = "per read of A's tile, at the profiled sizes: every lane served alone (within 0.5 wavefront); by construction where it holds"
    if a.empty:
        return Verdict("A 32-way bank conflict in the shared matmul's products", "\"there is a 32 way bank conflict when "
                       "we're multiplying elements in shared A and shared B\"", NOT_CHECKED,
                       _unprofiled(profile, "matmul_shared", need=("shared_ld_inst", "shared_ld_conflicts", "k")), test)
    return Verdict("A 32-way bank conflict in the shared matmul's products", "\"there is a 32 way bank conflict when "
                   "we're multiplying elements in shared A and shared B\"", _built(a.extra >= a.full - CLEAN),
                   "Nsight Compute, matmul_shared with A's tile [32][32], per read of A's tile: " + _a_text(a)
                   + ": each lane's read is served alone, 32-way, the conflict our mapping (a warp down a column of A's "
                   "tile) was built to have"
                   + ("; averaged over every shared load, B's conflict-free broadcasts included: "
                      + "; ".join(f"n={n}: {v:.2f}" for n, v in c0.items()) + " (not the claim's level)" if len(c0) else ""),
                   test)


def one_conflict_site(profile: pd.DataFrame | None) -> Verdict:
    """The lab: only the products' reads of A conflict (not the loads of the tiles, not B's reads)."""
    a = a_tile_loads(profile, 0)
    claim, where = ("Only the products' reads of A's tile have bank conflicts",
                    "\"only one section of the code that has memory bank conflicts ... after we have loaded matrix A\"")
    test = "stores into the tiles within 0.5 wavefront a store; the loads' extra wavefronts all A's; by construction where it holds"
    if a.empty:
        return Verdict(claim, where, NOT_CHECKED, _unprofiled(profile, "matmul_shared", need=("shared_st_inst", "k")), test)
    return Verdict(claim, where, _built((a.st <= CLEAN) & ((a.extra - a.full).abs() <= CLEAN)),
                   "Nsight Compute, matmul_shared with A's tile [32][32]: stores into the tiles "
                   + "; ".join(f"n={n}: {r.st:.2f}" for n, r in a.iterrows())
                   + " extra wavefronts a store; the loads' extra wavefronts, put on A's reads, "
                   + "; ".join(f"n={n}: {r.extra:.3f} a read of the {r.full:.0f} it can have" for n, r in a.iterrows())
                   + ": A's reads hold them all, B's broadcast reads none, as our mapping was built", test)


def padding_removes(profile: pd.DataFrame | None) -> Verdict:
    """The lab: padding A's tile to [32][33] removes the products' conflicts completely."""
    a0, a1 = a_tile_loads(profile, 0), a_tile_loads(profile, 1)
    claim, where = ("Padding A's tile to [32][33] removes its bank conflicts completely",
                    "\"the shared memory bank conflicts are completely eliminated\"")
    test = "per read of A's tile and per store, at the profiled sizes: within 0.5 wavefront; by construction where it holds"
    if a1.empty:
        return Verdict(claim, where, NOT_CHECKED, _unprofiled(profile, "matmul_shared", need=("shared_ld_inst", "k")), test)
    return Verdict(claim, where, _built((a1.extra <= CLEAN) & (a1.st <= CLEAN)),
                   "Nsight Compute, matmul_shared with A's tile [32][33], per read of A's tile: " + _a_text(a1)
                   + "; per store: " + "; ".join(f"n={n}: {r.st:.2f}" for n, r in a1.iterrows())
                   + (f"; with [32][32]: {_each(a0.extra, '{:.1f}')} a read" if len(a0) else "")
                   + "; stride 33 puts a column's 32 words in 32 banks, the reason we built PAD=1", test)


def _square(profile: pd.DataFrame, variant: str, params: str | None = "") -> pd.DataFrame:
    """A variant's profile rows at square sizes, by n (params None: whichever it ran with)."""
    rows = profile[profile.variant == variant]
    rows = rows if params is None else rows[rows.params.fillna("") == params]
    return rows[rows.m == rows.n].groupby("n").sum(numeric_only=True).sort_index()


CACHE_COUNTS = ("l1_hit_pct", "l2_hit_pct", "l1_bytes", "global_ld_sectors", "global_st_sectors", "dram_bytes_read")


def _load_hits(rows: pd.DataFrame) -> pd.Series:
    """% of the global loads' sectors that hit L1: L1's hits over the loads' sectors. L1 passes
    global atomics to L2 uncached, so its hit rate over every sector undercounts a kernel of atomics."""
    return (rows.l1_hit_pct * rows.l1_bytes / 32 / rows.global_ld_sectors).clip(upper=100)


def cache_behaviour(profile: pd.DataFrame | None) -> Verdict:
    """The lab: the ijk loop jumps through memory in its inner loop ("cache incoherence"); a thread per
    element of A walking rows of B and C caches better. Read as hit rates at the cache each access
    goes through: the loads at L1 (atomics bypass it), everything at L2 (where the atomics are done)."""
    claim, where = ("A thread per element of A caches better than the ijk loop",
                    "\"This leads to cache incoherence ... this scheme has the better cache coherence\"")
    test = ("our naive (ijk) against our matmul_cache, the profiled sizes: loads' L1 hit rate and L2 hit rate both "
            f"higher; order at each size, {SHARE_CITE}")
    if profile is None or not set(CACHE_COUNTS) <= set(profile.columns):
        return Verdict(claim, where, NOT_CHECKED, _unprofiled(profile, need=CACHE_COUNTS), test)
    naive, cache = _square(profile, "naive", None), _square(profile, "matmul_cache")
    at = naive.index.intersection(cache.index)
    if at.empty:
        return Verdict(claim, where, NOT_CHECKED, _unprofiled(profile, "naive", "matmul_cache", need=CACHE_COUNTS), test)
    naive, cache = naive.loc[at], cache.loc[at]
    l1n, l1c = _load_hits(naive), _load_hits(cache)
    held = (l1c > l1n) & (cache.l2_hit_pct > naive.l2_hit_pct)
    levels = {"every L1 sector": "; ".join(f"n={n}: {cache.l1_hit_pct[n]:.0f} % against {naive.l1_hit_pct[n]:.0f} %" for n in at)
              + " (half of matmul_cache's L1 sectors are its atomicAdds)",
              "DRAM bytes read": "; ".join(f"n={n}: {cache.dram_bytes_read[n] / naive.dram_bytes_read[n]:.1f}x naive's" for n in at)
              + " (every multiply-add an atomic in L2)",
              "sectors a load request": "; ".join(f"n={n}: {cache.global_ld_sectors[n] / cache.global_ld_requests[n]:.1f} "
                                                  f"against {naive.global_ld_sectors[n] / naive.global_ld_requests[n]:.1f}"
                                                  for n in at) + " (a lane a row of B)"}
    return Verdict(claim, where, _share(held),
                   "Nsight Compute (caches flushed), matmul_cache against naive: loads' L1 hits "
                   + "; ".join(f"n={n}: {l1c[n]:.1f} % against {l1n[n]:.1f} %" for n in at) + "; L2 hits "
                   + "; ".join(f"n={n}: {cache.l2_hit_pct[n]:.2f} % against {naive.l2_hit_pct[n]:.2f} %" for n in at)
                   + ". The ijk loop's jumps are a thread's; a warp reads a row of B at once, so it hits too. Judged on "
                   "our two kernels (naive is Zosa's CUDA-Naive, an ijk loop as the lab describes, not the lab's)"
                   + other_scopes(levels, "hit rates"), test)


def atomics_needed(ok: pd.DataFrame) -> Verdict:
    """The lab: in its cache scheme several threads write one element of C, so it must use atomics."""
    rows = ok[ok.variant.isin(("matmul_cache", "matmul_shared_cache"))]
    return Verdict("Threads of the A scheme write one element of C together, so their adds must be atomic",
                   "\"multiple threads will be trying to write to an element in C ... atomic operation should be used\"",
                   NOT_CHECKED if rows.empty else BY_CONSTRUCTION,
                   "matmul_cache and matmul_shared_cache give each element of C k additions from k threads, through "
                   f"atomicAdd (kernels/gemm/lab3.cu); all {len(rows)} of their points verified against float64",
                   "by how the scheme is built")


def atomics_bottleneck(m: pd.DataFrame, profile: pd.DataFrame | None, sizes: list[int] | None) -> Verdict:
    """The lab: the atomics are a bottleneck, serializing. Bottleneck: the atomic versions slower than
    the same multiply-adds without atomics (naive), and staging B's loads in shared memory (which
    makes them coalesce) not moving the time (the atomics set it); serializing, from the counts."""
    cache, staged, naive = (_col(m, _label(v)) for v in ("matmul_cache", "matmul_shared_cache", "naive"))
    slow, same = _at(_ratio(cache, naive), sizes), _at(_ratio(staged, cache), sizes)
    held = (slow > 1) & ((same - 1).abs() <= SAME).reindex(slow.index, fill_value=False)
    counts = ""
    if profile is not None and {"l1_bytes", "global_ld_sectors", "global_st_sectors", "k", "ipc_per_smsp"} <= set(profile.columns):
        per = {v: _square(profile, v) for v in ("matmul_cache", "matmul_shared_cache")}
        adds = {v: (r.l1_bytes / 32 - r.global_ld_sectors - r.global_st_sectors) / (r.m * r.index * r.k) for v, r in per.items()}
        counts = ("; Nsight Compute: 32-B L1 sectors an atomicAdd (L1's sectors less the loads' and stores', over m n k): "
                  + "; ".join(f"{_label(v)} " + ", ".join(f"n={n}: {x:.2f}" for n, x in a.items()) for v, a in adds.items())
                  + ": one an add, not one a warp instruction: a warp's 32 adds, all into one element of C in our "
                  "mapping, reach L2 one by one and are done there one after another; IPC a scheduler "
                  + ", ".join(f"{per['matmul_cache'].ipc_per_smsp[n]:.2f}" for n in per["matmul_cache"].index))
    return Verdict("The atomics are a bottleneck: they serialize", "\"This leads to bottleneck because of serialization\"",
                   NOT_CHECKED if slow.empty else _share(held),
                   f"Cache GPU time / naive time {_each(slow, '{:.1f}')}; Shared-Cache / Cache (B's loads coalesced in "
                   f"shared memory) {_each(same)}" + counts,
                   f"our matmul_cache and matmul_shared_cache against naive, {_setting(sizes, slow)}: slower than naive, "
                   f"staging B within {SAME:.0%}; {SHARE_CITE}")


def shared_c() -> Verdict:
    return Verdict("C in shared memory would need atomics there too and hinder performance",
                   "\"an atomic operation should be done in making shared memory for matrix C, which would hinder the performance\"",
                   NOT_TESTABLE, "what would test it: a variant of matmul_shared_cache that also adds each block's products "
                   "into C's row segment in shared memory (shared atomicAdd) and then into C, run beside it at 512 to 4096 "
                   "(`mmbench run --config configs/lab3.toml` with it added); the lab built none and neither did we",
                   "no kernel of the run keeps C in shared memory")


def matmul_verdicts(ok: pd.DataFrame, m: pd.DataFrame, profile: pd.DataFrame | None, reference: dict | None,
                    sizes: list[int] | None) -> list[Verdict]:
    """The lab's claims about its matrix multiplications, in its order."""
    naive, cache, staged = (_col(m, _label(v)) for v in ("naive", "matmul_cache", "matmul_shared_cache"))
    pad0, pad1 = _col(m, _label("matmul_shared", "PAD=0")), _col(m, _label("matmul_shared", "PAD=1"))
    out = [cache_behaviour(profile), atomics_needed(ok), atomics_bottleneck(m, profile, sizes), shared_c()]
    r, s = _at(_ratio(cache, naive), sizes), _at(_ratio(staged, naive), sizes)
    out.append(Verdict("Both cache versions improve on the naive GPU", "\"There is an improvement in the performance in "
                       "both a simple cache coherent version and shared memory cache coherent version\"",
                       NOT_CHECKED if r.empty else _share((r < 1) & (s.reindex(r.index) < 1)),
                       f"time / naive time, Cache GPU {_each(r, '{:.1f}')}; Shared-Cache {_each(s, '{:.1f}')}; our naive is "
                       "Zosa's CUDA-Naive",
                       f"our two cache versions against our naive, {_setting(sizes, r)}; faster, {SHARE_CITE}"))
    out.append(steady_times(ok, "matmul", sizes))
    for name in ("matmul_cache", "matmul_shared_cache"):
        at = _ratio(_col(m, _label(name)), naive).get(NOTE_SIZE)
        theirs = _lab_ratio(reference, _label(name), "Naive GPU").get(NOTE_SIZE)
        out.append(Verdict(f"{_label(name)} {NOTES[name]} % faster than naive at {NOTE_SIZE}", "Results notes",
                           NOT_CHECKED if at is None else by_size(1 / at - 1, NOTES[name] / 100),
                           f"no point at {NOTE_SIZE}" if at is None else
                           f"{_label(name)} time / naive time {at:.1f} at {NOTE_SIZE}: {1 / at - 1:+.1%} in speed against "
                           f"the lab's +{NOTES[name]} %"
                           + (f"; the lab's own table gives {theirs:.2f} ({1 / theirs - 1:.0%} faster, not {NOTES[name]} %)"
                              if theirs else "") + "; our naive is Zosa's CUDA-Naive",
                           f"our {name} against our naive at {NOTE_SIZE}; a percentage, not a factor: {SIZE_CITE}"))
    r = _at(_ratio(staged, cache), sizes)
    out.append(Verdict("Staging B in shared memory improves the cache version", "\"Efforts are made to optimize the cache "
                       "optimized version by using shared memory\"; its notes: 85.67 % against 85.14 %",
                       NOT_CHECKED if r.empty else _share(r < 1),
                       f"Shared-Cache time / Cache time {_each(r, '{:.3f}')}; faster at {int((r < 1).sum())} of {len(r)} sizes",
                       f"{_setting(sizes, r)}; faster, {SHARE_CITE}"))
    r = _at(_ratio(pad1, pad0), sizes)
    out.append(Verdict("[32][32] tiles of A and B are the most efficient", "\"Using a [32][32] size for the shared arrays "
                       "for both A and B is most efficient\"",
                       NOT_CHECKED if r.empty else _share(r >= 1),
                       f"A's tile [32][33] time / [32][32] time {_each(r)}: the one other shape in the run is faster at "
                       f"{int((r < 1).sum())} of {len(r)} sizes; tiles of another side are untested (matmul_shared takes "
                       "only 32: a TILE parameter and a companion sweep of it would test them)",
                       f"our matmul_shared, {_setting(sizes, r)}; [32][32] no slower than [32][33], {SHARE_CITE}"))
    out += [one_conflict_site(profile), matmul_conflict(profile), conflicts_vs_global(profile), padding_removes(profile)]
    a0, a1 = a_tile_loads(profile, 0), a_tile_loads(profile, 1)
    loads = (f"; [32][33] also splits A's reads into 4-B loads ({a1.width.min():.0f} B a lane against {a0.width.min():.0f}: "
             f"rows of 33 floats lose their 16-B alignment), {32 + 128 / a1.width.min():.0f} shared loads a warp a tile "
             f"against {32 + 128 / a0.width.min():.0f}, and is still faster"
             if len(a0) and len(a1) else "")
    out.append(Verdict("Padding A's tile slows the shared matmul", "\"the efficiency actually significantly decreases\"",
                       NOT_CHECKED if r.empty else _share(r > 1),
                       f"padded time / unpadded time {_each(r)}" + loads,
                       f"our matmul_shared (a reconstruction), {_setting(sizes, r)}; slower, {SHARE_CITE}"))
    return out + shared_ten_times(m, reference, sizes)


# What would check each of the claims below when its data is missing (a user's own run has no
# profile or tile sweep beside it).
UNTESTED = (
    ("Block size 32 is the best choice for the transposes", "\"The best choice for block size is 32. It fits well with the WARPs\"",
     "the tile sweep beside the reference run: `mmbench run --config configs/companions/lab3-tiles.toml "
     "-o results/lab3-h200/tiles/lab3-tiles.csv`"),
    ("The naive transpose uses the warps well but does not coalesce", "\"uses the warps well, but does not coalesce memory\"",
     "sectors per global request and divergent branches of transpose_naive: "
     "`mmbench profile --config configs/lab3.toml --points 1024,4096`"),
    ("Shared-memory conflicts cost less than global ones would", "\"since the bank conflicts are on shared memory, the "
     "impact isn't nearly as great as it would be for global reads and writes\"",
     "the unpadded shared transpose's conflicts against the naive one's uncoalesced stores, in time and counts: "
     "`mmbench profile --config configs/lab3.toml --points 1024,4096`"),
)


def _untested(i: int) -> Verdict:
    claim, where, what = UNTESTED[i]
    return Verdict(claim, where, NOT_CHECKED, f"what would check it: {what}")


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


def best_tile(tiles: pd.DataFrame | None, sizes: list[int] | None = None) -> Verdict:
    """The lab: "The best choice for block size is 32", read as the tile's side, from the tile sweep;
    judged where the lab worked (its 1 x 4 strips, its sizes), the rest of the sweep extra."""
    sweep = tile_sweep(tiles) if tiles is not None and len(tiles) else pd.DataFrame()
    if sweep.empty or 32 not in set(sweep.tile):
        return _untested(0)
    share = tile_32_share(sweep)
    near = share.share >= 1 - TILE_TOL
    strips = share.view == "strips"
    inside = share.n.isin(sizes) if sizes else pd.Series(True, index=share.index)

    def view(mask: pd.Series) -> str:
        v, ok = share[mask], near[mask]
        worst = v.loc[v.share.idxmin()]
        return (f"tile 32 the fastest at {int((v.fastest == 32).sum())} of {len(v)} sizes, within "
                f"{TILE_TOL:.0%} of the fastest at {int(ok.sum())} of {len(v)}"
                + (f" (least: {worst.share:.1%} of tile {worst.fastest}'s, ROWS={worst.fastest_rows}, at n={worst.n})"
                   if worst.share < 1 else ""))

    paper = "the lab's 1 x 4 strips (ROWS = TILE / 4) at its sizes"
    scopes = {paper: view(strips & inside)}
    if (strips & ~inside).any():
        scopes[f"the strips at {', '.join(str(n) for n in sorted(share[strips & ~inside].n))}"] = view(strips & ~inside)
    scopes["each tile's fastest ROWS, every size"] = view(share.view == "best")
    return Verdict(UNTESTED[0][0], UNTESTED[0][1], _share(near[strips & inside]),
                   "tile sweep (transpose_tiled, [TILE][TILE + 1], tiles 8 to 64, 512 to 16384), GB/s (median); at "
                   f"{paper}: {scopes[paper]}" + other_scopes(scopes, paper) + "; the tile-sweep table below",
                   f"the tile sweep at {paper} ({int((strips & inside).sum())}); within {TILE_TOL:.0%} of the fastest "
                   f"tile; {SHARE_CITE}")


UNCOALESCED = 16  # sectors per global request: 4 is a warp's 32 floats in four 32-B sectors, 32 a sector per lane


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
    at = shmem.index.intersection(naive.index)
    return Verdict(UNTESTED[1][0], UNTESTED[1][1], weakest(_share(scattered), _share(divergent == 0)),
                   "Nsight Compute, 32-B sectors per global request (4: a warp's 32 floats coalesced; 32: a sector a "
                   f"lane; {UNCOALESCED} or more counts as not coalesced), transpose_naive stores / loads: "
                   + "; ".join(f"n={n}: {st[n]:.1f} / {ld[n]:.1f}" for n in naive.index)
                   + (" (shmem GPU: " + "; ".join(
                       f"n={n}: {shmem.global_st_sectors[n] / shmem.global_st_requests[n]:.1f} / "
                       f"{shmem.global_ld_sectors[n] / shmem.global_ld_requests[n]:.1f}" for n in at) + ")" if len(at) else "")
                   + ": its reads along the rows coalesce, its writes down the columns do not; warps used well, read "
                   "as no divergence: divergent branches "
                   + "; ".join(f"n={n}: {int(divergent[n])} of {int(naive.branch_inst[n])}" for n in naive.index),
                   f"the profiled sizes ({len(naive)}): {UNCOALESCED} or more sectors a request on a side; no divergent "
                   f"branch; each by the {SHARE_CITE}, the weaker of the two")


def conflicts_vs_global(profile: pd.DataFrame | None) -> Verdict:
    """The lab: bank conflicts in shared memory cost less than they would in global memory. The
    profile's matched test: the unpadded shared transpose (a 32-way conflict on its shared reads,
    coalesced global traffic) and the naive one (no shared memory, a sector a lane on its global
    writes), each against the padded one, which has neither; the extra time per extra transaction.
    The matmul's conflict has no global twin: its cost a wavefront is given beside."""
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
    mm0, mm1 = _square(profile, "matmul_shared", "PAD=0"), _square(profile, "matmul_shared", "PAD=1")
    both = mm0.index.intersection(mm1.index)
    mm_ps = ((mm0.gpu_time_ns - mm1.gpu_time_ns) / ((mm0.shared_ld_conflicts + mm0.shared_st_conflicts)
                                                    - (mm1.shared_ld_conflicts + mm1.shared_st_conflicts)) * 1e3)[both]
    return Verdict(UNTESTED[2][0], UNTESTED[2][1], _share(conflict_ps < global_ps),
                   "Nsight Compute (caches flushed, one launch), each against the padded shmem transpose: the unpadded "
                   "one's extra shared wavefronts (its 32-way conflict) and the naive one's extra global store sectors "
                   "(a sector a lane), time added / count: "
                   + "; ".join(f"n={n}: {1e-3 * (unpad.gpu_time_ns[n] - pad.gpu_time_ns[n]):.1f} us / {waves[n] / 1e6:.1f} M "
                               f"= {conflict_ps[n]:.1f} ps a wavefront against {1e-3 * (naive.gpu_time_ns[n] - pad.gpu_time_ns[n]):.1f}"
                               f" us / {sectors[n] / 1e6:.1f} M = {global_ps[n]:.1f} ps a sector ({global_ps[n] / conflict_ps[n]:.1f}x)"
                               for n in at)
                   + "; the naive one also differs in its 64 x 64 submatrices and has no shared memory or barrier"
                   + ("; the shared matmul's own conflict, [32][32] against [32][33] (which also makes more, narrower "
                      "loads): " + "; ".join(f"n={n}: {v:.1f} ps a wavefront" for n, v in mm_ps.items()) if len(mm_ps) else ""),
                   "the lab's transposes as the matched pair (the matmul's conflict has no global twin), the profiled "
                   f"sizes: less time a wavefront than a sector; {SHARE_CITE}")


LITTLE = 0.05  # "the effect on efficiency is minimal": within 5 % either way


def transpose_conflict(profile: pd.DataFrame | None) -> Verdict:
    """The lab: the [32][32] tile read after it is filled conflicts 32 ways; per shared load, each
    one of the unpadded transpose's a read down a column of the tile, a float a lane."""
    c = conflicts(profile, "transpose_shmem_unpadded", side="ld")
    claim, where = ("A [32][32] tile gives the shared transpose a 32-way bank conflict",
                    "\"loading the shared memory array of size [32][32] ... results in a 32 way memory bank conflict\"")
    test = f"per shared load (each a column read), the profiled sizes: {SERIAL - 1} extra wavefronts within {CLEAN}; {SHARE_CITE}"
    if c.empty:
        return Verdict(claim, where, NOT_CHECKED, _unprofiled(profile, "transpose_shmem_unpadded"), test)
    return Verdict(claim, where, _share(c >= SERIAL - 1 - CLEAN),
                   f"Nsight Compute, transpose_shmem_unpadded, extra wavefronts per shared load (4 B a lane: {SERIAL - 1} when "
                   "each lane is served alone): " + "; ".join(f"n={n}: {v:.1f}" for n, v in c.items()), test)


def transpose_padding(profile: pd.DataFrame | None, t: pd.DataFrame, sizes: list[int] | None) -> Verdict:
    """The lab: padding the tile to [32][33] eliminates the conflict completely."""
    r = _at(_ratio(_col(t, _label("transpose_shmem_unpadded")), _col(t, _label("transpose_shmem"))), sizes)
    unpadded, padded = conflicts(profile, "transpose_shmem_unpadded"), conflicts(profile, "transpose_shmem")
    both = unpadded.index.intersection(padded.index)
    return Verdict("Padding the tile to [32][33] removes the bank conflict completely",
                   "\"When we pad the second dimension by one ... this bank conflict is completely eliminated\"",
                   _share(padded[both] <= CLEAN) if len(both) else NOT_CHECKED,
                   ("Nsight Compute, extra wavefronts per shared-memory instruction (loads or stores, the more), unpadded / "
                    "padded: " + "; ".join(f"n={n}: {unpadded[n]:.1f} / {padded[n]:.1f}" for n in both) if len(both) else
                    _unprofiled(profile, "transpose_shmem_unpadded", "transpose_shmem"))
                   + f"; unpadded time / padded time {_each(r)}",
                   f"per shared instruction, the profiled sizes: the padded tile within {CLEAN} wavefront; {SHARE_CITE}")


def _same_code(profile: pd.DataFrame | None) -> str:
    """Today's nvcc on the two kernels: their warp instructions at each profiled size."""
    if profile is None or not {"warp_inst", "m"} <= set(profile.columns):
        return ""
    s, o = _square(profile, "transpose_shmem"), _square(profile, "transpose_optimized")
    at = s.index.intersection(o.index)
    if at.empty:
        return ""
    return ("today's nvcc (the run's metadata names it): transpose_shmem and transpose_optimized execute "
            + "; ".join(f"n={n}: {s.warp_inst[n]:,.0f} and {o.warp_inst[n]:,.0f}" for n in at) + " warp instructions"
            + (", the same: it unrolls the loop of four unasked" if (s.warp_inst[at] == o.warp_inst[at]).all() else ""))


def compiler_unrolls(profile: pd.DataFrame | None) -> Verdict:
    """The lab: its compiler already unrolled the loops it added `#pragma unroll` to: a claim about
    the nvcc of 2018; today's is evidence only."""
    today = _same_code(profile)
    return Verdict("The compiler already unrolls the loops", "\"the compiler already does a great job at optimizing the "
                   "code, including unrolling\"", NOT_TESTABLE,
                   "what would test it: both kernels built by the lab's nvcc of 2018 (CUDA 9 or 10) and profiled "
                   "(`mmbench profile`), the same instruction counts meaning it unrolled unasked" + (f"; {today}" if today else ""),
                   "a claim about the lab's compiler of 2018")


def transpose_verdicts(ok: pd.DataFrame, t: pd.DataFrame, profile: pd.DataFrame | None, tiles: pd.DataFrame | None,
                       sizes: list[int] | None, reference: dict | None = None) -> list[Verdict]:
    """The lab's claims about its transposes, in its order."""
    memcpy, naive = _col(t, _label("memcpy")), _col(t, _label("transpose_naive"))
    shmem, opt = _col(t, _label("transpose_shmem")), _col(t, _label("transpose_optimized"))
    out = [naive_coalescing(profile), best_tile(tiles, sizes), transpose_conflict(profile),
           transpose_padding(profile, t, sizes), compiler_unrolls(profile)]
    whole = _ratio(opt, shmem)
    r, rest = _at(whole, sizes), _beyond(whole, sizes)
    out.append(Verdict("Unrolling adds little", "\"The effect on efficiency is minimal\"",
                       NOT_CHECKED if r.empty else _share((r - 1).abs() < LITTLE),
                       f"optimized time / shmem time {_each(r, '{:.3f}')}"
                       + other_scopes({"other sizes": _each(rest, "{:.3f}")} if len(rest) else {}, "the lab's sizes"),
                       f"{_setting(sizes, r)}; within {LITTLE:.0%}; {SHARE_CITE}"))
    spread = pd.concat([_by_size(ok, "transpose", v, "cv") for v in ("transpose_shmem", "transpose_optimized")],
                       axis=1).max(axis=1).reindex(r.index)
    gain, today = 1 - r, _same_code(profile)
    out.append(Verdict("Unrolling's gain is noticeable", "\"though noticeable\"",
                       NOT_CHECKED if r.empty else _share(gain > spread),
                       f"optimized's gain on shmem {_each(gain, '{:+.1%}')} against the samples' spread (the larger "
                       f"standard deviation / mean) {_each(spread, '{:.1%}')}" + (f"; {today}" if today else ""),
                       f"{_setting(sizes, r)}; faster by more than the samples' spread; {SHARE_CITE}"))
    out.append(steady_times(ok, "transpose", sizes))
    whole_s, whole_o = _ratio(shmem, memcpy), _ratio(opt, memcpy)
    rs, ro = _at(whole_s, sizes), _at(whole_o, sizes)
    beyond = {"other sizes": f"shmem {_each(_beyond(whole_s, sizes))}, optimized {_each(_beyond(whole_o, sizes))}"}
    out.append(Verdict("shmem and optimized about the same as GPU memcpy or better", "\"Our shmem and optimized versions "
                       "are about the same or better than GPU memcpy\"",
                       NOT_CHECKED if rs.empty else _share((rs <= 1 + SAME) & (ro.reindex(rs.index) <= 1 + SAME)),
                       f"time / memcpy time, shmem {_each(rs)}, optimized {_each(ro)}"
                       + other_scopes(beyond if len(_beyond(whole_s, sizes)) else {}, "the lab's sizes"),
                       f"{_setting(sizes, rs)}; both within {SAME:.0%} of memcpy or faster; {SHARE_CITE}"))
    rs, ro = _at(_ratio(naive, shmem), sizes), _at(_ratio(naive, opt), sizes)
    each = pd.Series([weakest(a, b) for a, b in zip(_about(rs, 3), _about(ro.reindex(rs.index), 3))], index=rs.index,
                     dtype=object)
    theirs = _lab_ratio(reference, "Naive GPU", "shmem GPU", "transpose_ms")
    out.append(Verdict("shmem and optimized about 3x faster than naive", "\"about 3 times as fast as the naive GPU version\"",
                       NOT_CHECKED if rs.empty else _share(each == YES),
                       f"naive time / shmem time {_each(rs)}; naive time / optimized time {_each(ro)}: the factor grows with "
                       f"size; by the about rule at each size, the weaker of the two: {_outcomes(each)}, so within 1.5x of 3 "
                       f"at {int((each == YES).sum())} of {len(each)} sizes"
                       + (f"; the lab's own table (naive / shmem): {_each(theirs)}" if len(theirs) else ""),
                       f"{_setting(sizes, rs)}; an estimate of 3x: {ABOUT_CITE}, at each size, shmem and optimized both; "
                       f"{SHARE_CITE}"))
    return out


def verdicts(ok: pd.DataFrame, profile: pd.DataFrame | None = None, reference: dict | None = None,
             tiles: pd.DataFrame | None = None) -> list[Verdict]:
    """Each claim of the lab, in its order, checked on our numbers (times: median of samples;
    `tiles`: the tile sweep's ok rows, when it was run), judged at the lab's sizes (its tables',
    `reference`), other sizes extra evidence."""
    sizes = list((reference or {}).get("sizes") or []) or None
    return (transpose_verdicts(ok, transpose_times(ok), profile, tiles, sizes, reference)
            + matmul_verdicts(ok, matmul_times(ok), profile, reference, sizes))


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
    "It takes 0.049 ms at 512 where the lab's took 26.6 ms (about 10 GFLOP/s), so every verdict that measures against "
    "naive (the cache versions' gain on it and their cache hits against its, the atomics' cost, the shared one 10x "
    "faster than naive) judges our naive, not the lab's, and rests on that choice. Can the "
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
    "tiles of A and B are loaded and that A's reads conflict; this mapping is ours, so the rows on where its conflicts "
    "lie, how many ways and that padding removes them are by construction (the counts confirm the build), and the "
    "padding verdicts (padding speeds ours up 3 to 4x where the lab's slowed) are about it.",
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


def claims_section(vs: list[Verdict]) -> list[str]:
    """The report's verdicts: one row a claim of the lab, and their count."""
    return ["## The lab's claims, checked", "",
            "One row a claim of the lab, in its order (how it built its kernels is description, not claim), each judged "
            "in the lab's setting (its tables' sizes, the profiled sizes for counts) by the rule of "
            "mmbench/studies/rule.py; rows judged on a kernel of ours where the lab's differs say so.", "",
            *verdict_table(vs), "", claims_line(v.holds for v in vs), ""]


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
        *claims_section(vs),
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

