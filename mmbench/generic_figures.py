"""Figure families of any run, of no study: `mmbench plot rate` (each series' rate by size) and
`mmbench plot vs-library` (each GPU series as % of its operation's library baseline at its precision)
and `mmbench plot peaks` (each GPU product as % of its precision's dense peak), for any
operation and your own kernels. The studies' families are theirs (studies/); `mmbench plot` offers
both, these first."""

from __future__ import annotations

from . import plots
from .ops import OPERATIONS
from .studies.contract import Figure, FigureFamily
from .variants import REGISTRY

# Each operation's library baseline as its legend names it (Operation.yardstick), for the help.
YARDSTICKS = ", ".join(f"{op.name}: {REGISTRY[op.yardstick].label}" for op in OPERATIONS.values() if op.yardstick)

FAMILIES = {
    "rate": FigureFamily(
        "Any run: each series' rate by size, a panel per operation",
        "Each series' rate by size, its operation's own (GFLOP/s, or GB/s for operations without FLOPs), a panel "
        "per operation, log2 size axis (n, or the geometric mean of a shape's dimensions), baselines dashed",
        (Figure("rate", lambda df, meta, *_: plots.fig_rate(df, meta)),)),
    "vs-library": FigureFamily(
        "Any run: each GPU series as % of its operation's library",
        f"Each GPU series' rate as % of its operation's library baseline at the same shape ({YARDSTICKS}), a "
        "panel per operation, with the geometric mean, lowest and highest printed",
        (Figure("vs-library", lambda df, meta, *_: plots.fig_vs_library(df, meta)),),
        plots.library_summary),
    "peaks": FigureFamily(
        "Any run: each GPU product as % of its precision's peak",
        "Each GPU series' GFLOP/s as % of the dense peak of its precision (SMs x dense FLOP per SM per clock x "
        "boost clock: FP32 on the FMA units, the others on the tensor cores; docs/precisions.md), by size, with each "
        "series' best printed",
        (Figure("peaks", lambda df, meta, *_: plots.fig_peaks(df, meta)),), plots.peaks_summary),
}
