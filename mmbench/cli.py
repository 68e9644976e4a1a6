"""The command line: parse and validate, then call into the modules that do the work."""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path

import click
from rich.table import Table

from . import ceilings as ceilings_mod
from . import environment
from .config import ConfigError, load_config
from .ops import get_op
from . import cli_figures
from .cli_common import InputError, RunFailed, _int_list, _results_arg, _split, console
from .results import (TUNING_DIR, COLUMNS, LEGACY_COLUMNS, MEASUREMENT_SETTINGS, CsvSink, ResultsError, add_op_column, history, run_csv,
                      latest_results, read_metadata, read_results, recorded_settings, scan, set_aside_torn,
                      status_counts, torn_message, update_metadata, write_metadata)
from .sizes import FORMS, Shape, SizeSpecError
from .sweep import Point, Runner, Selection, Settings, plan
from .timing import CACHE_MODES
from .tune import DEFAULT_CACHE
from .variants import REGISTRY, VariantError, format_params, get_variant, param_points, tuning_space

PAPER_SWEEP = "63:2049"
DEFAULTS = {k: getattr(Settings(), k) for k in MEASUREMENT_SETTINGS}  # what a run measures with unless told
ARGV = ["mmbench"]  # this invocation's command line, set by the group


class OneLineErrors(click.Group):
    """Click's own usage errors (an unknown option, a value outside its choices or range) as one
    line naming the bad value, exit 2, like mmbench's own InputError, without the usage text."""

    def main(self, args=None, *rest, **kwargs):
        global ARGV
        ARGV = ["mmbench", *(sys.argv[1:] if args is None else args)]  # as typed, for the metadata
        return super().main(args, *rest, **kwargs)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command shows its help
                raise
            raise InputError(" ".join(exc.format_message().split())) from None


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmbench")
def main():
    """mmbench: sweep, time, verify and plot GPU matrix kernels."""


@main.command("list")
@click.option("--variant", "-v", "names", multiple=True, metavar="NAME[,NAME...]",
              help="Show these variants in full: description, parameters and defaults, constraints, tuning space.")
@click.option("--wide", is_flag=True, help="One wide table with every column (for a wide terminal).")
def list_variants(names, wide):
    """Show the variants: a compact table by default, one variant in full with -v NAME."""
    if names:
        try:
            chosen = [get_variant(n) for n in _split(names) or [""]]
        except VariantError as exc:
            raise InputError(str(exc)) from None
        for v in chosen:
            _print_variant(v)
        return
    table = Table(title="mmbench variants" + ("" if wide else " (details: mmbench list -v NAME)"))
    for col in ("name", "op") + (("backend",) if wide else ()) + ("paper label",):
        table.add_column(col, no_wrap=True)
    table.add_column("space", justify="right", no_wrap=True)
    if wide:
        table.add_column("parameters (default)")
        table.add_column("what it does")
    for v in REGISTRY.values():
        space = str(len(tuning_space(v))) if v.space else "-"
        if wide:
            table.add_row(v.name, v.op, v.backend, v.label, space,
                          format_params(param_points(v)[0]).replace(",", " ") or "-", v.description)
        else:
            table.add_row(v.name, v.op, v.label, space)
    console.print(table)


def _print_variant(v) -> None:
    """Everything the registry knows of one variant, one fact a line (fits any terminal)."""
    lines = [f"{v.name}: {v.label} ({v.op}, {v.backend}, paper {v.paper})", f"  {v.description}"]
    if v.family:
        lines.append(f"  kernel: kernels/{v.family}.cu, entry {', '.join(get_op(v.op).entries(v))}")
    for name, values in v.axes.items():
        axis = v.space.get(name)
        tuned = f"  (tuned over {'/'.join(map(str, axis))})" if axis else ""
        lines.append(f"  {name} = {'/'.join(map(str, values))}{tuned}")
    lines += [f"  constraint: {c}" for c in v.constraints]
    if v.space:
        lines.append(f"  tuning space: {len(tuning_space(v))} points satisfy the constraints")
    console.print("\n".join(lines), soft_wrap=True)


