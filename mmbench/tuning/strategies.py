"""Which configurations a tuning tries, and the best of what it measured.

``mmbench tune`` turns the chosen configurations into ordinary sweep points (or the batched
engine's launches), so every configuration is compiled, verified and timed by the harness and
becomes a row, failures included. The best per size class goes into a tuning cache (cache.py).
Generic: the size classes come from the variant's operation.
"""

from __future__ import annotations

import itertools
import random
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..ops import get_op
from ..ops.base import class_size, shape_class
from ..sizes import Shape
from ..variants import Params, Variant, format_params, get_variant, param_points, parse_params, tuning_space
from ..variants.model import LARGE_SPACE, raw_size, sample_space
from .cache import TuneError, entry_score
from .search import SEARCHES, search

STRATEGIES = ("brute", "random")


def size_class(variant: Variant, shape: Shape) -> str:
    """The size class of a shape for a variant, as its operation defines it (GEMM: the nearest
    power of two and the alignment of its rows, e.g. 2049 -> "2048u")."""
    return get_op(variant.op).size_class(shape)


def _choose_large(variant: Variant, strategy: str, budget: int | None, seed: int, default: bool) -> list[Params]:
    """choose() over a space too large to list (more than LARGE_SPACE raw points): the defaults, then
    a random sample drawn without building the space; brute force is refused."""
    if strategy == "brute":
        raise TuneError(f"'{variant.name}' has {raw_size(variant)} raw points (more than {LARGE_SPACE} are never listed): "
                        f"use --strategy random --budget N, or pin parameters with --params")
    if budget is None:
        raise needs_budget(strategy, default)
    defaults = [p for p in param_points(variant) if variant.allows(p)]
    rest = [p for p in sample_space(variant, budget, seed) if p not in defaults]
    return (defaults + rest)[:max(budget, len(defaults))]


def needs_budget(strategy: str, default: bool = False) -> TuneError:
    """The refusal of a strategy that chooses --budget configurations, given none (`default`: the
    strategy was not asked for, --strategy auto chose it)."""
    if default:
        return TuneError(f"the default strategy ({strategy}) needs --budget N: the configurations it may measure; "
                         f"--strategy brute measures every one")
    return TuneError(f"--strategy {strategy} needs --budget N: the configurations it may measure")


def no_space(variant: Variant) -> TuneError:
    """The refusal of a tuning of a variant with nothing to tune."""
    return TuneError(f"variant '{variant.name}' has no tuning space")


def choose(variant: Variant, strategy: str, budget: int | None, seed: int = 0,
           space: Sequence[Params] | None = None, pinned: Mapping[str, tuple[int, ...]] | None = None,
           default: bool = False) -> list[Params]:
    """The configurations a strategy tries, the variant's defaults first (the baseline).
    `space` narrows the variant's space (a replay chooses among what was recorded); `pinned`
    keeps only points whose named parameters take one of the given values."""
    if strategy not in STRATEGIES:
        raise TuneError(f"unknown strategy '{strategy}'; choose from: {', '.join(STRATEGIES)}")
    if space is None and raw_size(variant) > LARGE_SPACE and not pinned:
        return _choose_large(variant, strategy, budget, seed, default)
    space = list(space) if space is not None else tuning_space(variant)
    if pinned:
        unknown = sorted(set(pinned) - set(variant.space))
        if unknown:
            raise TuneError(f"'{variant.name}' has no parameter {unknown[0]}; its parameters: {', '.join(sorted(variant.space))}")
        space = [p for p in space if all(dict(p)[k] in v for k, v in pinned.items())]
        if not space:
            raise TuneError(f"no configuration of '{variant.name}' satisfies its constraints with those --params")
    if not space:
        raise no_space(variant)
    defaults = [p for p in param_points(variant) if p in set(space)]
    rest = [p for p in space if p not in defaults]
    if strategy == "random":
        if budget is None:
            raise needs_budget(strategy, default)
        rest = random.Random(seed).sample(rest, min(max(budget - len(defaults), 0), len(rest)))
    elif budget is not None:  # a budget would mean nothing to it: refused, whether larger or smaller
        raise TuneError(f"brute force tries all {len(space)} configurations of '{variant.name}'; --budget {budget} is "
                        f"for --strategy random")
    return defaults + rest


def candidates(rows: pd.DataFrame, variant: Variant, top: int) -> list[Params]:
    """The configurations among the `top` fastest (median GFLOP/s) at any shape of a recorded
    tuning run: a short list that is good somewhere, for a finer search such as --per-shape.
    Only points of the variant's current space count; a recorded configuration that predates a
    parameter stands for each of its values (a new switch is tried both ways)."""
    ok = rows[(rows.variant == variant.name) & (rows.status == "ok")]
    score = get_op(variant.op).score
    picks = (ok.sort_values(score, ascending=False).groupby(["m", "n", "k"], sort=False).head(top))
    current = set(tuning_space(variant))
    found = []
    for recorded in map(dict, map(parse_params, dict.fromkeys(picks.params))):
        missing = sorted(set(variant.space) - set(recorded))
        for values in itertools.product(*(variant.space[name] for name in missing)):
            point = tuple(sorted({**recorded, **dict(zip(missing, values))}.items()))
            if point in current:
                found.append(point)
    return list(dict.fromkeys(found))


