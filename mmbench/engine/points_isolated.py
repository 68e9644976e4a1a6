"""Points in a worker process that can be thrown away (issue 30): crash isolation.

A kernel that reads or writes out of bounds leaves a sticky error in its CUDA context: every later
call of the process fails, and not even a reset of the primary context brings it back, while a
killed process frees its GPU at once. So IsolatedPoints runs a LocalPoints in a child process
(isolated_child.py), which alone opens the GPU: this process initialises no CUDA. Points go to the
child as wires (wire.py, the format a cluster's workers get too); its rows come back one by one as they finish and
go to on_row at once, so a Session writes each whole.

Before a GPU point's first launch (its kernel compiled, its buffers in place) the child says so,
and the point's timeout starts (point_timeout: nvcc's time is not counted). A child that dies
(a signal, an exit), that outlives the timeout (a kernel that never ends) or whose context a fault
lost (it sends that point's row naming the fault, then exits) is replaced by a fresh one, the
point in flight a `failed` row naming what happened, and the sweep goes on with the rest. The
metadata records the mode, the timeout rule, the restarts and every fault (meta()).

The child is a plain subprocess (`python -m mmbench.engine.isolated_child`) talking over two
pipes, not a multiprocessing Process: a Dask worker is a daemonic process, which multiprocessing
forbids to have children, and a worker's runner is an IsolatedPoints too. ChildKeeper, the hold on
the child, serves the batched tuner's isolation too (batched_isolated.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable, Sequence

from ..environment import own_cpus
from ..schema import HOST
from ..variants import format_params
from . import rows
from .interface import Engine, spent_in
from .plan import Point, Settings
from .points_local import shape_groups
from .wire import wire

MODES = ("process", "none")
# The default per-point timeout: at least FLOOR_S, else MULTIPLE times what the point's launches
# (runs + warmup + the verification) take at a pessimistic rate (its flops at SLOW_FLOPS or its
# bytes at SLOW_BYTES, whichever is longer), plus, with a noise target, twice its sampling budget.
# (200 GFLOP/s is 0.3 % of an H100's FP32 peak, and a fifth of it would still finish in time.)
FLOOR_S, MULTIPLE, SLOW_FLOPS, SLOW_BYTES = 30.0, 5, 2e11, 5e9
TIMEOUT_RULE = (f"max({FLOOR_S:g} s, {MULTIPLE} x the point's runs + warmup + 1 launches at {SLOW_FLOPS / 1e9:g} "
                f"GFLOP/s or {SLOW_BYTES / 1e9:g} GB/s, whichever is slower, + 2 x --time-budget with --max-noise or --max-interval)")
START_S = 600.0  # the most a fresh child may take to import and open the GPU
CHILD = "mmbench.engine.isolated_child"
LOCAL = "mmbench.engine.points_local:LocalPoints"
BATCHED = "mmbench.engine.batched_child:ChildTuner"


@dataclass(frozen=True)
class Isolation:
    """How a run's points are isolated: mode `process` (a child process that can be thrown away
    holds the GPU) or `none` (this process); timeout_s overrides point_timeout's rule. A run
    without GPU points stays in this process (a CPU point cannot lose a CUDA context) unless
    cpu_points. runner: the child's engine class as "module:name", batched_runner a batched
    tuning's (batched_isolated.py; tests swap in faulty ones)."""

    mode: str = "process"
    timeout_s: float | None = None
    cpu_points: bool = False
    runner: str = LOCAL
    batched_runner: str = BATCHED

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"isolation '{self.mode}'; choose from: {', '.join(MODES)}")

    def isolates(self, points: Sequence[Point]) -> bool:
        return self.mode == "process" and (self.cpu_points or any(p.variant.on_gpu for p in points))

    def open(self, settings: Settings, points: Sequence[Point]) -> "IsolatedPoints":
        """The isolated engine (a Dask worker opens its runner so, without importing this module)."""
        return IsolatedPoints(settings, points, self)

    def meta(self) -> dict:
        return {"mode": self.mode, "point_timeout": f"{self.timeout_s:g} s" if self.timeout_s else TIMEOUT_RULE}


def launch_s(op, shape, faster: float = 1.0) -> float:
    """One launch at a pessimistic rate: the operation's flops at SLOW_FLOPS or its bytes at
    SLOW_BYTES (each `faster` times over), whichever takes longer."""
    return max(op.flops(shape) / (SLOW_FLOPS * faster), op.min_bytes(shape) / (SLOW_BYTES * faster))


