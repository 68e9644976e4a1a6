"""Commands that need the GPU for facts, not sweeps: `mmbench info`, `mmbench ceilings`,
`mmbench profile`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from .. import ceilings as ceilings_mod
from .. import api, environment, places
from ..engine.plan import Settings
from ..engine.refusals import DEFAULTS
from ..results import ResultsError, metadata_path, read_metadata, read_results, update_metadata
from ..sizes import row_shape
from .common import FILE, InputError, RunFailed, command, console, newest_run
from ..engine.options import split
from ..sweep import reading_caches, selections_of
from .running import SAMPLES

COMMANDS = ("info", "ceilings", "profile", "verify_timing")


@command()
def info():
    """Print the device, its limits and the software versions (works without a GPU)."""
    from ..device import GpuUnavailable, open_gpu

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
    from ..device import GpuUnavailable, open_gpu

    try:
        return open_gpu()
    except GpuUnavailable as exc:
        raise RunFailed(f"cannot open the GPU: {exc}") from None


@command()
@click.option("--results", type=FILE,
              help="Results CSV of this GPU whose metadata records the ceilings (default: the newest run of this GPU "
                   "in your runs folder, if any).")
def ceilings(results):
    """Measure the FP32 FMA peak, the DRAM copy bandwidth and the vendor library's GEMM ceiling at each precision,
    next to the datasheet."""
    if results is not None:  # checked before measuring: a bad file found after would waste the measurement
        _recordable(results)
    gpu = _open_gpu_or_fail()
    facts = environment.gpu_info(gpu)
    target = _ceilings_target(results, facts)  # before measuring: a run of another GPU is refused at once
    measured = ceilings_mod.measure(gpu, facts)
    cache = ceilings_mod.save_cached(measured)
    sheet = measured["datasheet"]
    table = Table(title=f"ceilings of {measured['gpu']}")
    for col in ("", "measured", "datasheet", "measured / datasheet"):
        table.add_column(col, justify="right")
    table.add_row("FP32 TFLOP/s", f"{measured['fp32_fma_tflops']:.1f}", f"{sheet['fp32_tflops']:.1f}",
                  f"{measured['fp32_fma_tflops'] / sheet['fp32_tflops']:.1%}")
    table.add_row("DRAM GB/s", f"{measured['dram_copy_gbytes_per_s']:.0f}", f"{sheet['dram_gbytes_per_s']:.0f}",
                  f"{measured['dram_copy_gbytes_per_s'] / sheet['dram_gbytes_per_s']:.1%}")
    for name, best in measured.get("library_tflops", {}).items():  # the library's ceiling at each precision
        peak = sheet.get("precision_tflops", {}).get(name)
        if "tflops" in best:
            table.add_row(f"{name} GEMM, n={best['at']}", f"{best['tflops']:.1f}",
                          f"{peak:.1f}" if peak else "-", f"{best['tflops'] / peak:.1%}" if peak else "-")
        else:
            table.add_row(f"{name} GEMM", "-", f"{peak:.1f}" if peak else "-", best["unavailable"])
    if measured.get("library_tflops"):
        table.caption = f"GEMM rows: TFLOP/s of {measured.get('library_method', 'the vendor library')}"
    console.print(table)
    console.print(f"kept for this device in {cache}", soft_wrap=True)
    if target is None:
        console.print(f"recorded in no run: {places.runs_dir()}/ holds none of this GPU", soft_wrap=True)
        return
    update_metadata(target, ceilings=measured)
    console.print(f"recorded in {metadata_path(target)}", soft_wrap=True)


def _measured_on(facts: dict):
    """For newest_run: a run whose metadata names this GPU (by UUID where both have one, else by
    name); its ceilings are the roofs its roofline draws."""
    def usable(path: Path) -> Path:
        try:
            recorded = read_metadata(path).get("gpu") or {}
        except ResultsError as exc:
            raise InputError(str(exc)) from None
        same = (recorded.get("uuid") == facts.get("uuid") if recorded.get("uuid") and facts.get("uuid")
                else recorded.get("name") == facts.get("name"))
        if not same:
            raise InputError(f"measured on {recorded.get('name') or 'no GPU'}, not on this {facts.get('name')}")
        return path

    return usable


def _ceilings_target(results: Path | None, facts: dict) -> Path | None:
    """The run whose metadata records the ceilings: RESULTS (refused when of another GPU), else the
    newest run of this GPU in the user's runs folder, else None."""
    if results is not None:
        if not results.exists():
            raise InputError(f"no results file at {results}")
        try:
            return _measured_on(facts)(results)
        except InputError as exc:
            raise InputError(f"--results {results}: {exc.message}; its roofline's ceilings must be its GPU's") from None
    try:
        return newest_run(_measured_on(facts), "ceilings")[0]
    except InputError:
        return None


