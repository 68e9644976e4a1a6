#!/usr/bin/env python3
"""Fill a PyCUDA compile cache for a variant's tuning space on a machine without a GPU.

Usage: scripts/pycuda_cache.py VARIANT DIR [--arch sm_90] [--include /tmp/site/pycuda/cuda] [--jobs 2]

PyCUDA keys a cached cubin by the md5 of the module source, the nvcc options (its -arch and the
-I of its own include folder, which depends on where PyCUDA is installed: /tmp/site on the GPU
machine, see ../shared/device/setup.sh), `nvcc --version` and the platform's bits. This builds each
configuration's cubin with the same command line PyCUDA runs, under the same key, so a device call
with PYCUDA_CACHE_DIR=DIR loads them instead of compiling (gemv_tuned's 1536 configurations take
about 100 s of nvcc on the GPU machine; here, on two cores, a quarter of an hour that costs no device
time). Where the GPU machine's nvcc or PyCUDA differ, the keys miss and PyCUDA compiles as usual.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmbench import source  # noqa: E402
from mmbench.variants import get_variant, tuning_space  # noqa: E402


def cache_key(text: str, options: list[str], nvcc_version: str) -> str:
    """pycuda.compiler.compile_plain's key (a source without #include lines is hashed as it is)."""
    assert "#include" not in text, "PyCUDA hashes a source with #include lines after preprocessing"
    digest = hashlib.md5(text.encode())
    for option in options:
        digest.update(option.encode())
    digest.update(nvcc_version.encode())
    digest.update(b"64")
    return digest.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant")
    ap.add_argument("dir", type=Path)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--include", default="/tmp/site/pycuda/cuda", help="PyCUDA's include folder on the GPU machine")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    variant = get_variant(args.variant)
    options = [*source.NVCC_OPTIONS, "-arch", args.arch, f"-I{args.include}"]
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout
    args.dir.mkdir(parents=True, exist_ok=True)

    def build(params) -> str:
        text = source.module_source(variant, params)
        target = args.dir / f"{cache_key(text, options, version)}.cubin"
        if target.exists():
            return "cached"
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "kernel.cu").write_text(text)
            done = subprocess.run(["nvcc", "--cubin", *options, "kernel.cu"], cwd=tmp, capture_output=True, text=True)
            if done.returncode:
                return "failed"
            target.write_bytes((Path(tmp) / "kernel.cubin").read_bytes())
        return "built"

    with ThreadPoolExecutor(args.jobs) as pool:
        outcome = list(pool.map(build, tuning_space(variant)))
    print({k: outcome.count(k) for k in set(outcome)}, "into", args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