def point_timeout(point: Point, settings: Settings, given: float | None = None) -> float:
    """Seconds a point may take from its first launch to its row (TIMEOUT_RULE), or `given`."""
    if given is not None:
        return given
    expected = (settings.runs + settings.warmup + 1) * launch_s(point.op, point.shape)
    if settings.target is not None:
        expected += 2 * settings.budget_s
    return max(FLOOR_S, MULTIPLE * expected)


def sanitizer() -> str | None:
    """compute-sanitizer's path: on PATH, else in $CUDA_HOME/bin or /usr/local/cuda/bin."""
    found = shutil.which("compute-sanitizer")
    homes = [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for home in filter(None, [] if found else homes):
        candidate = Path(home) / "bin" / "compute-sanitizer"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return found


def rerun_command(point: Point, tool: str) -> str:
    """The mmbench command that measures this one point under compute-sanitizer (with the variant
    file that declares its kernel, for one of yours)."""
    params = format_params(point.params)
    origin = point.variant.origin
    parts = [tool, "mmbench", *(["-f", str(origin)] if origin is not None and origin.is_file() else []), "run",
             "-v", point.variant.name, "--sizes", str(point.shape),
             *(["--params", params] if params else []), *(["--scope", point.scope] if point.scope != "kernel" else []),
             *(["--pad"] if point.pad else []), *(["--dtype", point.dtype] if point.dtype != "fp32" else []),
             *(["--layout", point.layout] if point.layout != "nn" else []), "--runs", "1", "--warmup", "0",
             "--isolation", "none",
             "-o", "sanitized.csv"]
    return " ".join(parts)


def with_hint(reason: str, point: Point) -> str:
    """A fault's reason, with the command that reruns its point under compute-sanitizer where that
    is installed (a GPU point)."""
    tool = sanitizer() if point.variant.on_gpu else None
    return f"{reason} (rerun under compute-sanitizer: {rerun_command(point, tool)})" if tool else reason


class RemoteClock:
    """The child's SM clock facts (what environment.gpu_info reads of a clock)."""

    def __init__(self, facts: dict):
        self._facts = facts

    def facts(self) -> dict:
        return dict(self._facts)


class RemoteGpu:
    """This process's stand-in for the child's GPU: its facts for environment.collect and the rows."""

    context = drv = None  # no context here (dask_worker._free looks)

    def __init__(self, facts, clock: dict, engine: "IsolatedPoints"):
        self.facts, self.clock, self._engine = facts, RemoteClock(clock), engine

    def active(self):
        return nullcontext(self)


class ChildLost(Exception):
    """The child died or timed out: the reason for the point in flight."""


class Child:
    """One child process and its two pipes."""

    def __init__(self, runner: str):
        from_parent, to_child = os.pipe()  # (read end, write end)
        from_child, to_parent = os.pipe()
        env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}  # a plain process's malloc
        paths = [str(Path(__file__).resolve().parents[2]), *sys.path, env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in dict.fromkeys(paths) if p)
        self.process = subprocess.Popen([sys.executable, "-m", CHILD, str(from_parent), str(to_parent), runner],
                                        pass_fds=(from_parent, to_parent), env=env, stdin=subprocess.DEVNULL)
        os.close(from_parent)
        os.close(to_parent)
        self.inbox, self.outbox = Connection(from_child, writable=False), Connection(to_child, readable=False)

    def send(self, message) -> None:
        try:
            self.outbox.send(message)
        except OSError:  # gone: the next receive says how
            pass

    def receive(self, timeout: float | None):
        """The child's next message; ChildLost when it died or sent nothing within timeout."""
        try:
            if self.inbox.poll(timeout):
                return self.inbox.recv()
        except (EOFError, OSError):
            raise ChildLost(self.death()) from None
        self.kill()
        raise ChildLost(f"timed out after {timeout:.0f} s: a kernel that never ends?")

    def death(self) -> str:
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            return "worker process stopped answering"
        if code < 0:
            return f"worker process killed by signal {-code} ({signal.Signals(-code).name})"
        return f"worker process exited with status {code}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.inbox.close()
        self.outbox.close()


_WAITING: dict[str, Child] = {}  # runner -> a child started ahead of its run (prestart)


