"""Launch points once each, untimed: the process `mmbench profile` runs under Nsight Compute.

    python -m mmbench.profiler_target [--repeat N] VARIANT PARAMS SHAPE [VARIANT PARAMS SHAPE ...]

PARAMS is "BLOCK=32" or "-" for none; SHAPE is "MxNxK" (k = 0 for a transpose), or "N" for a square
GEMM's N x N x N, followed by "@DTYPE/LAYOUT" for a precision and layout other than fp32, nn
("8192@bf16/nt"). --repeat N calls each point N times in a row on the same inputs (default once),
the GPU idle between calls. Only the points' own kernels run on the GPU here (inputs arrive by
host-to-device copies), so every kernel the profiler sees belongs to a point, in the order given.
"""

from __future__ import annotations

import sys

import numpy as np

from .device import open_gpu
from .ops import get_op
from .ops.capabilities import LibraryBaseline, needs
from .ops.declared import dimensions, launcher
from .precisions import DEFAULT, DEFAULT_LAYOUT
from .sizes import Shape
from .variants import files, get_variant, parse_params
from .variants.model import compile_params


def main(argv: list[str]) -> int:
    repeat = 1
    if argv[:1] == ["--repeat"] and len(argv) > 1 and argv[1].isdigit() and int(argv[1]) > 0:
        repeat, argv = int(argv[1]), argv[2:]
    if len(argv) % 3 or not argv:
        print(__doc__, file=sys.stderr)
        return 2
    files.use(files.from_environment())  # the variant files of the command that started this process
    gpu = open_gpu()
    libraries = {}
    for name, params_text, shape_text in zip(argv[0::3], argv[1::3], argv[2::3]):
        shape_text, _, form = shape_text.partition("@")
        dtype, _, layout = (form or f"{DEFAULT}/{DEFAULT_LAYOUT}").partition("/")
        dims = [int(d) for d in shape_text.split("x")]
        variant, shape = get_variant(name), Shape(*(dims * 3 if len(dims) == 1 else dims))
        op = get_op(variant.op)
        params = parse_params("" if params_text == "-" else params_text)
        bufs = op.upload(gpu, op.make_inputs(shape, np.random.default_rng(0), None, dtype, layout))
        if variant.backend == "cuda":
            call = launcher(gpu, op, variant, compile_params(variant, params, dimensions(op, shape), dtype, layout),
                            shape, bufs)
        else:
            library = needs(op, LibraryBaseline)
            handle = libraries.get(name) or libraries.setdefault(name, library.library(variant, gpu))
            call = library.library_call(handle, shape, bufs)
        for _ in range(repeat):
            call()
            gpu.synchronize()
        bufs.free()
    for handle in libraries.values():
        handle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
