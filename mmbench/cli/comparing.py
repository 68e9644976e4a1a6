"""`mmbench compare BASELINE CANDIDATE`: is the candidate faster, and is the difference real
(mmbench/compare.py does the statistics)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from .. import compare as cmp
from ..results import ResultsError, read_metadata, read_results
from .common import FILE, InputError, NothingCompared, RunFailed, command, console, given


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
@click.option("--plot", metavar="FILE.png",
              help="Also draw each point's time ratio by size with its interval (PNG and SVG beside it).")
@click.option("--force", is_flag=True, help="With --plot: replace files there that mmbench did not draw from these "
                                            "two runs (without it such a file is never replaced).")
@click.option("--fail-slower", metavar="PERCENT",
              help="Exit 1 when a point is significantly slower by more than PERCENT (e.g. 5%): a CI gate. It exits 3 "
                   "when fewer than --min-compared of the baseline's points could be compared.")
@click.option("--min-compared", default="50%", show_default=True, metavar="PERCENT",
              help="With --fail-slower: the share of the baseline's points that must be compared for the gate to pass.")
def compare(baseline, candidate, threshold, clock, fmt, every, plot, force, fail_slower, min_compared):
    """Compare two runs point by point: each time ratio with a bootstrap interval from the kept samples, and
    whether the candidate is slower, faster, the same or unclear beyond a threshold."""
    limit = _percent("--fail-slower", fail_slower) if fail_slower is not None else None
    least = _percent("--min-compared", min_compared, upto=100)
    if limit is None and given(click.get_current_context(), "min_compared"):
        raise InputError(f"--min-compared {min_compared}: it is the share a gate needs compared, and no --fail-slower "
                         f"gate is given")
    if plot is not None:
        plot = _check_plot_target(plot, _plot_source(baseline, candidate), force)
    made = _compared(baseline, candidate, _threshold(threshold), clock, gate=limit is not None)
    if fmt == "json":
        click.echo(json.dumps(cmp.as_json(made), indent=1))
    elif fmt == "markdown":
        click.echo(cmp.markdown(made, every), nl=False)
    else:
        _print_table(made, every)
    if plot is not None:
        _plot(made, plot, baseline, candidate)
    if limit is not None:
        _enough_compared(made, least)
    slow = made.slowdowns(limit) if limit is not None else []
    if slow:
        raise RunFailed(f"{len(slow)} point(s) significantly slower by more than {limit:.1%}: the worst "
                        f"{cmp.row_cells(max(slow, key=lambda p: p.ratio))[0]}, {cmp.percent(max(p.ratio for p in slow))}")


def _compared(baseline: Path, candidate: Path, threshold: float, clock: str, gate: bool = False) -> cmp.Comparison:
    """The comparison, with a warning for whatever could mislead: a file compared with itself, a torn
    last row left out, metadata missing (the runs' settings cannot then be compared), settings that
    differ."""
    try:
        runs = [read_results(baseline), read_results(candidate)]
        made = cmp.compare(*runs, threshold, clock)
        metas = [read_metadata(baseline), read_metadata(candidate)]
    except cmp.CompareError as exc:  # nothing in common: a gate cannot judge (exit 3), else bad input
        raise (NothingCompared(f"--fail-slower cannot judge: {exc}") if gate else InputError(str(exc))) from None
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    if clock == "kernel" and all(p.why.startswith("no kernel_ms_samples") for p in made.pairs):
        raise InputError("--clock kernel: the runs have no kernel-clock samples (measured without the kernel clock, "
                         "or on the CPU); compare them with --clock events")
    warnings = []
    if baseline.resolve() == candidate.resolve():
        warnings.append(f"{baseline} is compared with itself: every point is the same by construction")
    warnings += [df.attrs["warning"].removeprefix("warning: ") for df in runs if df.attrs.get("warning")]
    missing = [str(path.with_suffix(".meta.json")) for path, meta in zip((baseline, candidate), metas) if not meta]
    if missing:
        warnings.append(f"no metadata ({', '.join(missing)}): the runs' settings, GPUs and versions are not compared")
    else:
        warnings += cmp.differences(*metas)
        made.runs = cmp.runs_lines(*metas)
    made.warnings = warnings
    return made


def _enough_compared(made: cmp.Comparison, least: float) -> None:
    """A gate passes only on what it compared: NothingCompared (exit 3) when fewer than `least` of the
    baseline's points were compared (matched and judged)."""
    total = len(made.pairs) + len(made.only_baseline)
    compared = sum(p.verdict != "not compared" for p in made.pairs)
    if total == 0 or compared < least * total:
        raise NothingCompared(f"--fail-slower cannot judge: {compared} of the baseline's {total} points were compared "
                              f"(--min-compared {least:.0%}); a gate does not pass on what it did not compare")


def _percent(option: str, text: str, upto: float = 100 - 1e-9) -> float:
    """"5%" or "5" as the fraction 0.05; one line naming the value otherwise."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = float("nan")
    if not 0 < value <= upto:
        raise InputError(f"{option} {text!r}: expected a percentage " + ("above 0 and up to 100" if upto >= 100
                                                                        else "between 0 and 100") + ", such as 5%")
    return value / 100


def _threshold(text: str) -> float:
    if text in cmp.PRESETS:
        return cmp.PRESETS[text]
    if not text.strip().rstrip("%").replace(".", "", 1).isdigit():
        raise InputError(f"--threshold {text!r}: choose a preset ({', '.join(cmp.PRESETS)}) or a percentage such as 3%")
    return _percent("--threshold", text)


def _print_table(made: cmp.Comparison, every: bool) -> None:
    """For a terminal, at any size: the warnings, the counts, the change by variant and the extreme
    points first; then a table of the points that are not the same (every one with --all), a line a
    row at 80 columns, the parameters as keys listed after it; then the points one run alone holds."""
    from rich import box

    for line in made.warnings:
        console.print(f"warning: {line}", soft_wrap=True)
    console.print(cmp.summary_line(made), soft_wrap=True)
    for line in made.runs:
        console.print(line, soft_wrap=True)
    keys = cmp.Keys()
    variants = cmp.by_variant(made)
    if variants:
        table = Table(title="time change by variant (geometric mean of the compared points; + is slower)",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for header in ("variant", "points", "change", "slower", "faster"):
            table.add_column(header, justify="left" if header == "variant" else "right", overflow="fold")
        for name, count, ratio, slower, faster in variants:
            table.add_row(name, str(count), cmp.percent(ratio), str(slower), str(faster))
        console.print(table)
    worst, best = cmp.extremes(made)
    if worst is not None:
        for word, p in (("most slowed", worst), ("most sped up", best)):
            point, size = cmp.short_point(p.key, keys)
            console.print(f"{word}: {point} at {size}, {cmp.percent(p.ratio)} ({p.verdict})", soft_wrap=True)
    pairs = cmp.shown(made, every)
    if pairs:
        table = Table(title="every point" if every else "the points that are not the same (all of them: --all)",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for header in cmp.SHORT_HEADERS:
            table.add_column(header, justify="left" if header in ("point", "size", "verdict") else "right",
                             overflow="fold", no_wrap=header != "point")
        for p in pairs:
            table.add_row(*cmp.short_cells(p, keys))
        console.print(table)
        if any(p.flags or p.why for p in pairs):
            console.print("* flagged (a sagged SM clock) or not compared: --format json says why", soft_wrap=True)
    for line in cmp.alone_lines(made, every, name=lambda k: " at ".join(cmp.short_point(k, keys))):
        console.print(line, soft_wrap=True)
    if keys.names:
        console.print("parameters:\n" + "\n".join(keys.lines()), soft_wrap=True)


def _plot_source(baseline: Path, candidate: Path) -> str:
    """What a comparison's figure says it was drawn from: the two runs, by folder and name."""
    from .figures import figure_source

    return f"compare {figure_source(baseline)} {figure_source(candidate)}"


def _check_plot_target(text: str, source: str, force: bool) -> Path:
    """--plot FILE.png checked before anything is compared or written: a .png name, in a folder that is
    one (or can be made) and can be written, and no file there (PNG or its SVG twin) that mmbench did
    not draw from these two runs, unless --force."""
    from .. import plots
    from ..engine.refusals import cannot_create

    plot = Path(text)
    if not text or plot.suffix.lower() != ".png" or not plot.stem:
        raise InputError(f"--plot {text!r}: expected a file name ending in .png (its SVG is written beside it)")
    problem = cannot_create(plot)
    if problem:
        raise InputError(f"--plot {plot}: {problem}")
    for path in plots.figure_paths(plot.parent, plot.stem):
        problem = plots.replace_problem(path, source, beside_inputs=False)
        if problem and (not force or path.is_dir()):
            raise InputError(f"--plot {plot}: " + (problem if not path.is_dir() else f"{path} is a folder"))
    return plot


def _plot(made: cmp.Comparison, plot: Path, baseline: Path, candidate: Path) -> None:
    from .. import plots

    pairs = cmp.frame(made)
    pairs.attrs["threshold"] = made.threshold
    try:
        fig = plots.fig_compare(pairs, f"{candidate.name} against {baseline.name}")
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    try:
        written = plots.save(fig, plot.parent, plot.stem, _plot_source(baseline, candidate))
    except OSError as exc:
        raise InputError(f"--plot {plot}: cannot be written: {exc.strerror or exc}") from None
    for path in written:  # on stderr: stdout holds the comparison alone (--format json parses)
        click.echo(f"wrote {path}", err=True)
