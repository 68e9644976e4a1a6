"""Launches PyCUDA cannot make, through NVIDIA's cuda-python (``cuda.bindings.driver``) on the same
context: a kernel with a thread-block cluster shape (``cuLaunchKernelEx`` with the cluster-dimension
attribute) and a kernel that takes TMA tensor maps by value (``const __grid_constant__ CUtensorMap``,
made on the host by ``cuTensorMapEncodeTiled``).

What comes from where: PyCUDA still compiles the module (its nvcc call and its disk cache), owns the
context, the streams and the buffers; cuda-python loads the compiled cubin into that context, reads
the function's attributes, encodes the tensor maps and launches. The arguments are packed here with
CUDA's alignment for each (a tensor map 64 bytes, a pointer 8), which PyCUDA's packing does not know.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
TENSOR_MAP_ALIGN = 64  # alignof(CUtensorMap)
SWIZZLES = (0, 32, 64, 128)  # bytes of a tensor map's swizzle pattern (0: none)
MAX_BOX = 256  # elements of a tensor map's box along any dimension


class LaunchExError(RuntimeError):
    """A cuda-python driver call failed; the message names the call and CUDA's error."""


def _driver():
    """cuda.bindings.driver, initialised (cuInit is idempotent and cheap)."""
    from cuda.bindings import driver

    _checked(driver.cuInit(0), "cuInit")
    return driver


