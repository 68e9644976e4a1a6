"""What every command module shares: the console, the error types, small option parsers."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from ..results import ResultsError, latest_results

ARGV = ["mmbench"]  # this invocation's command line as typed, set by the group, kept in the metadata
console = Console(markup=False, highlight=False)  # messages hold brackets such as .[cuda]


class InputError(click.ClickException):
    """Bad input: one line naming the bad value and the choices, exit status 2."""

    exit_code = 2


class RunFailed(click.ClickException):
    exit_code = 1


class Interrupted(click.ClickException):
    """Ctrl-C: one line saying what was kept, exit status 130 (128 + SIGINT, the shell's convention)."""

    exit_code = 130


COUNTED_OUTPUT = "mmbench.counted_output"  # where interrupts_count leaves the output, in the context's shared meta


def interrupts_count(output: Path) -> None:
    """From here on, Ctrl-C says how many finished points output holds (the group's handler reads
    it): whatever the command was doing, the user learns what the file kept."""
    click.get_current_context().meta[COUNTED_OUTPUT] = output


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


def _results_arg(results: Path | None) -> Path:
    """RESULTS as given, or the newest results CSV under results/."""
    try:
        path = results or latest_results()
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    if not path.exists():
        raise InputError(f"no results file at {path}")
    return path