def _recordable(results: Path) -> None:
    """Refuse a results CSV whose metadata cannot take the ceilings: missing, not mmbench's, or
    beside metadata that cannot be written."""
    from ..results import metadata_path, read_metadata, scan
    from ..engine.refusals import cannot_create

    try:
        scan(results)
        read_metadata(results)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    problem = cannot_create(metadata_path(results))
    if problem:
        raise InputError(f"--results {results}: {problem}")


@command()
@click.option("--config", type=FILE,
              help="Experiment whose series are profiled. Without it: the verified rows of -v's variants in --results, "
                   "at --points, with the parameters they were measured with (your kernels' runs).")
@click.option("--points", "points_spec", default="256,1024,2048", show_default=True, metavar="SPEC",
              help="Sizes to profile (a size spec, as for run --sizes).")
@click.option("--variant", "-v", "variants", multiple=True, help="Only these variants (default: every GPU series).")
@click.option("--results", type=FILE,
              help="Results CSV the profile belongs to; written beside it as .profile.csv (default: the newest run in "
                   "your runs folder that holds every profiled point).")
def profile(config, points_spec, variants, results):
    """Run Nsight Compute on chosen points: DRAM bytes and FP32 operations (the roofline), bank conflicts."""
    if results is not None and not results.exists():
        raise InputError(f"no results file at {results}")
    points = _points_to_profile(config, points_spec, variants, results)
    target = results or newest_run(_holding(points), f"profile --config {config}")[0]
    df, out = api.profile_beside(points, target)
    table = Table(title=f"Nsight Compute: {len(df)} points")
    for col in ("variant", "params", "size", "DRAM MB", "FP32 GFLOP", "intensity FLOP/B", "kernel us"):
        table.add_column(col, justify="left" if col in ("variant", "params") else "right")
    for r in df.itertuples():
        table.add_row(r.variant, r.params, str(row_shape(r.m, r.n, r.k)),
                      f"{(r.dram_bytes_read + r.dram_bytes_write) / 1e6:.1f}", f"{r.fp32_flops / 1e9:.2f}",
                      f"{r.dram_intensity:.1f}", f"{r.gpu_time_ns / 1e3:.1f}")
    console.print(table)
    console.print(f"profile: {out}", soft_wrap=True)


def _points_to_profile(config, points_spec: str, variants, results):
    """The points of a config's series at points_spec, or without a config those of a run's rows."""
    if config is None:
        if not split(variants) or results is None:
            raise InputError("profile needs --config, or the variants (-v) and the run (--results) whose verified rows "
                             "at --points are profiled as they were measured")
        try:
            return api.points_of_run(read_results(results), split(variants), points_spec, results)
        except ResultsError as exc:
            raise InputError(str(exc)) from None
    from ..tuning.for_runs import with_tuned

    _, selections, cfg = selections_of((), None, None, (), config)
    # the parameters a run of the config takes here: a tuned variant's from the tuning caches, not its defaults
    caches = reading_caches(None)
    notes = []  # said only once the points are known: a refused --variant or --points is the one line printed
    selections = [with_tuned(sel, caches, notes.append) for sel in selections]
    points = api.points_to_profile(selections, cfg.get("cache", DEFAULTS["cache"]), points_spec, variants,
                                   split(variants), config)
    for line in dict.fromkeys(notes):  # a config of several selections finds the same note in each
        console.print(line, soft_wrap=True)
    return points


