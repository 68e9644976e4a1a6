"""The Zosa 2017 study: REPORT.md with its figures, Table 1 beside the paper's, findings checked.

The paper: Zosa 2017, "Matrix Multiplication: Parallel Computation via GPGPU Programming", nine CUDA
SGEMM versions built up step by step (shared memory, ILP) on a Tesla K80 against multicore BLAS.
This package holds its contract (mmbench/studies/contract.py), FIGURES, REFERENCE_RUN and report,
from these modules:
  - paper.py: the paper's numbers (Table 1's and Figure 1's sizes, its text's rates and factors, the GK210).
  - measures.py: what the others compute alike from the results (CUDA-Best's series, Table 1).
  - claims.py: each claim of the paper and its verdict by rule.py (`verdicts`, `hot_verdicts`).
  - figures.py: the drawing functions and the FIGURES families.
  - report.py: the report's text and REFERENCE_RUN. Once imported here, `report` on this package is
    the function, not the module: import from mmbench.studies.zosa2017.report by that full path.
"""

from __future__ import annotations

from .figures import FIGURES
from .report import REFERENCE_RUN, report

__all__ = ["FIGURES", "REFERENCE_RUN", "report"]
