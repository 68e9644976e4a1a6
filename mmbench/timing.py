"""Timing: warm-up, cache state, samples, statistics.

GPU samples are CUDA event pairs around the kernel alone. Each batch of samples is enqueued
behind ``hold_stream`` (nvbench's blocking kernel), so the GPU runs flush, start event, kernel
and end event back to back and no sample contains host launch latency. In ``cold`` mode each
sample is preceded by a read of a buffer twice the L2 size (which leaves the L2 clean: a write
would leave dirty lines for the sample to write back); in ``hot`` mode the kernel runs again on
the same, cached buffers.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

CACHE_MODES = ("cold", "hot")
MAX_BATCH = 64  # samples enqueued behind one hold; keeps the launch queue far from full


class TimingError(RuntimeError):
    """A batch of samples could not be trusted (the stream hold expired)."""


@dataclass(frozen=True)
class Stats:
    mean: float
    median: float
    min: float
    max: float
    std: float
    cv: float  # std / mean


def summarize(times_ms: Sequence[float]) -> Stats:
    if not times_ms:
        raise ValueError("no samples")
    mean = statistics.fmean(times_ms)
    std = statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0
    return Stats(mean, statistics.median(times_ms), min(times_ms), max(times_ms), std,
                 std / mean if mean > 0 else float("nan"))


def time_gpu(gpu, launch: Callable[[], None], runs: int, warmup: int, cache: str, flush: str,
             held: bool = True) -> list[float]:
    """Milliseconds of `runs` launches, each between its own event pair, after `warmup` launches
    (cold: each after Gpu.flush_l2(flush)). held=False times a sequence that works on the host
    too (an end-to-end GEMM): each sample starts from an idle stream."""
    cold = cache == "cold"
    for _ in range(warmup):
        if cold:
            gpu.flush_l2(flush)
        launch()
    gpu.synchronize()
    if not held:
        return _time_from_idle(gpu, launch, runs, cold, flush)
    times: list[float] = []
    for first in range(0, runs, MAX_BATCH):
        pairs = [(gpu.event(), gpu.event()) for _ in range(min(MAX_BATCH, runs - first))]
        gpu.hold()
        try:
            for start, end in pairs:
                if cold:
                    gpu.flush_l2(flush)
                start.record(gpu.stream)
                launch()
                end.record(gpu.stream)
        finally:
            gpu.release()  # never leave the stream held, whatever went wrong
        gpu.synchronize()
        if not gpu.held_ok():
            raise TimingError("the stream hold expired before the batch was enqueued; samples would include launch latency")
        times.extend(end.time_since(start) for start, end in pairs)
    return times


def _time_from_idle(gpu, launch: Callable[[], None], runs: int, cold: bool, flush: str) -> list[float]:
    """Samples of a sequence with host work in it (or long enough that a launch's latency does not
    matter): the stream is drained (after the flush) before
    the start event, so the host's part counts in full; the start event's own enqueue, a few
    microseconds, is the one launch latency inside, as for any caller of such a sequence."""
    times = []
    for _ in range(runs):
        start, end = gpu.event(), gpu.event()
        if cold:
            gpu.flush_l2(flush)
        gpu.synchronize()
        start.record(gpu.stream)
        launch()
        end.record(gpu.stream)
        end.synchronize()
        times.append(end.time_since(start))
    return times


def time_cpu(fn: Callable[[], None], runs: int, warmup: int) -> list[float]:
    """Milliseconds of `runs` calls of fn (wall clock), after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return times


# -- sampling that stops when the answer is known (issue 17) ------------------------------------------
def noise(samples: Sequence[float], sagged: Sequence[bool] | None = None) -> float:
    """Relative noise of the samples, std / mean, leaving out those taken while the SM clock
    sagged (they measure the clock, not the kernel); nan with fewer than two left."""
    kept = [t for t, bad in zip(samples, sagged or [False] * len(samples)) if not bad]
    if len(kept) < 2:
        return float("nan")
    mean = statistics.fmean(kept)
    return statistics.stdev(kept) / mean if mean > 0 else float("nan")


def median_interval(samples: Sequence[float], sagged: Sequence[bool] | None = None) -> float:
    """Relative half-width of the 95 % interval of the median of the samples (those not taken while
    the SM clock sagged): (x_(u) - x_(l)) / (2 x median), x_(l) and x_(u) the order statistics
    l = floor(n/2 - 0.98 sqrt(n)) and u = ceil(1 + n/2 + 0.98 sqrt(n)), counted from 1 (the binomial's
    normal approximation, distribution-free as a median needs, Conover's); up to 10 samples the
    interval is their whole range. nan with fewer than two left."""
    kept = sorted(t for t, bad in zip(samples, sagged or [False] * len(samples)) if not bad)
    n = len(kept)
    if n < 2:
        return float("nan")
    spread = 0.98 * math.sqrt(n)
    low, high = max(0, math.floor(n / 2 - spread) - 1), min(n - 1, math.ceil(1 + n / 2 + spread) - 1)
    middle = statistics.median(kept)
    return (kept[high] - kept[low]) / (2 * middle) if middle > 0 else float("nan")


# What a sampling target judges (Settings.max_noise, max_interval): its measure of the samples kept
TARGETS = {"noise": noise, "interval": median_interval}


MIN_BATCH = 8  # the fewest samples a batch adds: each batch costs a hold, a synchronize and the kernel clock's read


def next_batch(reached: float, target: float, taken: int, max_runs: int) -> int:
    """How many samples the next batch of an interval target takes: as many as would bring the median's
    interval reached (~ 1 / sqrt(samples)) to the target, from MIN_BATCH to MAX_BATCH, never past max_runs."""
    wanted = taken * ((reached / target) ** 2 - 1) if math.isfinite(reached) and target > 0 else MAX_BATCH
    return max(0, min(max_runs - taken, MAX_BATCH, max(MIN_BATCH, math.ceil(wanted))))


def stop_reason(samples: Sequence[float], sagged: Sequence[bool], min_runs: int, target: float, elapsed_s: float,
                budget_s: float, max_runs: int, rule: str = "noise") -> str | None:
    """Why sampling stops now, or None to take more: the rule's name ("noise", "interval") once at
    least min_runs samples (not counting those taken while the clock sagged) measure under the
    target by the rule (TARGETS); else "budget" when the time is spent, or "max" at max_runs samples."""
    kept = sum(1 for bad in sagged if not bad)
    if kept >= min_runs and TARGETS[rule](samples, sagged) <= target:
        return rule
    if elapsed_s >= budget_s:
        return "budget"
    if len(samples) >= max_runs:
        return "max"
    return None
