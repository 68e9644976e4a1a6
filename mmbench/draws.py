"""Inputs drawn from the seed by a counter-based generator: value i of a draw is a hash of the
run's key, the draw's number and i, so the GPU makes a shape's inputs in their own precision
(kernels/harness.cu's draw_matrix, straight into a run's device buffers) and the host makes the same values, bit for bit, where there is
no GPU (CounterDraws' host twin), each element independently of the others.

Two distributions, each exact in its type:
  symmetric  uniform in (-1, 1) and never 0: (2u + 1 - 2^24) / 2^24 for float32 (u the hash's top 24
             bits), (2u + 1 - 2^53) / 2^53 for float64 (53 bits): products' signs mix, sums cancel
  one_two    uniform in [1, 2): 1 + u / 2^23 (23 bits), 1 + u / 2^52 (52 bits): every value distinct
             in practice (what a transpose moves)
A narrower type gets the float32 value divided by the draw's scale (FP8's) and rounded to nearest.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .precisions import PRECISIONS, STORAGE

KINDS = {"symmetric": 0, "one_two": 1}
# How a run's points' inputs are made: what its metadata's `inputs` says
INPUTS_DRAWN = ("counter-based draws from the seed and the shape (mmbench/draws.py): made on the GPU in each "
                "precision's type (kernels/harness.cu draw_matrix), or the same values on the host without one")
LEGACY_RANGES = {"symmetric": (-1.0, 1.0), "one_two": (1.0, 2.0)}  # numpy's uniform draws of the same kinds
STREAM_STEP = 0x632BE59BD9B4E019  # draw d's values start at key + d * STREAM_STEP (kernels/harness.cu too)
_MASK = (1 << 64) - 1


def run_key(seed_words) -> int:
    """A 64-bit key from the run's seed and the shape ([seed, m, n, k]): numpy's SeedSequence, so
    neighbouring seeds and shapes give unrelated keys."""
    return int(np.random.SeedSequence(list(seed_words)).generate_state(1, np.uint64)[0])


def splitmix64(z: np.ndarray) -> np.ndarray:
    """Sebastiano Vigna's splitmix64 finalizer on uint64 values (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def host_values(key: int, stream: int, count: int, kind: str, storage: np.dtype, scale: float = 1.0) -> np.ndarray:
    """The values draw_matrix makes on the GPU, made on the host: `count` of them, in `storage`."""
    start = np.uint64((key + stream * STREAM_STEP) & _MASK)
    with np.errstate(over="ignore"):
        bits = splitmix64(start + np.arange(count, dtype=np.uint64))
    if np.dtype(storage) == np.float64:
        if kind == "symmetric":
            odd = (2 * (bits >> np.uint64(11)).astype(np.int64) + 1) - (1 << 53)
            return odd.astype(np.float64) * 2.0**-53
        return 1.0 + (bits >> np.uint64(12)).astype(np.float64) * 2.0**-52
    if kind == "symmetric":
        values = ((2 * (bits >> np.uint64(40)).astype(np.int64) + 1) - (1 << 24)).astype(np.float32) * np.float32(2.0**-24)
    else:
        values = np.float32(1.0) + (bits >> np.uint64(41)).astype(np.float32) * np.float32(2.0**-23)
    if scale != 1.0:
        values = values / np.float32(scale)
    return values.astype(storage)


# The precision whose A is stored in each type: the DTYPE a draw of that type is compiled with
STORED_BY = {p.a_type: name for name, p in reversed(PRECISIONS.items()) if name != "tf32"}


class CounterDraws:
    """One shape's draws, numbered in the order they are asked for (A, then B; a GEMV's pool, then x),
    made on the GPU by `device` (Gpu.draw) or, without one, on the host: the same values either way."""

    def __init__(self, key: int, device: Callable | None = None):
        self.key, self.device, self.streams = key, device, 0

    def typed(self, kind: str, shape: tuple[int, ...], storage, scale: float = 1.0) -> np.ndarray:
        storage, stream = np.dtype(storage), self.streams
        self.streams += 1
        count = int(np.prod(shape))
        made = self.device(self.key, stream, count, kind, storage, scale) if self.device is not None else \
            host_values(self.key, stream, count, kind, storage, scale)
        return made.reshape(shape)


def draw(rng, kind: str, shape: tuple[int, ...], storage, scale: float = 1.0, nonzero: bool = False) -> np.ndarray:
    """Values of a distribution (KINDS) in a storage type, divided by scale first: from a run's
    CounterDraws, or from a numpy Generator as before counter draws (uniform float64, float32 unless
    the storage is float64, zeros made 0.5 where nonzero, then rounded to the storage)."""
    from .precisions import quantize

    if isinstance(rng, CounterDraws):
        return rng.typed(kind, shape, storage, scale)
    low, high = LEGACY_RANGES[kind]
    values = rng.uniform(low, high, size=shape)
    if np.dtype(storage) != np.float64:
        values = values.astype(np.float32)
    if nonzero:
        values[values == 0] = 0.5
    return quantize(values, np.dtype(storage), scale)


__all__ = ["CounterDraws", "KINDS", "STORAGE", "draw", "host_values", "run_key"]
