"""Batched tuning in a worker process that can be thrown away (issue 46): the batched engine with the
points engine's crash isolation (points_isolated.py), so that a configuration whose kernel faults or
never ends is a `failed` row and its size class goes on.

The child (batched_child.py) holds the GPU and measures whole size classes as LocalBatched does, at
its speed: it tells this process of each shape before timing it and sends each class's rows when the
class is whole, which this process writes (batched_local.record). Where nothing faults, that is all
that crosses.

A fault in a shape's batches (the child dead, its context lost, or no word within the shape's
timeout) cannot be pinned on one configuration: two batches of 16 were in flight. So a fresh child
measures that class again (its earlier shapes went with the dead child), that shape one
configuration at a time, each told first, synchronized after and given its own timeout: the one in
flight when the child is lost again is the culprit, a `failed` row naming what happened, and a
fresh child takes the class up again with it left out from that shape on (that shape still one at a
time: another configuration may fault there). A fault that does not come back leaves every
configuration measured. The metadata records the restarts and every fault (class, shape,
configuration where it was found, reason).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..ops import get_op
from ..sizes import Shape
from ..variants import Params, Variant, format_params
from .batched_local import Classes, Recovery, by_class, record
from .interface import BatchedEngine
from .plan import Point, Settings
from .points_isolated import (FLOOR_S, MULTIPLE, SLOW_BYTES, SLOW_FLOPS, ChildKeeper, ChildLost, Isolation, launch_s,
                              with_hint)

# A shape's launches together (two of each configuration: its module's first and its timed one) at
# FASTER times the points rule's pessimistic rates: the batches' timeout only has to catch a kernel
# that never ends, as a false alarm costs no row (the shape is measured again one configuration at a
# time, each with the points rule's timeout).
FASTER = 10
TIMEOUT_RULE = (f"a shape: max({FLOOR_S:g} s, {MULTIPLE} x 2 launches of every configuration at "
                f"{SLOW_FLOPS * FASTER / 1e12:g} TFLOP/s or {SLOW_BYTES * FASTER / 1e9:g} GB/s, whichever is slower); "
                f"a configuration timed alone after a fault: max({FLOOR_S:g} s, {MULTIPLE} x 2 launches at "
                f"{SLOW_FLOPS / 1e9:g} GFLOP/s or {SLOW_BYTES / 1e9:g} GB/s)")


def shape_timeout(op, shape: Shape, configs: int, given: float | None = None) -> float:
    """Seconds a shape's batches of `configs` configurations may take (TIMEOUT_RULE), or `given`."""
    return given if given is not None else max(FLOOR_S, MULTIPLE * 2 * configs * launch_s(op, shape, FASTER))


def config_timeout(op, shape: Shape, given: float | None = None) -> float:
    """Seconds one configuration timed alone may take (TIMEOUT_RULE), or `given`."""
    return given if given is not None else max(FLOOR_S, MULTIPLE * 2 * launch_s(op, shape))


@dataclass(frozen=True)
class _Flight:
    """Where the child is in its first class: the shape it times (by index), the configuration it
    runs alone there, and how long it may take to say more (None: no limit)."""

    at: int | None = None
    trying: int | None = None
    limit: float | None = None


