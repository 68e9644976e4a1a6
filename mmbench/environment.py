"""Facts about the machine and the software, for `mmbench info` and every run's metadata."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from . import __version__, source

PACKAGES = ("numpy", "pandas", "click", "matplotlib", "threadpoolctl", "pycuda", "cupy-cuda13x",
            "cupy-cuda12x", "nvidia-ml-py")
REPO = Path(__file__).resolve().parent.parent


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def blas_info() -> list[dict]:
    """The BLAS libraries numpy loaded, with their thread counts (threadpoolctl)."""
    import numpy  # noqa: F401  (loads its BLAS so threadpoolctl can see it)
    from threadpoolctl import threadpool_info

    keep = ("internal_api", "version", "num_threads", "threading_layer", "architecture", "filepath")
    return [{k: i.get(k) for k in keep} for i in threadpool_info() if i.get("user_api") == "blas"]


def git_info() -> dict:
    """The commit that ran. MMBENCH_GIT_COMMIT, where set, names it: the GPU machine's copy of the
    working tree has no .git, or one that is not the commit being run."""
    named = os.environ.get("MMBENCH_GIT_COMMIT")
    if named:
        return {"commit": named, "from": "MMBENCH_GIT_COMMIT"}

    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": None, "from": "no git checkout and no MMBENCH_GIT_COMMIT"}
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").stdout.strip())
        return {"commit": head.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "from": "git unavailable and no MMBENCH_GIT_COMMIT"}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info() -> dict:
    return {"hostname": platform.node(), "os": platform.platform(), "python": platform.python_version(),
            "cpu": cpu_model(), "cpu_count": os.cpu_count()}


def software_info() -> dict:
    return {"mmbench": __version__, "packages": package_versions(), "nvcc": source.nvcc_version(),
            "nvcc_options": list(source.NVCC_OPTIONS), "blas": blas_info()}


def gpu_info(gpu) -> dict:
    """Device facts, NVML facts and the CUDA versions of an open Gpu."""
    import pycuda
    import pycuda.driver as drv

    return {**asdict(gpu.facts), **gpu.clock.facts(), "pycuda": pycuda.VERSION_TEXT,
            "pycuda_built_for_cuda": ".".join(map(str, drv.get_version()))}


def collect(gpu=None) -> dict:
    """Everything a result file's metadata records about where and with what it ran."""
    return {"host": host_info(), "software": software_info(), "git": git_info(),
            "gpu": gpu_info(gpu) if gpu is not None else None}
