"""Lameski et al. 2013 (../shared/papers/lameski-border-conditions.txt): rectangular matrix
multiplication with zero-padded inputs (approach 1: a kernel without border checks) against
border checks inside the kernel (approach 2), 32 x 32 shared-memory tiles either way.

Approach 1 is `shared_padded` (always run padded), approach 2 `shared` at BLOCK = 32: the same
kernel but for its checks. The paper fixes wA = hB (k here) at 32 and 64 and varies hA (m) and
wB (n). It timed the kernels (section IV), where its claims are judged; every point is also timed
with the padding on the device and end to end from host to host (the `scope` column), extra
evidence. Beyond the paper, `--pad` asks the same of the fastest kernels (the `modern` sweep).

measures: the two approaches, the depths, the paper's numbers and the reference run, and what the
rest share: the normalized speeds, padding's mean improvement per k and scope, and the mechanism
table from the Nsight Compute profile (its shapes, the approaches' names). claims: the paper's
claims and their verdicts. figures: the drawing functions and FIGURES. report: the text of
REPORT.md (its tables, departures, the `--pad` sweep and the memory-hierarchy section).
"""

from __future__ import annotations

from .figures import FIGURES
from .measures import REFERENCE_RUN
from .report import report

__all__ = ["FIGURES", "REFERENCE_RUN", "report"]
