"""How a point crosses to another process, one format for both: a cluster's worker (Dask pickles
it) and an isolated run's child (a pipe). A Variant holds mappings that do not pickle, so a point
travels as plain values: its variant by reference (a name, and for a variant file's, the file and
what it declares), or whole with its mappings made plain where the registry does not hold it under
its name (a test's kernel from another folder)."""

from __future__ import annotations

import pickle
from dataclasses import replace
from types import MappingProxyType

from ..sizes import Shape
from ..variants import REGISTRY, Variant, files, get_variant
from .plan import Point


def variant_ref(variant: Variant) -> tuple:
    """A variant as plain values: its name, and for a variant file's, the file and what it declares."""
    if variant.origin is None:
        return (variant.name,)
    return variant.name, str(variant.origin), dict(variant.declaration or {})


def variant_of(ref: tuple) -> Variant:
    """The variant of a variant_ref: a variant file's is built from what it declares where this
    process does not hold it (its kernel source must be at the same path here: a worker on another
    host sees it on a shared file system)."""
    name, *declared = ref
    if declared:
        origin, table = declared
        here = REGISTRY.get(name)
        if here is None or str(here.origin) != origin or dict(here.declaration or {}) != table:
            files.use_declared([table], origin)
    return get_variant(name)


MAPPINGS = ("axes", "geometry", "space", "defines", "declaration")  # a Variant's read-only mappings


def _plain(mapping):
    return None if mapping is None else dict(mapping)


def _frozen(mapping):
    return None if mapping is None else MappingProxyType(mapping)


def wire(point: Point) -> tuple:
    """A point as plain values (unwire gives it back)."""
    s, v = point.shape, point.variant
    whole = None if REGISTRY.get(v.name) == v else replace(v, **{f: _plain(getattr(v, f)) for f in MAPPINGS})
    return (variant_ref(v), point.params, (s.m, s.n, s.k), point.cache, point.scope, point.pad, point.dtype,
            point.layout, whole)


def unwire(sent: tuple) -> Point:
    """The point wire() sent."""
    ref, params, (m, n, k), cache, scope, pad, dtype, layout, whole = sent
    variant = variant_of(tuple(ref)) if whole is None else replace(
        whole, **{f: _frozen(getattr(whole, f)) for f in MAPPINGS})
    return Point(variant, tuple(map(tuple, params)), Shape(m, n, k), cache, scope, pad, dtype, layout)


def packed(result: dict) -> bytes:
    """A cluster task's result as one bytes object (unpacked gives it back): a dask-cuda worker keeps a
    task's result in its DeviceHostFile, which walks every value of a dict to see whether it holds GPU
    memory, on the worker's event loop (10 ms a chunk of the limits study's rows, py-spy on 4 x H200,
    while the next chunk waits to start); bytes are one check."""
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def unpacked(sent: bytes) -> dict:
    """The result packed() sent."""
    return pickle.loads(sent)
