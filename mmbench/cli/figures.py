"""Commands that draw: `mmbench plot ...`, `mmbench table`, `mmbench report`. No GPU needed."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from .common import InputError, _results_arg, console
from ..config import ConfigError, load_config
from ..results import ResultsError, read_results
from ..sizes import SizeSpecError, parse_sizes

COMMANDS = ("plot", "table", "report")  # registered on the main group by cli/__init__.py


RESULTS_ARG = click.argument("results", required=False, type=click.Path(dir_okay=False, path_type=Path))
OUT_OPTION = click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
                          help="Folder for the files (default: RESULTS's own folder, results/X/ for results/X/X.csv; else a folder "
                               "named after it beside it).")


def _load(results: Path | None):
    """(path, DataFrame, metadata, profile or None) of RESULTS, with clear errors; a torn last
    row is left out and said so in one line."""
    import pandas as pd

    from ..profile import profile_path
    from ..results import read_metadata

    path = _results_arg(results)
    try:
        df = read_results(path)
        meta = read_metadata(path)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    if df.attrs.get("warning"):
        console.print(df.attrs["warning"], soft_wrap=True)
    prof = profile_path(path)
    profile_df = pd.read_csv(prof, dtype={"params": str}).fillna({"params": ""}) if prof.exists() else None
    return path, df, meta, profile_df


def _out_dir(path: Path, out_dir: Path | None) -> Path:
    from ..results import figure_dir

    return out_dir or figure_dir(path)


def _save(fig_fn, out_dir: Path, stem: str) -> list[Path]:
    from .. import plots

    paths = plots.save(fig_fn(), out_dir, stem)
    for p in paths:
        console.print(f"wrote {p}", soft_wrap=True)
    return paths


FIGURES = {  # name -> (file stem, what it draws); `mmbench plot NAME` and the report share these
    "gflops": (("fig1-block-sizes", "fig2-gflops"), "Figures 1 and 2: GFLOP/s by block size and over all sizes"),
    "roofline": (("fig3-4-roofline",), "Figures 3 and 4: roofline with datasheet and measured ceilings"),
    "speedup": (("fig5-speedup",), "Figure 5: CUDA-Best over BLAS, and cuBLAS over CUDA-Best"),
    "vs-cublas": (("vs-cublas",), "Percent of cuBLAS per size per variant, with the targets' ratios printed"),
}


def _figures(name: str, df, meta, profile_df, out_dir: Path, size: int | None) -> dict[str, Path]:
    """Draw one figure family; returns {stem: png path}. A figure the data cannot make is left
    out with one line saying what it lacks; when none can be made, that line is the error."""
    from .. import analysis, plots

    if name == "gflops":
        makers = [lambda: plots.fig_block_sizes(df, meta), lambda: plots.fig_gflops(df, meta)]
    elif name == "speedup":
        makers = [lambda: plots.fig_speedup(df, meta)]
    elif name == "vs-cublas":
        makers = [lambda: plots.fig_vs_cublas(df, meta)]
    else:
        def roofline():
            at = size
            if at is None:
                sizes = set(profile_df.n) if profile_df is not None else set(analysis.square(analysis.ok_rows(df)).n)
                if not sizes:
                    raise ResultsError("the roofline needs verified square-size rows")
                at = max(sizes)
            return plots.fig_roofline(df, meta, profile_df, at)

        makers = [roofline]
    drawn, missing = {}, []
    for stem, make in zip(FIGURES[name][0], makers):
        try:
            drawn[stem] = _save(make, out_dir, stem)[0]
        except ResultsError as exc:
            missing.append(f"{stem} not drawn: {exc} (the results hold {_holdings(df)})")
    if not drawn:
        raise InputError("; ".join(missing))
    for line in missing:
        console.print(line, soft_wrap=True)
    if name == "vs-cublas":
        _print_targets(df)
    return drawn


def _holdings(df) -> str:
    ok = df[df.status == "ok"]
    return ", ".join(dict.fromkeys(ok.variant)) + " rows" if len(ok) else "no verified rows"


def _print_targets(df) -> None:
    """The distance-to-cuBLAS ratios: at 4096, at 2049, geometric mean over the paper's sizes >= 512."""
    from .. import analysis

    try:
        summary = analysis.target_summary(analysis.percent_of(df), [s.n for s in parse_sizes("512:2049")])
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    table = Table(title="GFLOP/s as % of cuBLAS")
    for col in ("series", "n = 4096", "n = 2049", "geomean, paper sizes >= 512"):
        table.add_column(col, justify="left" if col == "series" else "right")
    fmt = lambda v: "-" if v is None or v != v else f"{v:.1f} %"  # noqa: E731
    for r in summary.itertuples():
        table.add_row(r.series, fmt(r.at_4096), fmt(r.at_2049), fmt(r.geomean_paper_sizes) + f" ({r.paper_sizes})")
    console.print(table)


@click.group()
def plot():
    """Draw the paper's figures from a results CSV (PNG and SVG; no GPU needed)."""


def _plot_command(name: str):
    @plot.command(name, help=f"{FIGURES[name][1]}. RESULTS defaults to the newest CSV under results/.")
    @RESULTS_ARG
    @OUT_OPTION
    @click.option("--size", type=click.IntRange(min=1), help="Roofline only: the size n placed on it "
                  "(default: the largest profiled size, else the largest size).")
    def command(results, out_dir, size):
        path, df, meta, profile_df = _load(results)
        _figures(name, df, meta, profile_df, _out_dir(path, out_dir), size)

    return command


for _name in FIGURES:
    _plot_command(_name)


@click.command()
@RESULTS_ARG
@OUT_OPTION
@click.option("--sizes", "sizes_spec", default="256,512,768,1023,1024,1025,2047,2048,2049", show_default=True,
              help="Rows of the table (a size spec).")
def table(results, out_dir, sizes_spec):
    """Table 1: multicore BLAS vs CUDA-Best GFLOP/s at chosen sizes, with cuBLAS (Markdown and CSV)."""
    from .. import analysis
    from ..studies.common import markdown_table

    path, df, _, _ = _load(results)
    try:
        sizes = [s.n for s in parse_sizes(sizes_spec) if s.is_square]
        t = analysis.table1(analysis.ok_rows(df), sizes)
    except (SizeSpecError, ResultsError) as exc:
        raise InputError(str(exc)) from None
    out = _out_dir(path, out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown_table(t)
    (out / "table1.md").write_text(md + "\n")
    t.to_csv(out / "table1.csv")
    console.print(md, soft_wrap=True)
    console.print(f"wrote {out / 'table1.md'} and {out / 'table1.csv'}", soft_wrap=True)


@click.command()
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The experiment (its [reference] table holds the paper's numbers).")
@RESULTS_ARG
@OUT_OPTION
def report(config, results, out_dir):
    """Write REPORT.md: every figure, Table 1 beside the paper's, each finding checked."""
    from ..studies import study

    try:
        cfg = load_config(config)
        paper = study(cfg.paper)
    except (ConfigError, ValueError) as exc:
        raise InputError(str(exc)) from None
    path, df, meta, profile_df = _load(results)
    out = _out_dir(path, out_dir)
    figures = {}
    for name in paper.FIGURE_FAMILIES:  # the paper's figures that `mmbench plot` draws, those the data can make
        try:
            figures.update(_figures(name, df, meta, profile_df, out, None))
        except InputError as exc:
            console.print(exc.message, soft_wrap=True)
    try:
        written = paper.write_report(out, df, meta, dict(cfg.reference), figures, profile_df, path)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    console.print(f"wrote {written}", soft_wrap=True)
