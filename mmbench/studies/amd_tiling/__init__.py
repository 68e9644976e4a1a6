"""The AMD tiling tutorial (../shared/papers/amd-lds-register-tiling.txt) on NVIDIA: naive -> LDS
(shared-memory) tiling -> register tiling, on rectangular shapes.

The tutorial's naive and LDS kernels are mmbench's `naive` and `shared` at BLOCK = 16 (the same
code: a thread an output; 16 x 16 tiles zero-filled past the edges, stores guarded), so they run
under the tutorial's names here; its register tiling is `register_tiling`. Shapes come in
families, each varying one dimension with the other two at BASE: along m (tall), along n (wide),
along k (shallow to deep), and square; aligned shapes have every dimension a multiple of ALIGN.

measures: the study's shapes, steps, kernels and lines (thresholds), its reference run and the
profiles' commands, and the measures of the run the rest share (each step's times and rates by
shape, the shape families, speedups over naive, % of cuBLAS, the tile table, register over LDS
tiling). claims: the tutorial's claims and their verdicts. figures: the drawing functions and
FIGURES. report: the text of REPORT.md (its tables, departures and memory-hierarchy section).
"""

from __future__ import annotations

from .figures import FIGURES
from .measures import REFERENCE_RUN
from .report import report

__all__ = ["FIGURES", "REFERENCE_RUN", "report"]
