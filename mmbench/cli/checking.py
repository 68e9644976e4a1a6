"""`mmbench check FILE`: a variant file's kernels compiled and reported, and on a GPU run at their
operation's awkward shapes (mmbench/checking.py does the work)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click
from rich.table import Table

from .. import checking, places, sweep
from ..engine.plan import Selection
from ..results import run_csv
from ..variants import VariantError, files
from .common import FILE, InputError, RunFailed, command, console, interrupts_count

COMMANDS = ("check",)
CHECK_RUNS = {"runs": 3, "warmup": 1}  # a check verifies every shape; a few samples say it also runs in time


@command()
@click.argument("variant_file", type=FILE)
@click.option("--compile-only", is_flag=True, help="Compile and report only, even where a GPU is.")
@click.option("--output", "-o", type=FILE, help="Results CSV of the awkward-shape runs. Default: RUNS/check-NAME-"
              f"TIMESTAMP/..., RUNS being ${places.RUNS_ENV}, else runs/ in the current folder.")
def check(variant_file, compile_only, output):
    """Check your kernels before you trust them: compile each variant of a variant file (registers, spills, shared
    memory, its entry point read from the compiled module), then on a GPU run each at its operation's awkward shapes,
    every output verified against float64."""
    if compile_only and output is not None:
        raise InputError(f"--output {output}: it holds the rows of the awkward-shape runs, and --compile-only runs none")
    try:
        variants = files.use([variant_file])
    except VariantError as exc:
        raise InputError(str(exc)) from None
    built = checking.compile_all(variants)
    if any(not b.problem for b in built):  # no table of nothing before a compile error
        console.print(_compile_table([b for b in built if not b.problem], variant_file))
    for b in built:
        if b.problem:
            console.print(f"{b.variant.name} [{b.params}] does not build: {b.problem}", soft_wrap=True)
        for warning in b.report.warnings if b.report else ():
            console.print(f"{b.variant.name} [{b.params}] nvcc warns: {warning}", soft_wrap=True)
    if any(b.problem for b in built):
        raise RunFailed(f"{sum(bool(b.problem) for b in built)} variant point(s) of {variant_file} do not build")
    from ..device import device_identity

    if compile_only or device_identity() is None:
        console.print("no GPU here: compiled only; on a GPU machine `mmbench check` also runs each variant at its "
                      "operation's awkward shapes" if not compile_only else "compiled only (--compile-only)",
                      soft_wrap=True)
        return
    _run_awkward(variants, variant_file, output)


def _run_awkward(variants, variant_file: Path, output: Path | None) -> None:
    """Each variant at its defaults over its operation's awkward shapes, as `mmbench run` runs it."""
    from .running import run_points, say

    name = f"check-{Path(variant_file).stem}"
    output = output or run_csv(f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}", places.runs_dir())
    interrupts_count(output)
    selections = []
    for v in variants:
        spec, left_out = checking.check_shapes(v)
        if left_out:
            say(f"{v.name}: not run at {len(left_out)} awkward shape(s) it does not take: {'; '.join(left_out)}")
        if not spec:
            say(f"{v.name}: takes none of the shapes a check runs; nothing to run")
            continue
        # at every precision and layout the variant takes
        selections.append(Selection((v,), spec, {}, dtypes=v.dtypes, layouts=v.layouts))
    if not selections:
        raise RunFailed(f"no variant of {variant_file} takes a shape a check runs")
    ran = sweep.plan_run(selections, (), output, dict(CHECK_RUNS), resume=False, say=say)
    run_points(ran.todo, ran.settings, output, {"name": name, "config": None}, tuning=ran.tuning)


def _compile_table(built, variant_file) -> Table:
    targets = sorted({b.variant.target or "sm_90" for b in built})
    table = Table(title=f"{variant_file}: compiled for {', '.join(targets)} as the GPU builds it")
    for column in ("variant", "params", "entry symbol", "registers", "spills B", "shared B"):
        table.add_column(column, overflow="fold", justify="right" if column in ("registers", "shared B") else "left")
    for b in built:
        r = b.report
        table.add_row(b.variant.name, b.params or "-", b.symbol, str(r.registers),
                      f"{r.spill_store_bytes}/{r.spill_load_bytes}", str(r.shared_bytes))
    return table