class IsolatedBatched(ChildKeeper, BatchedEngine):
    """The batched engine in a child process (see the module's notes)."""

    def __init__(self, variant: Variant, configs: Sequence[Params], cache: str, l2_flush: str,
                 isolation: Isolation = Isolation()):
        self.variant, self.configs, self.op = variant, [tuple(c) for c in configs], get_op(variant.op)
        self.faults: list[dict] = []  # {"class", "shape", "configuration" (None: not found), "reason"}
        self._jobs: int | None = None  # set once prepared: a fresh child prepares too
        # the configurations as the child's "open" carries them: points of one shape that means nothing
        self._points = [Point(variant, c, Shape(1, 1, 1), cache) for c in self.configs]
        self._keep(Settings(cache=cache, l2_flush=l2_flush), isolation, isolation.batched_runner)
        self._open(self._points)

    def _open(self, points: Sequence[Point]) -> None:
        super()._open(points)
        if self._jobs is not None:  # a fresh child after a fault loads them again (nvcc's work is cached)
            self._ask(("prepare", self.settings, [], self._jobs), points)

    def prepare(self, jobs: int, since: float, say: Callable[[str], None]) -> float:
        for line in self._ask(("prepare", self.settings, [], jobs), self._points)[0]:
            say(line)
        self._jobs = jobs
        return round(time.perf_counter() - since, 1)

    def run(self, shapes: Sequence[Shape], output: Path, seed: int, skip: set[str],
            on_class: Callable[[str, int, int], None] | None, counts: dict, prune: float) -> dict:
        classes = [(cls, group) for cls, group in by_class(self.op, shapes) if cls not in skip]
        return record(self.measured(classes, seed, prune), len(classes), output, on_class, counts)

    def measured(self, classes: Classes, seed: int, prune: float) -> Iterator[tuple[str, list[dict]]]:
        """Each class's rows as the child finishes it, a fresh child going on after a fault."""
        todo, recovery = list(classes), Recovery()
        while todo and recovery is not None:
            recovery = yield from self._some(todo, seed, prune, recovery)

    def _some(self, todo: list, seed: int, prune: float, recovery: Recovery):
        """The classes of todo (popped as they come) from one child, until it is done (None) or lost
        (the first class's recovery for the next child)."""
        if self._child is None:
            self._open(self._points)
        plain = [(cls, [(s.m, s.n, s.k) for s in group]) for cls, group in todo]
        self._child.send(("classes", self.settings, [], (plain, seed, prune, recovery)))
        self._busy, flight = True, _Flight()
        while True:
            try:
                kind, *body = self._child.receive(flight.limit)
            except ChildLost as exc:
                return self._after_fault(todo, flight, None, str(exc), recovery)
            if kind in ("at", "try"):
                flight = self._next_flight(todo[0][1], flight, kind, body[0])
            elif kind == "class":
                cls, rows, state = body
                self._absorb(state)
                todo.pop(0)
                recovery, flight = Recovery(), _Flight()
                yield cls, rows
            elif kind == "lost":  # the child's context is lost; it exits
                culprit, fault, state = body
                self._absorb(state)
                return self._after_fault(todo, flight, culprit, fault, recovery)
            else:
                self._end(kind, body)
                return None

    def _next_flight(self, group: Sequence[Shape], flight: _Flight, kind: str, index: int) -> _Flight:
        """At a shape (its batches' timeout) or trying a configuration alone (its own)."""
        given = self.isolation.timeout_s
        if kind == "at":
            return _Flight(index, None, shape_timeout(self.op, group[index], len(self.configs), given))
        return _Flight(flight.at, index, config_timeout(self.op, group[flight.at], given))

    def _after_fault(self, todo: list, flight: _Flight, culprit: int | None, reason: str,
                     recovery: Recovery) -> Recovery | None:
        """The child lost in the class todo[0]: the fault recorded, and the class's recovery (the
        configuration in flight failed, where one ran alone; else that shape one at a time); None
        where every class was done (lost as it ended)."""
        self._drop_child()
        if not todo:
            return None
        cls, group = todo[0]
        culprit = flight.trying if culprit is None else culprit
        if flight.at is None or (culprit is None and recovery.careful == flight.at):
            where = "between its shapes" if flight.at is None else \
                f"at {group[flight.at]} twice, the second time before any configuration ran"
            raise RuntimeError(f"the isolated worker process was lost in size class {cls} {where}: {reason}")
        shape = group[flight.at]
        params = None if culprit is None else self.configs[culprit]
        if params is not None:
            reason = with_hint(reason, Point(self.variant, params, shape, self.settings.cache))
        self.faults.append({"class": cls, "shape": str(shape),
                            "configuration": None if params is None else format_params(params), "reason": reason})
        return recovery.after(flight.at, culprit, reason)

    def meta(self) -> dict:
        return {"isolation": {**isolation_meta(self.isolation), "restarts": self.restarts, "faults": list(self.faults)}}


def isolation_meta(isolation: Isolation) -> dict:
    """What a batched tuning's metadata says of its isolation: the mode and the timeouts."""
    return {"mode": isolation.mode, "point_timeout": f"{isolation.timeout_s:g} s" if isolation.timeout_s else TIMEOUT_RULE}
