"""Tuning's part of a run: tuned parameters from the caches into a selection and the record of
where they came from, and a tuning run's results written back into the tuning cache (the
batched tuner's too). The run itself is the engine's (mmbench/engine/)."""

from __future__ import annotations

import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from . import environment
from .engine.outcome import counted, first_line, missing_folders, remove_unmeasured
from .engine.plan import Selection, Settings
from .engine.provenance import first_record, say_machine_changes, utc_now
from .engine.refusals import RunAborted, RunInterrupted, RunRefused, Say
from .ops import get_op
from .results import ResultsError, history, metadata_path, read_metadata, recorded_settings, write_metadata
from .variants import format_params


def _tunable(sel: Selection) -> list:
    """The variants of a selection that take tuned parameters: a tuning space, and no axis set by the user."""
    return [v for v in sel.variants if v.space and len(v.space) > 1 and not set(v.axes) & set(sel.overrides)]


def with_tuned(sel: Selection, caches: Sequence, say: Say) -> Selection:
    """Give each tunable variant whose parameters the user did not set its tuned parameters for
    this GPU and kernel source from the tuning caches (tune.read_caches: the user's, then the
    shipped; empty: caches switched off), and say which cache gave them, for which GPU."""
    from . import source
    from .device import device_identity
    from .tune import lookup

    tunable = _tunable(sel)
    if not tunable:
        return sel
    if not caches:
        say(f"{', '.join(v.name for v in tunable)}: tuning caches off; default parameters")
        return sel
    device = device_identity()
    tuned = {}
    for v in tunable:
        shapes = sel.shapes(v)
        found = ({shape: lookup(caches, device, v, source.source_hash(v), shape) for shape in shapes} if device else {})
        found = {shape: t for shape, t in found.items() if t}
        tuned.update({(v.name, shape): t for shape, t in found.items()})
        for line in _tuned_lines(v, found, device):
            say(line)
        if found and len(found) < len(shapes):
            say(f"{v.name}: no tuned entry at {len(shapes) - len(found)} of its {len(shapes)} shapes; defaults there")
        if not found and device is None:
            say(f"{v.name}: no GPU found here to look up its tuned parameters for; using defaults")
        elif not found and any(e.get("variant") == v.name for c in caches for e in c.entries.values()):
            say(f"{v.name}: the tuning caches have no entry for this GPU ({device}), nor for one of its architecture "
                f"and SM count, with this kernel source; using defaults (run `mmbench tune`)")
    return replace(sel, tuned={**sel.tuned, **tuned})


def _tuned_lines(variant, found: dict, device) -> list[str]:
    """One line per cache and GPU that gave a variant tuned parameters: which cache (yours or the
    shipped one, and its path), measured on which GPU, and the parameters."""
    from .tune import describe_cache

    groups: dict[tuple, list] = {}
    for shape, t in found.items():
        groups.setdefault((t.cache, t.origin, t.device, t.borrowed), []).append((shape, t))
    lines = []
    for (path, origin, lender, borrowed), items in groups.items():
        kinds = sorted({format_params(t.params) for _, t in items})
        if len(kinds) > 4:  # a mesh of cells: say how many, not each
            kinds = [f"{len(kinds)} configurations over {len({get_op(variant.op).size_class(s) for s, _ in items})} "
                     f"size classes"]
        whose = (f"for {device.name}" if not borrowed else
                 f"of {lender}: {device.name} has no entry, and {lender} has the same "
                 f"architecture ({device.arch}) and SM count ({device.sm_count})")
        lines.append(f"{variant.name}: tuned parameters from {describe_cache(path, origin)} {whose}: {'; '.join(kinds)}")
    return lines


def tuning_record(selections: Sequence[Selection], caches: Sequence) -> dict:
    """What a run's metadata keeps of its tuning: the caches read (none: switched off) and, per
    tunable variant, where its parameters came from: each cache (path, yours or shipped), the GPU
    its entries were measured on, whether borrowed, over how many shapes; "defaults" where none."""
    variants: dict[str, dict[tuple, int]] = {}
    for sel in selections:
        for v in _tunable(sel):
            sources = variants.setdefault(v.name, {})
            for shape in sel.shapes(v):
                t = sel.tuned.get((v.name, shape))
                key = (str(t.cache), t.origin, t.device, t.borrowed) if t else (None, "defaults", None, False)
                sources[key] = sources.get(key, 0) + 1
    fields = ("cache", "origin", "measured_on", "borrowed")
    return {"read": [{"path": str(c.path), "origin": c.origin, "entries": len(c.entries)} for c in caches],
            "variants": {name: [{**dict(zip(fields, key)), "shapes": n} for key, n in sources.items()]
                         for name, sources in variants.items()}}


