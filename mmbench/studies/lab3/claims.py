"""The lab's claims, each checked against our numbers: a Verdict a claim, in the lab's order, judged
by the rule of mmbench/studies/rule.py in the lab's setting (its tables' sizes, the profiled sizes
for counts); `verdicts` gives them all."""

from __future__ import annotations

import pandas as pd

from ..common import Verdict
from ..rule import (ABOUT_RULE, BY_CONSTRUCTION, NOT_CHECKED, NOT_TESTABLE, SHARE_RULE, SIZE_RULE, YES, by_about,
                    by_share, by_size, other_scopes, weakest)
from .measures import (LAB_MATMUL, LAB_TRANSPOSE, _by_size, _label, _span, _square, matmul_times, tile_sweep,
                       transpose_times)

# The rule each verdict applies, as its "judged by" cell cites it (mmbench/studies/rule.py)
SHARE_CITE = f"share rule ({SHARE_RULE})"
SIZE_CITE = f"size rule ({SIZE_RULE})"
ABOUT_CITE = f"about rule ({ABOUT_RULE})"


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    both = a.index.intersection(b.index)
    return (a[both] / b[both]).dropna()


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


# The profile the reference run has beside it (a user's run gives its own --results)
PROFILE_COMMAND = "`mmbench profile --config configs/lab3.toml --points 1024,4096`"
# What would check each of the claims below when its data is missing (a user's own run has no
# profile or tile sweep beside it).
UNTESTED = (
    ("Block size 32 is the best choice for the transposes", "\"The best choice for block size is 32. It fits well with the WARPs\"",
     "the tile sweep beside the reference run: `mmbench run --config configs/companions/lab3-tiles.toml "
     "-o results/lab3-h200/tiles/lab3-tiles.csv`"),
    ("The naive transpose uses the warps well but does not coalesce", "\"uses the warps well, but does not coalesce memory\"",
     "sectors per global request and divergent branches of transpose_naive: " + PROFILE_COMMAND),
    ("Shared-memory conflicts cost less than global ones would", "\"since the bank conflicts are on shared memory, the "
     "impact isn't nearly as great as it would be for global reads and writes\"",
     "the unpadded shared transpose's conflicts against the naive one's uncoalesced stores, in time and counts: "
     + PROFILE_COMMAND),
)


def _untested(i: int) -> Verdict:
    claim, where, what = UNTESTED[i]
    return Verdict(claim, where, NOT_CHECKED, f"what would check it: {what}")


TILE_TOL = 0.05  # tile 32 counts as the best when within 5 % of the fastest tile (the sweep's samples spread 0 to 9 %)


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