def prestart(runner: str = LOCAL) -> None:
    """Start a run's child now, so that its imports and the GPU's start overlap what this process does
    before the run (planning, the tuning caches); the run's engine takes it (or a fresh one, if it has
    died meanwhile). discard_prestarted() ends one no run took."""
    if runner not in _WAITING:
        _WAITING[runner] = Child(runner)


def discard_prestarted() -> None:
    """End the children no run took (a run refused after prestart): they exit when their pipes close."""
    while _WAITING:
        _WAITING.popitem()[1].kill()


def _started_child(runner: str) -> Child:
    """The child prestart() started for this runner while it still lives, else a new one."""
    waiting = _WAITING.pop(runner, None)
    if waiting is not None and waiting.process.poll() is None:
        return waiting
    if waiting is not None:
        waiting.kill()
    return Child(runner)


class ChildKeeper:
    """An isolated engine's hold on its child process (isolated_child.py): the child started with a
    runner and opened for some points, a fresh one where the last was lost (restarts), what the
    child's state messages say (its GPU, kernels, time, libraries, kernel clock), and its end."""

    def _keep(self, settings: Settings, isolation: Isolation, runner: str) -> None:
        self.settings, self.isolation, self._runner = settings, isolation, runner
        self.kernels: dict[str, dict] = {}
        self.gpu: RemoteGpu | None = None
        self.keep_shape, self.compile_jobs, self.blas_threads = False, own_cpus(), None
        self.restarts = 0  # children replaced
        self.spent_s: dict[str, float] = {}  # this process's own: "start_child", "prepare"
        self._children_spent: dict[str, dict[str, float]] = {}  # each child's, "host:pid" -> phases
        self._libraries: dict = {}
        self._clock: dict = {}
        self._child: Child | None = None
        self._busy = False  # a request in flight in the child (an interrupted one: close kills it)

    def _open(self, points: Sequence[Point]) -> None:
        """A fresh child, its runner opened for these points (the GPU, library handles)."""
        with spent_in(self.spent_s, "start_child"):
            self._child = _started_child(self._runner)
            self._child.send(("open", self.settings, [wire(p) for p in points], self._options()))
            try:
                kind, *body = self._child.receive(START_S)
            except ChildLost as exc:
                self._child = None
                raise RuntimeError(f"the isolated worker process did not start: {exc}") from None
        if kind == "error":
            self.close()
            raise RuntimeError(body[0])
        self._absorb(body[0])

    def _options(self) -> dict:
        return {"keep_shape": self.keep_shape, "compile_jobs": self.compile_jobs, "blas_threads": self.blas_threads}

    def _ask(self, message: tuple, points: Sequence[Point]):
        """Send the child a request (a fresh child where the last was lost) and wait for its answer."""
        if self._child is None:
            self._open(points)
        self._child.send(message)
        kind, *body = self._child.receive(None)
        if kind == "error":
            raise RuntimeError(f"in the isolated worker process: {body[0]}")
        self._absorb(body[-1])
        return body

    def _absorb(self, state: dict) -> None:
        facts = state.get("gpu")
        if facts is not None:
            self.gpu = RemoteGpu(facts[0], facts[1], self)
        self.kernels.update(state.get("kernels") or {})
        self._children_spent.update(state.get("time_spent") or {})
        self._libraries.update(state.get("libraries") or {})
        self._clock = state.get("kernel_clock") or self._clock

    def _end(self, kind: str, body: list) -> None:
        """A request's last answer: "done" (its state absorbed, the child idle), or an "error" of the
        runner itself, raised as it would be in this process."""
        if kind != "done":
            raise RuntimeError(f"in the isolated worker process: {body[0]}")
        self._absorb(body[0])
        self._busy = False

    def _drop_child(self) -> None:
        """The child is gone or going: wait for it (or kill it), and count the restart."""
        if self._child is not None:
            self._child.kill()
            self._child = None
        self._busy = False
        self.restarts += 1

    def time_spent(self) -> dict[str, dict[str, float]]:
        """Each child's time by phase (the last it reported), and this process's own."""
        return {**{k: dict(v) for k, v in self._children_spent.items()}, f"{HOST}:{os.getpid()}": dict(self.spent_s)}

    def gpu_names(self) -> set[str]:
        return {self.gpu.facts.name} if self.gpu is not None else set()

    def library_meta(self) -> dict:
        return dict(self._libraries)

    def kernel_clock_meta(self) -> dict:
        return dict(self._clock)

    def close(self) -> None:
        """The child closes its runner and exits; one that does not within 30 s is killed."""
        child, self._child = self._child, None
        if child is None:
            return
        if self._busy:  # interrupted, or failed, mid-request: what the child still does is not wanted
            child.kill()
            return
        child.send(("close",))
        try:
            kind, *body = child.receive(30)
            if kind == "closed":
                self._absorb(body[0])
        except ChildLost:
            return
        try:
            child.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        child.kill()