def class_scores(rows: pd.DataFrame, variant: str, per_shape: bool = False) -> dict[str, tuple[int, dict]]:
    """Per size class (each exact shape with per_shape): its shapes' count and each configuration's
    score there, the geometric mean of its median GFLOP/s (the operation's score) over the class's
    shapes where it was verified at every one, None where it was not (it failed somewhere, or the
    tuner pruned it after the class's first shape); one skipped at every shape is none of the class's."""
    mine = rows[rows.variant == variant].copy()
    if mine.empty:
        return {}
    op_variant = get_variant(variant)
    op = get_op(op_variant.op)
    classify = shape_class if per_shape else (lambda shape: size_class(op_variant, shape))
    mine["size_class"] = [classify(Shape(int(m), int(n), int(k))) for m, n, k in zip(mine.m, mine.n, mine.k)]
    out = {}
    for cls, group in mine.groupby("size_class"):
        shapes = len(group[["m", "n", "k"]].drop_duplicates())
        ok = group.status == "ok"
        # per configuration, in one pass (a group at a time took seconds on an 8000-row tuning): whether
        # every row is skipped, how many verified, the mean log score of those
        each = pd.DataFrame({"params": group.params, "skipped": group.status == "skipped", "ok": ok,
                             "log": np.log(group[op.score].where(ok).astype(float))}).groupby("params", sort=True)
        each = each.agg(skipped=("skipped", "all"), ok=("ok", "sum"), log=("log", "mean"))
        scores = {}
        for params, skipped, verified, log in each.itertuples():
            if skipped:  # the tuner knew before trying: not a configuration of this class
                continue
            # a configuration that failed at any shape of the class is out
            scores[params] = float(np.exp(log)) if verified == shapes else None
        out[str(cls)] = (shapes, scores)
    return out


def best_per_class(rows: pd.DataFrame, variant: str, per_shape: bool = False) -> dict[str, dict]:
    """For each size class (each exact shape with per_shape): the configuration with the highest
    geometric-mean GFLOP/s (median of samples) among those verified at every shape of the class."""
    field = get_op(get_variant(variant).op).score.rsplit("_median", 1)[0]  # gflops_median -> the entry's "gflops"
    best = {}
    for cls, (shapes, scores) in class_scores(rows, variant, per_shape).items():
        good = {p: s for p, s in scores.items() if s is not None}
        if good:
            top = max(good, key=good.get)
            best[cls] = {"params": top, field: good[top], "shapes": shapes, "tried": len(good)}
    return best


def read_recorded(path, variant: Variant) -> tuple[dict[str, tuple[int, dict]], pd.DataFrame | None]:
    """(class_scores, rows) of a recorded tuning: a points engine's rows (a row per configuration and
    shape), or the batched engine's (size_class, params, status and the class's score, `shapes` where
    written; no rows then)."""
    from ..results import read_results

    head = pd.read_csv(path, nrows=0).columns
    if "size_class" not in head or "m" in head:
        rows = read_results(path)
        return class_scores(rows, variant.name), rows
    rows = pd.read_csv(path, dtype={"params": str, "size_class": str})
    rows = rows[rows.status != "skipped"]  # known before trying (Operation.tuning_skip): none of the class's
    field = get_op(variant.op).score.rsplit("_median", 1)[0]
    if field not in rows:
        raise TuneError(f"{path}: a batched tuning without a {field} column")
    out = {}
    for cls, group in rows.groupby("size_class", sort=False):
        shapes = int(group.shapes.max()) if "shapes" in group and group.shapes.notna().any() else 1
        out[str(cls)] = (shapes, {p: (float(s) if st == "ok" else None)
                                  for p, st, s in zip(group.params, group.status, group[field])})
    return out, None


def replay(recorded: pd.DataFrame | dict, variant: Variant, strategy: str, budget: int | None,
           seed: int = 0) -> dict[str, dict]:
    """Run a strategy against recorded measurements (rows, or recorded_classes' scores) instead of the
    GPU: what it would pick per size class. Brute force and random choose among every configuration
    recorded; a search (tpe, ga) searches each class on its own, among those recorded there."""
    classes = class_scores(recorded, variant.name) if isinstance(recorded, pd.DataFrame) else recorded
    field = get_op(variant.op).score.rsplit("_median", 1)[0]
    if strategy not in SEARCHES:
        everywhere = list(dict.fromkeys(p for _, scores in classes.values() for p in scores))
        tried = {format_params(p) for p in choose(variant, strategy, budget, seed, [parse_params(p) for p in everywhere])}
    best = {}
    for cls, (shapes, scores) in classes.items():
        if strategy in SEARCHES:
            by_params = {parse_params(p): s for p, s in scores.items()}
            found = search(variant, strategy, budget, seed, by_params.get, by_params)
            good = {format_params(e.params): e.score for e in found if e.score is not None}
            count = len(found)
        else:
            good = {p: s for p, s in scores.items() if p in tried and s is not None}
            count = len(good)
        if good:
            top = max(good, key=good.get)
            best[cls] = {"params": top, field: good[top], "shapes": shapes, "tried": count}
    return best


def describe(best: Mapping[str, dict]) -> Sequence[str]:
    return [f"n~{cls}: {e['params']} ({entry_score(e):.0f} {'GFLOP/s' if 'gflops' in e else 'GB/s'} over {e['shapes']} "
            f"shape(s), {e['tried']} tried)"
            for cls, e in sorted(best.items(), key=lambda kv: (class_size(kv[0]), kv[0]))]


