"""`mmbench verify-timing`: the harness checks its own clocks against Nsight Compute (issue 17).

Each point runs here as in any sweep (event times and the kernel clock, CUPTI's summed device
work), then NCU_CALLS times under Nsight Compute in a process of its own, the GPU idle between
calls; the median of gpu__time_duration summed over each call's kernels is the reference. The target: the kernel clock within 5 % of Nsight
Compute at every size. Nsight Compute times kernels only, while the kernel clock also counts a
call's memsets (the zeroing of C before split-K layers): the ratio takes the call's kernels alone
(kernels_only_ms_median), and the table shows both.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from .profile import ProfileError, kernel_time_ns, ncu_command, ncu_path
from .engine.plan import Point

TOLERANCE = 0.05  # the target: within 5 % of Nsight Compute
NCU_CALLS = 10  # calls of each point under Nsight Compute: a small kernel's time varies by a few % a launch
COLUMNS = ("variant", "params", "m", "n", "k", "events_us", "kernel_us", "kernels_only_us", "ncu_us", "kernel_records",
           "ncu_kernels", "kernel_vs_ncu", "events_vs_ncu", "within", "ncu_note")


def compare(rows: pd.DataFrame, ncu: dict[tuple, tuple[float, int] | str]) -> pd.DataFrame:
    """One line per point that ran and was profiled: medians of both clocks (us), Nsight Compute's
    time, their ratios, and whether the kernel clock is within TOLERANCE of Nsight Compute (a point
    ncu could not time: no ratio, and why in ncu_note)."""
    out = []
    for r in rows[rows.status == "ok"].itertuples():
        key = (r.variant, r.params, int(r.m), int(r.n), int(r.k))
        if key not in ncu:
            continue
        ncu_ns, kernels, note = (float("nan"), 0, ncu[key]) if isinstance(ncu[key], str) else (*ncu[key], "")
        ncu_us = ncu_ns / 1e3
        kernel_us = float(r.kernel_ms_median) * 1e3 if pd.notna(r.kernel_ms_median) else float("nan")
        # Nsight Compute times kernels only: compared with the call's kernels, without its memsets
        only_us = float(r.kernels_only_ms_median) * 1e3 if pd.notna(r.kernels_only_ms_median) else float("nan")
        events_us = float(r.time_ms_median) * 1e3
        ratio = only_us / ncu_us if ncu_us else float("nan")
        out.append({"variant": r.variant, "params": r.params, "m": int(r.m), "n": int(r.n), "k": int(r.k),
                    "events_us": events_us, "kernel_us": kernel_us, "kernels_only_us": only_us, "ncu_us": ncu_us,
                    "kernel_records": r.kernel_records, "ncu_kernels": kernels, "kernel_vs_ncu": ratio,
                    "events_vs_ncu": events_us / ncu_us if ncu_us else float("nan"),
                    "within": bool(abs(ratio - 1) <= TOLERANCE), "ncu_note": note})
    return pd.DataFrame(out, columns=list(COLUMNS))


def ncu_reference(points: Sequence[Point], cache_control: str = "all", calls: int = NCU_CALLS
                  ) -> dict[tuple, tuple[float, int] | str]:
    """Nsight Compute's kernel time of each point, the median of `calls` calls (one with
    cache_control "none": a later call would find the inputs in L2), by (variant, params, m, n, k);
    a point ncu could not time has the reason instead. ProfileError when there is no ncu."""
    from .variants import format_params

    if ncu_path() is None:
        ncu_command([])  # raises the ProfileError that says how to get ncu
    calls = calls if cache_control == "all" else 1
    found: dict[tuple, tuple[float, int] | str] = {}
    for p in points:
        key = (p.variant.name, format_params(p.params), p.shape.m, p.shape.n, p.shape.k)
        try:
            found[key] = kernel_time_ns(p, cache_control, calls)
        except ProfileError as exc:  # this point's launches, not ncu itself: the others still compare
            found[key] = str(exc)
    return found
