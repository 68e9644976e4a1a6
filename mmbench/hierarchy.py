"""The memory hierarchy from a Nsight Compute profile (`mmbench profile`): each kernel's traffic and
arithmetic intensity at every level (shared memory, L1, L2, DRAM), the ceilings Nsight Compute
gives for this GPU, and the two figures that read them.

The hierarchical roofline puts a kernel once per level, all at its one achieved FLOP/s: its
intensity against shared memory, L1, L2 and DRAM bytes, under that level's bandwidth roof (as
Nsight Compute's and NERSC's hierarchical rooflines draw it). A level whose point sits close under
its own roof is the one that limits the kernel. An operation without FLOPs (a transpose) has no
place on a FLOP axis; its figure shows the bandwidth it reached at each level against the level's
peak instead.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import analysis
from .ops import get_op
from .profile import LEVELS
from .results import ResultsError
from .sizes import Shape, row_shape

NAMES = {"shared": "shared memory", "l1": "L1 (global, local)", "l2": "L2", "dram": "DRAM"}
MARKERS = {"shared": "o", "l1": "^", "l2": "s", "dram": "D"}
# Roofs in greys, each its own dash: the kernels have the colours (no roof can be read as a kernel)
ROOF_STYLES = {"shared": ("0.55", ":"), "l1": ("0.55", ":"), "l2": ("0.3", "-."), "dram": ("0.0", "-")}
BAR_COLOURS = plt.get_cmap("tab10").colors  # bars side by side: ten colours that cannot be confused
NEEDED = ("gpu_time_ns", "fp32_flops", *(f"{level}_bytes" for level in LEVELS if level != "dram"),
          "peak_fp32_flops_per_s", *(f"peak_{level}_bytes_per_s" for level in LEVELS))


def checked(profile: pd.DataFrame | None) -> pd.DataFrame:
    """The profile's rows with every level's bytes (dram_bytes added: read + written); a clear
    error when there is no profile or it predates the hierarchical counts."""
    if profile is None:
        raise ResultsError("no Nsight Compute profile beside these results (`mmbench profile`)")
    missing = [c for c in NEEDED if c not in profile]
    if missing:
        raise ResultsError("the profile beside these results predates the hierarchical counts "
                           f"(no {', '.join(missing[:3])}): `mmbench profile` again")
    df = profile.assign(dram_bytes=profile.dram_bytes_read + profile.dram_bytes_write)
    return df[df.gpu_time_ns > 0]


def ceilings(profile: pd.DataFrame) -> dict:
    """The device's peaks over the profile's kernels (medians: the clocks move a little): FP32
    FLOP/s and each level's bytes/s."""
    return {"fp32": float(profile.peak_fp32_flops_per_s.median()),
            **{level: float(profile[f"peak_{level}_bytes_per_s"].median()) for level in LEVELS}}


def roof_groups(peak: dict) -> list[tuple[str, ...]]:
    """The levels grouped by equal peaks, one roof each: L1 and shared memory are one data path,
    so their roofs would be one line with one of them hidden."""
    groups: list[list[str]] = []
    for level in LEVELS:
        same = next((g for g in groups if math.isclose(peak[g[0]], peak[level], rel_tol=1e-6)), None)
        (same.append(level) if same else groups.append([level]))
    return [tuple(g) for g in groups]


def op_of(variant: str, k: int) -> str:
    from .variants import REGISTRY

    v = REGISTRY.get(variant)
    return v.op if v else ("transpose" if k == 0 else "gemm")


