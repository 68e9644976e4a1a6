"""Compiled CPU baselines: kernels/cpu/naive.c built with the system C compiler at first use
(``cc -O2``, cached by source hash) and called through ctypes."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from functools import lru_cache

import numpy as np

from .source import cache_dir, kernels_dir

CFLAGS = ("-O2", "-shared", "-fPIC")


class NativeUnavailable(RuntimeError):
    """No C compiler, or it failed; the message says which."""


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The compiled naive loops, built once per source version."""
    src = kernels_dir() / "cpu" / "naive.c"
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise NativeUnavailable("no C compiler (cc) on PATH for the CPU naive baselines")
    digest = hashlib.sha256(src.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    lib = cache_dir() / f"naive-{digest}.so"
    if not lib.exists():
        lib.parent.mkdir(parents=True, exist_ok=True)
        tmp = lib.with_suffix(f".{os.getpid()}.tmp")
        proc = subprocess.run([cc, *CFLAGS, str(src), "-o", str(tmp)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise NativeUnavailable(f"cc failed on {src.name}: {(proc.stderr or proc.stdout).strip()[:200]}")
        tmp.replace(lib)
    dll = ctypes.CDLL(str(lib))
    floats = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
    dll.transpose_naive.argtypes = [floats, floats, ctypes.c_int, ctypes.c_int]
    dll.matmul_ijk.argtypes = [floats, floats, floats, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return dll


def transpose_naive(a: np.ndarray, out: np.ndarray) -> None:
    library().transpose_naive(a, out, a.shape[0], a.shape[1])


def matmul_ijk(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    library().matmul_ijk(a, b, c, a.shape[0], b.shape[1], a.shape[1])
