"""Zosa 2017's claims, each a function that reads our results and says whether it still holds on
this GPU, with the numbers that decide it, or, by rule.py, that it holds by how we wrote the
kernels or cannot be judged here (and what would judge it); `verdicts` gives them all, in the
report's order, and `hot_verdicts` the timing ones on a hot-L2 run beside the cold one.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd

from ... import analysis, hierarchy
from ...kernel_text import code_of
from ...source import kernels_dir
from .. import rule
from ..common import Verdict
from .measures import _span, _timed_and_profiled, best_series
from .paper import FIG1_SIZES, GK210, PAPER

ONE_OUTPUT = ("interleaved", "unroll_k2", "shared", "naive", "shared_uncoalesced")  # one output per thread


# -- its findings ------------------------------------------------------------------------------------
# Judged by rule.py: each claim in the paper's scope (its kernels timed over Figure 2's sizes, or
# Figure 1's four), by the rule's thresholds; a claim about the K80, 2017's CPUs or libraries is
# not testable here, and one true by how we wrote the kernels is by construction.


def needs(*variants: str):
    """Mark a finding with the variants whose rows it compares."""
    def mark(fn):
        fn.needs = variants
        return fn
    return mark


def _share(mask: pd.Series) -> str:
    return f"{int(mask.sum())} of {len(mask)} sizes"


def _held(mask: pd.Series) -> str:
    """rule.by_share of a claim holding where mask is true."""
    return rule.by_share(int(mask.sum()), len(mask))


def _gf(df, variant, block=None) -> pd.Series:
    s = analysis.find(df, variant, block)
    return analysis.curve(df, s) if s else pd.Series(dtype=float)


def _fig2(sizes: int, how: str = "share rule") -> str:
    return f"kernel scope, Figure 2's {sizes} sizes; {how}"


# A claim of a direction and a size (rule.weakest): a factor ("twice", "halve", "quarter") on a log
# scale, an estimate ("about 20 GFLOP/s", "another doubling (about 480)") within a factor of it.
DIRECTION_AND_FACTOR = f"share rule on the direction, factor rule on the median ({rule.FACTOR_RULE})"
DIRECTION_AND_ABOUT = f"share rule on the direction, estimate rule on the median ({rule.ABOUT_RULE})"


# What would test a claim about the paper's machine (rule 2): the run again on it.
K80 = "the config run on a Tesla K80 (one GK210), built with CUDA 11 (the last CUDA to compile for its sm_37)"
K80_HOST = f"{K80}, BLAS on the paper's two 8-core Xeon E5-2640 v3"


@needs("best")
def larger_blocks_faster(df) -> Verdict:
    curves = {b: _gf(df, "best", b).reindex(list(FIG1_SIZES)) for b in (8, 16, 32)}
    ordered = (curves[8] < curves[16]) & (curves[16] < curves[32])
    detail = "; ".join(f"n={n}: {curves[8][n]:.0f} / {curves[16][n]:.0f} / {curves[32][n]:.0f}" for n in curves[8].index)
    return Verdict("Larger blocks are faster (8x8 < 16x16 < 32x32)", "Figure 1: 32x32 fastest at 256-2048", _held(ordered),
                   f"order 8 < 16 < 32 at {_share(ordered)} of Figure 1; GFLOP/s 8 / 16 / 32: {detail}",
                   test=f"kernel scope, Figure 1's {len(ordered)} sizes; share rule")


@needs("best", *ONE_OUTPUT)
def best_beats_one_output(df) -> Verdict:
    best = pd.concat({b: _gf(df, "best", b) for b in (8, 16, 32)}, axis=1).min(axis=1)
    single = pd.concat({v: _gf(df, v, 32) for v in ONE_OUTPUT}, axis=1).max(axis=1)
    both = best.index.intersection(single.index)
    wins = best[both] > single[both]
    from_n = next((n for n in both if wins[wins.index >= n].all()), None)
    return Verdict("CUDA-Best at every block size beats every one-output version", "Figure 2, all sizes", _held(wins),
                   f"slowest Best above fastest one-output version at {_share(wins)}"
                   + (f"; at every size from n = {from_n}" if from_n else ""), test=_fig2(len(wins)))


@needs(*ONE_OUTPUT)
def interleaved_best_single(df) -> Verdict:
    curves = pd.concat({v: _gf(df, v, 32) for v in ONE_OUTPUT}, axis=1).dropna()
    top = curves.idxmax(axis=1)
    wins = top == "interleaved"
    big = wins[wins.index >= 1024]
    runner = top[~wins].value_counts()
    return Verdict("CUDA-1IL is the best one-output version", "Figure 2", _held(wins),
                   f"1IL fastest one-output version at {_share(wins)} ({_share(big)} from n = 1024)"
                   + (f"; otherwise {', '.join(f'{v} ({c})' for v, c in runner.items())}" if len(runner) else ""),
                   test=_fig2(len(wins)))


@needs("unroll_k2", "shared")
def unroll_adds_little(df) -> Verdict:
    gain = (_gf(df, "unroll_k2", 32) / _gf(df, "shared", 32)).dropna() - 1
    paper = PAPER["unroll_gain_gflops"] / PAPER["shared_gflops"]  # 20 on CUDA-1's "more than 200"
    med = gain.median()
    # "about 20 Gflops/s": an estimate of the gain (rule.by_about), as a share of CUDA-1's rate
    return Verdict("CUDA-C_Unroll adds little over CUDA-1",
                   f"sections 3 and 3.3.4: about +{PAPER['unroll_gain_gflops']} GFLOP/s on CUDA-1's \"more than "
                   f"{PAPER['shared_gflops']}\" (+{paper:.0%}), Figure 2",
                   rule.weakest(_held(gain > 0), rule.by_about(med, paper) if med > 0 else rule.NO),  # a loss: no
                   f"C_Unroll faster at {_share(gain > 0)}; median gain {med:+.1%}, "
                   + (f"{max(med / paper, paper / med):.2f}x {'under' if med < paper else 'over'}" if med > 0 else "a loss against")
                   + f" the paper's +{paper:.0%} (range {gain.min():+.1%} to "
                   f"{gain.max():+.1%}; n >= 512: median {gain[gain.index >= 512].median():+.1%})",
                   test=_fig2(len(gain), DIRECTION_AND_ABOUT) + f" (paper: about +{paper:.0%})")


@needs("shared_uncoalesced", "naive")
def uncoalesced_below_naive(df) -> Verdict:
    ratio = (_gf(df, "shared_uncoalesced", 32) / _gf(df, "naive", 32)).dropna()
    return Verdict("CUDA-1u is slower than CUDA-Naive", "Figure 2, section 3.1.1", _held(ratio < 1),
                   f"1u slower at {_share(ratio < 1)}; 1u/Naive median {ratio.median():.2f}", test=_fig2(len(ratio)))


@needs("shared_uncoalesced", "shared")
def access_variation_worse(df) -> Verdict:
    """Section 3.3.1: every variation of CUDA-1's access pattern was slower. Our one such variation
    is CUDA-1u (the tile loads' x and y swapped); the paper's others are not described."""
    ratio = (_gf(df, "shared_uncoalesced", 32) / _gf(df, "shared", 32)).dropna()
    return Verdict("Every variation of CUDA-1's memory access pattern made it slower",
                   "section 3.3.1: \"all attempts worsening performance\"", _held(ratio < 1),
                   f"our one variation, CUDA-1u, slower than CUDA-1 at {_share(ratio < 1)}; 1u / CUDA-1 {_span(ratio)} "
                   f"(median {ratio.median():.2f})", test=_fig2(len(ratio)) + "; our one variation (CUDA-1u) judged")


@needs("shared", "naive")
def shared_doubles_naive(df) -> Verdict:
    r = (_gf(df, "shared", 32) / _gf(df, "naive", 32)).dropna()
    return Verdict("CUDA-1 is more than twice CUDA-Naive", "section 3.3.1: \"more than double\", > 200 GFLOP/s",
                   rule.weakest(_held(r > 1), rule.by_factor(r.median(), PAPER["shared_over_naive"])),
                   f"CUDA-1 faster at {_share(r > 1)}; CUDA-1 / Naive {_span(r)} (median {r.median():.2f}: "
                   f"{_log_share(r.median(), PAPER['shared_over_naive'])} of the paper's x{PAPER['shared_over_naive']:.0f} "
                   f"on a log scale); above 2 at {_share(r > 2)}",
                   test=_fig2(len(r), DIRECTION_AND_FACTOR) + " (paper: x2); the K80's 200 GFLOP/s not judged")


@needs("best", "interleaved")
def four_outputs_double_interleaved(df) -> Verdict:
    r = (_gf(df, "best", 32) / _gf(df, "interleaved", 32)).dropna()
    const = (_gf(df, "best_const", 32) / _gf(df, "interleaved", 32)).dropna()
    return Verdict("CUDA-Best (four outputs a thread) is about twice CUDA-1IL", "section 3.3.6: \"another doubling\" (~480 GFLOP/s)",
                   rule.weakest(_held(r > 1), rule.by_about(r.median(), PAPER["best_over_interleaved"])),
                   f"Best faster at {_share(r > 1)}; Best / 1IL median {r.median():.2f}, "
                   f"{PAPER['best_over_interleaved'] / r.median():.2f}x under the paper's 2 ({_span(r)}; n >= 512: median "
                   f"{r[r.index >= 512].median():.2f}); Best const / 1IL median {const.median():.2f}",
                   test=_fig2(len(r), DIRECTION_AND_ABOUT) + " (paper: about x2)")


@needs("best", "best_const")
def constant_block_faster(df) -> Verdict:
    r = (_gf(df, "best_const", 32) / _gf(df, "best", 32)).dropna()
    return Verdict("Dropping the tile bound's min() (constant block size) is faster", "section 2.5: the final version drops it \"for the sake of performance\"",
                   _held(r > 1), f"Best const / Best {_span(r)} (median {r.median():.3f}); faster at {_share(r > 1)}",
                   test=_fig2(len(r)))


def _peak(df) -> tuple[str, pd.Series]:
    """The paper's version (cuBLAS and BLAS aside) with the highest GFLOP/s, and its curve."""
    gpu = df[(df.backend == "cuda")] if "backend" in df else df
    curves = {s.label: analysis.curve(gpu, s) for s in analysis.series_list(gpu) if s.variant != "cublas"}
    top = max(curves, key=lambda k: curves[k].max())
    return top, curves[top]


@needs("best")
def peak_from_four_outputs(df) -> Verdict:
    top, curve = _peak(df)
    return Verdict("The peak comes from a four-output version (CUDA-Best)",
                   "abstract and section 3.3.6: the peak from four outputs a thread", rule.by_order(top.startswith("CUDA-Best")),
                   f"our peak of the paper's versions: {top}, {curve.max():.0f} GFLOP/s at n = {curve.idxmax()}",
                   test=_fig2(len(curve), "order rule"))


def _log_share(ours: float, paper: float) -> str:
    """Ours as a share of the paper's factor on a log scale (what rule.by_factor holds to 1/2)."""
    return f"{np.log(ours) / np.log(paper):.2f}" if ours > 0 else "-"


FINDINGS: tuple[Callable, ...] = (peak_from_four_outputs, larger_blocks_faster, best_beats_one_output, interleaved_best_single,
                                  unroll_adds_little, uncoalesced_below_naive, access_variation_worse,
                                  shared_doubles_naive, four_outputs_double_interleaved, constant_block_faster)


# -- claims about the K80, 2017's CPUs and libraries: not testable here (rule 2) ---------------------------
def _era(finding: str, paper: str, about: str, would: str, df, numbers: Callable[[pd.DataFrame], str]) -> Verdict:
    """A claim about the paper's machine, saying what would test it; our numbers beside it, where
    the run has them, as other evidence (never the verdict)."""
    ours = f"; on the H200 (not the verdict): {numbers(df)}" if df is not None else ""
    return Verdict(finding, paper, rule.NOT_TESTABLE, f"what would test it: {would}{ours}", test=about)


@needs("best")
def k80_peak(df) -> Verdict:
    def numbers(df):
        top, curve = _peak(df)
        return f"{top}, {curve.max():.0f} GFLOP/s at n = {curve.idxmax()}"
    return _era(f"The peak is {PAPER['peak_gflops']} GFLOP/s, above the {PAPER['target_gflops']} GFLOP/s goal",
                f"abstract: {PAPER['peak_gflops']} GFLOP/s on one GK210 (goal {PAPER['target_gflops']})",
                "a claim about the K80's rate", K80, df, numbers)


@needs("shared_uncoalesced", "blas")
def uncoalesced_overtaken_by_blas(df) -> Verdict:
    def numbers(df):
        u, blas = _gf(df, "shared_uncoalesced", 32), _gf(df, "blas")
        both = u.index.intersection(blas.index)
        cut = PAPER["uncoalesced_crossover_n"]
        ahead = blas[both] > u[both]
        return (f"BLAS ahead of 1u at {_share(ahead[both > cut])} past {cut} and at {_share(ahead[both <= cut])} up to it; "
                f"1u / BLAS past {cut}: {_span((u[both] / blas[both])[both > cut])}")
    return _era("CUDA-1u is overtaken by multicore BLAS past n = 512", "Figure 2: BLAS above 1u for n > 512",
                "a claim about a K80 kernel against 2017's CPUs", K80_HOST, df, numbers)


@needs("best", "blas")
def plateau_while_blas_rises(df) -> Verdict:
    def numbers(df):
        grow = {}
        for name, c in (("CUDA-Best", _gf(df, "best", 32)), ("BLAS", _gf(df, "blas"))):
            # Medians of each +-1 triple: a single wave-quantization dip (e.g. n = 1025) is not a trend.
            mid, top = c[(c.index >= 1023) & (c.index <= 1025)].median(), c[c.index >= 2047].median()
            grow[name] = top / mid - 1
        return f"median GFLOP/s from n = 1023-1025 to 2047-2049: CUDA-Best {grow['CUDA-Best']:+.0%}, BLAS {grow['BLAS']:+.0%}"
    return _era("CUDA-Best plateaus past 1024 while multicore BLAS keeps rising", "Figure 2 and Table 1",
                "a claim about the K80 and 2017's CPUs", K80_HOST, df, numbers)


@needs("best")
def plateau_from_512(df) -> Verdict:
    def numbers(df):
        best = _gf(df, "best", 32)
        near = best[best >= 0.9 * best.max()]
        return (f"CUDA-Best at 512: {best[512]:.0f} GFLOP/s, {best[512] / best.max():.0%} of its peak ({best.max():.0f} at "
                f"n = {best.idxmax()}); first within 10 % of it at n = {near.index.min()}")
    return _era("CUDA-Best plateaus early, at its peak from n = 512", "Table 1: 483 GFLOP/s at 512, none higher after",
                "a claim about the K80: the size a kernel fills a GPU at is the GPU's (13 SMX; the H200 has 132 SMs)", K80, df, numbers)


@needs("best", "blas")
def speedup_falls_with_size(df) -> Verdict:
    def numbers(df):
        r = analysis.ratio(df, best_series(df), analysis.find(df, "blas"))
        return (f"{r.get(256):.1f}x at 256, {r.get(512):.1f}x at 512, {r.get(768):.1f}x at 768, "
                f"median {r[r.index >= 1024].median():.1f}x for n >= 1024")
    return _era("The CUDA-Best / BLAS speed-up falls with size", "Figure 5: 50x at 256, 30x at 512, drops past 768",
                "a claim about a K80 kernel against 2017's CPUs", K80_HOST, df, numbers)


@needs("best_const", "cublas")
def libraries_ahead(df) -> Verdict:
    def numbers(df):
        r = (_gf(df, "cublas") / _gf(df, "best_const", 32)).dropna()
        return f"cuBLAS / CUDA-Best const (32x32) median {r.median():.2f} ({_span(r)}), faster at {_share(r > 1)}"
    return _era("CUDA's libraries reach greater, more consistent performance than these kernels",
                "section 4 (future work)", "a claim about 2017's CUDA libraries on the K80",
                f"{K80}, with 2017's cuBLAS (CUDA 8 or 9) beside the kernels", df, numbers)


ERA_FINDINGS: tuple[Callable, ...] = (k80_peak, uncoalesced_overtaken_by_blas, plateau_while_blas_rises, plateau_from_512,
                                      speedup_falls_with_size, libraries_ahead)


# -- findings that read the run's metadata (ptxas, ceilings) or its Nsight Compute profile ----------------
def roofline_read_off(df, meta: dict, profile: pd.DataFrame | None, reference: dict, which: str) -> Verdict:
    """Figures 3 and 4: the paper's intensity is its performance over a bandwidth (a point read
    off the bandwidth roof); that is the kernel's intensity only if the kernel is DRAM-bound.
    Judged on the paper's kernel (its tiling, which ours reproduces): the FLOP per byte it asks of global memory,
    loads and stores, bound its DRAM intensity from below on any GPU, the K80's included."""
    fig, key, ours_key = (("3", "dram_datasheet_gbytes_per_s", "datasheet") if which == "datasheet" else
                          ("4", "dram_measured_gbytes_per_s", "measured"))
    paper_bw = reference.get(key, 240 if which == "datasheet" else 154)
    paper_said = 2 if which == "datasheet" else 3
    paper_read = PAPER["peak_gflops"] / paper_bw
    ceilings = meta.get("ceilings") or {}
    bw = (ceilings.get("datasheet") or {}).get("dram_gbytes_per_s") if which == "datasheet" else ceilings.get("dram_copy_gbytes_per_s")
    best = best_series(df)
    mine = None if profile is None else profile[(profile.variant == best.variant) & (profile.params == best.params)]
    finding = f"Figure {fig}: the kernel runs at about {paper_said} FLOP/B ({paper_bw} GB/s roof)"
    said = f"{PAPER['peak_gflops']} GFLOP/s / {paper_bw} GB/s = {paper_read:.1f} FLOP/B, read off the roof"
    if not bw or mine is None or mine.empty or "global_ld_sectors" not in mine:
        return Verdict(finding, said, rule.NOT_CHECKED, "needs the run's ceilings and a profile of CUDA-Best with its global "
                       "sectors (`mmbench ceilings`, `mmbench profile --config configs/zosa2017.toml --points 256,1024,2048`)")
    # 32-byte sectors the kernel's loads and stores asked for; its tiles use every sector they touch, so no
    # GPU's DRAM moves more bytes for it
    asked = (mine.fp32_flops / ((mine.global_ld_sectors + mine.global_st_sectors) * 32)).set_axis(mine.n)
    floor = float(asked.min())
    curve = analysis.curve(df, best)
    n = _timed_and_profiled(curve, mine)
    perf = float(curve[n])
    measured = float(mine[mine.n == n].dram_intensity.iloc[0])
    read = perf / bw
    past = ""
    if int(mine.n.max()) > n and "l2_bytes" in mine:  # a size profiled past the run's: the profile's own rate and bytes
        big = hierarchy.levels(mine)
        big = big[big.n == big.n.max()].iloc[0]
        l2 = (meta.get("gpu") or {}).get("l2_bytes") or float("inf")
        where = "past the L2" if hierarchy.working_set_mb(big.op, big.m, big.n, big.k) * 1e6 > l2 else "beyond the run's sizes"
        past = (f"; {where} (n = {big.n}, profiled, not timed) it runs {big.gflops:.0f} GFLOP/s at {big.dram_intensity:.0f} "
                f"FLOP per DRAM byte, {big.dram_intensity / (big.gflops / bw):.0f}x its read-off {big.gflops / bw:.1f}")
    # "an estimated 2 flops/byte": rule.by_about against the nearest intensity the kernel can have, its
    # floor (the paper's own value where the floor lies under it: then the bytes cannot refute it)
    return Verdict(finding, said, rule.by_about(max(floor, paper_said), paper_said),
                   f"{best.label} asks global memory (loads and stores) for a byte per {floor:.1f} FLOP at the most "
                   f"({_by_n(asked, '{:.1f}')} FLOP/B), every 32-byte sector it touches used whole: no GPU's DRAM moves "
                   f"more for it, so its DRAM intensity is at least {floor:.0f} FLOP/B on any GPU, {floor / paper_said:.0f}x "
                   f"the paper's {paper_said}: the roof does not give its intensity. On the H200 (not the verdict): read "
                   f"off our {ours_key} roof ({bw:.0f} GB/s), "
                   f"{perf:.0f} / {bw:.0f} = {read:.1f} FLOP/B at n = {n}; Nsight Compute measures {measured:.0f} FLOP per "
                   f"DRAM byte, {measured / read:.0f}x that{past}",
                   test="the paper's kernel (its tiling, which ours reproduces): FLOP per byte it asks of global memory, a floor under its "
                        "DRAM intensity on any GPU; estimate rule on the nearest intensity the kernel can have (the floor, or "
                        f"the paper's value where the floor is under it): {rule.ABOUT_RULE}")


def occupancy_full(df, meta: dict, profile, reference) -> Verdict:
    """Section 2.9: registers and shared memory leave 32x32 blocks at full occupancy on the GK210:
    a claim about the K80, with the paper's own arithmetic and ours on the H200 beside it."""
    k = (meta.get("kernels") or {}).get("best[BLOCK=32]") or (meta.get("kernels") or {}).get("best_const[BLOCK=32]")
    finding = "32x32 CUDA-Best runs at full occupancy (registers and shared memory no limit)"
    said = f"section 2.9: {PAPER['registers']} registers, occupancy {PAPER['occupancy']:.0f} on the GK210"
    regs, smem = PAPER["registers"] * 1024, PAPER["shared_bytes_per_thread"] * 1024  # a 32x32 block's
    fits = min(GK210["threads"] // 1024, GK210["registers"] // regs, GK210["shared"] // smem)
    theirs = (f"by the paper's own figures, a block takes {regs // 1024}K of the GK210's {GK210['registers_per_block'] // 1024}K "
              f"registers a block and {smem // 1024} KB of its {GK210['shared'] // 1024} KB: {fits} blocks of 1024 threads "
              f"an SMX, occupancy {fits * 1024 / GK210['threads']:.2f}")
    ours = ""
    if k:
        # sm_90 per-SM limits (CUDA programming guide, compute capability 9.0)
        threads, regs_sm, smem_sm = 2048, 65536, 228 * 1024
        blocks = min(threads // 1024, regs_sm // (k["registers"] * 1024), smem_sm // max(k["shared_bytes"] + 1024, 1))
        ours = (f"; on the H200 (not the verdict): ptxas on {meta.get('gpu', {}).get('arch', 'this GPU')}: {k['registers']} "
                f"registers (our __launch_bounds__ allows 64), {k['shared_bytes']} B shared a block: {blocks} blocks of "
                f"1024 threads an SM, occupancy {blocks * 1024 / threads:.2f}")
    return Verdict(finding, said, rule.NOT_TESTABLE,
                   f"what would test it: ptxas and Nsight's occupancy of the paper's kernel in {K80}; {theirs}{ours}",
                   test="a claim about the GK210's registers and shared memory")


def interleaving_would_not_fit(df, meta: dict, profile, reference) -> Verdict:
    """Sections 3.2 and 3.3.6: interleaving (double tiles) on top of four outputs (double tiles)
    would pass the default 48 KB of shared memory a block. The paper's kernel takes twice our tiles'
    shared memory (its ptxas figure), so ours cannot judge it."""
    k = (meta.get("kernels") or {}).get("best[BLOCK=32]")
    limit = PAPER["default_shared_per_block"]
    theirs = 2 * PAPER["shared_bytes_per_thread"] * 1024
    ours = (f"; ours (not the verdict): CUDA-Best's tiles take {k['shared_bytes'] // 1024} KB a block (ptxas), doubled "
            f"{2 * k['shared_bytes'] // 1024} KB, {'over' if 2 * k['shared_bytes'] > limit else 'within'} the default "
            f"{limit // 1024} KB: our tiles are half the paper's" if k else "")
    return Verdict("Interleaving cannot be added to the four-output version: shared memory would exceed the default limit",
                   "sections 3.2 and 3.3.6 (\"already hitting the limits of shared memory\")", rule.NOT_TESTABLE,
                   f"what would test it: the paper's four-output kernel (its source is not published) through ptxas; by its "
                   f"own figure (32 B a thread, section 2.9) doubled it is {theirs // 1024} KB, over the {limit // 1024} KB{ours}",
                   test="a claim about the paper's kernel's shared memory, which ours does not reproduce")


CONTEXT_FINDINGS = (lambda df, meta, prof, ref: roofline_read_off(df, meta, prof, ref, "datasheet"),
                    lambda df, meta, prof, ref: roofline_read_off(df, meta, prof, ref, "measured"),
                    occupancy_full, interleaving_would_not_fit)

# -- findings the Nsight Compute profile decides (sections 2.6-2.8, 3.1.1) ---------------------------------
PROFILE_COMMAND = "`mmbench profile --config configs/zosa2017.toml --points 256,1024,2048,4096`"
CONFLICT_FREE = 0.01  # ours: below 0.01 bank conflicts per shared load instruction (1 in 100) counts as none
FULL_SECTORS = 4  # a warp's 32 floats are 128 B, four 32-byte sectors: a fully coalesced load request


def _counted(profile: pd.DataFrame | None, variant: str, column: str, block: int | None = 32) -> pd.Series:
    """One column of the profile by n for variant at BLOCK = block (None: cuBLAS, no parameters);
    empty when the profile or the column is missing."""
    if profile is None or column not in profile:
        return pd.Series(dtype=float)
    rows = profile[(profile.variant == variant) & (profile.params == (f"BLOCK={block}" if block else ""))]
    return rows.set_index("n")[column].astype(float).sort_index()


def _by_n(values: pd.Series, fmt: str = "{:.2f}") -> str:
    return ", ".join(f"{fmt.format(v)} at {n}" for n, v in values.items())


def _unprofiled(finding: str, said: str, what: str) -> Verdict:
    return Verdict(finding, said, rule.NOT_CHECKED, f"what would check it: {what} from {PROFILE_COMMAND}")


def _profiled(sizes) -> str:
    return f"kernel scope, the {len(sizes)} profiled sizes"


def shared_reads_conflict_free(profile) -> Verdict:
    """Section 2.6.2: A's tile read as a broadcast, B's across 32 banks: no bank conflicts."""
    finding, said = "A warp reads one word of A's tile (a broadcast) and 32 banks of B's: no bank conflicts", "section 2.6.2"
    ld = {v: _counted(profile, v, "conflicts_per_shared_ld") for v in ("shared", "best")}
    if any(c.empty for c in ld.values()):
        return _unprofiled(finding, said, "bank conflicts per shared load of shared and best")
    free = pd.concat(ld.values()) < CONFLICT_FREE
    st = {v: _counted(profile, v, "conflicts_per_shared_st") for v in ("shared", "best", "shared_uncoalesced")}
    return Verdict(finding, said, _held(free),
                   f"bank conflicts per shared-memory load instruction (n = {', '.join(map(str, ld['shared'].index))}): "
                   f"CUDA-1 {_by_n(ld['shared'], '{:.4f}')}; CUDA-Best {_by_n(ld['best'], '{:.4f}')}; under our "
                   f"{CONFLICT_FREE} at {int(free.sum())} of {len(free)} profiled points. The tile stores, which the "
                   f"claim does not cover: at most {max(st['shared'].max(), st['best'].max()):.2f} conflicts a store "
                   f"(CUDA-1, CUDA-Best), {st['shared_uncoalesced'].min():.0f} a store in CUDA-1u (its 32-way store)",
                   test=f"the shared loads of CUDA-1 and CUDA-Best at the {len(ld['shared'])} profiled sizes; share rule "
                        f"(none: under {CONFLICT_FREE} a load)")


def coalesced_loads(profile) -> Verdict:
    """Section 2.6.1: coalesced tile loads take the fewest sectors a request; 1u's do not."""
    finding, said = "Coalesced loads use the bus fully; 1u's loads do not", "section 2.6.1"
    sec = {v: _counted(profile, v, "sectors_per_global_ld") for v in ("shared", "shared_uncoalesced", "naive")}
    if sec["shared"].empty or sec["shared_uncoalesced"].empty:
        return _unprofiled(finding, said, "sectors per global load request of shared and shared_uncoalesced")
    # Coalesced: the 4 sectors of 32 floats; not coalesced: at least twice that.
    ok = (sec["shared"] <= FULL_SECTORS * 1.01) & (sec["shared_uncoalesced"] >= 2 * FULL_SECTORS)
    naive = f"; CUDA-Naive {sec['naive'].median():.1f} (A's word broadcast, B's row coalesced)" if len(sec["naive"]) else ""
    return Verdict(finding, said, _held(ok),
                   f"32-byte sectors per warp-wide global load (Nsight Compute), median over n = "
                   f"{', '.join(map(str, sec['shared'].index))}: CUDA-1 {sec['shared'].median():.1f} (max "
                   f"{sec['shared'].max():.1f}; {FULL_SECTORS} is all a warp's 32 floats need), CUDA-1u "
                   f"{sec['shared_uncoalesced'].median():.1f} (a sector a thread){naive}; CUDA-1 at {FULL_SECTORS} and "
                   f"1u at {2 * FULL_SECTORS} or more at {_share(ok)}", test=_profiled(ok) + "; share rule")


def _products(profile, variant: str) -> pd.Series:
    """m n k by n: the multiply-adds a GEMM of the profiled shape needs (not the FP32 operations
    counted, which C_Unroll's closing add raises)."""
    return _counted(profile, variant, "m") * _counted(profile, variant, "k") * _counted(profile, variant, "m").index


def _fewer(profile, variant: str, column: str, paper: float):
    """variant's count over CUDA-1's per multiply-add, by n, and rule.weakest of the direction's
    share and the median against the paper's factor (rule.by_factor: "halve", "quarter"); None when
    the profile lacks the counts."""
    ratio = {v: _counted(profile, v, column) / _products(profile, v) for v in (variant, "shared")}
    r = (ratio[variant] / ratio["shared"]).dropna()
    if r.empty:
        return None, None
    return r, rule.weakest(_held(r < 1), rule.by_factor(r.median(), paper))


def four_outputs_halve_loads(profile) -> Verdict:
    """Section 2.7.2: four outputs a thread share their operands, so each output's shared-memory
    loads fall from 2n to n: half of CUDA-1's loads per multiply-add."""
    finding, said = "Four outputs a thread cut the loads per output from 2n to n", "section 2.7.2"
    r, holds = _fewer(profile, "best", "shared_ld_inst", PAPER["four_output_shared_loads"])
    if r is None:
        return _unprofiled(finding, said, "shared-memory load instructions of best and shared")
    # warp-wide load instructions x 32 threads over the multiply-adds: loads per output per k step
    per = {v: (_counted(profile, v, "shared_ld_inst") * 32 / _products(profile, v)).median() for v in ("best", "shared")}
    return Verdict(finding, said, holds,
                   f"shared-memory loads per output per k step (warp instructions x 32 over m n k): CUDA-Best "
                   f"{per['best']:.3f}, CUDA-1 {per['shared']:.3f}; Best / CUDA-1 {r.min():.3f} to {r.max():.3f} at n = "
                   f"{', '.join(map(str, r.index))} (the claim: n / 2n = 0.5). Both are under the paper's 1 and 2: one "
                   "load instruction can carry more than one word",
                   test=_profiled(r) + "; " + DIRECTION_AND_FACTOR + " (paper: x0.5)")


def _global_loads_verdict(profile, variant: str, finding: str, said: str, claimed: float, name: str,
                          reading: Callable[[pd.Series], str]) -> Verdict:
    """A claim that a version cuts CUDA-1's global loads by a factor: its warp-wide global load
    requests per multiply-add over CUDA-1's (sectors beside them), judged by the factor rule."""
    r, holds = _fewer(profile, variant, "global_ld_requests", claimed)
    if r is None:
        return _unprofiled(finding, said, f"global load requests of {variant} and shared")
    sec, _ = _fewer(profile, variant, "global_ld_sectors", claimed)
    return Verdict(finding, said, holds,
                   f"global load requests per multiply-add, {name} over CUDA-1: {_by_n(r, '{:.3f}')} (sectors: "
                   f"{_span(sec)}): {reading(r)}",
                   test=_profiled(r) + "; " + DIRECTION_AND_FACTOR + f" (paper: x{claimed:g})")


def four_outputs_quarter_global_loads(profile) -> Verdict:
    """Section 2.7.2: four outputs' tiles "loaded simultaneously in order to quarter the amount of
    loads from global memory": the warp-wide global load requests per multiply-add, Best over CUDA-1."""
    claimed = PAPER["four_output_global_loads"]
    return _global_loads_verdict(
        profile, "best", "Four outputs a thread quarter the loads from global memory", "section 2.7.2", claimed,
        "CUDA-Best", lambda r: f"halved, not quartered (the paper: {claimed}; a half is the factor rule's line, "
        f"{_log_share(r.median(), claimed)} of a quarter on a log scale); a 64x64 tile of C takes two 64x32 operand "
        "tiles a step where four 32x32 tiles of CUDA-1 take four pairs of 32x32, as the same section's 2n to n and "
        "section 3.3.6's \"four elements with four loads\" say")


def unroll_halves_global_loads(profile) -> Verdict:
    """Section 2.7.1: C_Unroll loads two consecutive tiles at once "in order to halve the amount of
    loads from global memory": its global load requests per multiply-add over CUDA-1's."""
    return _global_loads_verdict(
        profile, "unroll_k2", "C_Unroll's two tiles at once halve the loads from global memory", "section 2.7.1",
        PAPER["unroll_global_loads"], "C_Unroll",
        lambda r: "as many loads, half as many trips; every operand is loaded once a block either way")


def uncoalesced_piecewise(profile) -> Verdict:
    """Section 3.1.1: 1u's uncoalesced loads come "piece by piece", while some of Naive's coalesce."""
    finding, said = "1u's uncoalesced loads arrive piece by piece; some of Naive's coalesce", "section 3.1.1"
    sec = {v: _counted(profile, v, "sectors_per_global_ld") for v in ("naive", "shared_uncoalesced")}
    if any(s.empty for s in sec.values()):
        return _unprofiled(finding, said, "sectors per global load request of naive and shared_uncoalesced")
    ok = (sec["shared_uncoalesced"] >= 2 * FULL_SECTORS) & (sec["naive"] <= FULL_SECTORS)
    return Verdict(finding, said, _held(ok),
                   f"32-byte sectors per warp-wide global load: 1u {_by_n(sec['shared_uncoalesced'], '{:.1f}')} (a sector "
                   f"a thread); Naive {_by_n(sec['naive'], '{:.1f}')} (A's word broadcast, B's row coalesced); both at "
                   f"{_share(ok)}",
                   test=_profiled(ok) + f"; share rule (piece by piece: {2 * FULL_SECTORS} or more sectors a request; "
                        f"coalesced: {FULL_SECTORS} or fewer)")


def naive_hits_caches(profile) -> Verdict:
    """Section 3.1.1: Naive's operands hit the K80's L2, L1 and read-only caches: a claim about the
    K80's caches, the H200's hit rates beside it."""
    finding, said = "Naive beats 1u because its loads hit the L1, L2 and read-only caches", "section 3.1.1"
    hit = {(v, lv): _counted(profile, v, f"{lv}_hit_pct") for v in ("naive", "shared_uncoalesced") for lv in ("l1", "l2")}
    ours = ""
    if not any(h.empty for h in hit.values()):
        stall = {v: _counted(profile, v, "barrier_stall_per_issue").median() for v in ("shared", "shared_uncoalesced")}
        ours = (f"; on the H200 (not the verdict): L1 hit rate (the L1 is also the read-only cache here) Naive "
                f"{_by_n(hit['naive', 'l1'], '{:.0f} %')}; 1u {_by_n(hit['shared_uncoalesced', 'l1'], '{:.0f} %')}. L2 "
                f"hit rate: Naive {_by_n(hit['naive', 'l2'], '{:.0f} %')}; 1u {_by_n(hit['shared_uncoalesced', 'l2'], '{:.0f} %')}: "
                f"both hit, and what else differs is 1u's 32-way tile stores and warps waiting at its barriers "
                f"({stall['shared_uncoalesced']:.1f} an issued instruction against CUDA-1's {stall['shared']:.1f}, median)")
    return Verdict(finding, said, rule.NOT_TESTABLE,
                   f"what would test it: nvprof's read-only (texture), L1 and L2 hit rates of Naive and 1u in {K80}{ours}",
                   test="a claim about the K80's caches (Kepler's L1, read-only cache and 1.5 MB L2)")


def ilp_hides_latency(profile) -> Verdict:
    """Section 2.7: more independent work a thread hides memory latency. IPC, which the profile
    holds, is not ILP and does not measure latency hidden."""
    return Verdict("Increasing ILP hides memory latency", "section 2.7: \"increasing ILP is necessary to hide memory latency\"",
                   rule.NOT_TESTABLE, "what would test it: warps stalled on memory (long scoreboard) and on a dependent "
                   "instruction (wait) per issued instruction, CUDA-Best and C_Unroll against CUDA-1; `mmbench profile` "
                   f"records these stall reasons now, the committed profile predates them: {PROFILE_COMMAND}",
                   test="no counter of the committed profile measures it (IPC is not ILP)")


PROFILE_FINDINGS = (shared_reads_conflict_free, coalesced_loads, four_outputs_halve_loads, four_outputs_quarter_global_loads,
                    unroll_halves_global_loads, uncoalesced_piecewise, naive_hits_caches, ilp_hides_latency)


# -- claims true (or not) by how the kernels are written: their source and ptxas' records -------------------
def _tile_loop(relative: str) -> tuple[str, str]:
    """The header and body of a kernel's tile loop: the first for loop whose body holds a barrier,
    its braces matched, comments left out."""
    code = code_of((kernels_dir() / relative).read_text())
    at = 0
    while (at := code.find("for (", at)) >= 0:
        open_ = code.find("{", at)
        depth, end = 1, open_ + 1
        while depth:
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            end += 1
        body = code[open_:end]
        if "__syncthreads" in body and code[at:open_].count(";") == 2:  # the loop's own header, not a braceless loop's
            return code[at:open_], body
        at += 1
    raise ValueError(f"{relative} has no tile loop with a barrier")


def barriers_per_tile(relative: str) -> float:
    """__syncthreads calls a k tile: those of one trip of the tile loop over the tiles a trip
    takes (C_Unroll's `k0 += 2 * BLOCK` takes two)."""
    header, body = _tile_loop(relative)
    step = re.search(r"\+=\s*(\d+)\s*\*", header)
    return body.count("__syncthreads") / (int(step.group(1)) if step else 1)


def accumulators(relative: str) -> int:
    """Float accumulators a thread keeps (`name = 0.0f` declarations): its independent FMA chains."""
    return len(re.findall(r"\b\w+ = 0\.0f\s*[,;]", code_of((kernels_dir() / relative).read_text())))


def _shared_bytes(meta: dict, variant: str) -> int | None:
    return ((meta.get("kernels") or {}).get(f"{variant}[BLOCK=32]") or {}).get("shared_bytes")


def _shared_doubled(meta: dict, variant: str) -> str:
    mine, base = _shared_bytes(meta, variant), _shared_bytes(meta, "shared")
    return (f"{mine // 1024} KB of shared memory a block against CUDA-1's {base // 1024} KB (ptxas, x{mine / base:.0f})"
            if mine and base else "the run's metadata has no ptxas figures")


def _construction(finding: str, paper: str, evidence: str, test: str = "our source: barriers a k tile, tiles declared") -> Verdict:
    return Verdict(finding, paper, rule.BY_CONSTRUCTION, evidence, test=test)


def unroll_halves_syncs(meta: dict, profile) -> Verdict:
    """Sections 2.7.1 and 3.3.4: two tiles a trip double the tiles and halve the barriers a tile."""
    b = {v: barriers_per_tile(f"gemm/{v}.cu") for v in ("shared", "unroll_k2")}
    return _construction("C_Unroll doubles the shared-memory tiles and halves the __syncthreads calls",
                         "sections 2.7.1 and 3.3.4",
                         f"barriers a k tile in our source: C_Unroll {b['unroll_k2']:g} (two a trip of two tiles), CUDA-1 "
                         f"{b['shared']:g}; {_shared_doubled(meta, 'unroll_k2')}")


def interleaving_halves_barriers(meta: dict, profile) -> Verdict:
    """Section 2.8: double buffering cuts the __syncthreads calls by about half, at double the
    shared memory. Counted in our kernels' source; warps stalled at a barrier (Nsight Compute), a
    stall and not a count, beside."""
    b = {v: barriers_per_tile(f"gemm/{v}.cu") for v in ("shared", "interleaved")}
    stall = {v: _counted(profile, v, "barrier_stall_per_issue") for v in ("shared", "interleaved")}
    measured = (f"; warps waiting at a barrier per issued instruction (a stall, not a count): CUDA-1IL "
                f"{_by_n(stall['interleaved'], '{:.1f}')}, CUDA-1 {_by_n(stall['shared'], '{:.1f}')}"
                if len(stall["shared"]) and len(stall["interleaved"]) else "")
    return _construction("Interleaving cuts the __syncthreads calls by about half, at double the shared memory", "section 2.8",
                         f"barriers a k tile in our source: CUDA-1IL {b['interleaved']:g}, CUDA-1 {b['shared']:g} (ratio "
                         f"{b['interleaved'] / b['shared']:.2f}); {_shared_doubled(meta, 'interleaved')}{measured}")


def interleaving_halves_again(meta: dict, profile) -> Verdict:
    """Section 3.3.5: the paper's 1IL, built on C_Unroll, halves C_Unroll's syncs again. Ours
    double-buffers single tiles, so it has C_Unroll's count: the paper's kernel is not ours."""
    b = {v: barriers_per_tile(f"gemm/{v}.cu") for v in ("unroll_k2", "interleaved")}
    return Verdict("Interleaving halves the syncs again, against C_Unroll", "section 3.3.5", rule.NOT_TESTABLE,
                   f"what would test it: a 1IL that double-buffers C_Unroll's two tiles a trip, as section 3.3.5 builds it "
                   f"(its barriers counted in its source); ours double-buffers single tiles: {b['interleaved']:g} barrier a k "
                   f"tile, as many as our C_Unroll's {b['unroll_k2']:g}; the paper's Algorithm 2 shows two a tile",
                   test="a claim about the paper's 1IL, which ours is not")


def four_outputs_double_shared(meta: dict, profile) -> Verdict:
    """Section 2.7.2: four outputs a thread hold two tiles of A and two of B."""
    return _construction("Four outputs a thread double the shared memory", "section 2.7.2",
                         f"CUDA-Best declares two tiles of A and two of B: {_shared_doubled(meta, 'best')}",
                         "our source: tiles declared (ptxas's shared memory)")


def independent_chains(meta: dict, profile) -> Verdict:
    """Sections 2.7, 2.7.1 and 3.3.6: more values computed at once a thread: more ILP."""
    chains = {label: accumulators(f"gemm/{v}.cu") for label, v in
              (("CUDA-Best", "best"), ("C_Unroll", "unroll_k2"), ("CUDA-1", "shared"), ("CUDA-1IL", "interleaved"))}
    return _construction("Four outputs (and C_Unroll's two values) a thread raise ILP: independent FMA chains",
                         "sections 2.7, 2.7.1 and 3.3.6",
                         "accumulators a thread in our source, each an independent FMA chain: "
                         + ", ".join(f"{k} {n}" for k, n in chains.items())
                         + "; IPC, which the profile holds, is not ILP", "our source: accumulators a thread")


def only_multiply_adds(meta: dict, profile) -> Verdict:
    """Section 2.4.1: the index arithmetic kept out of floating point, the multiply-adds are the
    only floating-point operations. Our indexes are integers; Nsight's FP32 count beside."""
    ratio = {v: _counted(profile, v, "fp32_flops") / (2 * _products(profile, v)) for v in ("best", "unroll_k2")}
    counted = (f"; Nsight Compute's FP32 operations over 2mnk: CUDA-Best {ratio['best'].min():.4f} to "
               f"{ratio['best'].max():.4f}, C_Unroll "
               f"{ratio['unroll_k2'].max():.4f} at most (its closing acc0 + acc1)" if len(ratio["best"]) else "")
    return _construction("The multiply-adds are the only floating-point operations", "section 2.4.1",
                         f"the kernels' float arithmetic is their FMAs; indexes and bounds are integer{counted}",
                         "our source: integer indexes")


def rectangular_blocks_undefined(meta: dict, profile) -> Verdict:
    """Section 2.5: a block larger than the tile in one dimension overruns the shared tiles."""
    return Verdict("Blocks larger than the tiles in one dimension are undefined behaviour, even in the robust version",
                   "section 2.5", rule.NOT_TESTABLE,
                   "what would test it: CUDA-Best launched with a block taller than its tile under compute-sanitizer "
                   "(out-of-bounds shared-memory writes); the harness launches every kernel with BLOCK x BLOCK threads",
                   test="the harness launches no such block")


def conditionals_no_effect(meta: dict, profile) -> Verdict:
    """Section 3.3.2: how the conditionals were written made no visible difference. The run holds no
    two kernels that differ in their conditionals alone."""
    return Verdict("Varying the conditionals had imperceptible effects on performance", "section 3.3.2", rule.NOT_TESTABLE,
                   "what would test it: CUDA-1 with and without its bounds tests, `mmbench run -v shared,shared_padded "
                   "--block 32 --sizes 63:2049` (shared_padded is CUDA-1 without them, on inputs zero-padded to the "
                   "tile); the paper's own variations (nested, separate, skipping spurious elements) are not described",
                   test="the run has no pair of kernels differing in their conditionals alone")


SOURCE_FINDINGS = (only_multiply_adds, rectangular_blocks_undefined, unroll_halves_syncs, interleaving_halves_barriers,
                   interleaving_halves_again, four_outputs_double_shared, independent_chains, conditionals_no_effect)


def verdicts(df: pd.DataFrame, meta: dict | None = None, profile: pd.DataFrame | None = None,
             reference: dict | None = None) -> list[Verdict]:
    """Every claim of the paper: a timing finding whose series the results lack says which,
    unchecked; a claim about the paper's machine says what would test it. With the run's metadata
    (and profile), the claims that read ptxas, the ceilings, Nsight Compute and our source too."""
    ok = analysis.ok_rows(df)
    out = []
    for f in FINDINGS + ERA_FINDINGS:
        missing = [v for v in dict.fromkeys(f.needs) if v not in set(ok.variant)]
        if f in ERA_FINDINGS:
            out.append(f(None if missing else ok))  # not testable either way; our numbers where the run has them
        elif missing:
            out.append(Verdict(f.__name__.replace("_", " "), "", rule.NOT_CHECKED, f"the results have no rows of {', '.join(missing)}"))
        else:
            out.append(f(ok))
    if meta is not None and "best" in set(ok.variant):
        out += [f(ok, meta, profile, reference or {}) for f in CONTEXT_FINDINGS]
    if meta is not None:
        out += [f(profile) for f in PROFILE_FINDINGS] + [f(meta, profile) for f in SOURCE_FINDINGS]
    return out


# -- the same findings with a hot L2 (the paper does not say it flushed any cache) -------------------------
def hot_verdicts(cold: pd.DataFrame, hot: pd.DataFrame) -> list[tuple[Verdict, Verdict]]:
    """Each timing finding judged on the cold-L2 run and on the hot-L2 run (verified rows of both)."""
    have = set(cold.variant) & set(hot.variant)
    return [(f(cold), f(hot)) for f in FINDINGS if set(f.needs) <= have]
