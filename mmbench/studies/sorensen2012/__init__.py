"""Sørensen 2012, "Auto-tuning Dense Matrix-Vector Multiplication for Graphics Processing Units":
the auto-tuned kernel against cuBLAS SGEMV over the 24 x 24 mesh and the tall, square and wide
families, the device copy as the yardstick.

This package is the study's contract (FIGURES, REFERENCE_RUN, report); its modules, one job each:
measures (the run's tables the others share: mesh cells, designs, families, tuning rows, the occupancy
line, the profiled shapes), claims (the paper's numbers and every claim's verdict), figures (Figs. 1,
3, 4, 5 and the hierarchy figure, the FIGURES families, the reference run) and report (REPORT.md's
text).
"""

from __future__ import annotations

from .figures import FIGURES, REFERENCE_RUN
from .report import report

__all__ = ["FIGURES", "REFERENCE_RUN", "report"]
