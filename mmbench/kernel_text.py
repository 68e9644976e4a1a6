"""What a paper's kernel became in kernels/: the additions our source makes to a listing that has
none of them, read from the source itself (comments left out) so that a report's list of them
cannot drift from the code it describes."""

from __future__ import annotations

import re

from .source import kernels_dir

# (what marks it in CUDA source, what the report says of it)
ADDITIONS = (
    ("__restrict__", "`__restrict__` on the pointers (the compiler may assume A, B and C do not overlap)"),
    ("const float*", "`const` on the input pointers"),
    ("__launch_bounds__", "`__launch_bounds__` (the compiler budgets registers for the block size named)"),
    ("#pragma unroll", "`#pragma unroll` on the inner product loop"),
    ("return;", "an early return of the threads past the matrix edge, where the text wraps the body in an `if`"),
)


def code_of(source: str) -> str:
    """CUDA source without its comments."""
    return re.sub(r"/\*.*?\*/", "", re.sub(r"//[^\n]*", "", source), flags=re.S)


def additions(source: str) -> list[str]:
    """The additions (ADDITIONS' sentences) a kernel source makes, in ADDITIONS' order."""
    code = code_of(source)
    return [said for mark, said in ADDITIONS if mark in code]


def kernel_additions(relative: str) -> list[str]:
    """additions() of a file under kernels/, e.g. "gemm/naive.cu"."""
    return additions((kernels_dir() / relative).read_text())
