"""What a run starts while it is still planned: the GPU's worker process (a run isolated on this
machine) or the cluster's client (a run on a Dask cluster), and their ends where no run took them.
`mmbench run` and the points engine's tuning both start theirs here, so that neither pays the start
after its planning."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def started_ahead(spec, gpus: bool, isolation, start: bool = True):
    """Within: the worker for isolation's runner started (no cluster spec, GPU points, process
    isolation), or the spec's cluster connecting on a thread (points_dask.start_early); neither
    unless start. On the way out, whatever no run took ends."""
    if start and spec is None and gpus and isolation is not None and isolation.mode == "process":
        from .points_isolated import prestart

        prestart(isolation.runner)
    elif start and spec is not None:
        from .points_dask import start_early

        start_early(spec, gpus, isolation)
    try:
        yield
    finally:
        from .points_isolated import discard_prestarted

        discard_prestarted()  # a child the run did not take (refused, nothing to do, a dry run)
        if spec is not None:
            from .points_dask import discard_early

            discard_early()  # a cluster no run took
