"""The tuning caches: the best configuration per (GPU, variant, kernel source hash, size class), and
per precision and layout where a kernel takes several (an entry names them: "dtype", "layout"; one
without is fp32, nn, as every entry before precisions).

Two caches are read, the user's first (places.user_cache(), or ``--tuning-cache PATH``), then
the one the package ships (places.SHIPPED_CACHE): a user's entry replaces the shipped entry of
the same GPU, variant, kernel source and size class. ``mmbench tune`` writes to the user's. A
change to the kernel source changes its hash, so stale entries are never used.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from .. import places
from ..precisions import DEFAULT, DEFAULT_LAYOUT
from ..schema import utc_now
from ..ops import get_op
from ..ops.base import shape_class
from ..sizes import Shape
from ..variants import Variant, parse_params
from ..vocabulary import DeviceId, Tuned


NO_CACHE = "none"  # --tuning-cache none (a run's): no tuned parameters, the variants' defaults


class TuneError(ValueError):
    """A tuning request that cannot be met; the message says why."""


def cache_key(device: str, variant: str, source_hash: str, cls: str, dtype: str = DEFAULT,
              layout: str = DEFAULT_LAYOUT) -> str:
    """GPU|variant|source|class, and |dtype|layout for another precision or layout than fp32, nn."""
    form = f"|{dtype}|{layout}" if (dtype, layout) != (DEFAULT, DEFAULT_LAYOUT) else ""
    return f"{device}|{variant}|{source_hash}|{cls}{form}"


def entry_form(entry: Mapping) -> tuple[str, str]:
    """(dtype, layout) an entry was tuned at (fp32, nn where it names none)."""
    return entry.get("dtype", DEFAULT), entry.get("layout", DEFAULT_LAYOUT)


def key_of(entry: Mapping) -> str:
    return cache_key(entry["device"], entry["variant"], entry["source_hash"], entry["size_class"], *entry_form(entry))


YOURS, SHIPPED = "your cache", "shipped"  # whose a cache is, as a run reports and records it
# What lookup reads of every entry; a cache whose entries lack one is refused when read.
ENTRY_KEYS = ("device", "variant", "source_hash", "size_class", "params")
PARAMS = r"[A-Za-z_]\w*=\d+(,[A-Za-z_]\w*=\d+)*"  # format_params' text


def load_cache(path: Path) -> dict:
    """A cache file's entries, checked for the shape lookup and record rely on; {} where there is no
    file yet (a user's cache before their first `mmbench tune`). TuneError names the file otherwise."""
    try:
        cache = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}
    except OSError as exc:  # a folder, no permission
        raise TuneError(f"{path} cannot be read as a tuning cache: {exc.strerror}") from None
    except ValueError as exc:  # bad JSON, or bytes that are not UTF-8
        raise TuneError(f"{path} is not a tuning cache (bad JSON: {exc})") from None
    problem = _cache_problem(cache)
    if problem:
        raise TuneError(f"{path} is not a tuning cache: {problem}")
    return cache


def _cache_problem(cache) -> str | None:
    """What makes parsed JSON no tuning cache (an object of entries keyed GPU|variant|source|class)."""
    if not isinstance(cache, dict):
        return f"expected a JSON object of entries, found a {_json_kind(cache)}"
    for key, entry in cache.items():
        if not isinstance(entry, dict):
            return f"entry '{key}' is a {_json_kind(entry)}, not an object"
        missing = [k for k in ENTRY_KEYS if not isinstance(entry.get(k), str)]
        if missing:
            return f"entry '{key}' has no {missing[0]} (every entry names {', '.join(ENTRY_KEYS)})"
        if entry["params"] and not re.fullmatch(PARAMS, entry["params"]):
            return f"entry '{key}' has params '{entry['params']}'; expected NAME=VALUE,..."
        if not isinstance(entry.get("gflops", entry.get("gbytes_per_s")), (int, float)):
            return f"entry '{key}' has no score (gflops or gbytes_per_s)"
    return None


def _json_kind(value) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null", dict: "object"}.get(type(value), "number")


@dataclass(frozen=True)
class CacheFile:
    """One tuning cache as read: where it is, whose it is (YOURS or SHIPPED) and its entries."""

    path: Path
    origin: str
    entries: Mapping[str, dict]

    @classmethod
    def read(cls, path: Path, origin: str) -> "CacheFile":
        return cls(Path(path), origin, load_cache(path))


