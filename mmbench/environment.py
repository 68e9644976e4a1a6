"""Facts about the machine and the software, for `mmbench info` and every run's metadata."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from . import blas_threads, source
from .version import __version__

PACKAGES = ("numpy", "pandas", "click", "matplotlib", "threadpoolctl", "ml_dtypes", "pycuda", "cupy-cuda13x",
            "cupy-cuda12x", "nvidia-ml-py", "cuda-bindings", "nvmath-python", "cupti-python")
# cuda-bindings: the launches of clusters and tensor maps (launch_ex.py); nvmath-python: cuBLASLt
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
    keep = ("internal_api", "version", "num_threads", "threading_layer", "architecture", "filepath")
    return [{k: i.get(k) for k in keep} for i in blas_threads.blas_libraries()]


def git_info(cwd: Path | None = None) -> dict:
    """The commit that ran: the checkout of mmbench that holds the working directory (a run from
    the repository records its commit even when the package was installed as a copy), else the
    one that holds the package. MMBENCH_GIT_COMMIT, where set, names it: the GPU machine's copy of
    the working tree has no .git, or one that is not the commit being run."""
    named = os.environ.get("MMBENCH_GIT_COMMIT")
    if named:
        return {"commit": named, "from": "MMBENCH_GIT_COMMIT"}

    def git(where, *args):
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10)

    try:
        for where in dict.fromkeys((cwd or Path.cwd(), REPO)):
            top = git(where, "rev-parse", "--show-toplevel")
            if top.returncode != 0 or not (Path(top.stdout.strip()) / "mmbench" / "__init__.py").exists():
                continue  # not a checkout, or a checkout of something else
            head = git(where, "rev-parse", "HEAD")
            if head.returncode != 0:
                continue
            dirty = bool(git(where, "status", "--porcelain", "--untracked-files=no").stdout.strip())
            return {"commit": head.stdout.strip(), "dirty": dirty, "checkout": top.stdout.strip()}
        return {"commit": None, "from": "no mmbench git checkout here or at the package, and no MMBENCH_GIT_COMMIT"}
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "from": "git unavailable and no MMBENCH_GIT_COMMIT"}


def kernel_sources() -> dict[str, str]:
    """sha256 (first 16 hex digits) of every kernel source file the package would compile."""
    root = source.kernels_dir()
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for p in sorted(root.rglob("*")) if p.suffix in (".cu", ".cuh", ".h", ".c")}


def host_memory_available() -> int | None:
    """Bytes of host memory available to a new allocation (MemAvailable); None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: float) -> str:
    """1536 -> "1.5 KiB"."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"  # pragma: no cover


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def own_cpus() -> int:
    """The cores this process may run on (a dask-cuda worker is pinned to its GPU's NUMA node)."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux only
    return len(affinity(0)) if affinity else os.cpu_count() or 1


WHOLE_COMMAND: list[bool] = []  # [True] from a command line's start until its first run records its time


def whole_command_s() -> float | None:
    """The seconds since this process started, once per command line: for the first run it makes
    (a command's run is the process's own); None from Python (a notebook's process is older than
    any run in it) and for a command's later runs (a search's finalists)."""
    if not WHOLE_COMMAND:
        return None
    WHOLE_COMMAND.clear()
    return process_age_s()


def process_age_s() -> float | None:
    """Seconds since this process started (Linux's /proc: the kernel's clock, so the interpreter's
    start and the imports count); None where it cannot be read."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks since boot
        return round(float(Path("/proc/uptime").read_text().split()[0]) - started, 2)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def host_info() -> dict:
    return {"hostname": platform.node(), "os": platform.platform(), "python": platform.python_version(),
            "cpu": cpu_model(), "cpu_count": os.cpu_count()}


def software_info() -> dict:
    return {"mmbench": __version__, "mmbench_at": str(Path(__file__).resolve().parent),
            "kernel_sources": kernel_sources(), "packages": package_versions(), "nvcc": source.nvcc_version(),
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