class IsolatedPoints(ChildKeeper, Engine):
    """Runs points in a child process's LocalPoints (see the module's notes); as a LocalPoints,
    keep_shape, compile_jobs and blas_threads may be set (a cluster worker's runner)."""

    def __init__(self, settings: Settings, points: Sequence[Point], isolation: Isolation = Isolation()):
        self._keep(settings, isolation, isolation.runner)
        self.faults: list[dict] = []  # why each child was replaced: {"point", "reason"}
        self._open(points)

    def _lose(self, point: Point, reason: str) -> None:
        """The child is gone or going: count the restart and its fault."""
        self._drop_child()
        self.faults.append({"point": str(point), "reason": reason})

    def ensure(self, points: Sequence[Point]) -> None:
        self._ask(("ensure", self.settings, [wire(p) for p in points], self._options()), points)

    def precompile(self, points: Sequence[Point]) -> int:
        return self._ask(("precompile", self.settings, [wire(p) for p in points], self._options()), points)[0]

    def precompile_configs(self, variant, configs: list, jobs: int, wait: bool = True) -> None:
        """Gpu.precompile(variant, configs, jobs, wait) in the child (a tuning's prepare)."""
        from ..sizes import Shape

        wires = [wire(Point(variant, tuple(params), Shape(1, 1, 1), "hot")) for params in configs]
        self._ask(("precompile_configs", self.settings, wires, (jobs, wait)), [])

    def run(self, points: Sequence[Point], on_row: Callable[[dict], None]) -> None:
        todo = [p for group in shape_groups(points).values() for p in group]  # the child's order
        while todo:
            todo = todo[self._run_some(todo, on_row):]

    def _run_some(self, todo: list[Point], on_row: Callable[[dict], None]) -> int:
        """Run todo in the child until it is done or lost; how many points got their rows."""
        if self._child is None:
            self._open(todo)
        self._child.send(("run", self.settings, [wire(p) for p in todo], self._options()))
        self._busy, done, limit = True, 0, None
        while True:
            try:
                kind, *body = self._child.receive(limit)
            except ChildLost as exc:
                reason = with_hint(str(exc), todo[done])
                self._lose(todo[done], reason)
                on_row(self._failed_row(todo[done], reason))
                return done + 1
            if kind == "start":
                limit = point_timeout(todo[done], self.settings, self.isolation.timeout_s)
            elif kind == "row":
                row, state = body
                self._absorb(state)
                on_row(row)
                done, limit = done + 1, None
            elif kind == "lost":  # the point's fault lost the child's context: its row names it; the child exits
                row, fault, state = body
                self._absorb(state)
                row["reason"] = with_hint(row["reason"], todo[done])
                self._lose(todo[done], fault)
                on_row(row)
                return done + 1
            else:
                self._end(kind, body)
                return done

    def park(self) -> None:
        """Kept between two runs of a running cluster: the child's runner parked (LocalPoints.park,
        its kernel clock kept), the restarts, faults and libraries recorded anew for the next run."""
        if self._child is not None:
            self._ask(("park", None, [], None), [])
        self.restarts, self.faults, self._libraries = 0, [], {}

    def alive(self) -> bool:
        """Whether the child still runs (or none is open yet): a kept runner whose child died idle is not reused."""
        return self._child is None or self._child.process.poll() is None

    def _failed_row(self, point: Point, reason: str) -> dict:
        row = rows.row(point, self.settings, "failed", reason)
        if point.variant.on_gpu and self.gpu is not None:
            row.update(gpu=self.gpu.facts.name, gpu_uuid=self.gpu.facts.uuid)
        return row

    def meta(self) -> dict:
        return {"isolation": {**self.isolation.meta(), "restarts": self.restarts, "faults": list(self.faults)}}