def origin_of(path: Path) -> str:
    """Whose a cache file is: the shipped one, or (any other path) the user's."""
    return SHIPPED if Path(path).resolve() == places.SHIPPED_CACHE.resolve() else YOURS


def read_caches(user: Path | None = None) -> tuple[CacheFile, ...]:
    """The caches a run reads, in lookup order: the user's (`user`, else places.user_cache()), then
    the shipped one. A user cache that is the shipped file is read once, as the shipped one."""
    user = Path(user) if user is not None else places.user_cache()
    mine = () if origin_of(user) == SHIPPED else (CacheFile.read(user, YOURS),)
    return (*mine, CacheFile.read(places.SHIPPED_CACHE, SHIPPED))


def describe_cache(path: Path, origin: str | None = None) -> str:
    """A cache as messages name it: "your cache PATH" or "the shipped cache PATH"."""
    return f"{'your cache' if (origin or origin_of(path)) == YOURS else 'the shipped cache'} {path}"


def check_writable_cache(path: Path) -> None:
    """TuneError, before anything is measured, where a tuning could not record its best
    configurations in `path`: a place no file can be created, or a file that is no cache."""
    ancestor = Path(path).parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise TuneError(f"tuning cache {path} cannot be created: {ancestor} is not a folder")
    target = path if Path(path).exists() else ancestor
    if not os.access(target, os.W_OK):
        raise TuneError(f"tuning cache {path} cannot be written: no write permission in {target}")
    load_cache(path)


