"""Batched tuning on a Dask cluster: the size classes of a batched tuning (batched_local.py) spread
over a cluster's workers, each worker measuring whole classes (dask_worker.run_class), the client
writing each class's rows as it finishes."""

from __future__ import annotations

from typing import Callable, Sequence

from ..ops import get_op
from ..sizes import Shape
from .batched_local import ClassWriter, by_class
from .dask_worker import run_class


def run_classes(engine, variant, configs: Sequence, cache: str, l2_flush: str, jobs: int, shapes: Sequence[Shape],
                output, seed: int, skip: set[str], on_class: Callable[[str, int, int], None] | None,
                counts: dict, prune: float) -> dict:
    """The batched tuner (batched_local.run) with its size classes spread over the workers of
    engine (a points_dask.DaskPoints, whose client and BLAS shares it uses): each
    worker compiles and loads the configurations once, then measures whole classes; the client
    writes each class's rows as it finishes (a resume continues after the last whole class)."""
    from distributed import as_completed


    op_classes = [(cls, group) for cls, group in by_class(get_op(variant.op), shapes) if cls not in skip]
    plain = [tuple(map(tuple, c)) for c in configs]
    futures = {engine.client.submit(run_class, variant.name, plain, cache, l2_flush, jobs, cls,
                                    [(s.m, s.n, s.k) for s in group], seed, prune, engine.shares, pure=False): (cls, group)
               for cls, group in op_classes}
    writer = ClassWriter(output)
    done = 0
    try:
        for future in as_completed(futures):
            cls, group = futures.pop(future)
            try:
                result = future.result()
            except Exception as exc:  # a class that cannot be measured is left for a resume
                counts["classes_failed"] = counts.get("classes_failed", 0) + 1
                counts.setdefault("errors", []).append(f"{cls}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            engine.absorb(result)
            writer.write(result["rows"])
            for r in result["rows"]:
                counts[r["status"]] = counts.get(r["status"], 0) + 1
            done += 1
            if on_class:
                on_class(cls, done, len(op_classes))
    finally:
        for future in futures:
            future.cancel()
        writer.close()
    return counts

