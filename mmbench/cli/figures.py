"""Commands that draw: `mmbench plot ...`, `mmbench table`, `mmbench report`. No GPU needed."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from .common import FILE, FOLDER, InputError, _results_arg, command, console
from ..config import ConfigError, load_config
from ..results import ResultsError, read_results
from ..sizes import SizeSpecError, parse_sizes

COMMANDS = ("plot", "table", "report")  # registered on the main group by cli/__init__.py


RESULTS_ARG = click.argument("results", required=False, type=FILE)
OUT_OPTION = click.option("--out", "out_dir", type=FOLDER,
                          help="Folder for the files (default: RESULTS's own folder, results/X/ for results/X/X.csv; else a folder "
                               "named after it beside it).")


CLOCK_OPTION = click.option("--clock", type=click.Choice(["events", "kernel"]),
                            help="Which time the figures use: CUDA event pairs, or the kernel clock (CUPTI's summed "
                                 "device work). Default: the run's figure_clock setting (events).")


def _load(results: Path | None, clock: str | None = None):
    """(path, DataFrame, metadata, profile or None) of RESULTS, with clear errors; a torn last
    row is left out and said so in one line. Times and rates are those of the clock asked for,
    else of the run's figure_clock setting (metadata), else the events'."""
    from ..profile import ProfileError, profile_path, read_profile
    from ..results import read_metadata

    path = _results_arg(results)
    try:
        df = read_results(path)
        meta = read_metadata(path)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    if df.attrs.get("warning"):
        console.print(df.attrs["warning"], soft_wrap=True)
    from ..analysis import with_clock

    clock = clock or (meta.get("settings") or {}).get("figure_clock") or "events"
    try:
        df = with_clock(df, clock)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    meta = {**meta, "figure_clock": clock}
    prof = profile_path(path)
    try:
        profile_df = read_profile(prof) if prof.exists() else None
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    return path, df, meta, profile_df


def _out_dir(path: Path, out_dir: Path | None) -> Path:
    """The folder the files go to, refused before anything is drawn when it cannot be made or written."""
    from ..results import figure_dir
    from ..runs import cannot_create

    out = out_dir or figure_dir(path)
    problem = cannot_create(out)
    if problem:
        raise InputError(f"{'--out ' if out_dir else ''}{out}: {problem}")
    return out


def _save(fig_fn, out_dir: Path, stem: str) -> list[Path]:
    from .. import plots

    paths = plots.save(fig_fn(), out_dir, stem)
    for p in paths:
        console.print(f"wrote {p}", soft_wrap=True)
    return paths


def _families() -> dict:
    from ..studies import figure_families

    return figure_families()


def _figures(name: str, df, meta, profile_df, out_dir: Path, size: int | None) -> dict[str, Path]:
    """Draw one figure family of a study; returns {stem: png path}. A figure the data cannot make
    is left out with one line saying what it lacks; when none can be made, that line is the error.
    A family with a summary prints it after."""
    family = _families()[name]
    drawn, missing = {}, []
    for figure in family.figures:
        try:
            drawn[figure.stem] = _save(lambda: figure.draw(df, meta, profile_df, size), out_dir, figure.stem)[0]
        except ResultsError as exc:
            missing.append(f"{figure.stem} not drawn: {exc} (the results hold {_holdings(df)})")
    if not drawn:
        raise InputError("; ".join(missing))
    for line in missing:
        console.print(line, soft_wrap=True)
    if family.summary:
        try:
            title, columns, rows = family.summary(df)
        except ResultsError as exc:
            raise InputError(str(exc)) from None
        table = Table(title=title)
        for i, col in enumerate(columns):
            table.add_column(col, justify="left" if i == 0 else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    return drawn


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
    """Draw a study's figures from a results CSV (PNG and SVG; no GPU needed)."""


# Options some figure families take (a family's `options` names them); the others refuse them.
FAMILY_OPTIONS = {
    "size": click.option("--size", type=click.IntRange(min=1), help="The size n placed on the roofline "
                         "(default: the largest profiled size, else the largest size)."),
}


def _plot_command(name: str, family) -> click.Command:
    def draw(results, out_dir, clock, size=None):
        path, df, meta, profile_df = _load(results, clock)
        _figures(name, df, meta, profile_df, _out_dir(path, out_dir), size)

    draw = CLOCK_OPTION(draw)  # decorators in reverse: the help lists RESULTS, --out, the family's, --clock
    for option, add in FAMILY_OPTIONS.items():
        draw = (add if option in family.options else _refused_option(name, option))(draw)
    draw = RESULTS_ARG(OUT_OPTION(draw))
    return command(name, short_help=family.short, help=f"{family.help}. RESULTS defaults to the newest CSV under results/.")(draw)


def _refused_option(name: str, option: str):
    """A hidden --OPTION on a family that does not take it: given, it is refused in one line naming
    the families that do (Click alone would say only that there is no such option)."""
    def refuse(ctx, param, value):
        if value is not None:
            takers = " and ".join(f"plot {f}" for f, family in _families().items() if option in family.options)
            raise InputError(f"--{option} {value}: an option of {takers} only; plot {name} does not take it")

    return click.option(f"--{option}", hidden=True, expose_value=False, callback=refuse)


@command()
@RESULTS_ARG
@OUT_OPTION
@click.option("--sizes", "sizes_spec", metavar="SPEC",
              help="Rows of the table (a size spec; default: the paper's Table 1 sizes, 256 to 2049).")
def table(results, out_dir, sizes_spec):
    """Table 1: multicore BLAS vs CUDA-Best GFLOP/s at chosen sizes, with cuBLAS (Markdown and CSV)."""
    from .. import analysis
    from ..studies.common import markdown_table
    from ..studies.zosa2017 import TABLE1_SIZES, table1

    path, df, _, _ = _load(results)
    try:
        sizes = _table_sizes(sizes_spec) if sizes_spec is not None else TABLE1_SIZES
        t = table1(analysis.ok_rows(df), sizes)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    out = _out_dir(path, out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown_table(t)
    (out / "table1.md").write_text(md + "\n")
    t.to_csv(out / "table1.csv")
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


@command()
@click.option("--config", type=FILE, required=True,
              help="The experiment (its [reference] table holds the paper's numbers).")
@RESULTS_ARG
@OUT_OPTION
@CLOCK_OPTION
def report(config, results, out_dir, clock):
    """Write REPORT.md: every figure, Table 1 beside the paper's, each finding checked."""
    from ..studies import study

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    try:
        paper = study(cfg.paper)
    except ValueError as exc:  # a config of one's own names no paper: no study writes its report
        raise InputError(f"{config}: {exc}") from None
    path, df, meta, profile_df = _load(results, clock)
    out = _out_dir(path, out_dir)
    figures = {}
    for name in paper.FIGURES:  # the study's figures (`mmbench plot NAME`), those the data can make
        try:
            figures.update(_figures(name, df, meta, profile_df, out, None))
        except InputError as exc:
            console.print(exc.message, soft_wrap=True)
    try:
        written = paper.write_report(out, df, meta, dict(cfg.reference), figures, profile_df, path)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    console.print(f"wrote {written}", soft_wrap=True)
