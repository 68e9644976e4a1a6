"""The second clock (issue 17): the device's own start and end timestamps of every kernel, memset
and copy a timed call runs, from CUPTI's activity API (NVIDIA's cupti-python), summed per call.

A CUDA event pair carries a floor of a few microseconds; at n = 63 that is most of a GEMM's
time. CUPTI's activity records have none: each is the interval the GPU spent on one piece of work.
Summing them over a call (cuBLAS's split-K reduce, dbuf's strip kernels, a GEMV's zeroing, the
padding copies of a scope) gives what Nsight Compute's gpu__time_duration adds up. The harness's
own kernels (the stream hold, the L2 flush) are not a call's work and are left out.

The grouping needs no correlation IDs: the timed calls run one after another on the stream, each
launching the same work, so the records of C calls, in start order, split into C equal runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

HARNESS_KERNELS = ("hold_stream", "flush_l2_read")  # harness.cu's kernels: around the samples, not in them


class KernelClockError(RuntimeError):
    """The activity records cannot be read as the timed calls' work (the message says why)."""


@dataclass(frozen=True)
class Activity:
    """One piece of device work as CUPTI recorded it: kernel, memset or memcpy, in GPU nanoseconds."""

    kind: str  # "kernel", "memset", "memcpy"
    name: str  # the kernel's name ("" for memsets and copies)
    start_ns: int
    end_ns: int
    bytes: int = 0  # memsets and copies

    @property
    def ns(self) -> int:
        return self.end_ns - self.start_ns


def call_work(records: Iterable[Activity], harness_memset_bytes: int | None = None) -> list[Activity]:
    """The records that are a timed call's work, in start order: the harness's kernels dropped, and
    the L2 flush where it is a memset (the write flush) recognised by its size. A call's own memset
    of exactly that size (C of 5120 x 5120 on an H100's 100 MiB flush) would be dropped with it:
    the read flush, the default since files measured with it, has no such case."""
    work = [r for r in records if not (r.kind == "kernel" and r.name in HARNESS_KERNELS)
            and not (r.kind == "memset" and harness_memset_bytes and r.bytes == harness_memset_bytes)]
    return sorted(work, key=lambda r: (r.start_ns, r.end_ns))


@dataclass(frozen=True)
class PerCall:
    """The kernel clock's reading of consecutive calls."""

    ms: list[float]  # each call's device work: kernels, memsets and copies, summed
    kernels_ms: list[float]  # each call's kernels alone (what Nsight Compute's gpu__time_duration sums)
    records: int  # records a call
    kernels: int  # of which kernels


def per_call_ms(records: Sequence[Activity], calls: int, harness_memset_bytes: int | None = None) -> PerCall:
    """The work records split into `calls` equal runs in start order, each run's durations summed
    (all of them, and the kernels alone)."""
    work = call_work(records, harness_memset_bytes)
    if calls < 1:
        raise KernelClockError("no calls to split the activity records into")
    if not work or len(work) % calls:
        raise KernelClockError(f"{len(work)} activity records do not split into {calls} calls of equal work")
    each = len(work) // calls
    runs = [work[i * each:(i + 1) * each] for i in range(calls)]
    return PerCall([sum(r.ns for r in run) / 1e6 for run in runs],
                   [sum(r.ns for r in run if r.kind == "kernel") / 1e6 for run in runs],
                   each, sum(r.kind == "kernel" for r in runs[0]))


# CUPTI's CONCURRENT_KERNEL records of back-to-back launches; its KERNEL records (CUPTI serializes
# the kernels); or CONCURRENT_KERNEL records of calls each launched on an idle GPU (the sampler's
# part: timing.time_gpu with held=False), as a profiler replays one launch.
MODES = ("concurrent", "serial", "isolated")


class KernelClock:
    """CUPTI activity collection for one process: kernels, memsets and copies, read back by
    collect(); KernelClockError where cupti-python is missing or CUPTI refuses. mode "serial" asks
    CUPTI to serialize kernels (its KERNEL records), as a profiler replaying one launch sees them."""

    def __init__(self, mode: str = "concurrent"):
        if mode not in MODES:
            raise KernelClockError(f"kernel clock '{mode}'; choose from: {', '.join(MODES)}")
        try:
            from cupti import cupti
        except ImportError as exc:
            raise KernelClockError(f"cupti-python is not installed ({exc}); pip install cupti-python") from None
        self._cupti = cupti
        self._records: list[Activity] = []
        kernel_kind = cupti.ActivityKind.KERNEL if mode == "serial" else cupti.ActivityKind.CONCURRENT_KERNEL
        kinds = {kernel_kind: "kernel", cupti.ActivityKind.MEMSET: "memset",
                 cupti.ActivityKind.MEMCPY: "memcpy"}
        self._kinds = {int(k): v for k, v in kinds.items()}

        def requested():
            return 8 * 1024 * 1024, 0  # bytes a buffer, no record limit

        def completed(activities: list) -> None:
            for a in activities:
                kind = self._kinds.get(int(a.kind))
                if kind:
                    self._records.append(Activity(kind, (getattr(a, "name", "") or "") if kind == "kernel" else "",
                                                  int(a.start), int(a.end), int(getattr(a, "bytes", 0) or 0)))

        try:
            for kind in kinds:
                cupti.activity_enable(kind)
            cupti.activity_register_callbacks(requested, completed)
        except Exception as exc:  # cuptiError: another subscriber, an old driver
            raise KernelClockError(f"CUPTI refused activity collection: {exc}") from None

    def collect(self) -> list[Activity]:
        """Every record since the last collect (the GPU work enqueued before must have finished)."""
        self._cupti.activity_flush_all(1)
        records, self._records = self._records, []
        return records

    def close(self) -> None:
        self._cupti.activity_flush_all(1)
        for kind in self._kinds:
            try:
                self._cupti.activity_disable(kind)
            except Exception:
                pass