def levels(profile: pd.DataFrame | None) -> pd.DataFrame:
    """Per profiled kernel: its FLOP/s, GB/s, and at each level its bytes, intensity (FLOP per
    byte; NaN without FLOPs or bytes), bandwidth and the share of that level's peak it reached;
    `bound` is the level (or "fp32") whose roof the kernel came closest to, `bound_pct` the share
    of that roof it reached."""
    df = checked(profile)
    peak = ceilings(df)
    seconds = df.gpu_time_ns * 1e-9
    out = df[["variant", "params", "m", "n", "k"]].copy()
    out["op"] = [op_of(v, k) for v, k in zip(df.variant, df.k)]
    out["time_us"] = df.gpu_time_ns / 1e3
    out["gflops"] = df.fp32_flops / seconds / 1e9
    out["fp32_pct"] = 100 * df.fp32_flops / seconds / peak["fp32"]
    for level in LEVELS:
        bytes_ = df[f"{level}_bytes"]
        out[f"{level}_bytes"] = bytes_
        out[f"{level}_intensity"] = (df.fp32_flops / bytes_).where((bytes_ > 0) & (df.fp32_flops > 0))
        out[f"{level}_gbytes_per_s"] = bytes_ / seconds / 1e9
        out[f"{level}_pct"] = 100 * bytes_ / seconds / peak[level]
    shares = out[["fp32_pct", *(f"{level}_pct" for level in LEVELS)]]
    out["bound"] = shares.fillna(-1).idxmax(axis=1).str.removesuffix("_pct")
    out["bound_pct"] = shares.max(axis=1)
    return out.reset_index(drop=True)


def roof_name(bound: str) -> str:
    """A `bound` of levels() in words: FP32, or the level's name."""
    return "FP32" if bound == "fp32" else NAMES[bound]


def at_shape(table: pd.DataFrame, shape: tuple) -> pd.DataFrame:
    """The rows of levels() at one shape (m, n, k), numbered from 0."""
    return table[(table.m == shape[0]) & (table.n == shape[1]) & (table.k == shape[2])].reset_index(drop=True)


def working_set_mb(op: str, m: int, n: int, k: int) -> float:
    """The operands' bytes (each read or written once), in MB: what must fit in L2 to stay there."""
    return get_op(op).min_bytes(Shape(int(m), int(n), int(k))) / 1e6


def panel_title(row, meta: dict) -> str:
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    ws = working_set_mb(row.op, row.m, row.n, row.k)
    fits = "" if not l2 else f", {'fits in' if ws * 1e6 <= l2 else 'past'} the {l2 / 1e6:.0f} MB L2"
    shape = f"{row.m} x {row.n}" if row.op == "gemv" else row_shape(row.m, row.n, row.k)  # a GEMV's k is 0 too
    return f"{shape}: operands {ws:.0f} MB{fits}"


def _labels(rows: pd.DataFrame) -> list[str]:
    """Each kernel's legend text: its series' label, with its parameters where two share a label."""
    series = [analysis.series_of(v, p) for v, p in zip(rows.variant, rows.params)]
    labels = pd.Series([s.label for s in series])
    twice = labels.duplicated(keep=False)
    return [f"{s.label} {s.params}" if twice[i] and s.params else s.label for i, s in enumerate(series)]


PARAM_DASHES = ("-", "--", ":", "-.")  # one variant at several parameter points: a dash each


def _dashes(rows: pd.DataFrame) -> list[str]:
    """Each kernel's line style: its block size's, as elsewhere; where one variant comes at several
    parameter points that style does not tell apart (PAD = 0 and 1 at one block), one dash each, so
    that its points differ by more than the legend (their colour is the variant's)."""
    from .plots import LINESTYLE

    block = [LINESTYLE.get(analysis.series_of(v, p).block, "-") for v, p in zip(rows.variant, rows.params)]
    points: dict[tuple, list] = {}
    for v, p, b in zip(rows.variant, rows.params, block):
        points.setdefault((v, b), []).append(p)
    return [PARAM_DASHES[sorted(set(points[v, b])).index(p) % len(PARAM_DASHES)] if len(set(points[v, b])) > 1 else b
            for v, p, b in zip(rows.variant, rows.params, block)]


def shapes_in(table: pd.DataFrame, ops: set[str], most: int = 3) -> list[tuple]:
    """The profiled shapes of these operations, smallest first, at most `most` (the largest kept:
    the interesting ones are those past L2)."""
    shapes = sorted({(m, n, k) for m, n, k, op in zip(table.m, table.n, table.k, table.op) if op in ops},
                    key=lambda s: (s[0] * s[1] * max(s[2], 1), s))
    return shapes[-most:]


