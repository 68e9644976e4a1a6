"""Commands that draw: `mmbench plot ...`, `mmbench table`, `mmbench report`. No GPU needed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .. import places
from .common import FILE, FOLDER, InputError, command, console, newest_run, print_table
from ..config import ConfigError, load_config
from ..results import ResultsError, read_results
from ..sizes import SizeSpecError, parse_sizes

COMMANDS = ("plot", "table", "report")  # registered on the main group by cli/__init__.py


RESULTS_ARG = click.argument("results", required=False, type=FILE)
OUT_OPTION = click.option("--out", "out_dir", type=FOLDER,
                          help="Folder for the files (default: RESULTS's own folder, runs/X/ for runs/X/X.csv; else a folder "
                               "named after it beside it).")


FORCE_OPTION = click.option("--force", is_flag=True,
                            help="Replace figure files that mmbench did not draw from these results (without it such "
                                 "a file is never replaced).")
CLOCK_OPTION = click.option("--clock", type=click.Choice(["events", "kernel"]),
                            help="Which time the figures use: CUDA event pairs, or the kernel clock (CUPTI's summed "
                                 "device work). Default: the run's figure_clock setting (events).")
DEFAULT_RESULTS = (f"RESULTS defaults to the newest run in your runs folder (${places.RUNS_ENV}, else runs/; tunings "
                   "left out) that it can draw.")


@dataclass(frozen=True)
class Loaded:
    """A results CSV read for drawing: its rows (times and rates of the clock asked for), metadata
    (with figure_clock), Nsight Compute profile or None, and a warning to print (a torn last row)."""

    path: Path
    df: Any
    meta: dict
    profile: Any
    warning: str | None


@dataclass(frozen=True)
class Drawn:
    """A figure family made in memory, nothing written yet: its figures by stem, a line for each
    figure the data cannot make, and its summary table (title, columns, rows) or None."""

    figures: dict
    missing: list[str]
    summary: tuple | None

    def close(self) -> None:
        from .. import plots

        for fig in self.figures.values():
            plots.plt.close(fig)


def _load(path: Path, clock: str | None = None) -> Loaded:
    """A results CSV, with clear errors. Times and rates are those of the clock asked for, else of
    the run's figure_clock setting (metadata), else the events'."""
    from ..analysis import with_clock
    from ..profile import ProfileError, profile_path, read_profile
    from ..results import read_metadata

    if not path.exists():
        raise InputError(f"no results file at {path}")
    try:
        df = read_results(path)
        meta = read_metadata(path)
        clock = clock or (meta.get("settings") or {}).get("figure_clock") or "events"
        df = with_clock(df, clock)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    prof = profile_path(path)
    try:
        profile_df = read_profile(prof) if prof.exists() else None
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    return Loaded(path, df, {**meta, "figure_clock": clock}, profile_df, df.attrs.get("warning"))


def _chosen(results: Path | None, clock: str | None, make, command: str, reference: str, out_dir: Path | None = None):
    """(Loaded, make(Loaded)) of RESULTS, or when none is named of the newest run in the user's
    runs folder that make() takes. make() decides, raising InputError, before anything is written;
    an --out where nothing can be written is refused before anything is read."""
    def loaded_and_made(path: Path):
        loaded = _load(path, clock)
        return loaded, make(loaded)

    if out_dir:
        _writable(out_dir)
    if results is not None:
        loaded, made = loaded_and_made(results)
    else:
        path, (loaded, made) = newest_run(loaded_and_made, command, reference)
        console.print(f"results: {path} (the newest run in {places.runs_dir()}/ that `mmbench {command}` can use)",
                      soft_wrap=True)
    if loaded.warning:
        console.print(loaded.warning, soft_wrap=True)
    return loaded, made


def _out_dir(path: Path, out_dir: Path | None) -> Path:
    """The folder the files go to, refused before anything is written when it cannot be made or written."""
    from ..results import figure_dir

    return _writable(out_dir) if out_dir else _writable(figure_dir(path), "")


def _writable(out: Path, option: str = "--out ") -> Path:
    """out, or one line (exit 2) saying why no file can be made there. An --out is checked before
    any results are read, so its refusal comes first."""
    from ..engine.refusals import cannot_create

    problem = cannot_create(out)
    if problem:
        raise InputError(f"{option}{out}: {problem}")
    return out


def _families() -> dict:
    """Every figure family by name: those of any run (generic_figures.py), then the studies'."""
    from ..generic_figures import FAMILIES
    from ..studies import figure_families

    studies = figure_families()
    both = sorted(set(FAMILIES) & set(studies))
    assert not both, f"figure family '{both[0]}' is defined by a study and as a generic family"
    return {**FAMILIES, **studies}


