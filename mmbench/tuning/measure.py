"""How a tuning that runs sweep points talks to its caller, and the run of those points: the
session that writes their rows (engine/session.py), with the caller's progress display, then its
look at the outcome (the command line prints the summary), then Ctrl-C said as RunInterrupted."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..engine import session
from ..engine.outcome import Outcome, interrupted_message
from ..engine.plan import Point, Settings
from ..engine.refusals import RunInterrupted, Say
from ..engine.session import Progress


@dataclass(frozen=True)
class Hooks:
    """What a tuning's caller hears: messages (say), the command recorded in the metadata, the
    output before its points run (on_output: the command line's Ctrl-C then counts what it holds),
    a progress display (progress(points) gives on_row), and the outcome once they ran, before
    the cache is written (on_measured)."""

    say: Say = print
    command: Sequence[str] = ("mmbench",)
    on_output: Callable[[Path], None] | None = None
    progress: Progress | None = None
    on_measured: Callable[[Outcome], None] | None = None

    def output(self, path: Path) -> None:
        if self.on_output is not None:
            self.on_output(path)


def measure(points: Sequence[Point], settings: Settings, output: Path, about: dict, hooks: Hooks, **execute) -> Outcome:
    """The points into output (session.execute, with execute's keywords: prepare, resume, ...), a
    tuning's rows, some of which may fail; RunInterrupted, saying what the file holds, on Ctrl-C."""
    planned = execute.get("planned") or len(points)  # a search's points come as it chooses them
    with (hooks.progress(planned) if hooks.progress is not None else nullcontext(None)) as on_row:
        outcome = session.execute(points, settings, output, about, command=list(hooks.command), on_row=on_row,
                                  say=hooks.say, **execute)
    if hooks.on_measured is not None:
        hooks.on_measured(outcome)
    if outcome.state == "interrupted":
        raise RunInterrupted(interrupted_message(output, outcome.in_file, sum(outcome.counts.values())))
    return outcome