def _panels(profile, keep, variants, most: int, what: str, size: tuple[float, float]):
    """The kernels a figure shows (keep(table) selects them, then the variants), its shapes, the
    device's peaks, and a figure of a panel per shape; ResultsError naming `what` when none."""
    table = levels(profile)
    table = table[keep(table)]
    if variants is not None:
        table = table[table.variant.isin(variants)]
    shapes = shapes_in(table, set(table.op), most)
    if not shapes:
        raise ResultsError(f"the profile holds no kernel {what}")
    fig, axes = plt.subplots(1, len(shapes), figsize=(size[0] * len(shapes), size[1]), layout="constrained",
                             squeeze=False, sharey=True)
    return table, shapes, ceilings(checked(profile)), fig, axes


def fig_hierarchical_roofline(profile: pd.DataFrame | None, meta: dict, title: str, variants=None,
                              most: int = 3, styles: dict | None = None) -> plt.Figure:
    """A panel per profiled shape of the operations with FLOPs: the FP32 roof and the four
    bandwidth roofs, and every kernel at its intensity at each level (colour: the kernel;
    marker: the level), joined at its achieved FLOP/s. `styles`: (variant, params) -> (line style,
    alpha) for kernels a study draws its own way (by default _dashes' style, opaque)."""
    from .plots import colour_of

    table, shapes, peak, fig, axes = _panels(profile, lambda t: t.gflops > 0, variants, most,
                                             "with FLOPs for a hierarchical roofline", (6.2, 6.4))
    handles = {}
    for ax, shape in zip(axes[0], shapes):
        rows = at_shape(table, shape)
        intensities = rows[[f"{level}_intensity" for level in LEVELS]].to_numpy(dtype=float)
        finite = intensities[np.isfinite(intensities)]
        lo, hi = max(finite.min() / 4, 1e-3), finite.max() * 4
        x = np.logspace(math.log10(lo), math.log10(hi), 300)
        for group in roof_groups(peak):
            level = group[0]
            colour, dash = ROOF_STYLES[level]
            h, = ax.plot(x, np.minimum(peak["fp32"], peak[level] * x) / 1e9, color=colour, linestyle=dash, linewidth=1.6,
                         label=f"{' and '.join(NAMES[g] for g in group)} roof: {peak[level] / 1e9:,.0f} GB/s")
            handles.setdefault(f"roof {level}", h)
        h = ax.axhline(peak["fp32"] / 1e9, color="black", linewidth=1.3, linestyle="--",
                       label=f"FP32 roof: {peak['fp32'] / 1e12:.1f} TFLOP/s")
        handles.setdefault("roof fp32", h)
        for row, label, dash in zip(rows.itertuples(), _labels(rows), _dashes(rows)):
            colour = colour_of(row.variant)
            dash, alpha = (styles or {}).get((row.variant, row.params), (dash, None))
            xs = [getattr(row, f"{level}_intensity") for level in LEVELS]
            ax.plot([v for v in xs if np.isfinite(v)], [row.gflops] * sum(np.isfinite(xs)), color=colour, linewidth=1.2,
                    linestyle=dash, alpha=0.7 * (alpha or 1.0))
            for level, xv in zip(LEVELS, xs):
                if np.isfinite(xv):
                    ax.scatter(xv, row.gflops, marker=MARKERS[level], s=42, color=colour, edgecolors="black",
                               linewidths=0.4, zorder=3, alpha=alpha)
            handles.setdefault(f"kernel {label}", plt.Line2D([], [], color=colour, linewidth=2, linestyle=dash,
                                                             alpha=alpha, label=label))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("FLOP per byte moved at each level, log scale")
        ax.grid(True, which="both", alpha=0.2)
        ax.set_title(panel_title(rows.iloc[0], meta), fontsize=10)
    axes[0][0].set_ylabel("achieved GFLOP/s (Nsight Compute's kernel time), log scale")
    level_keys = [plt.Line2D([], [], marker=MARKERS[level], linestyle="none", color="grey", markeredgecolor="black",
                             label=f"at {NAMES[level]}") for level in LEVELS]
    fig.legend([*handles.values(), *level_keys], [h.get_label() for h in [*handles.values(), *level_keys]],
               loc="outside lower center", ncol=4, fontsize=8)
    fig.suptitle(f"{title}\n{(meta.get('gpu') or {}).get('name', 'no GPU')}: a kernel is limited by the level "
                 "whose point sits closest under its own roof", fontsize=11)
    return fig


