"""The AMD tiling tutorial's claims and their verdicts (rule.py), in the tutorial's order (`claims`):
judged from the run, its WARP = 64 companion and their Nsight Compute profiles where there are,
by construction or not testable here where no run can."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ...analysis import by_shape, ok_rows
from ...hierarchy import NAMES, checked, working_set_mb
from ...results import ResultsError
from ...variants import REGISTRY
from .. import rule
from ..common import Verdict
from .measures import (CUBLAS, FAMILIES, MATTERS, PROFILE, REDUCES, REGISTER_DEFAULT, REGISTER_WAVEFRONT, SEVERAL,
                       SIGNIFICANT, STEPS, WAVE_PROFILE, WAVEFRONT_RUN, _config, _plain, _shape, _span, aligned, family,
                       percent_of_cublas, register_over_lds, speedups, step_values, tile_table, wavefront_command)

# The widths a register-tiling claim is judged at: the tutorial's wavefront, and NVIDIA's warp (our
# default) given beside it as other evidence, never the verdict (rule.py, 1 and 2)
TUTORIAL, OURS = "WARP = 64", "WARP = 32"


def widths(df: pd.DataFrame, wave: pd.DataFrame | None) -> dict[str, pd.Series]:
    """Register over LDS tiling by shape at each width: the tutorial's from the companion `wave`
    (every shape, its own LDS rows) when there is one, else from the run's own WARP = 64 rows."""
    return {TUTORIAL: register_over_lds(df if wave is None else wave, REGISTER_WAVEFRONT),
            OURS: register_over_lds(df, REGISTER_DEFAULT)}


def _tutorial_scope(over: pd.Series, wave) -> str:
    """Where the tutorial's width was timed: the companion's shapes or the run's own few."""
    shapes = f"{len(over)} shape{'s' if len(over) != 1 else ''}"
    return (f"{TUTORIAL} (the tutorial's), {shapes} of the companion run" if wave is not None else
            f"{TUTORIAL} (the tutorial's), the {shapes} this run timed it at")


def _faster(over: pd.Series) -> str:
    return f"LDS time / register time {_span(over)}, register faster at {int((over > 1).sum())} of {len(over)} shapes"


def register_verdicts(df: pd.DataFrame, wave: pd.DataFrame | None = None) -> list[Verdict]:
    """Register against LDS tiling by time, at the tutorial's WARP = 64 (ours beside it): its
    additional improvement, its speedup varying with the shape, and LDS tiling alone the better at
    some shapes while register tiling pays at others."""
    over = widths(df, wave)
    at64, at32 = over[TUTORIAL], over[OURS]
    scope = _tutorial_scope(at64, wave)
    runs = "" if wave is None else f" (both kernels timed in the companion run {'/'.join(WAVEFRONT_RUN)})"
    more = "" if wave is not None else f"; the run that would judge every shape: {wavefront_command(df)}"
    share = lambda o: rule.by_share(int((o > 1).sum()), len(o))  # noqa: E731 - the claim's test, named once
    adds = Verdict("Register tiling adds to LDS tiling", "\"typically provides additional performance improvements "
                   "beyond LDS tiling\"", share(at64), f"{TUTORIAL}: {_faster(at64)}{runs}" + rule.other_scopes(
                       {TUTORIAL: "", OURS: f"{_faster(at32)}: {share(at32)} by the same rule"}, TUTORIAL) + more,
                   test=f"{scope}; share rule")
    spread = lambda o: o.max() / o.min() > 1 + MATTERS  # noqa: E731
    varies = Verdict("Register tiling's speedup varies with the matrix dimensions", "\"the actual speedup will vary "
                     "based on ... matrix dimensions\"", rule.by_order(spread(at64)) if len(at64) > 1 else
                     rule.NOT_CHECKED, f"{TUTORIAL}: LDS time / register time {_span(at64)} across {len(at64)} shapes"
                     + rule.other_scopes({TUTORIAL: "", OURS: f"{_span(at32)} across {len(at32)} shapes"}, TUTORIAL),
                     test=f"{scope}; order rule: varies when the ratio spans more than {100 * MATTERS:.0f} %")
    sides = lambda o: (int((o < 1 - MATTERS).sum()), int((o > 1 + MATTERS).sum()))  # noqa: E731 - (LDS, register)

    def both(o: pd.Series) -> str:
        lds, reg = sides(o)
        return (f"LDS tiling alone faster by more than {100 * MATTERS:.0f} % at {lds} of {len(o)} shapes, "
                f"register tiling at {reg}")

    alone = Verdict("Some workloads do better with LDS tiling alone, others with register tiling", "\"some "
                    "applications may benefit more from LDS tiling alone, while others justify the added complexity "
                    "of register tiling\"", rule.by_order(min(sides(at64)) > 0) if len(at64) else rule.NOT_CHECKED,
                    f"{TUTORIAL}: {both(at64)}" + rule.other_scopes({TUTORIAL: "", OURS: both(at32)}, TUTORIAL),
                    test=f"{scope}; an existence, order rule: yes where each side is faster by more than "
                         f"{100 * MATTERS:.0f} % at one shape or more, else no")
    return [adds, varies, alone]