def _selections(variants, sizes, blocks, params, config) -> tuple[str, list[Selection], dict]:
    """(run name, selections, settings from the config) from the options or the config file."""
    if config:
        if variants or sizes or blocks or params:
            raise InputError("--config sets variants, sizes and parameters; do not combine it with "
                             "--variant, --sizes, --block or --params")
        try:
            cfg = load_config(config)
        except ConfigError as exc:
            raise InputError(str(exc)) from None
        settings = {k: getattr(cfg, k) for k in cfg.run_keys}  # only what it sets: a resume takes the rest
        return cfg.name, [s.selection() for s in cfg.sweeps], settings
    names = _split(variants)
    if variants and not names:
        raise InputError(f"--variant '{','.join(variants)}' names no variant; choose from: {', '.join(REGISTRY)}")
    try:
        chosen = tuple(dict.fromkeys(get_variant(n) for n in names or ["best"]))
    except VariantError as exc:
        raise InputError(str(exc)) from None
    spec = PAPER_SWEEP if sizes is None else sizes
    try:
        for op in dict.fromkeys(get_op(v.op) for v in chosen):  # each operation reads the spec as its shapes
            op.parse_sizes(spec)
    except SizeSpecError as exc:
        raise InputError(str(exc)) from None
    overrides = _parse_params(params)
    if blocks is not None:
        overrides["BLOCK"] = _int_list("--block", blocks)
    known = {axis for v in chosen for axis in v.axes}
    for name in overrides:
        if name not in known:
            raise InputError(f"parameter '{name}' belongs to none of {', '.join(v.name for v in chosen)}; "
                             f"their parameters: {', '.join(sorted(known)) or 'none'}")
    return "run", [Selection(chosen, spec, overrides)], {}


def _with_tuned(sel: Selection, cache_path: Path) -> Selection:
    """Give each tunable variant whose parameters the user did not set its tuned parameters
    for this GPU and kernel source (or, where this GPU has none, those of a GPU of the same
    architecture and SM count), and say which."""
    from dataclasses import replace

    from . import source
    from .device import device_identity
    from .tune import TuneError, load_cache, lookup

    tunable = [v for v in sel.variants if v.space and len(v.space) > 1 and not set(v.axes) & set(sel.overrides)]
    if not tunable:
        return sel
    try:
        cache = load_cache(cache_path)
    except TuneError as exc:
        raise InputError(str(exc)) from None
    device = device_identity()
    tuned = {}
    for v in tunable:
        found = ({shape: lookup(cache, device, v, source.source_hash(v), shape) for shape in sel.shapes(v)}
                 if device else {})
        found = {shape: t for shape, t in found.items() if t}
        if found:
            tuned.update({(v.name, shape): t.params for shape, t in found.items()})
            kinds = sorted({format_params(t.params) for t in found.values()})
            lender = next(iter(found.values()))
            whose = (f"for {device.name}" if not lender.borrowed else
                     f"of {lender.device}: {device.name} has no entry, and {lender.device} has the same "
                     f"architecture ({device.arch}) and SM count ({device.sm_count})")
            console.print(f"{v.name}: tuned parameters from {cache_path} {whose}: {'; '.join(kinds)}", soft_wrap=True)
        elif any(e.get("variant") == v.name for e in cache.values()):
            console.print(f"{v.name}: the tuning cache has no entry for this GPU ({device or 'none found'}), nor for "
                          f"one of its architecture and SM count, with this kernel source; using defaults "
                          f"(run `mmbench tune`)", soft_wrap=True)
    return replace(sel, tuned={**sel.tuned, **tuned})


