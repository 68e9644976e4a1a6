"""numpy's BLAS threads, limited for a block and read, through one threadpoolctl controller a process.

threadpool_limits() and threadpool_info() each make a controller, which scans every library the
process has loaded: 5 to 7 ms in a cluster worker or an isolated child with CUDA's libraries loaded
(py-spy on 4 x H200), paid at every chunk of a cluster's run and at every CPU point. threadpoolctl's
docs advise keeping a controller for repeated limits; it sees the libraries loaded when it was made,
so it is made anew when modules were imported since (a BLAS comes with the module that loads it).
"""

from __future__ import annotations

import sys
from contextlib import nullcontext

_CONTROLLER: list = []  # [(how many modules were loaded when it was made, the controller)]


def controller():
    """This process's threadpoolctl controller, numpy's BLAS loaded first."""
    import numpy  # noqa: F401  (loads its BLAS so the controller can see it)
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER or _CONTROLLER[0][0] != len(sys.modules):
        made = ThreadpoolController()
        _CONTROLLER[:] = [(len(sys.modules), made)]
    return _CONTROLLER[0][1]


def limited(threads: int | None):
    """A context in which BLAS libraries use at most `threads` threads (None: as they are)."""
    return controller().limit(limits=threads, user_api="blas") if threads else nullcontext()


def blas_libraries() -> list[dict]:
    """What threadpoolctl reports of each BLAS library loaded (its threads, version, path)."""
    return [info for info in controller().info() if info.get("user_api") == "blas"]