# -- tuning ------------------------------------------------------------------------------------------
def record_tuning(output: Path, variant, per_shape: bool, cache_path: Path, pool: bool = False):
    """After a tuning run: its best configuration per size class (or shape) into the cache, keyed
    by the GPU its metadata names (a cluster's workers of one model merge into that model's entry).
    Returns (best, device); RunAborted when none verified, RunRefused when the run mixed GPU models
    and pool is not set (with pool, the pooled best goes under each model's name)."""
    from . import source
    from .results import read_results
    from .tune import DeviceId, best_per_class, record

    best = best_per_class(read_results(output), variant.name, per_shape)
    if not best:
        raise RunAborted(f"no configuration of {variant.name} was verified at every shape; see {output}")
    meta = read_metadata(output)
    gpu = meta.get("gpu") or {}  # the GPU the tuning ran on, as its metadata records
    models = gpu.get("mixed") or [gpu.get("name") or "unknown GPU"]
    if len(models) > 1 and not pool:
        raise RunRefused(f"{output} was measured on GPUs of different models ({', '.join(models)}); their timings "
                         f"do not pool into one cache entry: tune on one model, or pass --pool-gpus")
    facts = {g["name"]: g for g in (meta.get("cluster") or {}).get("gpus", [])} or {models[0]: gpu}
    for name in models:
        device = DeviceId(name, facts.get(name, gpu).get("arch"), facts.get(name, gpu).get("sm_count"))
        record(cache_path, device, variant.name, source.source_hash(variant), best, output)
    return best, device


def refuse_batched_resume(output: Path, configs: int, cache: str, prune: float, resume: bool, source_hash: str) -> None:
    """RunRefused when a resumed batched tuning file is not one, has no metadata, or was measured
    under other settings or another version of the kernel (before anything is read into it or
    repaired)."""
    from .engine import batched_local as batched

    if not resume:
        return
    try:
        batched.check_columns(output)
        meta = read_metadata(output)
    except (batched.BatchError, ResultsError) as exc:
        raise RunRefused(str(exc)) from None
    if not meta and (output.exists() or batched.gz_path(output).exists()):
        raise RunRefused(f"{output} has no metadata beside it: how it was measured is unknown; choose another --output")
    if not meta:
        return  # nothing to resume: a fresh file
    settings, tuning = meta.get("settings", {}), meta.get("tuning", {})
    if settings.get("cache") not in (None, cache):
        raise RunRefused(f"{output} was measured with cache={settings['cache']}; this resume asks for cache={cache}")
    was = settings.get("prune", 0.0)  # files from before pruning timed every configuration at every shape
    if was != prune:
        raise RunRefused(f"{output} was measured with prune={was:g}; this resume asks for prune={prune:g} (one file, one rule)")
    if tuning.get("tried") not in (None, configs):
        raise RunRefused(f"{output} was measured over {tuning['tried']} configurations; this resume asks for {configs}")
    if tuning.get("source_hash") != source_hash:
        then = tuning.get("source_hash") or "a source it does not record"
        raise RunRefused(f"{output} was measured with the kernel at {then}; the kernel is now at {source_hash}: one file, "
                         f"one kernel; choose another --output")