def _parse_params(params: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """--params "BM=128,BK=8/16" -> {"BM": (128,), "BK": (8, 16)}."""
    out = {}
    if params and not _split(params):
        raise InputError(f"--params '{','.join(params)}': expected NAME=V[/V...] pairs, e.g. BM=128,BK=8/16")
    for item in _split(params):
        name, eq, values = item.partition("=")
        if not eq or not name.strip():
            raise InputError(f"--params '{item}': expected NAME=V[/V...] pairs, e.g. BM=128,BK=8/16")
        out[name.strip()] = _int_list(f"--params {name}", values.replace("/", ","), minimum=0)  # flags may be 0
    return out


def _print_plan(points: list[Point], skipped: int, output: Path) -> None:
    groups: dict[tuple, list[Point]] = {}
    for p in points:
        groups.setdefault((p.variant.name, format_params(p.params)), []).append(p)
    table = Table(title=f"plan: {len(points)} points" + (f" ({skipped} already in {output})" if skipped else ""))
    # Parameters fold under the variant and sizes wrap, so the plan fits 80 columns.
    table.add_column("variant, params", overflow="fold", min_width=16, ratio=2)
    for col in ("backend", "cache", "points"):
        table.add_column(col, no_wrap=True)
    table.add_column("sizes", ratio=1)
    for (name, params), pts in groups.items():
        shapes = [str(p.shape) for p in pts]
        shown = ", ".join(shapes) if len(shapes) <= 6 else f"{', '.join(shapes[:3])}, ..., {', '.join(shapes[-2:])}"
        table.add_row(f"{name}\n{params.replace(',', ' ')}" if params else name, pts[0].variant.backend,
                      pts[0].cache, str(len(pts)), shown)
    console.print(table)
    console.print(f"output: {output}", soft_wrap=True)


def _summary(csv_path: Path) -> Table:
    """Per series: points ok and not, the median and peak of its operation's rate (GFLOP/s for
    GEMM, GB/s for a transpose), where the peak was, and the median cv."""
    df = read_results(csv_path)
    table = Table(title=f"summary of {csv_path}")
    # A series' parameters go under its name and fold, so the table fits 80 columns.
    table.add_column("variant, params", overflow="fold", min_width=16, ratio=1)
    for col in ("ok", "not ok", "median", "peak", "at size", "cv\nmedian"):
        table.add_column(col, justify="right", overflow="fold")
    for (op_name, variant, params), g in df.groupby(["op", "variant", "params"], sort=False):
        op = get_op(op_name)
        unit = "GFLOP/s" if op.rate.startswith("gflops") else "GB/s"
        name = f"{variant}\n{params.replace(',', ' ')}" if params else variant
        ok = g[(g.status == "ok") & g[op.rate].notna()]
        bad = g[g.status != "ok"].status.value_counts()
        not_ok = ", ".join(f"{n} {s}" for s, n in bad.items()) or "0"
        if ok.empty:
            table.add_row(name, "0", not_ok, "-", "-", "-", "-")
            continue
        peak = ok.loc[ok[op.rate].idxmax()]
        size = str(Shape(int(peak.m), int(peak.n), int(peak.k)))
        table.add_row(name, str(len(ok)), not_ok, f"{ok[op.rate].median():.1f}\n{unit}", f"{peak[op.rate]:.1f}\n{unit}",
                      size, f"{ok.cv.median():.3f}")
    return table


@main.command()
@click.option("--variant", "-v", "variants", multiple=True, metavar="NAME[,NAME...]",
              help="Variant(s) to run; repeat or comma-separate. Default: best. See `mmbench list`.")
@click.option("--sizes", "-s", metavar="SPEC",
              help=f"Sizes to sweep (default {PAPER_SWEEP}, the paper's 189 sizes). Forms: {FORMS}. "
                   "A:B is every n in [A, B] within 1 of a multiple of 32; e.g. 256,512  64:4096:+64  "
                   "512:8192:x2  1000x37x2049 (M x N x K).")
@click.option("--block", "blocks", metavar="B[,B...]", help="Block sizes to sweep (the BLOCK parameter), e.g. 8,16,32.")
@click.option("--params", "params", multiple=True, metavar="K=V[/V],...",
              help="Set kernel parameters, e.g. BM=128,BK=8/16 (a/b sweeps both); overrides the tuning cache.")
@click.option("--tuning-cache", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_CACHE,
              show_default=True, help="Tuned parameters, used for variants whose parameters are not set.")
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path),
              help="Run a whole experiment from configs/*.toml (its sweeps and settings).")
@click.option("--runs", type=click.IntRange(min=1), help="Timed samples per point (default 10).")
@click.option("--warmup", type=click.IntRange(min=0), help="Untimed launches before the samples (default 3).")
@click.option("--cache", type=click.Choice(CACHE_MODES), help="cold: flush L2 before every sample (default); hot: no flush.")
@click.option("--threads", type=click.IntRange(min=1), help="CPU BLAS threads (default: the library's).")
@click.option("--seed", type=int, help=f"Seed of the random inputs (default {DEFAULTS['seed']}).")
@click.option("--cpu-budget", type=click.FloatRange(min=0, min_open=True), default=Settings().cpu_budget_s,
              show_default=True, metavar="SECONDS",
              help="Time a compiled naive CPU point may take; one estimated longer is a skipped row.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Results CSV (metadata goes beside it as .meta.json). Default: results/NAME-TIMESTAMP/NAME-TIMESTAMP.csv.")
@click.option("--resume", is_flag=True, help="Skip points already in --output and append the rest, with the "
              "file's measurement settings (a torn last row is set aside and measured again).")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit; needs no GPU.")