def _draw(family, run: Loaded, size: int | None) -> Drawn:
    """Make one figure family of a study in memory. A figure the data cannot make is left out with
    one line saying what it lacks; when none can be made, that line is the error (InputError)."""
    from .. import plots

    figures, missing = {}, []
    for figure in family.figures:
        try:
            figures[figure.stem] = plots.made(lambda: figure.draw(run.df, run.meta, run.profile, size, run.path))
        except ResultsError as exc:
            missing.append(f"{figure.stem} not drawn: {exc} (the results hold {_holdings(run.df)})")
    if not figures:
        raise InputError("; ".join(missing))
    drawn = Drawn(figures, missing, None)
    if family.summary:
        try:
            return Drawn(figures, missing, family.summary(run.df, run.meta))
        except ResultsError as exc:
            drawn.close()
            raise InputError(str(exc)) from None
    return drawn


def _written(path: Path, write):
    """write()'s value, write() making the file at path; a folder where it cannot be made is one
    line, exit 2."""
    try:
        return write()
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def figure_source(results: Path) -> str:
    """What a figure drawn from a results file says it was drawn from: the file, by its folder and name."""
    return f"{results.resolve().parent.name}/{results.name}"


def check_figures(stems, out_dir: Path, results: Path, force: bool, beside: bool) -> None:
    """Refuse (one line, exit 2), before anything is written, to replace a file at a figure's path
    that mmbench did not draw from these results (plots.replace_problem), unless --force; a folder
    there is refused even then."""
    from .. import plots

    for stem in stems:
        for path in plots.figure_paths(out_dir, stem):
            problem = plots.replace_problem(path, figure_source(results), beside)
            if problem and (not force or path.is_dir()):
                raise InputError(problem if not path.is_dir() else f"cannot write {path}: it is a folder")


def _write(drawn: Drawn, out_dir: Path, results: Path) -> None:
    """Save a family made by _draw (PNG and SVG each, marked as drawn from results), say what was
    written and what was not, and print its summary."""
    from .. import plots

    for stem, fig in drawn.figures.items():
        for p in _written(out_dir / f"{stem}.png", lambda: plots.save(fig, out_dir, stem, figure_source(results))):
            console.print(f"wrote {p}", soft_wrap=True)
    for line in drawn.missing:
        console.print(line, soft_wrap=True)
    if drawn.summary:
        print_table(*drawn.summary)


def _holdings(df) -> str:
    ok = df[df.status == "ok"]
    return ", ".join(dict.fromkeys(ok.variant)) + " rows" if len(ok) else "no verified rows"


class StudyFigures(click.Group):
    """`mmbench plot NAME`: a command per figure family of the studies, made when asked for (the
    studies load matplotlib, which `mmbench list` or `run` need not wait for)."""

    def list_commands(self, ctx):
        return list(_families())

    def get_command(self, ctx, name):
        family = _families().get(name)
        return _plot_command(name, family) if family else None


@click.group(cls=StudyFigures)
def plot():
    """Draw figures of a results CSV: any run's (rate, vs-library) or a study's (PNG and SVG; no GPU needed)."""


# Options some figure families take (a family's `options` names them); the others refuse them.
FAMILY_OPTIONS = {
    "size": click.option("--size", type=click.IntRange(min=1), help="The size n placed on the roofline (default: the "
                         "largest at which every operation of the run ran, profiled if any was)."),
}


def _plot_command(name: str, family) -> click.Command:
    def draw(results, out_dir, clock, force, size=None):
        run, drawn = _chosen(results, clock, lambda loaded: _draw(family, loaded, size), f"plot {name}",
                             family.reference, out_dir)
        out = _out_dir(run.path, out_dir)
        try:
            check_figures(drawn.figures, out, run.path, force, beside=out_dir is None)
        except InputError:
            drawn.close()
            raise
        _write(drawn, out, run.path)

    draw = FORCE_OPTION(CLOCK_OPTION(draw))  # decorators in reverse: the help lists RESULTS, --out, the family's, --clock
    for option, add in FAMILY_OPTIONS.items():
        draw = (add if option in family.options else _refused_option(name, option))(draw)
    draw = RESULTS_ARG(OUT_OPTION(draw))
    return command(name, short_help=family.short, help=f"{family.help}. {DEFAULT_RESULTS}")(draw)


def _refused_option(name: str, option: str):
    """A hidden --OPTION on a family that does not take it: given, it is refused in one line naming
    the families that do (Click alone would say only that there is no such option)."""
    def refuse(ctx, param, value):
        if value is not None:
            takers = " and ".join(f"plot {f}" for f, family in _families().items() if option in family.options)
            raise InputError(f"--{option} {value}: an option of {takers} only; plot {name} does not take it")

    return click.option(f"--{option}", hidden=True, expose_value=False, callback=refuse)


@command(help="Table 1: multicore BLAS vs CUDA-Best GFLOP/s at chosen sizes, with cuBLAS (Markdown and CSV). "
                    + DEFAULT_RESULTS)
@RESULTS_ARG
@OUT_OPTION
@click.option("--sizes", "sizes_spec", metavar="SPEC",
              help="Rows of the table (a size spec; default: the paper's Table 1 sizes, 256 to 2049).")
