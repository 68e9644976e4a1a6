"""The numbers of a run's closing summary, per series, from a results file's rows as the file holds
them (results.scan: text): no pandas, so that `mmbench run` ends without importing it (0.4 s of a whole
command on a 2-core machine, beside a run of a few seconds on a cluster; a tuning still reads its file into
a frame to fill the cache)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from .results import cell

SERIES_KEY = ("op", "variant", "params", "scope", "pad", "dtype", "layout")  # what makes a series of a file


@dataclass(frozen=True)
class Series:
    """One series of a results file: ok (verified rows with a rate), not_ok ("2 wrong, 1 failed", or
    "0"), the median and peak of its operation's rate, the peak's m, n, k, the median cv. A series
    without ok rows has NaN numbers (and m, n, k 0)."""

    op: str
    variant: str
    params: str
    scope: str
    pad: int
    dtype: str
    layout: str
    ok: int
    not_ok: str
    median: float
    peak: float
    m: int
    n: int
    k: int
    cv_median: float


def _number(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def series_summary(rows: Iterable[Mapping[str, str]], rate_of: Callable[[str], str]) -> list[Series]:
    """One Series per series, in the order of their first rows; a row's rate is its operation's rate
    column (`rate_of(op)`, e.g. gflops_median)."""
    groups: dict[tuple, list[Mapping[str, str]]] = {}
    for row in rows:
        key = tuple(cell(row, c) for c in SERIES_KEY)
        groups.setdefault(key, []).append(row)
    return [_one(key, members, rate_of) for key, members in groups.items()]


def _one(key: tuple, rows: list[Mapping[str, str]], rate_of: Callable[[str], str]) -> Series:
    op, variant, params, scope, pad, dtype, layout = key
    rate = rate_of(op)
    ok = [(r, _number(r.get(rate))) for r in rows if r.get("status") == "ok"]
    ok = [(r, x) for r, x in ok if not math.isnan(x)]
    counts = Counter(r.get("status", "") for r in rows if r.get("status") != "ok")  # in the order first met
    not_ok = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda c: -c[1])) or "0"
    if not ok:
        return Series(op, variant, params, scope, int(pad or 0), dtype, layout, 0, not_ok, math.nan, math.nan, 0, 0, 0,
                      math.nan)
    best, peak = max(ok, key=lambda rx: rx[1])  # the first of equal peaks, as the file orders them
    cvs = [x for x in (_number(r.get("cv")) for r, _ in ok) if not math.isnan(x)]
    return Series(op, variant, params, scope, int(pad or 0), dtype, layout, len(ok), not_ok,
                  statistics.median(x for _, x in ok), peak, int(best["m"]), int(best["n"]), int(best["k"] or 0),
                  statistics.median(cvs) if cvs else math.nan)
