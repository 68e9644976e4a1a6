"""The row of a results CSV: its columns (one table), the functions that fill those that need no
point, and the format version a file's metadata records.

Adding a column is one line of ``_TABLE`` (with the value older files' rows read as) and its
producer: below, or in engine/rows.py where it reads a point (a point knows its operation, which
sits above this module); results.py reads and writes by what this module derives.
"""

from __future__ import annotations

import datetime as dt
import platform
from typing import Iterable, Sequence

from .timing import summarize

# Written into every results file's metadata as "format"; a file without it is format 1 (all
# files from before the version was recorded), read the same way: its missing columns are added
# with ADDED_COLUMNS' values.
FORMAT = 3  # 3: dtype and layout

_INT, _FLOAT, _TEXT = "int", "float", "text"
_OLD = None  # a column of the first files: no value to add
# (name, type, value of the column in an older file's rows that lacks it). Units live in the
# column names; values stay raw. The order is the file's.
_TABLE = (
    ("op", _TEXT, "gemm"),  # files written before operations existed are all GEMM
    ("variant", _TEXT, _OLD), ("label", _TEXT, _OLD), ("backend", _TEXT, _OLD), ("params", _TEXT, _OLD),
    ("m", _INT, _OLD), ("n", _INT, _OLD), ("k", _INT, _OLD),
    # every row before precisions and layouts was float32 with row-major A and B (precisions.py)
    ("dtype", _TEXT, "fp32"), ("layout", _TEXT, "nn"), ("cache", _TEXT, _OLD),
    # before scopes and padding, every time was the kernel's alone on the matrices as given
    ("scope", _TEXT, "kernel"), ("pad", _INT, "0"), ("padded_shape", _TEXT, ""),
    ("status", _TEXT, _OLD), ("reason", _TEXT, _OLD),
    ("rel_err", _FLOAT, _OLD), ("err_bound_ratio", _FLOAT, _OLD),
    ("runs", _INT, _OLD), ("warmup", _INT, _OLD),
    ("time_ms_mean", _FLOAT, _OLD), ("time_ms_median", _FLOAT, _OLD), ("time_ms_min", _FLOAT, _OLD),
    ("time_ms_max", _FLOAT, _OLD), ("time_ms_std", _FLOAT, _OLD), ("cv", _FLOAT, _OLD),
    ("gflops_mean", _FLOAT, _OLD), ("gflops_median", _FLOAT, _OLD), ("gbytes_per_s", _FLOAT, _OLD),
    ("sm_clock_mhz_before", _FLOAT, _OLD), ("sm_clock_mhz_after", _FLOAT, _OLD), ("clock_sagged", _TEXT, _OLD),
    ("threads", _FLOAT, _OLD), ("time_ms_samples", _TEXT, _OLD), ("finished_at", _TEXT, _OLD),
    # where the point ran: on a cluster, each worker's own (a file from before: its metadata says)
    ("host", _TEXT, ""), ("gpu", _TEXT, ""), ("gpu_uuid", _TEXT, ""),
    # the kernel clock: CUPTI's summed device work per call (kernel_clock.py), every sample kept
    ("kernel_ms_mean", _FLOAT, ""), ("kernel_ms_median", _FLOAT, ""), ("kernel_ms_min", _FLOAT, ""),
    ("kernel_records", _FLOAT, ""), ("kernel_ms_samples", _TEXT, ""), ("kernels_only_ms_median", _FLOAT, ""),
    ("gpu_temp_c_before", _FLOAT, ""), ("gpu_temp_c_after", _FLOAT, ""), ("power_w_before", _FLOAT, ""),
    ("power_w_after", _FLOAT, ""),
    # adaptive sampling: reached noise (of which clock's samples: the kernel clock's can be missing
    # at a point, and then the events' judge), why it stopped
    ("noise", _FLOAT, ""), ("noise_clock", _TEXT, ""), ("stopped", _TEXT, ""), ("samples_sagged", _FLOAT, ""),
    # and the relative half-width of the median's 95 % interval reached (timing.median_interval)
    ("interval", _FLOAT, ""),
)
COLUMNS = tuple(name for name, _, _ in _TABLE)
KEY = ("op", "variant", "params", "m", "n", "k", "cache", "scope", "pad", "dtype", "layout")  # one row per point; --resume skips these
# Columns added since the first files, with the value every row of an older file has.
ADDED_COLUMNS = {name: old for name, _, old in _TABLE if old is not _OLD}
STATUSES = ("ok", "wrong", "failed", "skipped")
INTS = tuple(name for name, kind, _ in _TABLE if kind == _INT)
FLOATS = tuple(name for name, kind, _ in _TABLE if kind == _FLOAT)
REQUIRED = ("variant", "m", "n", "k", "cache", "status", "runs", "finished_at")  # never empty

HOST = platform.node()  # where this process runs (a cluster worker's own host)


def samples_of(cell: str) -> list[float]:
    """The per-sample times of one row, in milliseconds."""
    return [float(x) for x in cell.split(";")] if cell else []


def join_samples(times_ms: Iterable[float]) -> str:
    return ";".join(repr(t) for t in times_ms)


def utc_now() -> str:
    """Now, as every timestamp of a results file and its metadata is written (results checks the form)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def kernel_fields(kernel: tuple | None) -> dict:
    """The kernel clock's columns: every call's summed device work (ms), its statistics, how many
    kernels, memsets and copies a call ran, and the median of its kernels alone (what Nsight Compute
    times); empty where CUPTI gave none."""
    if kernel is None:
        return {}
    times, kernels_only, each = kernel
    st = summarize(times)
    return {"kernel_ms_mean": st.mean, "kernel_ms_median": st.median, "kernel_ms_min": st.min,
            "kernel_records": each, "kernel_ms_samples": join_samples(times),
            "kernels_only_ms_median": summarize(kernels_only).median}


def clock_sagged(readings_mhz: Sequence[int | None], max_mhz: int | None, share: float) -> bool:
    """Whether the SM clock read around a point fell below `share` of its maximum (unknown readings
    are left out; with none, or no maximum, nothing can be said and the point is not flagged)."""
    known = [r for r in readings_mhz if r is not None]
    return bool(known and max_mhz and min(known) < share * max_mhz)


def clock_fields(before_mhz, after_mhz, sagged: bool, conditions_before: dict, conditions_after: dict) -> dict:
    """The SM clock read around a point's samples, whether it sagged, and the GPU's conditions."""
    return {"sm_clock_mhz_before": before_mhz, "sm_clock_mhz_after": after_mhz, "clock_sagged": sagged,
            **conditions_before, **conditions_after}
