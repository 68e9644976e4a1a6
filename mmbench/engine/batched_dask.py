"""Batched tuning on a Dask cluster: the size classes of a batched tuning (batched_local.py) spread
over a cluster's workers, each worker measuring whole classes (dask_worker.run_class), the client
writing each class's rows as it finishes; with crash isolation, each worker's classes in a child
process of its own (batched_isolated.py), as a points run's are."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..ops import get_op
from ..sizes import Shape
from ..variants import Params, Variant
from .batched_isolated import isolation_meta
from .batched_local import by_class, record
from .dask_worker import run_class
from .wire import unpacked, variant_ref
from .interface import BatchedEngine
from .plan import Settings
from .points_dask import ClusterSpec, DaskPoints


class DaskBatched(BatchedEngine):
    """The batched engine on a Dask cluster's GPU workers: each worker compiles and loads the
    configurations at its first class, then measures whole classes; the client writes each class's
    rows as it finishes (a resume continues after the last whole class). The connection, the
    workers, their BLAS shares and what their results say (kernels, GPUs) are a DaskPoints's, held
    here without its points."""

    def __init__(self, variant: Variant, configs: Sequence[Params], cache: str, l2_flush: str, spec: ClusterSpec,
                 say: Callable[[str], None], isolation=None):
        self.variant, self.configs, self.cache, self.l2_flush = variant, list(configs), cache, l2_flush
        self.cluster = DaskPoints(Settings(), [], spec, say, gpus=True)
        # each worker's classes in a child process it replaces at a configuration's fault; the workers'
        # restarts and faults come back as a points run's do (DaskPoints.absorb)
        self.isolation = isolation if isolation is not None and isolation.mode == "process" else None
        self.cluster.isolation = self.isolation
        self.jobs = 1

    @property
    def kernels(self) -> dict[str, dict]:
        return self.cluster.kernels

    def gpu_names(self) -> set[str]:
        return self.cluster.gpu_names()

    def prepare(self, jobs: int, since: float, say: Callable[[str], None]) -> None:
        self.jobs = jobs  # each worker's nvcc at its first class

    def meta(self) -> dict:
        meta = self.cluster.meta()
        if self.isolation is not None:  # the batched engine's timeouts, not a point's
            meta["isolation"] = {**meta["isolation"], **isolation_meta(self.isolation)}
        return meta

    def close(self) -> None:
        self.cluster.close()

    def run(self, shapes: Sequence[Shape], output: Path, seed: int, skip: set[str],
            on_class: Callable[[str, int, int], None] | None, counts: dict, prune: float) -> dict:
        op_classes = [(cls, group) for cls, group in by_class(get_op(self.variant.op), shapes) if cls not in skip]
        return record(self._measured(op_classes, seed, prune, counts), len(op_classes), output, on_class, counts)

    def _measured(self, op_classes: list, seed: int, prune: float, counts: dict) -> Iterator[tuple[str, list[dict]]]:
        """Each class's rows as its worker finishes it; a class that cannot be measured is counted
        with its error (in counts) and left for a resume."""
        from distributed import as_completed

        cluster = self.cluster
        plain = [tuple(map(tuple, c)) for c in self.configs]
        futures = {cluster.client.submit(run_class, variant_ref(self.variant), plain, self.cache, self.l2_flush, self.jobs, cls,
                                         [(s.m, s.n, s.k) for s in group], seed, prune, cluster.shares,
                                         isolation=self.isolation, pure=False): (cls, group)
                   for cls, group in op_classes}
        try:
            for future in as_completed(futures):
                cls, group = futures.pop(future)
                try:
                    result = unpacked(future.result())
                except Exception as exc:
                    counts["classes_failed"] = counts.get("classes_failed", 0) + 1
                    counts.setdefault("errors", []).append(f"{cls}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                cluster.absorb(result)
                yield cls, result["rows"]
        finally:
            for future in futures:
                future.cancel()
