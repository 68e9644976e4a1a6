"""Run against run: is the candidate faster than the baseline, and is the difference real?

Points are matched by operation, variant, parameters, shape, scope and padding. For each pair the
ratio of median times (candidate / baseline: above 1 is slower) comes with a confidence interval
from a bootstrap of the kept samples: each run's samples resampled with replacement, the ratio of
the two medians taken each time, the interval the central CONFIDENCE of those ratios (a percentile
bootstrap, seeded, so the same files always give the same answer). The median and its bootstrap
need no normal noise: a sample that caught a hiccup moves neither.

Each pair is then classified against a threshold t (a preset's or the user's): `slower` when the
whole interval lies above 1 + t, `faster` when it lies below 1 / (1 + t), `same` when it lies
within both, `unclear` otherwise (the samples cannot tell: the interval crosses a bound). A pair
measured in another cache mode, or not verified (`ok`) in both runs, is `not compared`; one whose SM
clock sagged in either run is classified but flagged, and left out of the slowdown gate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .precisions import form_suffix
from .variants.model import CPU_BACKENDS
from .schema import samples_of

if TYPE_CHECKING:  # frames come from the caller; only frame() makes one (a run's start imports this module)
    import pandas as pd

# Named thresholds: the change in time below which a pair is the same (the default measured, on an
# H100, false positives under 1 in 100 points between two runs of one commit: docs/compare.md).
PRESETS = {"tight": 0.01, "default": 0.02, "loose": 0.05}
CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20261125
VERDICTS = ("slower", "faster", "unclear", "same", "not compared")
MATCH = ("op", "variant", "params", "m", "n", "k", "scope", "pad", "dtype", "layout")  # what makes two rows one point
CLOCKS = {"events": "time_ms_samples", "kernel": "kernel_ms_samples"}


class CompareError(ValueError):
    """Two runs that cannot be compared (nothing in common, no samples); one line."""


@dataclass(frozen=True)
class Pair:
    """One point in both runs: its ratio, interval and verdict (or why it was not compared)."""

    key: tuple  # MATCH's values
    baseline_ms: float  # median of the baseline's samples
    candidate_ms: float
    ratio: float  # candidate / baseline median time
    low: float
    high: float
    verdict: str
    flags: tuple[str, ...] = ()  # "clock sagged", ...
    why: str = ""  # for `not compared`

    def as_dict(self) -> dict:
        return {**dict(zip(MATCH, self.key)), "baseline_ms": self.baseline_ms, "candidate_ms": self.candidate_ms,
                "ratio": self.ratio, "low": self.low, "high": self.high, "verdict": self.verdict,
                "flags": list(self.flags), "why": self.why}


@dataclass
class Comparison:
    """Every matched pair, and the points each run alone holds."""

    pairs: list[Pair]
    only_baseline: list[tuple]
    only_candidate: list[tuple]
    threshold: float
    clock: str
    warnings: list[str] = field(default_factory=list)
    on_gpu: bool = True  # whether any compared point ran on a GPU (else its samples are the host's timer)
    runs: list[str] = field(default_factory=list)  # each run's GPUs and whole command, the speedup (runs_lines)

    def counts(self) -> dict[str, int]:
        return {v: sum(p.verdict == v for p in self.pairs) for v in VERDICTS}

    def slowdowns(self, beyond: float) -> list[Pair]:
        """The significant slowdowns whose ratio exceeds 1 + beyond, clock-sagged pairs left out."""
        return [p for p in self.pairs if p.verdict == "slower" and p.ratio > 1 + beyond and not p.flags]


def bootstrap_ratio(baseline: np.ndarray, candidate: np.ndarray, rng: np.random.Generator,
                    resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(ratio of medians, low, high): candidate / baseline, with its percentile bootstrap interval."""
    ratio = float(np.median(candidate) / np.median(baseline))
    b = np.median(rng.choice(baseline, size=(resamples, baseline.size)), axis=1)
    c = np.median(rng.choice(candidate, size=(resamples, candidate.size)), axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(c / b, [tail, 100 - tail])
    return ratio, float(low), float(high)


def verdict(low: float, high: float, threshold: float) -> str:
    """slower, faster, same or unclear: where the interval [low, high] lies against 1 +- threshold."""
    up, down = 1 + threshold, 1 / (1 + threshold)
    if low > up:
        return "slower"
    if high < down:
        return "faster"
    if low >= down and high <= up:
        return "same"
    return "unclear"


def _keyed(df: pd.DataFrame) -> dict[tuple, pd.Series]:
    return {tuple(r[c] for c in MATCH): r for _, r in df.iterrows()}


def compare(baseline: pd.DataFrame, candidate: pd.DataFrame, threshold: float = PRESETS["default"],
            clock: str = "events") -> Comparison:
    """Match the two runs' points and classify each pair (module docstring)."""
    base, cand = _keyed(baseline), _keyed(candidate)
    common = [k for k in base if k in cand]
    if not common:
        raise CompareError("the two runs have no point in common (operation, variant, parameters, shape, scope)")
    rng = np.random.default_rng(SEED)
    pairs = [_pair(key, base[key], cand[key], threshold, CLOCKS[clock], rng) for key in common]
    on_gpu = any(str(base[k].get("backend", "cuda")) not in CPU_BACKENDS for k in common)
    return Comparison(pairs, [k for k in base if k not in cand], [k for k in cand if k not in base], threshold, clock,
                      on_gpu=on_gpu)


def _pair(key: tuple, a: pd.Series, b: pd.Series, threshold: float, column: str, rng) -> Pair:
    nan = float("nan")
    if a["status"] != "ok" or b["status"] != "ok":
        return Pair(key, nan, nan, nan, nan, nan, "not compared", why=f"status {a['status']} -> {b['status']}")
    if a["cache"] != b["cache"]:
        return Pair(key, nan, nan, nan, nan, nan, "not compared", why=f"cache {a['cache']} -> {b['cache']}")
    x, y = (np.asarray(samples_of(str(r[column]) if isinstance(r[column], str) else ""), dtype=float) for r in (a, b))
    if x.size == 0 or y.size == 0:
        return Pair(key, nan, nan, nan, nan, nan, "not compared", why=f"no {column} in {'baseline' if not x.size else 'candidate'}")
    ratio, low, high = bootstrap_ratio(x, y, rng)
    flags = tuple(f"clock sagged in the {run}" for run, r in (("baseline", a), ("candidate", b)) if _sagged(r))
    return Pair(key, float(np.median(x)), float(np.median(y)), ratio, low, high, verdict(low, high, threshold), flags)


def _sagged(row: pd.Series) -> bool:
    return str(row.get("clock_sagged", "")).strip().lower() in ("true", "1", "yes")


# What must be alike between two runs for their times to be comparable: (metadata path, what it is).
ALIKE = ((("gpu", "name"), "GPU"), (("gpu", "uuid"), "GPU (same model, another board)"),
         (("gpu", "driver_version"), "driver"), (("gpu", "sm_clock_max_mhz"), "maximum SM clock"),
         (("settings", "cache"), "cache mode"), (("settings", "l2_flush"), "L2 flush"),
         (("settings", "runs"), "samples per point"), (("git", "commit"), "commit"),
         (("software", "nvcc"), "nvcc"))


def differences(baseline: dict, candidate: dict) -> list[str]:
    """One line per fact of ALIKE on which the runs' metadata differ (a commit is expected to); the
    board's UUID only where the model is the same (another model is another board)."""
    out = []
    names = [_at(meta, ("gpu", "name")) for meta in (baseline, candidate)]
    for path, what in ALIKE:
        a, b = (_at(meta, path) for meta in (baseline, candidate))
        if path == ("gpu", "uuid") and names[0] != names[1]:
            continue
        if a != b and not (a is None and b is None):
            out.append(f"the runs differ in {what}: {a} -> {b}")
    return out


def gpus_of(meta: dict) -> list[str]:
    """The GPUs a run's last invocation ran on, by UUID (every GPU of a cluster's workers), else by name."""
    last = (meta.get("invocations") or [{}])[-1]
    gpus = (last.get("cluster") or {}).get("gpus") or [last.get("gpu") or meta.get("gpu") or {}]
    return [g.get("uuid") or g.get("name") for g in gpus if g.get("uuid") or g.get("name")]


def runs_lines(baseline: dict, candidate: dict) -> list[str]:
    """Each run's GPUs (by UUID) and its last invocation's whole command (process_s: from the
    interpreter's start to the last row, a cluster's start included; wall_s: the run alone), and,
    where both say it, `speedup N.NNx`: the baseline's whole command over the candidate's."""
    lines, wholes = [], []
    for word, meta in (("baseline", baseline), ("candidate", candidate)):
        last = (meta.get("invocations") or [{}])[-1]
        gpus, whole = gpus_of(meta), last.get("process_s")
        wholes.append(whole)
        model = _at(meta, ("gpu", "name")) or "no GPU named"
        lines.append(f"{word}: {len(gpus)} x {model} ({', '.join(gpus) or 'none'}): "
                     + (f"whole command {whole:.1f} s, " if whole else "whole command not recorded, ")
                     + f"the run {last.get('wall_s', float('nan')):.1f} s")
    if all(wholes):
        lines.append(f"speedup {wholes[0] / wholes[1]:.2f}x (the baseline's whole command over the candidate's)")
    return lines


def _at(meta: dict, path: Sequence[str]):
    for part in path:
        meta = meta.get(part) if isinstance(meta, dict) else None
    return meta


def percent(x: float) -> str:
    return "-" if math.isnan(x) else f"{(x - 1) * 100:+.1f} %"


def frame(comparison: Comparison) -> pd.DataFrame:
    """Every pair as a row (MATCH's columns, the medians, ratio, interval, verdict, flags, why)."""
    import pandas as pd

    return pd.DataFrame([p.as_dict() for p in comparison.pairs])


def clock_text(comparison: Comparison) -> str:
    """Whose samples were compared: the events' or the kernel clock's, or for CPU points the host's timer."""
    return f"{comparison.clock} clock" if comparison.on_gpu else "the host's timer (CPU points)"


def summary_line(comparison: Comparison) -> str:
    counts = comparison.counts()
    said = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    alone = [f"{len(keys)} only in the {run}" for run, keys in (("baseline", comparison.only_baseline),
                                                               ("candidate", comparison.only_candidate)) if keys]
    return (f"{len(comparison.pairs)} points compared at a threshold of {comparison.threshold:.1%} "
            f"({clock_text(comparison)}, {CONFIDENCE:.0%} bootstrap intervals of the ratio of medians): {said}"
            + (f"; {', '.join(alone)}" if alone else ""))


def by_variant(comparison: Comparison) -> list[tuple[str, int, float, int, int]]:
    """Per variant (and precision, layout) of the compared pairs: (name, pairs, geometric-mean ratio,
    slower, faster), in the order the variants first come."""
    groups: dict[str, list[Pair]] = {}
    for p in comparison.pairs:
        if p.verdict != "not compared":
            op, variant, params, m, n, k, scope, pad, dtype, layout = p.key
            groups.setdefault(variant + form_suffix(dtype, layout), []).append(p)
    return [(name, len(ps), float(np.exp(np.mean(np.log([p.ratio for p in ps])))),
             sum(p.verdict == "slower" for p in ps), sum(p.verdict == "faster" for p in ps)) for name, ps in groups.items()]


def extremes(comparison: Comparison) -> tuple[Pair | None, Pair | None]:
    """The compared pair whose time grew most, and the one whose time fell most."""
    compared = [p for p in comparison.pairs if p.verdict != "not compared" and not math.isnan(p.ratio)]
    if not compared:
        return None, None
    return max(compared, key=lambda p: p.ratio), min(compared, key=lambda p: p.ratio)


class Keys:
    """Short names of parameter sets ("c1", "c2", ...), so a table row is one line: the key, what each
    stands for listed after the table."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def of(self, params: str) -> str:
        if not params:
            return ""
        return self.names.setdefault(params, f"c{len(self.names) + 1}")

    def lines(self) -> list[str]:
        return [f"  {name} = {params}" for params, name in self.names.items()]


def short_point(key: tuple, keys: Keys) -> tuple[str, str]:
    """(variant with its precision, layout, scope and the parameters' key; size): a point in few columns."""
    op, variant, params, m, n, k, scope, pad, dtype, layout = key
    size = str(m) if m == n == k else f"{m}x{n}" + (f"x{k}" if k else "")
    extra = [x for x in (keys.of(params), form_suffix(dtype, layout).strip(), scope if scope != "kernel" else "",
                         "padded" if int(pad) else "") if x]
    return " ".join([variant, *extra]), size


def short_cells(p: Pair, keys: Keys) -> list[str]:
    """A pair in SHORT_HEADERS' few columns (a row a line at 80 columns); a flag marks the verdict with *."""
    point, size = short_point(p.key, keys)
    pct = (lambda x: "-" if math.isnan(x) else f"{(x - 1) * 100:+.1f}")
    return [point, size, "-" if math.isnan(p.baseline_ms) else f"{p.baseline_ms:.4g}",
            "-" if math.isnan(p.candidate_ms) else f"{p.candidate_ms:.4g}", pct(p.ratio) + ("%" if not math.isnan(p.ratio) else ""),
            "-" if math.isnan(p.low) else f"{pct(p.low)}..{pct(p.high)}",
            p.verdict + ("*" if p.flags or p.why else "")]


SHORT_HEADERS = ("point", "size", "base ms", "cand ms", "change", "95% interval", "verdict")


def shown(comparison: Comparison, every: bool) -> list[Pair]:
    """The pairs a report lists: all, or those that are not the same (slower first, by ratio)."""
    pairs = comparison.pairs if every else [p for p in comparison.pairs if p.verdict != "same" or p.flags]
    order = {v: i for i, v in enumerate(VERDICTS)}
    return sorted(pairs, key=lambda p: (order[p.verdict], -(p.ratio if not math.isnan(p.ratio) else 0)))


def row_cells(p: Pair) -> list[str]:
    """A pair as a report's cells: point, baseline and candidate medians, change, interval, verdict."""
    where = _point_name(p.key)
    note = "; ".join((*p.flags, p.why) if p.why else p.flags)
    return [where, "-" if math.isnan(p.baseline_ms) else f"{p.baseline_ms:.4g}",
            "-" if math.isnan(p.candidate_ms) else f"{p.candidate_ms:.4g}", percent(p.ratio),
            "-" if math.isnan(p.low) else f"{percent(p.low)} .. {percent(p.high)}", p.verdict, note]


def alone_lines(comparison: Comparison, every: bool = False, most: int = 8, name=None) -> list[str]:
    """The points one run alone holds, a line per run (the first `most` named unless every), each
    named by name(key) (default: in full)."""
    lines = []
    for run, keys in (("baseline", comparison.only_baseline), ("candidate", comparison.only_candidate)):
        names = [(name or _point_name)(k) for k in (keys if every else keys[:most])]
        if keys:
            lines.append(f"only in the {run} ({len(keys)}): {', '.join(names)}" + ("" if len(names) == len(keys) else ", ..."))
    return lines


def _point_name(key: tuple) -> str:
    op, variant, params, m, n, k, scope, pad, dtype, layout = key
    shape = f"{m}x{n}" + (f"x{k}" if k else "")
    return f"{variant}{'[' + params + ']' if params else ''}{form_suffix(dtype, layout)} {shape}" \
        + (f" {scope}" if scope != "kernel" else "") + (" padded" if int(pad) else "")


HEADERS = ("point", "baseline ms", "candidate ms", "time change", "interval", "verdict", "note")


def markdown(comparison: Comparison, every: bool = False) -> str:
    """The comparison as Markdown: warnings, the summary line, a table of the pairs shown."""
    lines = [f"> warning: {w}" for w in comparison.warnings] + ([""] if comparison.warnings else [])
    lines += [summary_line(comparison), *comparison.runs, "", "| " + " | ".join(HEADERS) + " |",
              "|" + " --- |" * len(HEADERS)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row_cells(p)) + " |" for p in shown(comparison, every)]
    alone = alone_lines(comparison, every)
    return "\n".join(lines + ([""] + alone if alone else [])) + "\n"


def as_json(comparison: Comparison) -> dict:
    """The whole comparison as plain data (every pair, whatever --all says)."""
    return {"threshold": comparison.threshold, "clock": comparison.clock, "confidence": CONFIDENCE,
            "method": "percentile bootstrap of the ratio of median times", "resamples": RESAMPLES,
            "counts": comparison.counts(), "warnings": comparison.warnings, "runs": comparison.runs,
            "pairs": [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in p.as_dict().items()}
                      for p in comparison.pairs],
            "only_baseline": [dict(zip(MATCH, k)) for k in comparison.only_baseline],
            "only_candidate": [dict(zip(MATCH, k)) for k in comparison.only_candidate]}
