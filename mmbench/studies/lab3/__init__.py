"""The Lab 3 study: "Matrix Transpose and Matrix Multiplication Optimization with CUDA", a course
lab of 2018 (../shared/papers/lab3-transpose-and-matmul.txt): its transposes against the device
copy, and its matrix multiplications (naive, cache, shared-cache and shared), each of its claims
checked on today's GPU.

measures: the tables shared by the rest, from the results (medians by size, the series standing
for the lab's columns, the profile's rows by size, the tile sweep). claims: the lab's claims and
their verdicts. figures: the drawing functions and FIGURES. report: the text of REPORT.md.
"""

from __future__ import annotations

from .figures import FIGURES
from .report import REFERENCE_RUN, report

__all__ = ["FIGURES", "REFERENCE_RUN", "report"]