def _open_batched(variant, configs: Sequence, cache: str, l2_flush: str, jobs: int, output: Path, previous: Mapping,
                  say: Say, cluster=None):
    """(gpu, cluster runner, tuner, compile_s, facts) of a batched tuning: this process's GPU with
    every configuration compiled and loaded, or a cluster's workers (which compile per class), and
    what environment.collect says of this machine; refused when the file was measured on another
    GPU model."""
    from .engine import batched_local as batched

    t0 = time.perf_counter()
    gpu = runner = tuner = None
    if cluster is None:
        from .device import open_gpu

        try:
            gpu = open_gpu()
        except Exception as exc:  # GpuUnavailable and the like: nothing can run
            raise RunAborted(f"cannot open the GPU: {exc}") from None
        now = {gpu.facts.name}
    else:
        from .engine.points_dask import ClusterError, DaskPoints

        try:
            runner = DaskPoints(Settings(), [], cluster, say, gpus=True)
        except ClusterError as exc:
            raise RunAborted(str(exc)) from None
        now = runner.gpu_names()
    try:
        then = (previous.get("gpu") or {}).get("name")
        if then and now and now != {then}:
            raise RunRefused(f"{output} was measured on {then}; this run's GPUs are {', '.join(sorted(now))}: one "
                             f"file, one GPU model")
        if gpu is not None:
            gpu.precompile(variant, list(configs), jobs)
            tuner = batched.BatchedTuner(gpu, variant, configs, cache, l2_flush)
            say(f"compiled and loaded {len(configs)} configurations in {time.perf_counter() - t0:.0f} s "
                f"({len(tuner.problems)} cannot run)")
        compile_s = round(time.perf_counter() - t0, 1) if gpu is not None else None
        return gpu, runner, tuner, compile_s, environment.collect(gpu)
    except BaseException:  # refused, or Ctrl-C while compiling: the cluster's client goes
        if runner:
            runner.close()
        raise


def classes_held(output: Path) -> int:
    """How many size classes a batched tuning file (or its CSV.gz) holds (0 when there is none)."""
    from .engine import batched_local as batched

    try:
        return int(batched.read_rows(output)["size_class"].nunique())
    except batched.BatchError:
        return 0