def _holding(points):
    """For newest_run: a run with a verified row of every point to profile (the run the profile is of)."""
    from ..variants import format_params

    wanted = {(p.variant.name, format_params(p.params), p.shape.m, p.shape.n, p.shape.k, p.dtype, p.layout)
              for p in points}

    def usable(path: Path) -> Path:
        try:
            df = read_results(path)
        except ResultsError as exc:
            raise InputError(str(exc)) from None
        ok = df[df.status == "ok"]
        lacking = wanted - set(zip(ok.variant, ok.params, ok.m, ok.n, ok.k, ok.dtype, ok.layout))
        if lacking:
            raise InputError(f"it has no verified row of {len(lacking)} of the {len(wanted)} points to profile")
        return path

    return usable


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
        if len(sheet["precision_tflops"]) > 1:
            table.add_row("dense GEMM peaks", ", ".join(f"{name} {tflops:.0f}" for name, tflops in
                                                        sheet["precision_tflops"].items()) + " TFLOP/s")
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


@command("verify-timing")
@click.option("--variant", "-v", "variants", default="best,dbuf,cublas", show_default=True, metavar="NAME[,NAME...]",
              help="The variants to check.")
@click.option("--sizes", "-s", default="63,128,512,2048,8192", show_default=True, metavar="SPEC",
              help="The sizes to check them at.")
@click.option("--runs", type=SAMPLES, default=10, show_default=True)
@click.option("--ncu-cache", type=click.Choice(["all", "none"]), default="all", show_default=True,
              help="Nsight Compute's --cache-control: all flushes every cache before each kernel, none leaves them.")
@click.option("--kernel-clock", type=click.Choice(["concurrent", "serial", "isolated"]), default="concurrent",
              show_default=True, help="CUPTI's kernel records: as the kernels run back to back, serialized by CUPTI, "
                                      "or of calls each launched on an idle GPU (as Nsight Compute replays one).")
@click.option("--output", "-o", type=FILE, required=True,
              help="Results CSV of the timed points; the comparison goes beside it as NAME.verify.csv.")
def verify_timing(variants, sizes, runs, ncu_cache, kernel_clock, output):
    """Time points here (events and the kernel clock) and under Nsight Compute; print both times and
    their ratio. Target: the kernel clock within 5 % of Nsight Compute at every size."""
    from ..verify_timing import TOLERANCE
    from .running import run_points

    _, selections, _ = selections_of((variants,), sizes, None, (), None)
    points, tuning = api.plan_verify_timing(selections, lambda: reading_caches(None), output,
                                            lambda t: console.print(t, soft_wrap=True))
    run_points(points, Settings(runs=runs, kernel_clock=kernel_clock), output, {"name": "verify-timing"}, tuning=tuning)
    table, path = api.compare_with_ncu(output, points, ncu_cache)
    shown = Table(title=f"kernel time against Nsight Compute, --cache-control {ncu_cache} (target: within {TOLERANCE:.0%})")
    for col in ("variant", "size", "events us", "kernel us", "kernels only", "ncu us", "kernels / ncu", "events / ncu"):
        shown.add_column(col, justify="right" if col != "variant" else "left")
    for r in table.itertuples():
        shown.add_row(r.variant, str(row_shape(r.m, r.n, r.k)), f"{r.events_us:.2f}", f"{r.kernel_us:.2f}", f"{r.kernels_only_us:.2f}",
                      f"{r.ncu_us:.2f}", f"{r.kernel_vs_ncu:.3f}" + ("" if r.within else " !"), f"{r.events_vs_ncu:.3f}")
    console.print(shown)
    for r in table[table.ncu_note != ""].itertuples():
        console.print(f"ncu could not time {r.variant} {row_shape(r.m, r.n, r.k)}: {r.ncu_note}", soft_wrap=True)
    console.print(f"{int(table.within.sum())} of {len(table)} within {TOLERANCE:.0%}; comparison: {path}", soft_wrap=True)
