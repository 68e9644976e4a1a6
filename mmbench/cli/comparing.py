"""`mmbench compare BASELINE CANDIDATE`: is the candidate faster, and is the difference real
(mmbench/compare.py does the statistics)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from .. import compare as cmp
from ..results import ResultsError, read_metadata, read_results
from .common import FILE, InputError, RunFailed, command, console


COMMANDS = ("compare",)


@command()
@click.argument("baseline", type=FILE)
@click.argument("candidate", type=FILE)
@click.option("--threshold", default="default", show_default=True, metavar="PRESET|PERCENT",
              help=f"The change in time under which a point is the same: a preset "
                   f"({', '.join(f'{k} {v:.0%}' for k, v in cmp.PRESETS.items())}) or a percentage such as 3%.")
@click.option("--clock", type=click.Choice(tuple(cmp.CLOCKS)), default="events", show_default=True,
              help="Whose samples: the CUDA events' or the kernel clock's (CUPTI).")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True,
              help="A table for the terminal, Markdown (a pull request's comment) or JSON (every pair).")
@click.option("--all", "every", is_flag=True, help="List every pair, not only those that are not the same.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.png",
              help="Also draw each point's time ratio by size with its interval (PNG and SVG beside it).")
@click.option("--fail-slower", metavar="PERCENT",
              help="Exit 1 when a point is significantly slower by more than PERCENT (e.g. 5%): a CI gate.")
def compare(baseline, candidate, threshold, clock, fmt, every, plot, fail_slower):
    """Compare two runs point by point: each time ratio with a bootstrap interval from the kept samples, and
    whether the candidate is slower, faster, the same or unclear beyond a threshold."""
    limit = _percent("--fail-slower", fail_slower) if fail_slower is not None else None
    made = _compared(baseline, candidate, _threshold(threshold), clock)
    if fmt == "json":
        click.echo(json.dumps(cmp.as_json(made), indent=1))
    elif fmt == "markdown":
        click.echo(cmp.markdown(made, every), nl=False)
    else:
        _print_table(made, every)
    if plot is not None:
        _plot(made, plot, baseline, candidate)
    slow = made.slowdowns(limit) if limit is not None else []
    if slow:
        raise RunFailed(f"{len(slow)} point(s) significantly slower by more than {limit:.1%}: the worst "
                        f"{cmp.row_cells(max(slow, key=lambda p: p.ratio))[0]}, {cmp.percent(max(p.ratio for p in slow))}")


def _compared(baseline: Path, candidate: Path, threshold: float, clock: str) -> cmp.Comparison:
    try:
        made = cmp.compare(read_results(baseline), read_results(candidate), threshold, clock)
    except (ResultsError, cmp.CompareError) as exc:
        raise InputError(str(exc)) from None
    made.warnings = cmp.differences(read_metadata(baseline), read_metadata(candidate))
    return made


def _percent(option: str, text: str) -> float:
    """"5%" or "5" as the fraction 0.05; one line naming the value otherwise."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = float("nan")
    if not 0 < value < 100:
        raise InputError(f"{option} {text!r}: expected a percentage between 0 and 100, such as 5%")
    return value / 100


def _threshold(text: str) -> float:
    if text in cmp.PRESETS:
        return cmp.PRESETS[text]
    if not text.strip().rstrip("%").replace(".", "", 1).isdigit():
        raise InputError(f"--threshold {text!r}: choose a preset ({', '.join(cmp.PRESETS)}) or a percentage such as 3%")
    return _percent("--threshold", text)


def _print_table(made: cmp.Comparison, every: bool) -> None:
    for line in made.warnings:
        console.print(f"warning: {line}", soft_wrap=True)
    pairs = cmp.shown(made, every)
    if pairs:
        table = Table(title="candidate against baseline (time change: + is slower)")
        for header in cmp.HEADERS:
            table.add_column(header, overflow="fold", justify="left" if header in ("point", "note") else "right")
        for p in pairs:
            table.add_row(*cmp.row_cells(p))
        console.print(table)
    for line in cmp.alone_lines(made, every):
        console.print(line, soft_wrap=True)
    console.print(cmp.summary_line(made), soft_wrap=True)


def _plot(made: cmp.Comparison, plot: Path, baseline: Path, candidate: Path) -> None:
    from .. import plots

    pairs = cmp.frame(made)
    pairs.attrs["threshold"] = made.threshold
    try:
        fig = plots.fig_compare(pairs, f"{candidate.name} against {baseline.name}")
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    for path in plots.save(fig, plot.parent, plot.stem):
        console.print(f"wrote {path}", soft_wrap=True)