def run(variants, sizes, blocks, params, tuning_cache, config, runs, warmup, cache, threads, seed, cpu_budget, output,
        resume, dry_run):
    """Sweep variants over sizes: verify each point, time it, write a row per point.

    \b
    Examples:
      mmbench run --variant best --sizes 63:2049
      mmbench run -v best,shared,cublas --sizes 256,512,1024 --block 8,16,32
      mmbench run --config configs/zosa2017.toml
    """
    name, selections, cfg = _selections(variants, sizes, blocks, params, config)
    if resume and output is None:
        raise InputError("--resume needs --output naming the CSV to continue")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = output or run_csv(f"{name}-{stamp}")
    _check_output(output)
    found = _resumable(output) if resume else None
    if not resume and output.exists() and output.stat().st_size > 0:
        raise InputError(f"{output} already exists; pass --resume to continue it or choose another --output")
    previous = _previous_metadata(output, found) if resume else {}
    chosen = {"runs": runs, "warmup": warmup, "cache": cache, "threads": threads, "seed": seed}
    given = {**cfg, **{k: v for k, v in chosen.items() if v is not None}}  # cfg: what the config's [run] sets
    settings = Settings(**_settings(given, output, previous if resume else None), cpu_budget_s=cpu_budget)
    selections = [_with_tuned(sel, tuning_cache) for sel in selections]
    try:
        points = plan(selections, settings.cache)
    except VariantError as exc:  # a parameter value outside its domain
        raise InputError(str(exc)) from None
    _check_buildable(points)
    done = found.keys if found else set()
    todo = [p for p in points if p.key not in done]
    if found and found.torn:
        console.print(torn_message(output, found.torn, "it will be set aside and its point measured again"
                                   if not dry_run and todo else "left in place (nothing is run now)"), soft_wrap=True)
    if dry_run:
        _print_plan(todo, len(points) - len(todo), output)
        return
    if not todo:
        console.print(f"nothing to do: all {len(points)} points are already in {output}", soft_wrap=True)
        return
    _execute(todo, settings, output, {"name": name, "config": str(config) if config else None}, previous=previous,
             resume=resume)


def _settings(given: dict, output: Path, previous: dict | None) -> dict:
    """The run's measurement settings: those given (options or config), else on --resume
    (previous: the file's metadata) the file's, else the defaults. A resume that asks for other
    settings than the file has is refused: one file, one way of measuring."""
    recorded = {}
    if previous is not None:
        try:
            recorded = recorded_settings(output, previous)
        except ResultsError as exc:
            raise InputError(str(exc)) from None
    clash = {k: (recorded[k], v) for k, v in given.items() if k in recorded and recorded[k] != v}
    if clash:
        then = ", ".join(f"{k}={a}" for k, (a, _) in clash.items())
        now = ", ".join(f"{k}={b}" for k, (_, b) in clash.items())
        raise InputError(f"{output} was measured with {then}; this resume asks for {now}: one file holds one way of "
                         f"measuring, so resume with the file's settings (leave them out) or choose another --output")
    return {**DEFAULTS, **{k: v for k, v in recorded.items() if k in DEFAULTS}, **given}


def _previous_metadata(output: Path, found) -> dict:
    """The metadata of the file to continue, checked now (before anything is touched); a file
    without it is continued with the settings its rows show, and a warning says so."""
    try:
        previous = read_metadata(output)
    except ResultsError as exc:
        raise InputError(f"{output} cannot be resumed: {exc}") from None
    if found and not previous:
        console.print(f"warning: {output.with_suffix('.meta.json')} is missing: runs, warmup and cache are taken "
                      f"from the rows; threads and seed are this run's", soft_wrap=True)
    return previous


def _check_output(output: Path) -> None:
    """Refuse an output that cannot be written, before anything runs or is touched."""
    if output.is_dir():
        raise InputError(f"--output {output} is a folder; name a CSV file")
    if output.suffix != ".csv":
        raise InputError(f"--output {output}: a results file ends in .csv")
    ancestor = output.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"--output {output}: {ancestor} is not a folder")
    target = output if output.exists() else ancestor
    if not os.access(target, os.W_OK):  # root passes this anywhere; opening the file later says the rest
        raise InputError(f"--output {output} cannot be written: no write permission in {target}")


def _resumable(output: Path):
    """The file to continue, checked row by row (nothing is changed here); None when it is new."""
    if not output.exists() or output.stat().st_size == 0:
        return None
    try:
        found = scan(output)
    except ResultsError as exc:
        raise InputError(f"{output} cannot be resumed: {exc}") from None
    if found.header not in (COLUMNS, LEGACY_COLUMNS):
        missing = [c for c in COLUMNS if c not in found.header]
        raise InputError(f"{output} cannot be resumed: its columns are not those this mmbench writes"
                         + (f" (missing {', '.join(missing)})" if missing else ""))
    return found