def record(path: Path, device: DeviceId, variant: str, source_hash: str, best: Mapping[str, dict],
           results: Path, dtype: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> dict:
    """Merge the best configurations into the cache file, keeping an existing entry that is
    faster (a narrow search must not displace a better result); returns the entries written.
    Each entry names the GPU with its architecture and SM count, which decide whether another
    GPU of the same kind may borrow it, and the precision and layout it was tuned at, where
    they are not fp32, nn."""
    cache = load_cache(path)
    stamp = utc_now()
    form = {"dtype": dtype, "layout": layout} if (dtype, layout) != (DEFAULT, DEFAULT_LAYOUT) else {}
    new = {cache_key(device.name, variant, source_hash, cls, dtype, layout):
           {"device": device.name, "arch": device.arch, "sm_count": device.sm_count, "variant": variant,
            "source_hash": source_hash, "size_class": cls, **form, "tuned_at": stamp, "results": str(results), **entry}
           for cls, entry in best.items()}
    new = {k: e for k, e in new.items() if k not in cache or entry_score(cache[k]) < entry_score(e)}
    write_cache(path, {**cache, **new})
    return new


def write_cache(path: Path, entries: Mapping[str, dict]) -> None:
    """A whole cache file, as every writer writes it (sorted keys, one entry a line: a tuning's diff
    is its entries, in a sixth less room than indented), replaced in one step."""
    lines = [f"{json.dumps(k)}: {json.dumps(entries[k], sort_keys=True)}" for k in sorted(entries)]
    _write_whole(Path(path), "{\n" + ",\n".join(lines) + "\n}\n" if lines else "{}\n")


def _write_whole(path: Path, text: str) -> None:
    """Replace a file in one step: a Ctrl-C or a full disk while writing leaves the old cache whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def same_code_sources(caches: Sequence[CacheFile], variant: str, current: str) -> set[str]:
    """The source hashes whose measurements still hold for the kernel now: its current hash, and
    the hashes any cache's entries were moved from because the PTX was shown identical
    (scripts/same_code.py): a fact about the kernel, whichever cache records it."""
    return {current} | {e["rehashed_from"] for c in caches for e in c.entries.values()
                        if e.get("variant") == variant and e.get("source_hash") == current and e.get("rehashed_from")}


def lookup(caches: Sequence[CacheFile], device: DeviceId, variant: Variant, source_hash: str,
           shape: Shape, dtype: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> Tuned | None:
    """The tuned configuration for a shape, precision and layout on a device (entries of another
    precision or layout are never taken: a configuration fast in one need not be in another), from
    caches in order (the user's, then the shipped): an earlier cache's entry replaces a later one's
    for the same GPU, variant, source, size class and form. Then the device's own entries first, else those of a GPU of the same
    architecture and SM count (the same kernel choices fit it). Within one GPU's entries: the
    shape's own entry (tuned --per-shape), else its size class, yours before the shipped cache's at
    each, else the nearest tuned class."""
    return nearest_of(candidates(caches, device, variant, source_hash, dtype, layout), variant, shape)


@dataclass
class Candidates:
    """candidates()' choice: one GPU's entries of a variant, source and form, that GPU's name and
    whether they are borrowed; indexed by size class at the first lookup, so that a study's hundreds
    of shapes each take their entry without scanning them all."""

    entries: list
    device: str
    borrowed: bool
    _index: tuple | None = field(default=None, init=False, repr=False)

    def index(self) -> tuple[dict, list]:
        """(size class -> its entries, the entries of size classes that are not one shape's own)."""
        if self._index is None:
            by_class: dict[str, list] = {}
            for ce in self.entries:
                by_class.setdefault(str(ce[1]["size_class"]), []).append(ce)
            self._index = by_class, [ce for cls, ces in by_class.items() if not SHAPE_CLASS.fullmatch(cls) for ce in ces]
        return self._index


def candidates(caches: Sequence[CacheFile], device: DeviceId, variant: Variant, source_hash: str,
               dtype: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> Candidates | None:
    """lookup's choice of entries, the same for every shape, or None. A run finds them once per
    variant and form."""
    merged: dict[str, tuple[CacheFile, dict]] = {}
    for cache in reversed(caches):
        merged.update({key_of(e): (cache, e) for e in cache.entries.values()})
    mine = [(c, e) for c, e in merged.values() if e["variant"] == variant.name and e["source_hash"] == source_hash
            and entry_form(e) == (dtype, layout)]
    own = [(c, e) for c, e in mine if e["device"] == device.name]
    kin = sorted(((c, e) for c, e in mine if e["device"] != device.name and device.arch and device.sm_count
                  and e.get("arch") == device.arch and e.get("sm_count") == device.sm_count),
                 key=lambda ce: ce[1]["device"])
    if own:
        return Candidates(own, device.name, False)
    if kin:
        first = kin[0][1]["device"]
        return Candidates([(c, e) for c, e in kin if e["device"] == first], first, True)
    return None


SHAPE_CLASS = re.compile(r"\d+x\d+x\d+")  # a per-shape entry's size class (compiled once: 100k matches a study)


def nearest_of(found: Candidates | None, variant: Variant, shape: Shape) -> Tuned | None:
    """The entry a shape takes among candidates()' (None where there are none): yours before the
    shipped one's at the shape itself and at its size class (a class you tuned is not hidden by a
    shipped per-shape entry), then the nearest tuned class."""
    if found is None:
        return None
    op = get_op(variant.op)
    exact, wanted = shape_class(shape), op.size_class(shape)
    by_class, classes = found.index()

    def rank(ce: tuple[CacheFile, dict]) -> tuple:
        cache, e = ce
        cls, yours = str(e["size_class"]), cache.origin == YOURS
        if cls == exact:
            return (0 if yours else 2,)
        if cls == wanted:
            return (1 if yours else 3,)
        return (4, op.class_distance(wanted, cls))

    # the shape's own entries and its class's where there are any, else every class's: the same
    # minimum as ranking them all, since the first two outrank any other class
    near = by_class.get(exact, []) + (by_class.get(wanted, []) if wanted != exact else [])
    ranked = [(rank(ce), ce) for ce in (near or classes)]
    if not ranked:
        return None
    cache, nearest = min(ranked, key=lambda rce: rce[0])[1]
    params = parse_params(nearest["params"])
    if set(dict(params)) != set(variant.axes) or variant.violated(params):  # another version's parameters
        return None
    return Tuned(params, found.device, found.borrowed, cache.path, cache.origin)


def entry_score(entry: Mapping) -> float:
    """An entry's score: GFLOP/s (median of samples, geometric mean over its shapes) for GEMM,
    GB/s for operations that move bytes."""
    return entry["gflops"] if "gflops" in entry else entry["gbytes_per_s"]



def recorded_source(meta: Mapping, variant: str) -> tuple[DeviceId | None, str | None]:
    """(device, kernel source hash) a tuning run's metadata records for a variant."""
    gpu = meta.get("gpu") or {}
    device = DeviceId(gpu["name"], gpu.get("arch"), gpu.get("sm_count")) if gpu.get("name") else None
    hashes = {k.get("source_hash") for name, k in (meta.get("kernels") or {}).items() if name.startswith(f"{variant}[")}
    hashes.discard(None)  # a batched tuning records none
    return device, (hashes.pop() if len(hashes) == 1 else None)
