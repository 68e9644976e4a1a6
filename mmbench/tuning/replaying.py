"""A replay: a strategy run against a recorded tuning (either engine's file) instead of the GPU,
and what it would pick per size class recorded in the tuning cache under the GPU the recording
names, where the recording measured the kernel as it is now. Nothing runs; needs no GPU."""

from __future__ import annotations

from pathlib import Path

from .. import source
from ..engine.refusals import RunAborted, RunRefused, Say
from ..precisions import DEFAULT, DEFAULT_LAYOUT
from ..results import ResultsError, read_metadata
from ..variants import Variant
from ..vocabulary import DeviceId
from .cache import TuneError, read_caches, record, recorded_source, same_code_sources
from .strategies import read_recorded
from .strategies import replay as replay_strategy


def _measured_source(variant: Variant, recorded: Path, cache_path: Path, say: Say) -> tuple[DeviceId, str]:
    """(the GPU the recording names, the kernel's source hash now); refused where the recording
    names neither, or measured a kernel that compiles to other code than today's."""
    try:
        device, measured_hash = recorded_source(read_metadata(recorded), variant.name)
    except ResultsError as exc:
        raise RunRefused(str(exc)) from None
    current = source.source_hash(variant)
    if not device or not measured_hash:
        raise RunRefused(f"{recorded}: its metadata names no GPU or no {variant.name} kernel source hash")
    try:
        equivalent = same_code_sources(read_caches(cache_path), variant.name, current)
    except TuneError as exc:
        raise RunRefused(str(exc)) from None
    if measured_hash not in equivalent:
        raise RunRefused(f"{recorded} measured {variant.name} source {measured_hash}, but the kernel is now {current}: "
                         f"its results would be stale; tune again")
    if measured_hash != current:
        say(f"{recorded} measured {variant.name} source {measured_hash}: the same PTX as today's {current} "
            f"(scripts/same_code.py, as the tuning caches record)")
    return device, current


def _form(variant: Variant, recorded: Path, rows) -> tuple[str, str]:
    """The one precision and layout the recording tuned at; refused where it holds several (a
    configuration's speed at one precision says nothing of another's)."""
    mine = (rows[rows.variant == variant.name] if "variant" in rows else rows) if rows is not None else None
    if mine is None:  # a batched tuning: one precision and layout, its metadata's (fp32, nn before they were recorded)
        tuned = read_metadata(recorded).get("tuning") or {}
        forms = [(tuned.get("dtype", DEFAULT), tuned.get("layout", DEFAULT_LAYOUT))]
    else:
        forms = sorted({(d, lay) for d, lay in zip(mine.get("dtype", [DEFAULT] * len(mine)),
                                                  mine.get("layout", [DEFAULT_LAYOUT] * len(mine)))})
    if len(forms) > 1:
        raise RunRefused(f"{recorded} holds {variant.name} rows of {len(forms)} precisions and layouts "
                         f"({', '.join(' '.join(f) for f in forms)}); replay a tuning of one")
    return forms[0] if forms else (DEFAULT, DEFAULT_LAYOUT)


def replay(variant: Variant, recorded: Path, strategy: str, budget: int | None, seed: int, cache_path: Path,
           say: Say) -> tuple[dict, DeviceId, str]:
    """The strategy replayed on the recording, its best per size class recorded in cache_path:
    (best, the GPU they are recorded under, the kernel's source hash). RunRefused for a recording
    that cannot be replayed, RunAborted where no configuration was verified at every shape of a class."""
    try:
        classes, rows = read_recorded(recorded, variant)
    except (ResultsError, TuneError, ValueError) as exc:
        raise RunRefused(str(exc)) from None
    device, current = _measured_source(variant, recorded, cache_path, say)
    form = _form(variant, recorded, rows)
    best = replay_strategy(classes, variant, strategy, budget, seed)
    if not best:
        raise RunAborted(f"{recorded} has no configuration of {variant.name} verified at every shape of a class")
    record(cache_path, device, variant.name, current, best, recorded, *form)
    return best, device, current