def _checked(result, call: str):
    """The values of a cuda-python call after its error code; LaunchExError on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise LaunchExError(f"{call} failed: {getattr(err, 'name', err)}")
    return values[0] if len(values) == 1 else tuple(values)


# -- tensor maps --------------------------------------------------------------------------------------
def tensor_map_problem(rows: int, cols: int, itemsize: int, box: tuple[int, int], swizzle: int) -> str | None:
    """Why a row-major rows x cols matrix of itemsize-byte elements cannot have this tensor map
    (TMA needs 16-byte row strides; a swizzled box row spans at most the swizzle), or None."""
    if (cols * itemsize) % 16:
        return f"TMA needs rows of a multiple of 16 bytes; a row of {cols} elements is {cols * itemsize} bytes"
    if swizzle not in SWIZZLES:
        return f"swizzle {swizzle}: choose from {', '.join(map(str, SWIZZLES))} bytes"
    if not all(1 <= b <= MAX_BOX for b in box):
        return f"box {box[0]} x {box[1]}: each side 1 to {MAX_BOX} elements"
    if (box[1] * itemsize) % 16:
        return f"box rows of {box[1]} elements are {box[1] * itemsize} bytes, not a multiple of 16"
    if swizzle and box[1] * itemsize > swizzle:
        return f"a box row of {box[1] * itemsize} bytes is wider than its {swizzle}-byte swizzle"
    return None


def _data_type(driver, dtype: np.dtype):
    kinds = driver.CUtensorMapDataType
    by_name = {"float32": kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, "float64": kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
               "float16": kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, "bfloat16": kinds.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16}
    name = np.dtype(dtype).name
    if name in by_name:
        return by_name[name]
    if np.dtype(dtype).itemsize != 1:
        raise LaunchExError(f"no tensor map element type for {name}")
    return kinds.CU_TENSOR_MAP_DATA_TYPE_UINT8  # FP8: TMA moves bytes (no conversion, zero fill out of bounds)


def map_problem(buffer: str, rows: int, cols: int, dtype, box: tuple[int, int], swizzle: int) -> str | None:
    """tensor_map_problem of the map a kernel takes as map_BUFFER, said with its name, or None."""
    problem = tensor_map_problem(rows, cols, np.dtype(dtype).itemsize, box, swizzle)
    return f"map_{buffer} ({rows} x {cols}, box {box[0]} x {box[1]}): {problem}" if problem else None


def encode_tensor_map(pointer: int, rows: int, cols: int, dtype, box: tuple[int, int], swizzle: int) -> np.void:
    """The 128 bytes of a 2-D tensor map of a row-major rows x cols matrix at a device pointer, its
    box `box` (rows, columns), zero fill out of bounds; a kernel argument (np.void)."""
    itemsize = np.dtype(dtype).itemsize
    problem = tensor_map_problem(rows, cols, itemsize, box, swizzle)
    if problem:
        raise LaunchExError(problem)
    driver = _driver()
    swizzled = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[swizzle]
    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    tensor_map = _checked(driver.cuTensorMapEncodeTiled(
        _data_type(driver, dtype), u32(2), int(pointer), [u64(cols), u64(rows)], [u64(cols * itemsize)],
        [u32(box[1]), u32(box[0])], [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzled}"),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), "cuTensorMapEncodeTiled")
    import ctypes

    raw = ctypes.string_at(tensor_map.getPtr(), TENSOR_MAP_BYTES)
    return np.frombuffer(raw, dtype=np.dtype((np.void, TENSOR_MAP_BYTES)))[0]


# -- arguments ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Packed:
    """A kernel's arguments laid out as CUDA lays them out, and the array of pointers to each
    (cuLaunchKernelEx's kernelParams). Both arrays must live as long as launches use them."""

    storage: np.ndarray
    pointers: np.ndarray
    offsets: tuple[int, ...]


def _as_bytes(arg) -> tuple[bytes, int]:
    """(the argument's bytes, its alignment): a tensor map, a numpy scalar, or a device pointer
    (a PyCUDA allocation or an int)."""
    if isinstance(arg, np.void):
        return bytes(arg.tobytes()), TENSOR_MAP_ALIGN if arg.itemsize == TENSOR_MAP_BYTES else 1
    if isinstance(arg, np.generic):
        return arg.tobytes(), arg.itemsize
    return np.uint64(int(arg)).tobytes(), 8  # a pointer


def pack_arguments(args: Sequence) -> Packed:
    """Each argument at the next offset its alignment allows, as nvcc lays out a kernel's parameters."""
    parts = [_as_bytes(a) for a in args]
    offsets, at = [], 0
    for data, align in parts:
        at = -(-at // align) * align
        offsets.append(at)
        at += len(data)
    # the storage itself aligned to a tensor map's 64 bytes (the driver copies from it)
    raw = np.zeros(max(at, 1) + TENSOR_MAP_ALIGN, dtype=np.uint8)
    base = (-raw.ctypes.data) % TENSOR_MAP_ALIGN
    storage = raw[base:base + max(at, 1)]
    for (data, _), offset in zip(parts, offsets):
        storage[offset:offset + len(data)] = np.frombuffer(data, dtype=np.uint8)
    pointers = np.array([storage.ctypes.data + o for o in offsets], dtype=np.uint64)
    return Packed(storage, pointers, tuple(offsets))


def cluster_grid(grid: tuple[int, int, int], cluster: tuple[int, int, int]) -> tuple[int, int, int]:
    """The grid rounded up to whole clusters along each dimension (CUDA requires it)."""
    return tuple(math.ceil(g / c) * c for g, c in zip(grid, cluster))  # type: ignore[return-value]


# -- the function -------------------------------------------------------------------------------------
class FunctionEx:
    """An entry function of a cubin loaded by cuda-python into the current (PyCUDA's) context, with
    the attributes mmbench reads of a PyCUDA Function (registers, static shared and local memory)."""

    def __init__(self, cubin: bytes, symbol: str):
        driver = self._driver = _driver()
        self.module = _checked(driver.cuModuleLoadData(cubin), "cuModuleLoadData")
        self.function = _checked(driver.cuModuleGetFunction(self.module, symbol.encode()),
                                 f"cuModuleGetFunction({symbol})")
        attr = driver.CUfunction_attribute
        get = lambda a: int(_checked(driver.cuFuncGetAttribute(a, self.function), "cuFuncGetAttribute"))  # noqa: E731
        self.num_regs = get(attr.CU_FUNC_ATTRIBUTE_NUM_REGS)
        self.shared_size_bytes = get(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        self.local_size_bytes = get(attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    def allow_dynamic_shared(self, nbytes: int) -> None:
        driver = self._driver
        _checked(driver.cuFuncSetAttribute(
            self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
            "cuFuncSetAttribute(max dynamic shared)")

    def _config(self, grid, block, shared: int, stream_handle: int, cluster: tuple[int, int, int]):
        driver = self._driver
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = cluster_grid(grid, cluster)
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = shared
        config.hStream = driver.CUstream(stream_handle)
        attrs = []
        if cluster != (1, 1, 1):
            attribute = driver.CUlaunchAttribute()
            attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster
            attrs.append(attribute)
        config.attrs, config.numAttrs = attrs, len(attrs)
        return config

    def resident_clusters(self, block: tuple[int, int, int], shared: int, cluster: tuple[int, int, int]) -> int:
        """How many clusters of this shape the GPU holds at once (a persistent grid larger than that
        would run its last blocks in a second wave)."""
        config = self._config(cluster, block, shared, 0, cluster)
        return int(_checked(self._driver.cuOccupancyMaxActiveClusters(self.function, config),
                            "cuOccupancyMaxActiveClusters"))

    def launcher(self, args: Sequence, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
                 stream_handle: int, cluster: tuple[int, int, int] = (1, 1, 1)) -> Callable[[], None]:
        """A no-argument launch on a stream (a PyCUDA stream's handle): the arguments packed once."""
        driver = self._driver
        packed = pack_arguments(args)
        config = self._config(grid, block, shared, stream_handle, cluster)
        function, params = self.function, packed.pointers.ctypes.data

        def launch() -> None:
            _ = (packed, args)  # the packed bytes and the buffers their addresses point into live as long
            _checked(driver.cuLaunchKernelEx(config, function, params, 0), "cuLaunchKernelEx")

        return launch