def table(results, out_dir, sizes_spec):
    from ..studies.common import markdown_table
    from ..studies.zosa2017.paper import TABLE1_SIZES
    from ..studies.zosa2017.report import REFERENCE_RUN

    sizes = _table_sizes(sizes_spec) if sizes_spec is not None else TABLE1_SIZES
    run, t = _chosen(results, None, lambda loaded: _table1(loaded, sizes), "table", REFERENCE_RUN,
                     out_dir)
    out = _out_dir(run.path, out_dir)
    md = markdown_table(t)
    _written(out, lambda: out.mkdir(parents=True, exist_ok=True))
    _written(out / "table1.md", lambda: (out / "table1.md").write_text(md + "\n"))
    _written(out / "table1.csv", lambda: t.to_csv(out / "table1.csv"))
    console.print(md, soft_wrap=True)
    console.print(f"wrote {out / 'table1.md'} and {out / 'table1.csv'}", soft_wrap=True)


def _table_sizes(spec: str) -> list[int]:
    """The n of each square size of a --sizes spec; a shape that is not square is refused, not left out."""
    try:
        shapes = parse_sizes(spec)
    except SizeSpecError as exc:
        raise InputError(str(exc)) from None
    odd = [str(s) for s in shapes if not s.is_square]
    if odd:
        raise InputError(f"--sizes {spec}: Table 1's rows are square sizes n (n x n x n); {odd[0]} is not square")
    return [s.n for s in shapes]


def _table1(run: Loaded, sizes: list[int]):
    from .. import analysis
    from ..studies.zosa2017.measures import table1

    try:
        return table1(analysis.ok_rows(run.df), sizes)
    except ResultsError as exc:
        raise InputError(str(exc)) from None


@dataclass(frozen=True)
class Report:
    """A study's report made in memory: where it goes, its figure families, lines on the families
    it could not draw, the text of REPORT.md, and the results it was made from."""

    out: Path
    drawn: list[Drawn]
    missing: list[str]
    text: str
    run: Path


@command(help="Write REPORT.md: every figure, Table 1 beside the paper's, each finding checked. "
                    + DEFAULT_RESULTS.replace("that it can draw", "that holds the rows of the config's variants"))
@click.option("--config", type=FILE, required=True,
              help="The experiment (its [reference] table holds the paper's numbers).")
@RESULTS_ARG
@OUT_OPTION
@CLOCK_OPTION
@FORCE_OPTION
def report(config, results, out_dir, clock, force):
    from ..studies import study

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    try:
        paper = study(cfg.paper)
    except ValueError as exc:  # a config of one's own names no paper: no study writes its report
        raise InputError(f"{config}: {exc}") from None
    _, made = _chosen(results, clock, lambda run: _report(cfg, paper, run, out_dir), f"report --config {config}",
                      paper.REFERENCE_RUN, out_dir)
    try:
        check_figures([s for d in made.drawn for s in d.figures], made.out, made.run, force, beside=out_dir is None)
    except InputError:
        for d in made.drawn:
            d.close()
        raise
    for line in made.missing:
        console.print(line, soft_wrap=True)
    for drawn in made.drawn:
        _write(drawn, made.out, made.run)
    path = made.out / "REPORT.md"
    _written(path, lambda: path.write_text(made.text))
    console.print(f"wrote {path}", soft_wrap=True)


def _report(cfg, paper, run: Loaded, out_dir: Path | None) -> Report:
    """Make a study's report of a run: refused (InputError) when the run lacks a variant its config
    sweeps; the study's figures that the data can make; the text."""
    missing = _unmeasured(cfg, run.df)
    if missing:
        raise InputError(f"the {cfg.name} report needs verified rows of every variant {cfg.path} sweeps; {run.path} "
                         f"has none of {', '.join(missing)}")
    out = _out_dir(run.path, out_dir)
    # the study reads the config the report was given, not the path the run recorded (relative to where it ran)
    run = dataclasses.replace(run, meta={**run.meta, "config": str(cfg.path)})
    families = _families()
    drawn, notes = [], []
    for name in paper.FIGURES:  # the study's figures (`mmbench plot NAME`), those the data can make
        try:
            drawn.append(_draw(families[name], run, None))
        except InputError as exc:
            notes.append(exc.message)
    figures = {stem: out / f"{stem}.png" for d in drawn for stem in d.figures}
    try:
        text = paper.report(run.df, run.meta, dict(cfg.reference), figures, run.profile, run.path)
    except ResultsError as exc:
        for d in drawn:
            d.close()
        raise InputError(str(exc)) from None
    return Report(out, drawn, notes, text, run.path)


def _unmeasured(cfg, df) -> list[str]:
    """The variants a config sweeps of which the results hold no verified row."""
    verified = set(df[df.status == "ok"].variant)
    return [name for name in dict.fromkeys(v.name for sweep in cfg.sweeps for v in sweep.variants)
            if name not in verified]
