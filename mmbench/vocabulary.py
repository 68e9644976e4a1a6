"""Small types every layer shares, kept at the bottom so that no module imports upward for them:
a GPU's identity (what tuned parameters are keyed by) and a shape's tuned parameters (what the
tuning caches give a run's plan)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .variants import Params


@dataclass(frozen=True)
class DeviceId:
    """What decides whether tuned parameters carry over: a GPU's name, architecture and SM count."""

    name: str
    arch: str | None = None  # "sm_90"
    sm_count: int | None = None

    def __str__(self) -> str:
        facts = ", ".join(f for f in (self.arch, f"{self.sm_count} SMs" if self.sm_count else None) if f)
        return f"{self.name} ({facts})" if facts else self.name


@dataclass(frozen=True)
class Tuned:
    """Tuned parameters for one shape, the GPU whose tuning they come from and the cache that holds them."""

    params: Params
    device: str
    borrowed: bool  # True: another GPU of the same architecture and SM count
    cache: Path | None = None
    origin: str | None = None  # YOURS or SHIPPED (tuning/cache.py)
