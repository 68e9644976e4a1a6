"""A search (tpe, ga: search.py) on the GPU: the sampler proposes a batch of configurations, the
points engine measures each at every shape of the tuning in one pass (compiled in parallel), the
sampler hears their scores and proposes the next, until the budget is spent; every configuration
tried is a row per shape in the tuning's output, as for brute force and random. Then the few best
are timed again, with more samples, into a file of their own beside it (`X.finalists.csv`), and the
best configuration per size class (or shape) among them goes into the cache, with how close the
runners-up came: timing noise must not pick a winner that a second look would not."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from ..analysis import with_forms
from ..engine.plan import Settings
from ..engine.refusals import RunAborted
from ..ops import get_op
from ..results import read_results, sibling
from ..variants import Params, format_params
from ..vocabulary import DeviceId
from .measure import Hooks, measure
from .points_run import points_of, tune_points
from .request import TuneRequest
from .search import Evaluation, proposals
from .strategies import class_scores

BATCH = 8  # configurations a batch: nvcc builds them at once, and the sampler still hears often
FINALISTS = 3  # the best configurations of the search timed again
RETIME = 3  # their samples: this many times the search's


def configuration_scores(rows: list[dict], configs: list[Params], shapes: int, score: str) -> list[float | None]:
    """Each configuration's score over the tuning's shapes: the geometric mean of the operation's
    score (median GFLOP/s) where it verified at every shape, None where it did not (failed, wrong,
    skipped, a spill)."""
    mine: dict[str, list[dict]] = {}
    for row in rows:
        mine.setdefault(row["params"], []).append(row)
    out = []
    for params in configs:
        got = mine.get(format_params(params), [])
        ok = [float(r[score]) for r in got if r["status"] == "ok"]
        out.append(float(math.exp(sum(map(math.log, ok)) / len(ok))) if len(ok) == shapes and all(v > 0 for v in ok)
                   else None)
    return out


def finalists_path(output: Path) -> Path:
    """Where the finalists' second timing goes: beside the tuning's file."""
    return sibling(output, ".finalists.csv")


def tune_searched(request: TuneRequest, about: dict, settings: Settings, hooks: Hooks, strategy: str, budget: int,
                  seed: int, batch: int = BATCH) -> tuple[dict, DeviceId, list[Evaluation], list[str]]:
    """The search's configurations measured batch by batch into request.output, then its FINALISTS
    best timed again into finalists_path(output), whose best per size class (or shape) goes into
    the cache: (best, the GPU recorded under, every evaluation in order, lines on the runners-up)."""
    asking = proposals(request.variant, strategy, budget, seed, batch=batch)
    score = get_op(request.variant.op).score
    state: dict = {"asked": next(asking), "done": []}

    def points(configs: list[Params]):
        return points_of(replace(request, configs=tuple(configs)))

    def more(rows: list[dict]):
        scores = configuration_scores(rows, state["asked"], len(request.shapes), score)
        try:
            state["asked"] = asking.send(scores)
        except StopIteration as finished:
            state["done"] = finished.value
            return []
        return points(state["asked"])

    measure(points(state["asked"]), settings, request.output, about, hooks, cluster=request.cluster,
            isolation=request.isolation, more=more, planned=budget * len(request.shapes))
    found = [e for e in state["done"] if e.score is not None]
    if not found:
        raise RunAborted(f"no configuration of {request.variant.name} the search tried verified at every shape; "
                         f"see {request.output}")
    best = sorted(found, key=lambda e: e.score, reverse=True)[:FINALISTS]
    hooks.say(f"search: {len(state['done'])} configurations tried, {len(found)} verified at every shape; the "
              f"{len(best)} best timed again with {settings.runs * RETIME} samples")
    final = replace(request, configs=tuple(e.params for e in best), output=finalists_path(request.output))
    about = {**about, "tuning": {**about.get("tuning", {}), "finalists_of": str(request.output)}}
    recorded, device = tune_points(final, about, replace(settings, runs=settings.runs * RETIME), hooks)
    return recorded, device, state["done"], runners_up(final.output, request.variant.name, request.per_shape)


def runners_up(path: Path, variant: str, per_shape: bool) -> list[str]:
    """Per size class of the finalists' timing: the runners-up as % of the winner's score."""
    lines = []
    for cls, (_, scores) in class_scores(with_forms(read_results(path)), variant, per_shape).items():
        good = sorted((s for s in scores.values() if s is not None), reverse=True)
        if len(good) > 1:
            lines.append(f"{cls}: runners-up at {', '.join(f'{100 * s / good[0]:.1f} %' for s in good[1:])} "
                         f"of the winner")
    return lines
