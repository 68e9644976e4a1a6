"""What every command module shares: the console, the error types, small option parsers."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, TypeVar

import click
from rich.console import Console

from .. import places
from ..results import runs_newest_first

ARGV = ["mmbench"]  # this invocation's command line as typed, set by the group, kept in the metadata
console = Console(markup=False, highlight=False)  # messages hold brackets such as .[cuda]


class InputError(click.ClickException):
    """Bad input: one line naming the bad value and the choices, exit status 2."""

    exit_code = 2


class RunFailed(click.ClickException):
    exit_code = 1


def _split(values: tuple[str, ...]) -> list[str]:
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _int_list(option: str, text: str, minimum: int = 1) -> tuple[int, ...]:
    kind = "positive" if minimum >= 1 else "non-negative"
    message = f"{option} '{text}': expected comma-separated {kind} integers"
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise InputError(message) from None
    if not values or min(values) < minimum:
        raise InputError(message)
    return values


T = TypeVar("T")


def newest_run(usable: Callable[[Path], T], command: str, reference: str | None = None) -> tuple[Path, T]:
    """The newest run in the user's runs folder (places.runs_dir(), tunings left out) that the
    command can use, with what usable(path) made of it; usable raises InputError, saying why, for
    a run it cannot use. None: one line naming the runs folder and, where given, a reference run."""
    root = places.runs_dir()
    runs = runs_newest_first(root, skip=places.tuning_runs_dir())
    reasons = []
    for path in runs:
        try:
            return path, usable(path)
        except InputError as exc:
            reasons.append(f"{path}: {exc.message}")
    held = (f"none of its {len(runs)} runs will do (the newest, {reasons[0]})" if runs
            else "it holds no results CSV with its metadata")
    raise InputError(f"no RESULTS named, and no run in {root}/ that `mmbench {command}` can use: {held}; name a "
                     "results CSV" + (f", e.g. a reference run of the repository: mmbench {command} {reference}"
                                      if reference else ""))
