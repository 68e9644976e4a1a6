"""The child process of an isolated engine (points_isolated.py): `python -m
mmbench.engine.isolated_child IN OUT RUNNER` holds the GPU in a runner (LocalPoints unless
RUNNER names another "module:name"), reads requests from pipe IN and answers on pipe OUT.

Requests: ("open", settings, points, options) first, then ("run" | "ensure" | "precompile",
settings, points, options), ("park", None, [], None), ("precompile_configs", settings, points,
(jobs, wait)) and ("close",). A run
answers ("start",) before each GPU point's first launch, ("row", row, state) as each point
finishes and ("done", state) at its end. A point whose fault lost the CUDA context is answered
("lost", row, fault, state), and the process exits at once: nothing more can run in it. A batched
tuning's runner (batched_child.py) answers ("prepare", settings, [], jobs) and ("classes", settings,
[], (classes, seed, prune, recovery)) instead. Ctrl-C is the parent's to handle (it ends the run and
this process)."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection

from .. import blas_threads
from .wire import unwire

EXIT_LOST = 3  # the exit status of a child whose context a fault lost


def state(runner, kernels: dict | None = None) -> dict:
    """What the parent keeps of the runner: its GPU's facts, kernels (those given), time spent,
    libraries and kernel clock (all of it unless kernels are given: a row's, kept small)."""
    if kernels is not None:
        return {"kernels": kernels, "time_spent": runner.time_spent()}
    gpu = runner.gpu
    return {"gpu": (gpu.facts, gpu.clock.facts()) if gpu is not None else None, "kernels": dict(runner.kernels),
            "time_spent": runner.time_spent(), "libraries": runner.library_meta(),
            "kernel_clock": runner.kernel_clock_meta()}


def configure(runner, settings, options: dict) -> None:
    runner.settings = settings
    runner.keep_shape, runner.compile_jobs = options["keep_shape"], options["compile_jobs"]


def run(runner, outbox: Connection, settings, wires: list, options: dict) -> None:
    """The points, a message before each GPU point's first launch and one with each row."""
    configure(runner, settings, options)
    points = [unwire(w) for w in wires]
    sent = set(runner.kernels)

    def on_row(row: dict) -> None:
        new = {k: v for k, v in runner.kernels.items() if k not in sent}
        sent.update(new)
        if runner.context_lost:
            outbox.send(("lost", row, runner.context_lost, state(runner)))
            outbox.close()
            os._exit(EXIT_LOST)
        outbox.send(("row", row, state(runner, new)))

    runner.on_launch = lambda point: outbox.send(("start",))
    with blas_threads.limited(options.get("blas_threads")):
        runner.ensure(points)
        runner.run(points, on_row)
    outbox.send(("done", state(runner)))


def answer(runner, outbox: Connection, message: tuple) -> None:
    kind, settings, wires, more = message
    if kind == "run":
        run(runner, outbox, settings, wires, more)
        return
    if kind == "classes":  # a batched tuner's (batched_child.py): it tells its own progress
        runner.classes(outbox, *more)
        outbox.send(("done", state(runner)))
        return
    if kind == "park":  # between two runs of a running cluster: the runner kept (LocalPoints.park)
        runner.park(keep_clock=True)
        outbox.send(("answered", None, state(runner)))
        return
    if kind == "prepare":
        outbox.send(("answered", runner.prepare(more), state(runner)))
        return
    points = [unwire(w) for w in wires]
    compiled = 0
    if kind == "ensure":
        configure(runner, settings, more)
        runner.ensure(points)
    elif kind == "precompile":
        configure(runner, settings, more)
        compiled = runner.precompile(points)
    elif kind == "precompile_configs" and points and runner.gpu is not None:
        jobs, wait = more
        runner.gpu.precompile(points[0].variant, [p.params for p in points], jobs, wait)
    outbox.send(("answered", compiled, state(runner)))


def load(name: str):
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def serve(inbox: Connection, outbox: Connection, make) -> int:
    _, settings, wires, options = inbox.recv()
    try:
        runner = make(settings, [unwire(w) for w in wires])
        configure(runner, settings, options)
    except Exception as exc:  # GpuUnavailable and the like
        outbox.send(("error", str(exc) or type(exc).__name__))
        return 1
    outbox.send(("ready", state(runner)))
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):  # the parent is gone
            return 0
        if message[0] == "close":
            runner.close()
            outbox.send(("closed", state(runner)))
            return 0
        try:
            answer(runner, outbox, message)
        except Exception as exc:
            outbox.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def warm() -> None:
    """Import what opening the GPU takes and start the CUDA driver while the parent still plans (a
    prestarted child: points_isolated.prestart); anything missing is left for the runner to report."""
    try:
        import pycuda.driver as drv

        drv.init()
        from .. import device  # noqa: F401  (NVML, the kernel clock's modules follow from the runner)
    except Exception:
        pass


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inbox, outbox = Connection(int(argv[0]), writable=False), Connection(int(argv[1]), readable=False)
    make = load(argv[2])
    if not inbox.poll(0):  # nothing asked yet: the parent is still planning
        warm()
    return serve(inbox, outbox, make)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