def naive_scaling(df: pd.DataFrame) -> Verdict:
    """"As you increase the matrix size, the caches will become incapable ... causing significant
    delays": naive's GFLOP/s at each family's largest size over at its smallest; the claim holds
    in a family where it falls by more than MATTERS."""
    rates = step_values(df, "gflops_median").get("naive", pd.Series(dtype=float))
    change = {}
    for name, dim, _ in FAMILIES:
        cut = family(rates, name)
        cut = cut[[aligned(int(x)) for x in cut.index]]  # one past a tile multiple differs for other reasons
        if len(cut) > 1:
            change[name] = float(cut[cut.index.max()] / cut[cut.index.min()])
    return Verdict("Naive slows down as the matrices outgrow the caches", "\"as you increase the matrix size, the "
                   "caches will become incapable ... causing significant delays\"",
                   rule.by_share(sum(r < 1 - MATTERS for r in change.values()), len(change)),
                   "naive GFLOP/s at the largest aligned size / at the smallest: " +
                   "; ".join(f"{name} {r:.2f}" for name, r in change.items()) + " (the data does leave the caches: "
                   "naive's DRAM reads above)",
                   test=f"kernel scope, {len(change)} shape families; share rule; a delay: GFLOP/s down more than "
                        f"{100 * MATTERS:.0f} %")


def naive_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """The naive kernel's result correct (every point verified against float64) and its
    performance not ideal (under half of cuBLAS's GFLOP/s)."""
    rows = _plain(df[df.variant == STEPS[0][0]])
    rows = rows[rows.params == STEPS[0][1]]
    good = rows[(rows.status == "ok") & (rows.err_bound_ratio <= 1)] if "err_bound_ratio" in rows else rows[:0]
    everything = _plain(df)
    try:
        pct = percent_of_cublas(ok_rows(df)).get("naive", pd.Series(dtype=float))
    except ResultsError:
        pct = pd.Series(dtype=float)
    return [Verdict("The naive kernel's result is correct", "\"the naive implementation produces the correct result\"",
                    rule.by_share(len(good), len(rows)),
                    f"{len(good)} of {len(rows)} naive points verified against float64 (error at most "
                    f"{rows.err_bound_ratio.max() if len(rows) else np.nan:.2f} of the bound); of every kernel: "
                    f"{int((everything.status == 'ok').sum())} of {len(everything)}",
                    test=f"kernel scope, {len(rows)} shapes; share rule"),
            Verdict("The naive kernel's performance is not ideal", "\"the resulting performance is not ideal\"",
                    rule.by_share(int((pct < 50).sum()), len(pct)),
                    f"naive GFLOP/s {_span(pct)} % of cuBLAS's over {len(pct)} shapes",
                    test=f"kernel scope, {len(pct)} shapes; share rule; not ideal: under 50 % of cuBLAS (ours)")]


def lds_speed_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """LDS tiling against naive: faster, by a speedup that depends on the shape; the tutorial's
    "significant" speedups are AMD's (not testable on this GPU: the H100's are other evidence)."""
    lds = speedups(df).get(STEPS[1][2], pd.Series(dtype=float))
    scope = f"kernel scope, {len(lds)} shapes"
    return [Verdict("LDS tiling improves on naive", "\"LDS tiling is an effective way to ... improve performance\"",
                    rule.by_share(int((lds > 1).sum()), len(lds)),
                    f"naive time / LDS time {_span(lds)}; faster at {int((lds > 1).sum())} of {len(lds)} shapes",
                    test=f"{scope}; share rule"),
            Verdict("Tiling's speedup depends on the matrix dimensions", "\"performance improvements with tiling "
                    "depend on the specific GPU architecture and matrix dimensions\"",
                    rule.by_order(lds.max() / lds.min() > 1 + MATTERS) if len(lds) > 1 else rule.NOT_CHECKED,
                    f"LDS tiling's speedup over naive {_span(lds)} across {len(lds)} shapes",
                    test=f"{scope}; order rule: depends when the speedup spans more than {100 * MATTERS:.0f} %"),
            Verdict("The gains of tiling depend on the GPU architecture", "\"depend on the specific GPU "
                    "architecture\"; register tiling's \"actual speedup will vary based on GPU architecture\"",
                    rule.NOT_TESTABLE,
                    "one GPU here; what would test it: `mmbench run --config configs/amd-tiling.toml` (and the "
                    "WARP = 64 companion) on another GPU, the speedups compared shape by shape; an AMD GPU needs "
                    "the three kernels in HIP (mmbench runs CUDA only)", test="one GPU"),
            Verdict("LDS tiling's speedups over naive are significant on AMD GPUs", "\"significant speedups over the "
                    "naive implementation are commonly observed on AMD GPUs\"", rule.NOT_TESTABLE,
                    "a claim about AMD's GPUs; what would test it: the three kernels in HIP on an AMD GPU" +
                    rule.other_scopes({"AMD": "", "this H100": f"naive time / LDS time {_span(lds)}, at least "
                                       f"{SIGNIFICANT} x (our 'significant') at {int((lds >= SIGNIFICANT).sum())} of "
                                       f"{len(lds)} shapes"}, "AMD"), test="AMD's GPUs, not this one")]