def tune_batched(variant, configs: Sequence, shapes: Sequence, cache: str, seed: int, jobs: int, output: Path,
                 cache_path: Path, about: dict, command: list[str], *, resume: bool = False, prune: float = 0.0,
                 say: Say = print, cluster=None):
    """The batched tuner (engine/batched_local.py) into output, resumable by whole size class, then the best
    configuration per class into the tuning cache. Returns (best, device, counts). cluster: a
    engine.points_dask.ClusterSpec whose workers measure whole classes (each compiles with `jobs` nvcc).
    Ctrl-C is RunInterrupted and any other failure RunAborted, one line each saying how many
    classes the file holds; a new file that got no class is not left behind, nor its metadata."""
    from . import source
    from .engine import batched_local as batched
    from .tune import DeviceId

    refuse_batched_resume(output, len(configs), cache, prune, resume, source.source_hash(variant))
    new_folders, new_metadata = missing_folders(output), not metadata_path(output).exists()
    try:
        done, notice = batched.done_classes(output, len(configs)) if resume else (set(), None)
    except batched.BatchError as exc:
        raise RunRefused(str(exc)) from None
    previous = read_metadata(output) if resume else {}
    # a resumed file goes on flushing as it was measured (files before the read flush wrote)
    l2_flush = recorded_settings(output, previous).get("l2_flush", Settings().l2_flush) if previous else Settings().l2_flush
    if notice:
        say(notice)
    t0 = time.perf_counter()
    try:
        gpu, runner, tuner, compile_s, facts = _open_batched(variant, configs, cache, l2_flush, jobs, output, previous,
                                                             say, cluster)
    except KeyboardInterrupt:
        raise RunInterrupted("interrupted before the first size class was measured: " + (
            f"{output} holds the {counted(len(done), 'size class', 'size classes')} it held; rerun with --output "
            f"{output} --resume to continue"
            if resume else "nothing was written")) from None
    say_machine_changes(output, previous, facts, say)
    invocation = {"command": command, "started_at": utc_now(), "resumed": resume, "repaired": notice,
                  "classes_done_before": len(done), "compile_s": compile_s}
    about = {**about, "tuning": {**about.get("tuning", {}), "source_hash": source.source_hash(variant)}}
    meta = {**about, "engine": "batched", "settings": {"runs": 1, "warmup": 0, "cache": cache, "seed": seed, "prune": prune,
                                             "l2_flush": l2_flush},
            "started_at": previous.get("started_at") or invocation["started_at"],
            "kernels": {**(previous.get("kernels") or {}), **(tuner.kernels if gpu is not None else {})}}
    earlier = history(previous)

    def save(state: str, **more) -> None:
        machine = {**facts, **(runner.meta() if runner else {})}  # a cluster's workers, and the GPU model they share
        invocation.update(state=state, **machine, **more)
        kernels = {**meta["kernels"], **(runner.kernels if runner else {})}
        write_metadata(output, {**meta, **first_record(previous, machine), "kernels": kernels, "state": state,
                                "invocations": [*earlier, invocation]})

    def progress(cls: str, i: int, total: int) -> None:
        if i == total or i % 10 == 0:
            say(f"  {i}/{total} classes ({cls}), {time.perf_counter() - t0:.0f} s")

    state, counts, failure = "finished", {}, None
    try:
        save("running")
        if runner is None:
            batched.run(tuner, shapes, output, seed, done, progress, counts, prune)
        else:
            runner.run_batched(variant, configs, cache, l2_flush, jobs, shapes, output, seed, done, progress, counts,
                               prune)
    except KeyboardInterrupt:
        state = "interrupted"
    except Exception as exc:
        state, failure = "failed", exc  # a CUDA error, a full disk: the metadata must not say finished
    finally:
        errors = counts.pop("errors", [])
        if runner:
            runner.close()
    held = classes_held(output)
    if state != "finished" and not held and new_metadata:  # a new file that got no class: nothing is left
        remove_unmeasured(output, new_folders)
        if failure is not None:
            raise RunAborted(f"the tuning failed before the first size class finished, and nothing was written: "
                             f"{first_line(failure)}") from failure
        raise RunInterrupted("interrupted before the first size class finished: nothing was written")
    why = ({"error": first_line(failure), "traceback": "".join(traceback.format_exception(failure))}
           if failure is not None else {})
    save(state, finished_at=utc_now(), wall_s=round(time.perf_counter() - t0, 1), status_counts=counts,
         **({"class_errors": errors} if errors else {}), **why)
    if failure is not None:  # the plain CSV stays for --resume; its whole classes are not recorded yet
        raise RunAborted(f"the tuning failed: {first_line(failure)}; {output} holds "
                         f"{counted(held, 'finished size class', 'finished size classes')} and its metadata the error; "
                         f"rerun with --output {output} --resume to continue") from failure
    if gpu is not None:
        device = DeviceId(gpu.facts.name, gpu.facts.arch, gpu.facts.sm_count)
    else:
        recorded = read_metadata(output).get("gpu") or {}
        if recorded.get("mixed"):
            raise RunAborted(f"{output} was measured on GPUs of different models ({', '.join(recorded['mixed'])}); "
                             f"their classes are not pooled into the tuning cache")
        if not recorded.get("name"):
            raise RunAborted(f"{output}: no worker reported its GPU, so nothing is recorded in {cache_path}"
                             + (f" ({errors[0]})" if errors else ""))
        device = DeviceId(recorded["name"], recorded.get("arch"), recorded.get("sm_count"))
    best = record_batched(output, variant, device, cache_path)
    if state != "finished":
        raise RunInterrupted(f"interrupted: {batched.gz_path(output)} holds "
                             f"{counted(held, 'finished size class', 'finished size classes')} ({held - len(done)} from "
                             f"this run), their best configurations in {cache_path}; rerun with --output {output} "
                             f"--resume to continue")
    if errors:
        raise RunAborted(f"{len(errors)} size classes could not be measured ({errors[0]}); the others are in "
                         f"{batched.gz_path(output)}: rerun with --output {output} --resume")
    if not best:
        raise RunAborted(f"no configuration of {variant.name} was verified at every shape of a class; see {output}")
    return best, device, counts


def record_batched(output: Path, variant, device, cache_path: Path) -> dict:
    """A batched tuning file's whole classes: compressed to CSV.gz (a resume unpacks it), and the
    best configuration of each into the tuning cache (also when interrupted: a class is whole)."""
    from . import source
    from .engine import batched_local as batched
    from .tune import record

    rows = batched.read_rows(output)
    best = batched.best_per_class(rows)
    final = batched.compress(output) if output.exists() else batched.gz_path(output)
    if best:
        record(cache_path, device, variant.name, source.source_hash(variant), best, final)
    return best