def fig_memory_levels(profile: pd.DataFrame | None, meta: dict, title: str, variants=None, most: int = 2) -> plt.Figure:
    """For operations without FLOPs (a transpose): a panel per profiled shape, each kernel's
    bandwidth at each level as a share of that level's peak (Nsight Compute's ceilings)."""
    table, shapes, peak, fig, axes = _panels(
        profile, lambda t: t.op.map(lambda op: get_op(op).flops(Shape(1, 1, 1)) == 0), variants, most,
        "without FLOPs for a memory-levels figure", (7, 5.6))
    for ax, shape in zip(axes[0], shapes):
        rows = at_shape(table, shape)
        width = 0.8 / len(rows)
        for i, (row, label) in enumerate(zip(rows.itertuples(), _labels(rows))):
            values = [getattr(row, f"{level}_pct") for level in LEVELS]
            ax.bar(np.arange(len(LEVELS)) + (i - (len(rows) - 1) / 2) * width, np.nan_to_num(values), width,
                   color=BAR_COLOURS[i % len(BAR_COLOURS)], edgecolor="black", linewidth=0.3, label=label)
        ax.set_xticks(np.arange(len(LEVELS)),
                      [f"{NAMES[level]}\npeak {peak[level] / 1e12:.1f} TB/s" for level in LEVELS], fontsize=8)
        ax.axhline(100, color="black", linewidth=1, linestyle="--")
        ax.set_title(panel_title(rows.iloc[0], meta), fontsize=10)
        ax.grid(True, axis="y", alpha=0.25)
    axes[0][0].set_ylabel("bandwidth reached, % of the level's peak")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=5, fontsize=8)
    fig.suptitle(f"{title}\n{(meta.get('gpu') or {}).get('name', 'no GPU')}: bytes each level moved over the "
                 "kernel's time, against the level's peak", fontsize=11)
    return fig


def level_rows(profile: pd.DataFrame | None, shape: tuple, variants=None, name=None) -> list[list[str]]:
    """A report's table at one shape: a kernel a row, its GFLOP/s and at each level its
    intensity (or GB/s without FLOPs) and share of the level's peak, then the level it is bound by.
    The kernel is named by its series' label, or by name(row of levels(), that label) where given."""
    table = at_shape(levels(profile), shape)
    if variants is not None:
        table = table[table.variant.isin(variants)].reset_index(drop=True)
    out = []
    for row, label in zip(table.itertuples(), _labels(table)):
        cells = [name(row, label) if name else label, f"{row.gflops:,.0f}" if row.gflops > 0 else "-"]
        for level in LEVELS:
            intensity = getattr(row, f"{level}_intensity")
            pct = getattr(row, f"{level}_pct")
            amount = (f"{intensity:.1f} FLOP/B" if np.isfinite(intensity) else
                      f"{getattr(row, f'{level}_gbytes_per_s'):,.0f} GB/s" if np.isfinite(pct) and pct > 0 else "-")
            cells.append(f"{amount}, {pct:.0f} %" if np.isfinite(pct) and pct > 0 else amount)
        cells.append(roof_name(row.bound))
        out.append(cells)
    return out


LEVEL_COLUMNS = ["kernel", "GFLOP/s", *(f"{NAMES[level]}: intensity, % of peak" for level in LEVELS), "closest roof"]