def _pairs(df: pd.DataFrame, kernels) -> list[tuple]:
    """(kernel, family, aligned size, GFLOP/s one past it / at it) for each (variant, params, name)
    kernel at every aligned size of a family whose size + 1 was timed too."""
    plain = _plain(ok_rows(df))
    out = []
    for v, p, name in kernels:
        rates = by_shape(plain, "gflops_median", variant=v, params=p)
        for fam, _, _ in FAMILIES:
            cut = family(rates, fam)
            out += [(name, fam, int(s), float(cut[s + 1] / cut[s])) for s in cut.index
                    if aligned(int(s)) and s + 1 in cut.index]
    return out


def alignment_verdict(df: pd.DataFrame, wave: pd.DataFrame | None = None) -> Verdict:
    """"The effectiveness of tiling depends on how well the matrix dimensions align with tile sizes":
    the tutorial's two tiled kernels' GFLOP/s one past an aligned size over at it (a nearly empty last
    tile), at WARP = 64 (the companion, both kernels in one run); the claim holds at a pair where the
    rate moves by more than MATTERS."""
    tiled = ((STEPS[1][0], STEPS[1][1], "LDS tiling"), ("register_tiling", REGISTER_WAVEFRONT, f"register {TUTORIAL}"))
    pairs = _pairs(df if wave is None else wave, tiled)
    ours = _pairs(df, (("register_tiling", REGISTER_DEFAULT, "register"),))
    naive = _pairs(df, (STEPS[0],))
    moved = lambda ps: sum(abs(r - 1) > MATTERS for *_, r in ps)  # noqa: E731
    text = lambda ps, name: (f"{name}: {_span(pd.Series([r for n, *_, r in ps if n == name]))}, "  # noqa: E731
                             f"{moved([q for q in ps if q[0] == name])} of {sum(q[0] == name for q in ps)} pairs moved")
    worst = min(pairs, key=lambda q: q[3], default=None)
    most = f" (the most: {worst[0]}, {worst[1]} {worst[2]} to {worst[2] + 1}, {worst[3]:.2f})" if worst else ""
    return Verdict("Effectiveness depends on alignment with the tile sizes", "\"the effectiveness of tiling depends "
                   "on how well the matrix dimensions align with tile sizes\"", rule.by_share(moved(pairs), len(pairs)),
                   "GFLOP/s one past an aligned size / at it: " + "; ".join(text(pairs, n) for _, _, n in tiled) + most
                   + rule.other_scopes({TUTORIAL: "", OURS: text(ours, "register") if ours else "-"}, TUTORIAL)
                   + (f"; naive (no tiles) moves too, {text(naive, 'naive').removeprefix('naive: ')}, so a speedup "
                      "over naive is no reading of the tiles' alignment" if naive else ""),
                   test=f"the tutorial's tiled kernels (register at {TUTORIAL}), {len(pairs)} aligned / one-past "
                        f"pairs; share rule; depends: GFLOP/s moves more than {100 * MATTERS:.0f} %")


