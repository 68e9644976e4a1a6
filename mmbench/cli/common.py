"""What every command module shares: the console, the error types, small option parsers."""

from __future__ import annotations

import copy
import math
from functools import partial
from pathlib import Path
from typing import Callable, TypeVar

import click
from click.core import ParameterSource
from rich.console import Console

from .. import places
from ..engine.options import shown_value
from ..results import runs_newest_first

ARGV = ["mmbench"]  # this invocation's command line as typed, set by the group, kept in the metadata
console = Console(markup=False, highlight=False)  # messages hold brackets such as .[cuda]


class InputError(click.ClickException):
    """Bad input: one line naming the bad value and the choices, exit status 2."""

    exit_code = 2


class RunFailed(click.ClickException):
    exit_code = 1


class NothingCompared(click.ClickException):
    """A gate that could not judge: too few points were compared to pass or fail (exit status 3)."""

    exit_code = 3


class Interrupted(click.ClickException):
    """Ctrl-C: one line saying what was kept, exit status 130 (128 + SIGINT, the shell's convention)."""

    exit_code = 130


COUNTED_OUTPUT = "mmbench.counted_output"  # where interrupts_count leaves the output, in the context's shared meta


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    """A table of cells already formatted: the first column left, the others right."""
    from rich.table import Table

    table = Table(title=title)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def interrupts_count(output: Path) -> None:
    """From here on, Ctrl-C says how many finished points output holds (the group's handler reads
    it): whatever the command was doing, the user learns what the file kept."""
    click.get_current_context().meta[COUNTED_OUTPUT] = output


class OneValueEach(click.Command):
    """A command that refuses an option of one value given more than once: Click would keep the
    last and drop the others silently. Repeatable options (multiple=True, as --variant) collect
    every one, and flags say the same thing each time, so both may repeat."""

    def parse_args(self, ctx, args):
        if not ctx.resilient_parsing:  # shell completion parses half-typed lines: refuse nothing there
            _refuse_repeats(self, ctx, args)
        return super().parse_args(ctx, args)


command = partial(click.command, cls=OneValueEach)  # every mmbench command is one


def _refuse_repeats(cmd: click.Command, ctx: click.Context, args: list[str]) -> None:
    """Parse the arguments once more with every one-value option collecting each occurrence, and
    refuse the first given twice, naming its values."""
    single = [p for p in cmd.get_params(ctx)
              if isinstance(p, click.Option) and not (p.multiple or p.count or p.is_flag)]
    collecting = []
    for param in cmd.get_params(ctx):
        if param in single:
            param = copy.copy(param)
            param.multiple = True
        collecting.append(param)
    try:
        opts, _, _ = click.Command(cmd.name, params=collecting).make_parser(ctx).parse_args(args=list(args))
    except click.UsageError:
        return  # the real parse says what is wrong, in the same words
    for param in single:
        values = opts.get(param.name)
        if isinstance(values, list) and len(values) > 1:
            raise InputError(f"{max(param.opts, key=len)} is given {len(values)} times "
                             f"({', '.join(repr(v) for v in values)}): it takes one value, and all but the last would "
                             f"be dropped; give it once")


class Finite(click.FloatRange):
    """A FloatRange that refuses nan and inf: a range lets nan through (every comparison with it
    is false), and an infinite budget or fraction means nothing."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class IntervalOrOff(Finite):
    """--max-interval: a fraction in (0, 1), or "off" (sweep.OFF: exactly --runs samples)."""

    name = "fraction or off"

    def __init__(self):
        super().__init__(0, 1, min_open=True, max_open=True)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "off":
            return "off"
        return super().convert(value, param, ctx)


class GivenPath(click.Path):
    """A click.Path that refuses an empty value: Path("") is the current folder, which nobody means
    by typing nothing."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names nothing", param, ctx)
        if isinstance(value, (str, Path)) and not self.dir_okay and Path(value).is_dir():
            self.fail(f"{str(value)!r} is a folder; expected a file", param, ctx)
        if isinstance(value, (str, Path)) and not self.file_okay and Path(value).is_file():
            self.fail(f"{str(value)!r} is a file; expected a folder", param, ctx)
        return super().convert(value, param, ctx)


FILE = GivenPath(dir_okay=False, path_type=Path)  # a file's path: a folder there is refused
FOLDER = GivenPath(file_okay=False, path_type=Path)  # a folder's path: a file there is refused
SEED = click.IntRange(0, 2**32 - 1)  # what every random generator of numpy takes as a seed


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user gave this option (on the command line), not left it to its default."""
    return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)


def refuse_given(ctx: click.Context, names, why: str) -> None:
    """Refuse the first of these options the user gave, with why it cannot apply."""
    for param in ctx.command.params:
        if param.name in names and given(ctx, param.name):
            shown = shown_value(ctx.params[param.name])
            raise InputError(f"{max(param.opts, key=len)}{' ' + shown if shown else ''}: {why}")


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
    if reference and Path(reference).exists():  # in a checkout: a command that works here
        hint = f", e.g. a reference run of the repository: mmbench {command} {reference}"
    elif reference:  # elsewhere (an installed mmbench): where the reference run lives
        hint = f" (the reference run is the source repository's {reference})"
    else:
        hint = ""
    raise InputError(f"no RESULTS named, and no run in {root}/ that `mmbench {command}` can use: {held}; name a "
                     "results CSV" + hint)