def _check_buildable(points: list[Point]) -> None:
    """Refuse a plan with a point no GPU can run (a broken constraint, too many threads a block):
    known from the registry alone, so it is said before anything runs, dry runs included."""
    for p in points:
        problem = p.variant.problem(p.params)
        if problem:
            raise InputError(f"{p.variant.name} {format_params(p.params)}: {problem}")


def _execute(points: list[Point], settings: Settings, output: Path, about: dict, prepare=None,
             strict: bool = True, resume: bool = False, previous: dict | None = None) -> None:
    """Run points into output with metadata (`about` goes into it); prepare(runner) runs first.
    On resume, a torn last row is set aside first, and the metadata keeps every invocation.
    strict: exit 1 when a point is wrong or failed (the tuner expects some to fail)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        runner = Runner(settings, points)
    except Exception as exc:  # GpuUnavailable and the like: nothing can run
        raise RunFailed(f"cannot open the GPU: {exc}") from None
    previous = previous or {}
    earlier = history(previous)
    try:
        then, now = (previous.get("gpu") or {}).get("name"), runner.gpu.facts.name if runner.gpu else None
        if then and now and then != now:
            raise InputError(f"{output} was measured on {then}; this GPU is {now}: one file, one GPU, so choose "
                             f"another --output")
        repaired = upgraded = None
        if resume and output.exists():
            repaired = set_aside_torn(output, scan(output))
            upgraded = add_op_column(output, scan(output))
        for notice in (repaired, upgraded):
            if notice:
                console.print(notice, soft_wrap=True)
        repaired = "; ".join(n for n in (repaired, upgraded) if n) or None
        sink = CsvSink(output)
    except ResultsError as exc:
        runner.close()
        raise InputError(str(exc)) from None
    except InputError:
        runner.close()
        raise
    if prepare:
        prepare(runner)
    started_at = _utc_now()
    invocation = {"command": ARGV, "started_at": started_at, "resumed": resume, "repaired": repaired,
                  "points_planned": len(points)}
    facts = environment.collect(runner.gpu)
    first_start = (earlier[0].get("started_at") if earlier else None) or started_at
    meta = {**about, "settings": {**settings.__dict__}, "started_at": first_start,
            **runner.library_meta(), **facts,
            "ceilings": ceilings_mod.cached_for(facts["gpu"]) or previous.get("ceilings")}
    kernels = dict(previous.get("kernels") or {})

    def save(state: str, **more) -> None:
        invocation.update(state=state, git=facts["git"], **more)
        write_metadata(output, {**meta, "state": state, "finished_at": invocation.get("finished_at"),
                                "status_counts": status_counts(output), "kernels": {**kernels, **runner.kernels},
                                "invocations": [*earlier, invocation]})

    save("running")
    counts: dict[str, int] = {}
    started = time.perf_counter()
    state = "finished"

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task("sweeping", total=len(points))

        def on_row(row: dict) -> None:
            sink.write(row)
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            progress.update(task, advance=1, description=f"{row['variant']} {row['params']} {row['m']}x{row['n']}x{row['k']}")

        try:
            runner.run(points, on_row)
        except KeyboardInterrupt:
            state = "interrupted"
        finally:
            sink.close()
            runner.close()
            save(state, finished_at=_utc_now(), wall_s=round(time.perf_counter() - started, 2), status_counts=counts)
    console.print(_summary(output))
    console.print(f"results: {output}  (metadata: {output.with_suffix('.meta.json')})", soft_wrap=True)
    if state == "interrupted":
        raise RunFailed(f"interrupted: the {sum(counts.values())} finished points are in {output}; "
                        f"rerun with --output {output} --resume to continue")
    bad = {s: n for s, n in counts.items() if s in ("wrong", "failed")}
    if bad and strict:
        raise RunFailed(", ".join(f"{n} point(s) {s}" for s, n in bad.items()) + f"; see the reason column of {output}")


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@main.command()
@click.option("--variant", "-v", "variant_name", required=True, help="The variant to tune (one with a tuning space).")
@click.option("--sizes", "-s", "sizes_spec", default="1024,2048,4096", show_default=True, metavar="SPEC",
              help="Shapes to tune at; the best configuration is kept per size class (nearest power of two).")
@click.option("--strategy", type=click.Choice(["brute", "random"]), default="random", show_default=True)
@click.option("--budget", type=click.IntRange(min=1), help="Configurations to try (random; the defaults count).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random strategy.")
@click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True)
@click.option("--cache", type=click.Choice(CACHE_MODES), default="cold", show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=8, show_default=True, help="Parallel nvcc processes.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Tuning CSV: one row per configuration and shape (default results/tuning/tune-VARIANT-TIMESTAMP/tune-VARIANT-TIMESTAMP.csv).")
@click.option("--tuning-cache", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--dry-run", is_flag=True, help="Print the space and the configurations to try; needs no GPU.")
@click.option("--replay", type=click.Path(dir_okay=False, path_type=Path),
              help="No GPU: run the strategy against a recorded tuning CSV and fill the cache from it.")
@click.option("--params", "pinned_text", metavar="K=V[/V],...", help="Pin parameters; search only the rest.")
@click.option("--per-shape", is_flag=True,
              help="Keep the best configuration of every shape, not of every size class; run uses it at that exact shape.")
@click.option("--candidates", "candidates_from", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Search only configurations among the --top fastest at some shape of this tuning CSV (repeatable).")
@click.option("--top", type=click.IntRange(min=1), default=4, show_default=True,
              help="With --candidates: how many of the fastest per recorded shape.")
def tune(variant_name, sizes_spec, strategy, budget, seed, runs, warmup, cache, jobs, output, tuning_cache, dry_run,
         replay, pinned_text, per_shape, candidates_from, top):
    """Search a variant's parameter space: compile, verify and time every configuration tried,
    record each as a row, and keep the best per size class (or per shape) in the tuning cache."""
    from . import source
    from .tune import TuneError, best_per_class, candidates, choose, describe, record

    try:
        variant = get_variant(variant_name)
        shapes = tuple(get_op(variant.op).parse_sizes(sizes_spec))
        pinned = _parse_params((pinned_text,) if pinned_text is not None else ())
        narrowed = None
        if candidates_from:
            import pandas as pd

            recorded = pd.concat([read_results(p) for p in candidates_from])
            narrowed = candidates(recorded, variant, top)
            if not narrowed:
                raise TuneError(f"no verified configuration of {variant.name} in {', '.join(map(str, candidates_from))}")
        configs = choose(variant, strategy, budget, seed, narrowed, pinned=pinned)
    except (VariantError, SizeSpecError, TuneError, ResultsError) as exc:
        raise InputError(str(exc)) from None
    if replay:
        _replay(variant, replay, strategy, budget, seed, tuning_cache)
        return
    if pinned_text:
        console.print(f"pinned: {pinned_text}", soft_wrap=True)
    space = len(tuning_space(variant))
    console.print(f"{variant.name}: {space} configurations satisfy its constraints; trying {len(configs)} "
                  f"({strategy}) at {len(shapes)} shape(s)", soft_wrap=True)
    settings = Settings(runs=runs, warmup=warmup, cache=cache, seed=seed, skip_spills=True)
    points = [Point(variant, p, s, cache) for s in shapes for p in configs]
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = output or run_csv(f"tune-{variant.name}-{stamp}", TUNING_DIR)
    if dry_run:
        for p in configs[:20]:
            console.print(f"  {format_params(p)}", soft_wrap=True)
        if len(configs) > 20:
            console.print(f"  ... and {len(configs) - 20} more", soft_wrap=True)
        console.print(f"output: {output}", soft_wrap=True)
        return
    _check_output(output)
    if output.exists() and output.stat().st_size > 0:
        raise InputError(f"{output} already exists; choose another --output")
    about = {"name": f"tune-{variant.name}", "tuning": {"variant": variant.name, "strategy": strategy, "budget": budget,
                                                         "seed": seed, "space": space, "tried": len(configs),
                                                         "per_shape": per_shape,
                                                         "candidates": [str(p) for p in candidates_from], "top": top}}
    _execute(points, settings, output, about, prepare=lambda r: r.gpu.precompile(variant, configs, jobs), strict=False)
    from .tune import DeviceId

    best = best_per_class(read_results(output), variant.name, per_shape)
    if not best:
        raise RunFailed(f"no configuration of {variant.name} was verified at every shape; see {output}")
    gpu = read_metadata(output).get("gpu") or {}  # the GPU the tuning ran on, as its metadata records
    device = DeviceId(gpu.get("name") or "unknown GPU", gpu.get("arch"), gpu.get("sm_count"))
    record(tuning_cache, device, variant.name, source.source_hash(variant), best, output)
    for line in describe(best):
        console.print(f"best {line}", soft_wrap=True)
    console.print(f"tuning cache: {tuning_cache} ({device.name}, {variant.name} source {source.source_hash(variant)})",
                  soft_wrap=True)


def _replay(variant, recorded: Path, strategy: str, budget: int | None, seed: int, cache_path: Path) -> None:
    from . import source
    from .results import read_metadata
    from .tune import describe, record, recorded_source
    from .tune import replay as replay_strategy

    try:
        rows = read_results(recorded)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    try:
        device, measured_hash = recorded_source(read_metadata(recorded), variant.name)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    current = source.source_hash(variant)
    if not device or not measured_hash:
        raise InputError(f"{recorded}: its metadata names no GPU or no {variant.name} kernel source hash")
    if measured_hash != current:
        raise InputError(f"{recorded} measured {variant.name} source {measured_hash}, but the kernel is now {current}: "
                         f"its results would be stale; tune again")
    best = replay_strategy(rows, variant, strategy, budget, seed)
    if not best:
        raise RunFailed(f"{recorded} has no configuration of {variant.name} verified at every shape of a class")
    record(cache_path, device, variant.name, current, best, recorded)
    for line in describe(best):
        console.print(f"best {line}", soft_wrap=True)
    console.print(f"tuning cache: {cache_path} ({device.name}, {variant.name} source {current}, replayed from {recorded})",
                  soft_wrap=True)


@main.command()
def info():
    """Print the device, its limits and the software versions (works without a GPU)."""
    from .device import GpuUnavailable, open_gpu

    facts = environment.collect()
    try:
        gpu = open_gpu()
        facts["gpu"] = environment.gpu_info(gpu)
    except GpuUnavailable as exc:
        facts["gpu"] = None
        gpu_note = f"none: {exc}. Kernels still compile with nvcc; CPU BLAS runs; plots work."
    facts["ceilings"] = ceilings_mod.cached_for(facts["gpu"]) if facts["gpu"] else None
    _print_info(facts, gpu_note=None if facts["gpu"] else gpu_note)


def _peaks(tflops: float | None, gbytes: float) -> str:
    return f"FP32 {tflops:.1f} TFLOP/s, DRAM {gbytes:.0f} GB/s" if tflops else f"DRAM {gbytes:.0f} GB/s"


def _open_gpu_or_fail():
    from .device import GpuUnavailable, open_gpu

    try:
        return open_gpu()
    except GpuUnavailable as exc:
        raise RunFailed(f"cannot open the GPU: {exc}") from None


@main.command()
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path),
              help="Results CSV whose metadata records the ceilings (default: the newest under results/, if any).")
def ceilings(results):
    """Measure the FP32 FMA peak and the DRAM copy bandwidth of the GPU, next to its datasheet."""
    gpu = _open_gpu_or_fail()
    measured = ceilings_mod.measure(gpu, environment.gpu_info(gpu))
    cache = ceilings_mod.save_cached(measured)
    sheet = measured["datasheet"]
    table = Table(title=f"ceilings of {measured['gpu']}")
    for col in ("", "measured", "datasheet", "measured / datasheet"):
        table.add_column(col, justify="right")
    table.add_row("FP32 TFLOP/s", f"{measured['fp32_fma_tflops']:.1f}", f"{sheet['fp32_tflops']:.1f}",
                  f"{measured['fp32_fma_tflops'] / sheet['fp32_tflops']:.1%}")
    table.add_row("DRAM GB/s", f"{measured['dram_copy_gbytes_per_s']:.0f}", f"{sheet['dram_gbytes_per_s']:.0f}",
                  f"{measured['dram_copy_gbytes_per_s'] / sheet['dram_gbytes_per_s']:.1%}")
    console.print(table)
    console.print(f"kept for this device in {cache}", soft_wrap=True)
    try:
        target = results or latest_results()
    except ResultsError:
        return
    update_metadata(target, ceilings=measured)
    console.print(f"recorded in {target.with_suffix('.meta.json')}", soft_wrap=True)


@main.command()
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Experiment whose series are profiled.")
@click.option("--points", "points_spec", default="256,1024,2048", show_default=True, metavar="SPEC",
              help="Sizes to profile (a size spec, as for run --sizes).")
@click.option("--variant", "-v", "variants", multiple=True, help="Only these variants (default: every GPU series).")
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path),
              help="Results CSV the profile belongs to; written beside it as .profile.csv (default: the newest).")
def profile(config, points_spec, variants, results):
    """Run Nsight Compute on chosen points: DRAM bytes and FP32 operations for the roofline."""
    from .profile import ProfileError, profile_path, profile_points

    _, selections, cfg = _selections((), None, None, (), config)
    try:
        shapes = {(op.name, shape) for op in {get_op(v.op) for sel in selections for v in sel.variants}
                  for shape in op.parse_sizes(points_spec)}
    except SizeSpecError as exc:
        raise InputError(str(exc)) from None
    wanted = set(_split(variants))
    for name in wanted:
        try:
            get_variant(name)
        except VariantError as exc:
            raise InputError(str(exc)) from None
    cache = cfg.get("cache", DEFAULTS["cache"])
    points = [p for p in plan(selections, cache) if p.variant.on_gpu and (p.variant.op, p.shape) in shapes
              and (not wanted or p.variant.name in wanted)]
    if not points:
        raise InputError(f"no GPU point of {config} matches --points {points_spec}"
                         + (f" and --variant {','.join(sorted(wanted))}" if wanted else ""))
    target = _results_arg(results)
    try:
        df = profile_points(points)
    except ProfileError as exc:
        raise RunFailed(str(exc)) from None
    out = profile_path(target)
    df.to_csv(out, index=False)
    table = Table(title=f"Nsight Compute: {len(df)} points")
    for col in ("variant", "params", "size", "DRAM MB", "FP32 GFLOP", "intensity FLOP/B", "kernel us"):
        table.add_column(col, justify="left" if col in ("variant", "params") else "right")
    for r in df.itertuples():
        table.add_row(r.variant, r.params, str(r.n) if r.m == r.n == r.k else f"{r.m}x{r.n}x{r.k}",
                      f"{(r.dram_bytes_read + r.dram_bytes_write) / 1e6:.1f}", f"{r.fp32_flops / 1e9:.2f}",
                      f"{r.dram_intensity:.1f}", f"{r.gpu_time_ns / 1e3:.1f}")
    console.print(table)
    console.print(f"profile: {out}", soft_wrap=True)


def _print_info(facts: dict, gpu_note: str | None) -> None:
    table = Table(title="mmbench info", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    if facts["gpu"]:
        g = facts["gpu"]
        table.add_row("GPU", f"{g['name']} ({g.get('uuid') or g['pci_bus_id']})")
        table.add_row("compute capability", f"{g['compute_capability']} ({g['arch']}), {g['sm_count']} SMs")
        table.add_row("memory / L2", f"{g['memory_bytes'] / 2**30:.1f} GiB / {g['l2_bytes'] / 2**20:.0f} MiB")
        table.add_row("limits per block", f"{g['max_threads_per_block']} threads, {g['max_shared_per_block']} B shared "
                      f"({g['max_shared_per_block_optin']} B opt-in)")
        table.add_row("SM clock max", f"{g.get('sm_clock_max_mhz')} MHz")
        table.add_row("driver", f"{g.get('driver_version')} (CUDA {g['driver_cuda_version']})")
        table.add_row("pycuda", f"{g['pycuda']} (built for CUDA {g['pycuda_built_for_cuda']})")
        sheet = ceilings_mod.datasheet(g)
        table.add_row("datasheet peaks", _peaks(sheet["fp32_tflops"], sheet["dram_gbytes_per_s"]))
        c = facts.get("ceilings")
        table.add_row("measured ceilings", _peaks(c["fp32_fma_tflops"], c["dram_copy_gbytes_per_s"]) +
                      f" ({c['measured_at']})" if c else "not measured here yet: run `mmbench ceilings`")
    else:
        table.add_row("GPU", "none (see below)")
    sw = facts["software"]
    table.add_row("nvcc", f"{sw['nvcc'] or 'not found'} (options: {' '.join(sw['nvcc_options'])})")
    for pkg, ver in sw["packages"].items():
        if ver or pkg in ("pycuda", "nvidia-ml-py"):
            table.add_row(pkg, ver or "not installed")
    for b in sw["blas"]:
        table.add_row("BLAS", f"{b['internal_api']} {b['version']}, {b['num_threads']} threads")
    host = facts["host"]
    table.add_row("host", f"{host['cpu']}, {host['cpu_count']} CPUs, Python {host['python']}")
    table.add_row("git", f"{facts['git'].get('commit') or 'unknown'}" + (" (dirty)" if facts["git"].get("dirty") else ""))
    console.print(table)
    if not facts["gpu"]:
        console.print(f"GPU: {gpu_note}", soft_wrap=True)
        console.print("To run kernels: on a machine with an NVIDIA GPU and the CUDA toolkit, "
                      "pip install '.[cuda,cublas]'", soft_wrap=True)


for _command in cli_figures.COMMANDS:
    main.add_command(getattr(cli_figures, _command))


if __name__ == "__main__":  # pragma: no cover
    main()