def _tile_bytes(params: dict) -> int:
    """register_tiling's shared memory: A's tile (padded by APAD) and B's, in floats of 4 bytes."""
    bm = params["BWM"] * (params["WARP"] // params["WTN"]) * params["TM"]
    bn = params["BWN"] * params["WTN"] * params["TN"]
    return 4 * (bm * (params["KT"] + params["APAD"]) + params["KT"] * bn)


def _compiled(meta: dict, variant: str) -> dict[str, dict]:
    """The run's compiled kernels of one variant: parameters text -> their ptxas record (metadata)."""
    return {k[len(variant) + 1:-1]: v for k, v in (meta.get("kernels") or {}).items() if k.startswith(f"{variant}[")}


def tile_fit(meta: dict) -> Verdict:
    """"Larger tiles may not fit in available LDS space": our arithmetic (the registry's rule) against
    the per-block limit in the metadata; the run's own tiles checked against ptxas's count."""
    variant = REGISTRY["register_tiling"]
    limit = (meta.get("gpu") or {}).get("max_shared_per_block")
    names = sorted(variant.space)
    space = [tuple(zip(names, combo)) for combo in itertools.product(*(variant.space[n] for n in names))]
    rule_of = next(c for c in variant.constraints if "48 * 1024" in c)  # the shared-memory rule
    left_out = [dict(p) for p in space if variant.violated(p) == [rule_of]]
    run = {p: r.get("ptxas_shared_bytes", r.get("shared_bytes")) for p, r in _compiled(meta, "register_tiling").items()}
    agrees = all(_tile_bytes({k: int(v) for k, v in (i.split("=") for i in p.split(","))}) == b for p, b in run.items())
    first = min(left_out, key=_tile_bytes, default=None)
    return Verdict("Larger tiles may not fit in LDS", "\"larger tiles may not fit in available LDS space\"",
                   rule.BY_CONSTRUCTION,
                   f"register tiling's shared memory is 4 (BM (KT + APAD) + KT BN) bytes, BM x BN its block tile"
                   + (f" (ptxas's count for all {len(run)} register tiles compiled in this run)" if run and agrees else
                      " (ptxas disagrees for some tile of this run)" if run else "")
                   + f"; the per-block limit of static shared memory is {f'{limit:,} B' if limit else 'unknown'} on "
                   "this GPU (metadata) and "
                   f"the registry leaves out the {len(left_out)} tiles of the parameter space past 48 KiB that break "
                   f"no other rule ({sum(p['WARP'] == 64 for p in left_out)} at WARP = 64)"
                   + (f", the smallest of them {_tile_bytes(first):,} B" if first else "")
                   + (f"; the run's tiles need {min(run.values()):,} to {max(run.values()):,} B, none past it"
                      if run else ""),
                   test="our arithmetic against the GPU's per-block limit")


def tuning_verdict(df: pd.DataFrame) -> Verdict:
    """"Requiring careful tuning of tile dimensions": at each shape of the tile sweep (WARP = 32, ours),
    the best tile beats the tutorial's 4 x 4, KT = 16 by more than MATTERS."""
    default = _config("register_tiling", REGISTER_DEFAULT)
    # the tiles the rules allow at 256 threads (TN = 2 needs KT >= 16 for even loads of B), in two runs
    sweep = " and ".join(f"`mmbench run -v register_tiling --params WARP=64,TM=2/4/8,{p} --sizes "
                         "2048,2049,8192x512x2048`" for p in ("TN=4/8,KT=8/16/32", "TN=2,KT=16/32"))
    try:
        tiles = tile_table(df)
    except ResultsError:
        return Verdict("Tile sizes need tuning", "\"requiring careful tuning of tile dimensions\"", rule.NOT_CHECKED,
                       "no tile-size sweep in these results")
    best = tiles.idxmax()
    gain = {s: tiles[s].max() / tiles[s].get(default, np.nan) for s in tiles.columns}
    wide = _config("register_tiling", REGISTER_WAVEFRONT)
    text = "; ".join(f"{shape}: best {best[shape]} ({tiles[shape].max():.0f} GFLOP/s), the tutorial's tile "
                     f"{tiles[shape].get(default, np.nan):.0f}" for shape in tiles.columns)
    over = pd.Series({s: tiles[s].max() / tiles[s][wide] for s in tiles.columns}) if wide in tiles.index else None
    at64 = "-" if over is None else (f"the tutorial's tile {', '.join(f'{tiles[s][wide]:.0f}' for s in tiles.columns)}"
                                     f" GFLOP/s, the best swept tile {_span(over)} x it")
    return Verdict("Tile sizes need tuning", "\"requiring careful tuning of tile dimensions\"",
                   rule.by_share(sum(g > 1 + MATTERS for g in gain.values()), len(gain)),
                   text + rule.other_scopes({OURS: "", TUTORIAL: at64}, OURS)
                   + f"; the run that would sweep the tiles at {TUTORIAL}: {sweep}",
                   test=f"{OURS} (ours: the tile sweep's), {len(gain)} shapes; share rule; tuning pays: the best tile "
                        f"more than {100 * MATTERS:.0f} % over the tutorial's")


def design_verdicts(meta: dict) -> dict[str, Verdict]:
    """The tutorial's descriptions of its kernels and of the product, true of ours by construction
    (kernels/gemm/*.cu are its code, with the additions under the departures), by the tutorial's step."""
    kernels = meta.get("kernels") or {}
    rec = lambda v, p: kernels.get(f"{v}[{p}]") or {}  # noqa: E731 - a compiled kernel's ptxas record

    def regs(params: str) -> str:
        r = rec("register_tiling", params)
        return f"{r.get('registers', '?')} registers, {r.get('ptxas_spill_store_bytes', '?')} B spilled"

    return {
        "product": Verdict("C is m x n, each element the sum of k products of a row of A and a column of B",
                           "\"each element in C is the sum of the k multiplications\" (and the figure)",
                           rule.BY_CONSTRUCTION, "the float64 reference computes exactly this, and every point is "
                           "checked against it", test="the harness's reference"),
        "naive": Verdict("Naive: a thread an output, m x n threads each looping k times, every input element read "
                         "by many threads of different wavefronts, all reads from the memory system",
                         "\"a total of m × n threads, with each traversing a loop of k iterations\"; \"the same data "
                         "item must be accessed by multiple threads from different wavefronts\"", rule.BY_CONSTRUCTION,
                         "kernels/gemm/naive.cu is the tutorial's kernel: an element of A is read by the n threads of "
                         f"its row, of B by the m of its column; shared memory "
                         f"{rec(*STEPS[0][:2]).get('shared_bytes', '?')} B (ptxas)", test="the kernel's code"),
        "lds": Verdict("LDS tiling: the workgroup loads a tile of A and of B into LDS, multiplies them and moves "
                       "along k, barriers before and after the inner loop; the workgroup matches the tile; naive's "
                       "interface", "\"tiling methods use all threads from a workgroup to collectively process parts "
                       "of the data\"; \"the workgroup size must match the tile size\"", rule.BY_CONSTRUCTION,
                       "kernels/gemm/shared.cu is the tutorial's kernel: 16 x 16 threads, two 16 x 16 float tiles = "
                       f"{rec(*STEPS[1][:2]).get('shared_bytes', '?')} B of shared memory (ptxas)",
                       test="the kernel's code"),
        "register": Verdict("Register tiling: a thread computes a 4 x 4 tile of C, loading cooperatively into LDS, "
                            "then into registers, accumulating in registers", "\"each thread computes a small tile "
                            "of output elements (typically 4 × 4)\"; \"register-based accumulation\"",
                            rule.BY_CONSTRUCTION, "kernels/gemm/register_tiling.cu is the tutorial's kernel: a k-step "
                            "reads 4 + 4 floats from LDS for 16 multiply-adds; "
                            f"{TUTORIAL}: {regs(REGISTER_WAVEFRONT)}; {OURS}: {regs(REGISTER_DEFAULT)} (ptxas)",
                            test="the kernel's code"),
    }


def untested() -> dict[str, Verdict]:
    """The tutorial's claims no run of mmbench can judge, each with what would test it, by the
    tutorial's step."""
    nt = rule.NOT_TESTABLE
    return {
        "dnn": Verdict("Matrix multiplication is among the most important GPU workloads, the costliest layers of "
                       "DNNs", "introduction", nt, "context, not a measurement; what would test it: a profile of DNN "
                       "training or inference by layer (not a GEMM benchmark)", test="context, not a run"),
        "recast": Verdict("Recasting a problem as matrix multiplication can beat its iterative version",
                          "introduction", nt, "what would test it: one problem solved both ways on one GPU (not in "
                          "mmbench)", test="context, not a run"),
        "l1": Verdict("LDS is effectively a programmable L1 cache", "\"GPUs provide Local Data Store (LDS) memory, "
                      "which is effectively a programmable L1 cache\"", nt, "a statement of the architecture, not a "
                      "measurement (on the H100 shared memory and L1 are one on-chip memory split by a carveout, by "
                      "NVIDIA's documents); what would test it: a microbenchmark of LDS against L1 latency and "
                      "bandwidth (not in mmbench)", test="the architecture, not a run"),
        "complexity": Verdict("LDS tiling's complexity lies mainly in its index calculation and boundary checks",
                              "\"the complexity of the implementation mainly comes from the index calculation and "
                              "boundary checking\"", nt, "a judgement of the source, not of its run; what would test "
                              "it: none by timing", test="the source, not a run"),
        "faster": Verdict("Register access is significantly faster than shared-memory access", "\"register access "
                          "is significantly faster than shared memory access\"", nt, "a property of the hardware, not "
                          "of these kernels (their times mix both); what would test it: a microbenchmark of dependent "
                          "register and shared-memory reads (not in mmbench)", test="the hardware, not these kernels"),
        "ilp": Verdict("Register tiling achieves better instruction-level parallelism", "\"better instruction-level "
                       "parallelism can be achieved\"", nt, "no counter here measures ILP (instructions issued a cycle "
                       "do not); what would test it: the stalls on a dependency per issued instruction of both "
                       "kernels (Nsight Compute's smsp__average_warps_issue_stalled_wait_per_issue_active and "
                       "_short_scoreboard_per_issue_active, not among mmbench profile's metrics); the code gives a "
                       "thread 16 independent multiply-adds a k-step against LDS tiling's one chain (by construction)",
                       test="no counter of ILP"),
        "resources": Verdict("Effectiveness depends on alignment with the GPU's compute-unit resources",
                             "\"... and GPU compute unit resources\"", nt, "the shapes here were not chosen to "
                             "fill or miss the SMs; what would test it: m in steps of one block tile, across whole "
                             "and partial waves of blocks over the SMs: `mmbench run -v shared,register_tiling "
                             "--params BLOCK=16,WARP=64 --sizes [1024:8192:+128]x[1024]x[1024]`",
                             test="no sweep across waves of the SMs"),
        "amd": Verdict("AMD architectures' LDS capacity and registers change the best tile sizes", "\"different AMD "
                       "GPU architectures have varying LDS capacities and register availability, affecting optimal "
                       "tile sizes\"", nt, "a claim about AMD's GPUs; what would test it: the tile sweep in HIP on "
                       "AMD GPUs of different LDS sizes; its NVIDIA counterpart: the tile sweep "
                       "(configs/amd-tiling.toml) on GPUs of different shared memory", test="AMD's GPUs, not this one"),
    }


def _kernel(profile: pd.DataFrame | None, variant: str, params: str) -> pd.DataFrame:
    """One kernel's profile rows by shape (m, n, k), DRAM bytes (read + written) added."""
    try:
        rows = checked(profile)
    except ResultsError:  # none, or one taken before the hierarchical counts: its claims stay not checked
        return pd.DataFrame()
    rows = rows[(rows.variant == variant) & (rows.params.fillna("") == params)]
    return rows.set_index(["m", "n", "k"]).sort_index()


def past_l2(shape: tuple, meta: dict) -> bool:
    """Whether a GEMM's operands outgrow the GPU's L2 (then DRAM traffic can exceed each byte once)."""
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    return bool(l2) and working_set_mb("gemm", *shape) * 1e6 > l2


def _where(shape: tuple, meta: dict) -> str:
    return "past the L2" if past_l2(shape, meta) else "fits in the L2"


def _share(flags) -> str:
    """rule.by_share over a list of booleans (one a shape, or a shape and level)."""
    flags = list(flags)
    return rule.by_share(sum(flags), len(flags))


def _shapes(rows: pd.DataFrame) -> str:
    return f"{len(rows)} profiled shape{'s' if len(rows) != 1 else ''}"


def register_pairs(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> dict[str, tuple]:
    """{width: (LDS tiling's rows, register tiling's rows)} at the shapes both were profiled: the
    tutorial's WARP = 64 against the LDS rows of the companion's profile (else of the run's own),
    WARP = 32 against LDS in the reference run's profile."""
    out = {}
    for width, params in ((TUTORIAL, REGISTER_WAVEFRONT), (OURS, REGISTER_DEFAULT)):
        prof = wave_profile if width == TUTORIAL and wave_profile is not None else profile
        lds, reg = _kernel(prof, STEPS[1][0], STEPS[1][1]), _kernel(prof, "register_tiling", params)
        both = lds.index.intersection(reg.index) if len(lds) and len(reg) else []
        if len(both):
            out[width] = (lds.loc[both], reg.loc[both])
    return out


def _unprofiled(finding: str, paper: str, command: str = PROFILE) -> Verdict:
    return Verdict(finding, paper, rule.NOT_CHECKED, "needs Nsight Compute's counts beside the run: " + command)


def flop_count(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> Verdict:
    """"A total of 2 x m x n x k operations": arithmetic (a multiply and an add for each of the mnk
    products), so by construction; Nsight Compute's FP32 operations (two an FFMA) of the tutorial's
    three kernels (register tiling at WARP = 64) are the check that the kernels do no more."""
    wide = wave_profile if wave_profile is not None else profile
    kernels = [(name, _kernel(prof, v, p)) for prof, v, p, name in (
        (profile, *STEPS[0][:2], "naive"), (profile, *STEPS[1][:2], "LDS"),
        (wide, "register_tiling", REGISTER_WAVEFRONT, f"register {TUTORIAL}"),
        (profile, "register_tiling", REGISTER_DEFAULT, f"register {OURS}"), (profile, *CUBLAS))]
    ratio = lambda r, s: r.fp32_flops / (2 * s[0] * s[1] * s[2])  # noqa: E731
    counted = "; ".join(f"{name} " + ", ".join(f"{_shape(s)} {ratio(r, s):.4f}" for s, r in rows.iterrows())
                        for name, rows in kernels if len(rows))
    return Verdict("A product is 2 x m x n x k operations", "\"theoretically, a total of 2 × m × n × k operations "
                   "are required\"", rule.BY_CONSTRUCTION, "a multiply and an add for each of the mnk products; the "
                   "GFLOP/s here are 2mnk over the time; " + (f"Nsight Compute's FP32 operations / 2mnk: {counted}"
                                                              if counted else f"Nsight Compute's count would check "
                                                              f"it: {PROFILE}"), test="arithmetic; the count a check")


def naive_profile_verdicts(profile: pd.DataFrame | None, meta: dict) -> list[Verdict]:
    """Naive's DRAM bytes read over the inputs' bytes, 4(mk + kn): "several times" is a factor, read as
    SEVERAL and judged at each shape by rule.by_factor, the claim holding at a shape where that says yes
    (past the square root of SEVERAL), the shapes by the share rule; and the caches' (L1, L2) traffic over
    the same bytes, inordinate where >= SEVERAL (a line: "inordinate" names no factor)."""
    dram = ("Profiling shows naive reading DRAM several times the inputs' size", "\"reads from the GPU's DRAM "
            "several times more often than the combined size of the input matrices\"")
    cache = ("Naive's repeated reads put inordinate pressure on the caches", "\"places inordinate memory pressure on "
             "the caches\"")
    naive = _kernel(profile, *STEPS[0][:2])
    if naive.empty:
        return [_unprofiled(*dram), _unprofiled(*cache)]
    inputs = {s: 4 * (s[0] * s[2] + s[2] * s[1]) for s in naive.index}
    times = {s: r.dram_bytes_read / inputs[s] for s, r in naive.iterrows()}
    levels_ = {(s, lv): r[f"{lv}_bytes"] / inputs[s] for s, r in naive.iterrows() for lv in ("l1", "l2")}
    factor = {s: rule.by_factor(v, SEVERAL) for s, v in times.items()}  # the factor rule at each shape
    return [Verdict(*dram, _share(f == rule.YES for f in factor.values()),
                    "naive's DRAM bytes read / the inputs' 4(mk + kn): " + "; ".join(
                        f"{_shape(s)} {v:.4g} x ({_where(s, meta)}; {factor[s]} by the factor rule)"
                        for s, v in times.items()) + "; caches flushed before the kernel",
                    test=f"kernel scope, {_shapes(naive)}; factor rule at each shape (several: a factor of "
                         f"{SEVERAL:g}, ours; yes past {SEVERAL ** 0.5:.2f} x), then share rule over the shapes "
                         "(a shape holds where the factor rule says yes)"),
            Verdict(*cache, _share(v >= SEVERAL for v in levels_.values()),
                    "naive's bytes through each cache / the inputs' bytes: " + "; ".join(
                        f"{_shape(s)} {NAMES[lv].split(' (')[0]} {v:.0f} x" for (s, lv), v in levels_.items())
                    + "; hit rates L1 / L2: " + "; ".join(f"{_shape(s)} {r.l1_hit_pct:.0f} / {r.l2_hit_pct:.0f} %"
                                                           for s, r in naive.iterrows()),
                    test=f"kernel scope, L1 and L2 at {_shapes(naive)}; share rule; inordinate: traffic at least "
                         f"{SEVERAL:g} x the inputs (ours)")]


def lds_traffic(profile: pd.DataFrame | None, meta: dict) -> list[Verdict]:
    """LDS tiling against naive: global memory access (the bytes global loads move through L1)
    falling at least REDUCES times ("dramatically"), L2 beside it; and DRAM bytes falling by more
    than MATTERS where the operands outgrow the L2 (below it both kernels read each byte once)."""
    g = ("LDS tiling dramatically reduces global memory access", "\"uses LDS memory to dramatically reduce global "
         "memory access\"")
    d = ("LDS tiling reduces DRAM access", "\"LDS tiling is an effective way to reduce DRAM access\"")
    naive, lds = _kernel(profile, *STEPS[0][:2]), _kernel(profile, *STEPS[1][:2])
    both = naive.index.intersection(lds.index) if len(naive) and len(lds) else []
    if not len(both):
        return [_unprofiled(*g), _unprofiled(*d)]
    fall = lambda s, col: naive.at[s, col] / lds.at[s, col]  # noqa: E731 - naive's count / LDS tiling's
    past = [s for s in both if past_l2(s, meta)]
    return [Verdict(*g, _share(fall(s, "l1_bytes") >= REDUCES for s in both),
                    "naive's L1 bytes (global loads and stores) / LDS tiling's: " + "; ".join(
                        f"{_shape(s)} {fall(s, 'l1_bytes'):.2f} x" for s in both) + "; global load requests: " +
                    "; ".join(f"{_shape(s)} {fall(s, 'global_ld_requests'):.1f} x" for s in both) + rule.other_scopes(
                        {"L1": "", "L2": "; ".join(f"{_shape(s)} {fall(s, 'l2_bytes'):.2f} x" for s in both)}, "L1"),
                    test=f"kernel scope, global memory (L1) at {len(both)} profiled shapes; share rule; dramatic: at "
                         f"least {REDUCES:g} x fewer bytes"),
            Verdict(*d, _share(fall(s, "dram_bytes") > 1 + MATTERS for s in past),
                    "naive's DRAM bytes / LDS tiling's: " + "; ".join(f"{_shape(s)} {fall(s, 'dram_bytes'):.2f} x "
                                                                     f"({_where(s, meta)})" for s in both),
                    test=f"kernel scope, DRAM at the {len(past)} profiled shape{'s' if len(past) != 1 else ''} past "
                         f"the L2 (below it every kernel reads its inputs once); share rule; reduced: more than "
                         f"{100 * MATTERS:.0f} % fewer bytes")]


def _at_widths(claim: tuple, pairs: dict[str, tuple], held, text, threshold: str) -> Verdict:
    """A register-against-LDS profile claim judged at the tutorial's WARP = 64, ours beside it:
    held(lds row, register row, shape) -> the claim's flags there, text(...) -> its numbers."""
    def at(width):
        lds, reg = pairs[width]
        flags = [f for s in lds.index for f in held(lds.loc[s], reg.loc[s], s)]
        return flags, ", ".join(f"{_shape(s)} {text(lds.loc[s], reg.loc[s])}" for s in lds.index)

    extra = {width: f"{at(width)[1]} ({_share(at(width)[0])} by the same rule)" for width in pairs if width != TUTORIAL}
    if TUTORIAL not in pairs:
        return Verdict(*claim, rule.NOT_CHECKED, f"needs register tiling at {TUTORIAL} profiled beside LDS tiling: "
                       + WAVE_PROFILE + rule.other_scopes({TUTORIAL: "", **extra}, TUTORIAL))
    flags, shown = at(TUTORIAL)
    return Verdict(*claim, _share(flags), f"{TUTORIAL}: {shown}" + rule.other_scopes({TUTORIAL: "", **extra}, TUTORIAL),
                   test=f"{TUTORIAL} (the tutorial's), {_shapes(pairs[TUTORIAL][0])}; share rule; {threshold}")


def register_profile_verdicts(pairs: dict[str, tuple], meta: dict) -> list[Verdict]:
    """Register tiling against LDS tiling in the profiles, at the tutorial's width (ours beside it):
    memory traffic, shared-memory reads, bank conflicts and barrier stalls."""
    levels_ = ("l1", "l2", "dram")
    conflicts = lambda r: r.shared_ld_conflicts + r.shared_st_conflicts  # noqa: E731 - a column sum, named
    return [
        _at_widths(("Register tiling further reduces memory traffic (L1, L2, DRAM)", "\"register tiling further "
                    "reduces memory traffic by keeping frequently accessed data in thread-local registers\""), pairs,
                   lambda a, b, s: [a[f"{lv}_bytes"] / b[f"{lv}_bytes"] > 1 + MATTERS for lv in levels_
                                    if lv != "dram" or past_l2(s, meta)],
                   lambda a, b: "L1 / L2 / DRAM " + " / ".join(f"{a[f'{lv}_bytes'] / b[f'{lv}_bytes']:.2f}"
                                                              for lv in levels_) + " x fewer",
                   f"reduced: more than {100 * MATTERS:.0f} % fewer bytes at L1 and L2, at DRAM past the L2 only"),
        _at_widths(("Register tiling eliminates many shared-memory reads", "\"eliminates the need for many shared "
                    "memory reads within the inner computation loop\""), pairs,
                   lambda a, b, s: [a.shared_ld_inst / b.shared_ld_inst >= REDUCES],
                   lambda a, b: f"{a.shared_ld_inst / b.shared_ld_inst:.1f} x fewer shared loads, shared bytes "
                                f"{a.shared_bytes / b.shared_bytes:.1f} x fewer",
                   f"many: at least {REDUCES:g} x fewer shared-load instructions"),
        _at_widths(("Register tiling avoids bank conflicts", "\"each thread has private registers eliminating bank "
                    "conflicts\""), pairs, lambda a, b, s: [conflicts(b) < conflicts(a)],
                   lambda a, b: f"conflicts per shared load {a.conflicts_per_shared_ld:.4f} (LDS) against "
                                f"{b.conflicts_per_shared_ld:.2f}, all conflicts "
                                f"{conflicts(b) / conflicts(a):.1f} x LDS's",
                   "avoided: fewer shared-memory bank conflicts than LDS tiling (the kernel's; registers have none "
                   "to count)"),
        _at_widths(("Register tiling reduces synchronization overhead", "\"synchronization overhead between threads is "
                    "reduced\""), pairs,
                   lambda a, b, s: [b.barrier_stall_per_issue < (1 - MATTERS) * a.barrier_stall_per_issue],
                   lambda a, b: f"warps at a barrier per issued instruction {a.barrier_stall_per_issue:.2f} (LDS) "
                                f"against {b.barrier_stall_per_issue:.2f}",
                   f"reduced: barrier stalls more than {100 * MATTERS:.0f} % fewer"),
    ]


def claims(df: pd.DataFrame, meta: dict, wave: pd.DataFrame | None = None, profile: pd.DataFrame | None = None,
           wave_profile: pd.DataFrame | None = None) -> list[Verdict]:
    """Every claim of the tutorial, in its order: judged from the run (every row, failed ones too),
    its WARP = 64 companion `wave` and the two profiles where there are, else not checked with the
    run that would judge it; by construction or not testable here where no run can."""
    ok = ok_rows(df)
    design, nt = design_verdicts(meta), untested()
    reads, adds = naive_verdicts(df), register_verdicts(ok, wave)
    lds = lds_speed_verdicts(ok)
    dram, pressure = naive_profile_verdicts(profile, meta)
    glob, lds_dram = lds_traffic(profile, meta)
    traffic, shared, banks, sync = register_profile_verdicts(register_pairs(profile, wave_profile), meta)
    return [nt["dnn"], nt["recast"], design["product"], flop_count(profile, wave_profile), design["naive"],
            *reads, dram, pressure, naive_scaling(ok), nt["l1"], design["lds"], glob, nt["complexity"], lds_dram,
            *lds, traffic, shared, design["register"], nt["faster"], banks, sync, nt["ilp"], adds[0], adds[1],
            alignment_verdict(ok, wave), nt["resources"], tile_fit(meta), tuning_verdict(ok), nt["amd"], adds[2]]
