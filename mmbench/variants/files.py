"""Variant files: your kernels, declared in TOML beside their .cu files, read into the same Variant
as the built-in entries, so every command takes them. A file is data, never code: TOML holds no
code, and its expressions go through the restricted evaluator (expressions.py), checked here
before anything is evaluated; loading a file reads it, and compiles and runs nothing.

    [[variant]]
    name = "my_sgemm"                  # the variant's name in runs, tuning and figures
    op = "gemm"                        # gemm, gemv or transpose
    source = "my_sgemm.cu"             # relative to this file
    entry = "sgemm_tiled"              # the __global__ function (default: name)
    arguments = ["m", "n", "k", 1.0, "A", "B", 0.0, "C"]   # the kernel's own order: buffers, integer
                                       # expressions, typed scalars (1.0: a float; { type = "float64",
                                       # value = 1.0 }), FP8's scale_a, scale_b (or scale_a_ptr, ...)
    block = ["TILE", "TILE"]
    grid = ["ceil_div(n, TILE)", "ceil_div(m, TILE)"]
    params = { TILE = 16 }             # defaults (a list sweeps each)
    space = { TILE = [8, 16, 32] }     # what `mmbench tune` explores (default: the defaults)
    constraints = ["TILE * TILE <= 1024"]
    defines = { WIDTH = "n" }          # #defines bound to the shape: compiled per shape
    dtypes = ["bf16"]                  # the precisions it takes (default fp32)
    layouts = ["nt"]                   # GEMM: how it takes A and B (default nn)
    requires = ["k % 16 == 0"]         # shapes it takes; others are skipped rows
    target = "sm_90a"                  # the architecture it is built for (default: the GPU's)
    nvcc_options = ["--use_fast_math"] # added to mmbench's, from a fixed safe list
    cluster = ["CLUSTER", 1, 1]        # a thread-block cluster, 1 to 3 expressions over the parameters
    tensor_maps = { A = { box = ["BM", 64], swizzle = 128 } }   # GEMM: TMA maps of buffers, passed by
                                       # value where the arguments name them: "map_A"

A mistake is one line naming the file, the variant and the key (VariantFileError).
"""

from __future__ import annotations

import os
import re

import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable

from . import expressions
from ..ops.declared import SCALAR_TYPES, SCALE_POINTERS, SCALES, typed_scalar
from ..precisions import PRECISIONS
from .model import LARGE_SPACE, Variant, VariantError, has_points, param_points, raw_size, tuning_space
from .registry import BUILT_IN, REGISTRY, replace_from

# Every key a variant may have, and what it holds (for `mmbench check`'s help and the error naming the choices).
KEYS = {
    "name": "the variant's name: letters, digits and _, not a built-in variant's",
    "op": "the operation the kernel computes",
    "source": "the kernel's .cu file, relative to the variant file",
    "entry": "the kernel's __global__ function (default: the name)",
    "label": "legend text (default: the name)",
    "description": "one line of what it does",
    "arguments": "the kernel's arguments in its order: the operation's buffers by name, integer expressions",
    "block": "the thread block, 1 to 3 expressions over the parameters",
    "grid": "the grid, 1 to 3 expressions over the parameters and the shape",
    "shared": "bytes of dynamic shared memory, an expression over the parameters (default 0)",
    "params": "parameter name -> its default value or values (each becomes a #define)",
    "space": "parameter name -> the values `mmbench tune` tries (default: its defaults)",
    "constraints": "expressions over the parameters that a point must satisfy",
    "defines": "#define name -> an expression over the parameters and the shape: the kernel is compiled per shape",
    "zero_output": "true when the kernel adds into its output, zeroed before every launch (default false)",
    "dtypes": "the precision the kernel takes, e.g. [\"bf16\"] (default [\"fp32\"]; docs/precisions.md)",
    "layouts": "the layout of A and B the kernel takes, e.g. [\"nt\"] (GEMM; default [\"nn\"])",
    "requires": "expressions over the parameters and the shape that a shape must meet, e.g. [\"k % 16 == 0\"]: "
                "a point that does not is skipped, never run",
    "target": "the architecture the kernel is built for, e.g. \"sm_90a\" for wgmma and setmaxnreg (default: the "
              "GPU's own); a GPU of another architecture skips its points",
    "nvcc_options": "options added to nvcc's, from a fixed safe list (docs/variant-files.md)",
    "cluster": "a thread-block cluster the kernel is launched in, 1 to 3 expressions over the parameters (x, y, z "
               "blocks; at most 8 blocks)",
    "tensor_maps": "GEMM: buffer name -> { box = [rows, columns], swizzle = 128 }: a TMA tensor map of the buffer "
                   "as stored, its box expressions over the parameters, passed by value where the arguments "
                   "name \"map_BUFFER\"",
}
# A tensor map is an argument by the name MAP_PREFIX + its buffer's ("map_A").
MAP_PREFIX = "map_"
MAX_CLUSTER_BLOCKS = 8  # a portable cluster (larger ones need an opt-in no variant file gets)

# What a variant file may add to nvcc's command line (its `nvcc_options`): options that change how
# the kernel's own code is compiled, and nothing that reaches outside it (no -I, -D, -o, -Xcompiler,
# files). Each option is one whole match.
SAFE_NVCC_OPTIONS = (
    r"--?use_fast_math", r"--?ftz=(true|false)", r"--?prec-div=(true|false)", r"--?prec-sqrt=(true|false)",
    r"--?fmad=(true|false)", r"--?maxrregcount=\d{2,3}", r"--?extra-device-vectorization",
    r"--?std=c\+\+(14|17|20)", r"--?expt-relaxed-constexpr", r"--?extended-lambda", r"--?restrict",
    r"-Xptxas=-O[0-3]",
)
SAFE_OPTIONS_TEXT = ("--use_fast_math, --ftz=, --prec-div=, --prec-sqrt=, --fmad= (true or false), --maxrregcount=N, "
                     "--extra-device-vectorization, --std=c++14/17/20, --expt-relaxed-constexpr, --extended-lambda, "
                     "--restrict, -Xptxas=-O0 to -O3")
# The targets a variant file may build for: a GPU architecture, sm_XY, or its architecture-specific
# form sm_XYa (Hopper's wgmma and setmaxnreg need sm_90a), which runs on that architecture alone.
TARGET = r"sm_(\d)(\d)a?"


def unsafe_option(option: str) -> bool:
    return not any(re.fullmatch(pattern, option) for pattern in SAFE_NVCC_OPTIONS)


REQUIRED = ("name", "op", "source", "arguments", "block", "grid")
PYTHON = "<python>"  # where variants a script declares as dicts come from


class VariantFileError(VariantError):
    """A variant file that cannot be read; the message names the file, the variant and the key."""


def load(path: Path | str) -> list[Variant]:
    """The variants a file declares, each checked (VariantFileError: the first mistake, one line)."""
    path = Path(path)
    if not str(path).strip():
        raise VariantFileError("an empty path names no variant file (a TOML file)")
    if path.is_dir():
        raise VariantFileError(f"{path}: a folder; expected a variant file (a TOML file beside your .cu files)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VariantFileError(f"{path}: no such variant file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise VariantFileError(f"{path}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise VariantFileError(f"{path}: not TOML ({exc})") from None
    extra = sorted(set(data) - {"variant"})
    if extra:
        raise VariantFileError(f"{path}: unknown key '{extra[0]}' at the top; a variant file holds [[variant]] tables")
    return declared(data.get("variant"), path, path.parent)


def declared(tables: Any, where: Path, base: Path) -> list[Variant]:
    """The variants of [[variant]] tables (dicts, as TOML reads them, or as a script writes them):
    where names them in messages and is their origin; a relative source is found under base."""
    tables = [tables] if isinstance(tables, dict) else tables
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise VariantFileError(f"{where}: declares no variant; add a [[variant]] table")
    variants = [_variant(where, base, i, table) for i, table in enumerate(tables)]
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise VariantFileError(f"{where}: variant '{twice[0]}' is declared twice")
    return variants


def _variant(path: Path, base: Path, index: int, table: dict) -> Variant:
    name = table.get("name")
    where = f"{path}: variant '{name}'" if isinstance(name, str) else f"{path}: variant {index + 1}"

    def fail(key: str, why: str) -> VariantFileError:
        return VariantFileError(f"{where}: {key}: {why}")

    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise VariantFileError(f"{where}: unknown key '{unknown[0]}'; choose from: {', '.join(KEYS)}")
    for key in REQUIRED:
        if key not in table:
            raise fail(key, f"missing ({KEYS[key]})")
    op = _operation(table["op"], fail)
    variant = Variant(name=_identifier(table["name"], "name", fail), backend="cuda", op=op.name, paper="",
                      label=_text(table, "label", name, fail), description=_text(table, "description", "", fail),
                      entry=_identifier(table.get("entry", name), "entry", fail),
                      **_source(base, table["source"], fail), **_parameters(table, op, fail),
                      zero_output=_flag(table, "zero_output", fail), **_build(table, fail), origin=path.resolve(),
                      declaration=MappingProxyType({**table, "source": str((base / table["source"]).resolve())}))
    _check_expressions(variant, op, fail)
    _check_space(variant, fail)
    _check_launch(variant, op, fail)
    return variant


def _operation(name: Any, fail):
    from ..ops import OPERATIONS

    takes = [op for op in OPERATIONS.values() if op.buffers]
    for op in takes:
        if op.name == name:
            return op
    raise fail("op", f"'{name}' is no operation a variant file may declare; choose from: "
                     f"{', '.join(op.name for op in takes)}")


def _identifier(value: Any, key: str, fail) -> str:
    if not isinstance(value, str) or not value.isidentifier() or value.startswith("_"):
        raise fail(key, f"{value!r} is not a name (letters, digits and _, not starting with a digit or _)")
    if key == "name" and value in BUILT_IN:
        raise fail(key, f"'{value}' is a built-in variant; choose another name")
    return value


def _text(table: dict, key: str, default: Any, fail) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise fail(key, f"{value!r} is not text")
    return value


def _flag(table: dict, key: str, fail) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise fail(key, f"{value!r} is not true or false")
    return value


def _build(table: dict, fail) -> dict:
    """target and nvcc_options: an architecture nvcc builds for, options from the safe list."""
    target = table.get("target")
    if target is not None and (not isinstance(target, str) or not re.fullmatch(TARGET, target)):
        raise fail("target", f"{target!r} is no architecture; give sm_XY or sm_XYa, e.g. \"sm_90a\"")
    options = table.get("nvcc_options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise fail("nvcc_options", f"{options!r} is not a list of options such as [\"--use_fast_math\"]")
    unsafe = [o for o in options if unsafe_option(o)]
    if unsafe:
        raise fail("nvcc_options", f"'{unsafe[0]}' is not an option mmbench passes on; choose from: "
                                   f"{SAFE_OPTIONS_TEXT}")
    return {"target": target, "nvcc_options": tuple(options)}


def _source(base: Path, source: Any, fail) -> dict:
    if not isinstance(source, str) or not source.endswith(".cu"):
        raise fail("source", f"{source!r} is not a .cu file's path")
    file = (base / source).resolve()
    if file.is_dir():
        raise fail("source", f"{file} is a folder; expected the kernel's .cu file")
    if not file.is_file():
        raise fail("source", f"{file} does not exist")
    return {"source_dir": file.parent, "family": file.name[:-len(".cu")]}


def _expressions(table: dict, key: str, fail, least: int = 0, most: int = 99) -> tuple[str, ...]:
    value = table.get(key, [])
    items = [value] if isinstance(value, (str, int)) and key in ("block", "grid") else value
    if not isinstance(items, list) or not all(isinstance(e, (str, int)) and not isinstance(e, bool) for e in items):
        raise fail(key, f"{value!r} is not a list of expressions")
    if not least <= len(items) <= most:
        raise fail(key, f"{len(items)} expressions; give {least} to {most}")
    return tuple(str(e) for e in items)


def _values(table: dict, key: str, fail) -> dict[str, tuple[int, ...]]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise fail(key, f"{value!r} is not a table of parameter = value(s)")
    out = {}
    for name, values in value.items():
        values = values if isinstance(values, list) else [values]
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            raise fail(f"{key}.{name}", f"{table[key][name]!r} is not a non-negative integer or a list of them")
        out[name] = tuple(values)
    return out


def _parameters(table: dict, op, fail) -> dict:
    axes, space = _values(table, "params", fail), _values(table, "space", fail)
    defines = table.get("defines", {})
    if not isinstance(defines, dict) or not all(isinstance(e, (str, int)) for e in defines.values()):
        raise fail("defines", f"{defines!r} is not a table of NAME = expression")
    reserved = {*op.dims, *op.buffers, *expressions.FUNCTIONS}
    for key, names in (("params", axes), ("defines", defines)):
        for name in names:
            if not name.isidentifier() or name.startswith("_") or name in reserved:
                raise fail(f"{key}.{name}", f"'{name}' cannot be a parameter's name (it must be an identifier, "
                                            f"not {', '.join(sorted(reserved))})")
    for name in space:
        if name not in axes:
            raise fail(f"space.{name}", f"'{name}' is no parameter; the parameters: {', '.join(axes) or 'none'}")
    both = sorted(set(axes) & set(defines))
    if both:
        raise fail(f"defines.{both[0]}", f"'{both[0]}' is a parameter too")
    return {"axes": MappingProxyType(axes), "space": MappingProxyType({n: space.get(n, axes[n]) for n in axes}),
            "defines": MappingProxyType({n: str(e) for n, e in defines.items()}),
            "threads": _expressions(table, "block", fail, 1, 3), "grid": _expressions(table, "grid", fail, 1, 3),
            "shared": str(table.get("shared", "0")), "constraints": _expressions(table, "constraints", fail),
            "requires": _expressions(table, "requires", fail), **_forms(table, op, fail),
            "arguments": _arguments(table, op, fail),
            "cluster": _expressions(table, "cluster", fail, 1 if "cluster" in table else 0, 3),
            "tensor_maps": _tensor_maps(table, op, fail)}


def _tensor_maps(table: dict, op, fail) -> tuple:
    """tensor_maps: GEMM buffers' TMA maps, each passed where the arguments name map_BUFFER, each
    named argument declared."""
    from ..launch_ex import SWIZZLES
    from .model import TensorMapSpec

    value = table.get("tensor_maps", {})
    if not isinstance(value, dict):
        raise fail("tensor_maps", f"{value!r} is not a table of BUFFER = {{ box = [rows, columns] }}")
    if value and op.name != "gemm":
        raise fail("tensor_maps", f"tensor maps are of GEMM's buffers (A, B, C) for now; this variant is a {op.name}")
    arguments = [a for a in table.get("arguments", []) if isinstance(a, str)]
    out = []
    for buffer, spec in value.items():
        where = f"tensor_maps.{buffer}"
        if buffer not in op.buffers:
            raise fail(where, f"'{buffer}' is no buffer of a {op.name}; choose from: {', '.join(op.buffers)}")
        if not isinstance(spec, dict) or not set(spec) <= {"box", "swizzle"} or "box" not in spec:
            raise fail(where, f"{spec!r} is not {{ box = [rows, columns], swizzle = 128 }}")
        box = _expressions(spec, "box", lambda key, why: fail(f"{where}.{key}", why), 2, 2)
        swizzle = spec.get("swizzle", 128)
        if not isinstance(swizzle, int) or isinstance(swizzle, bool) or swizzle not in SWIZZLES:
            raise fail(f"{where}.swizzle", f"{swizzle!r}; choose from: {', '.join(map(str, SWIZZLES))} (bytes)")
        if MAP_PREFIX + buffer not in arguments:
            raise fail(where, f"declared, but the arguments never name \"{MAP_PREFIX}{buffer}\" (where the kernel "
                              f"takes it)")
        out.append(TensorMapSpec(buffer, box, swizzle))
    for a in arguments:
        if a.startswith(MAP_PREFIX) and a[len(MAP_PREFIX):] not in value:
            raise fail("arguments", f"'{a}' names the tensor map of '{a[len(MAP_PREFIX):]}', which tensor_maps does "
                                    f"not declare")
    return tuple(out)


def _forms(table: dict, op, fail) -> dict:
    """dtypes and layouts: non-empty lists of names the operation takes."""
    out = {}
    for key, choices, default in (("dtypes", op.precisions, "fp32"), ("layouts", op.layouts, "nn")):
        value = table.get(key, [default])
        if not isinstance(value, list) or not value or not all(isinstance(x, str) for x in value):
            raise fail(key, f"{value!r} is not a list of names such as [\"{default}\"]")
        for name in value:
            if name not in choices:
                raise fail(key, f"'{name}' is no {'precision' if key == 'dtypes' else 'layout'} a {op.name} takes; "
                                f"choose from: {', '.join(choices)}")
        if len(set(value)) > 1:  # nothing tells the kernel which one a point is: it would be right at one only
            raise fail(key, f"{value!r}: a kernel is compiled once and told no {key[:-1]}; declare one (another "
                            f"[[variant]] of the same source for another)")
        out[key] = tuple(dict.fromkeys(value))
    return out


def _arguments(table: dict, op, fail) -> tuple[str, ...]:
    value = table.get("arguments", [])
    if not isinstance(value, list) or not value:
        raise fail("arguments", f"{value!r} is not a list of arguments")
    arguments = tuple(_argument(a, fail) for a in value)
    for buffer in op.buffers:  # each reaches the kernel: its pointer once, or its tensor map, or both
        count, mapped = arguments.count(buffer), arguments.count(MAP_PREFIX + buffer)
        if count > 1 or mapped > 1 or count + mapped == 0:
            raise fail("arguments", f"names the buffer '{buffer}' {count} times (its tensor map {mapped}); a "
                                    f"{op.name} kernel takes each of {', '.join(op.buffers)} by pointer, as "
                                    f"{MAP_PREFIX}BUFFER or both, each once ({op.layout})")
    return arguments


def _argument(value: Any, fail) -> str:
    """One argument as Variant.arguments holds it: a buffer's or scale's name and an int32 expression
    as written, a float (1.0) as "float32(1.0)", a typed scalar { type = T, value = V } as "T(V)"."""
    if isinstance(value, bool):
        raise fail("arguments", f"{value!r} is not an argument (a buffer, an expression or a scalar)")
    if isinstance(value, float):
        return f"float32({value!r})"
    if isinstance(value, (str, int)):
        return str(value)
    if not isinstance(value, dict) or set(value) != {"type", "value"}:
        raise fail("arguments", f"{value!r} is not an argument: a buffer's name, an integer expression, a float "
                                f"(1.0), or {{ type = \"float64\", value = 1.0 }}")
    kind, given = value["type"], value["value"]
    if kind not in SCALAR_TYPES:
        raise fail("arguments", f"scalar type {kind!r}; choose from: {', '.join(SCALAR_TYPES)}")
    if kind.startswith("float"):
        if isinstance(given, bool) or not isinstance(given, (int, float)):
            raise fail("arguments", f"{given!r} is not a {kind} value (a number)")
        return f"{kind}({float(given)!r})"
    if isinstance(given, bool) or not isinstance(given, (int, str)):
        raise fail("arguments", f"{given!r} is not a {kind} value (an integer or an integer expression)")
    return f"{kind}({given})"


def _integer_arguments(variant: Variant, op) -> tuple[str, ...]:
    """The integer expressions among a variant's arguments: plain (int32), or int32(...) and int64(...);
    not its buffers, FP8's scales or float scalars."""
    integers = []
    maps = {MAP_PREFIX + t.buffer for t in variant.tensor_maps}
    for a in variant.arguments:
        kind, text = typed_scalar(a) or ("int32", a)
        if a not in op.buffers and a not in SCALES + SCALE_POINTERS and a not in maps and kind.startswith("int"):
            integers.append(text)
    return tuple(integers)


def _check_expressions(variant: Variant, op, fail) -> None:
    """Every expression one the evaluator accepts, naming only what it may: the parameters, and where
    the shape is known (grid, arguments, defines) the shape's dimensions."""
    params, shape = set(variant.axes), set(op.dims)
    scaled = [a for a in variant.arguments if a in SCALES + SCALE_POINTERS]
    if scaled and not all(PRECISIONS[d].scaled for d in variant.dtypes):
        raise fail("arguments", f"'{scaled[0]}' is an FP8 scale; its dtypes {', '.join(variant.dtypes)} have none "
                                f"(only {', '.join(n for n, p in PRECISIONS.items() if p.scaled)} do)")
    integers = _integer_arguments(variant, op)
    groups: list[tuple[str, tuple[str, ...], set[str]]] = [
        ("block", variant.threads, params), ("shared", (variant.shared,), params),
        ("constraints", variant.constraints, params), ("grid", variant.grid, params | shape),
        ("requires", variant.requires, params | shape), ("arguments", tuple(integers), params | shape),
        *((f"defines.{n}", (e,), params | shape) for n, e in variant.defines.items()),
        ("cluster", variant.cluster, params), *((f"tensor_maps.{t.buffer}.box", t.box, params)
                                                 for t in variant.tensor_maps)]
    for key, items, allowed in groups:
        for expression in items:
            try:
                unknown = sorted(expressions.names(expression) - allowed)
            except expressions.ExpressionError as exc:
                raise fail(key, str(exc)) from None
            if unknown:
                may = ", ".join(sorted(allowed)) or "none"
                raise fail(key, f"{expression!r} names '{unknown[0]}', which is no parameter"
                                + (" or dimension" if allowed - params else "") + f"; it may name: {may}")


def _evaluation_failure(variant: Variant, tries: int = 1000) -> str:
    """"; <why a constraint cannot be evaluated>" for the first of the space's first `tries` points at
    which one cannot (a division by zero there made the point not count), or ""."""
    import itertools

    names = list(variant.space)
    for values in itertools.islice(itertools.product(*(variant.space[n] for n in names)), tries):
        bound = dict(zip(names, values))
        for constraint in variant.constraints:
            try:
                expressions.evaluate(constraint, bound)
            except expressions.EvaluationError as exc:
                return f"; {exc}"
            except NameError:
                continue
    return ""


def _check_space(variant: Variant, fail) -> None:
    """A tuning space with points, and defaults of which one at least may be built."""
    try:  # a large space is never listed here: its first point found is enough
        points = tuning_space(variant) if raw_size(variant) <= LARGE_SPACE else has_points(variant)
        defaults = param_points(variant)
    except (ArithmeticError, expressions.ExpressionError, NameError) as exc:
        raise fail("constraints", f"cannot be evaluated ({exc})") from None
    if variant.axes and not points:  # (a kernel without parameters has one point, its only build)
        raise fail("space", "no point of the parameter space meets the constraints (zero points)"
                   + _evaluation_failure(variant))
    if all(variant.problem(p) for p in defaults):
        raise fail("params", f"the defaults cannot be built: {variant.problem(defaults[0])}")


# The most dynamic shared memory a block of any CUDA GPU may ask for (Hopper's 227 KiB, opted in):
# more can never launch, so a variant asking for it at its defaults is refused when it is read.
MAX_DYNAMIC_SHARED = 227 * 1024
# The shapes a variant's launch is evaluated at when it is read: its operation's first awkward shape
# (1 x 1 x 1 for GEMM) and 1024 in every dimension.
LOAD_SIZES = ("1", "1024")


def _check_launch(variant: Variant, op, fail) -> None:
    """What can be known when the file is read about the launch at its defaults: every expression of
    block, shared, grid, requires and the integer arguments evaluates (no division by zero) at the
    defaults and at LOAD_SIZES; a block has at least one thread in each dimension, a grid at least one
    block; the dynamic shared memory is within what any GPU allows."""
    from ..ops.declared import dimensions

    integers = _integer_arguments(variant, op)
    # the cluster and the boxes hold at every point a tuning may try (a large space: at its defaults)
    for params in tuning_space(variant) if raw_size(variant) <= LARGE_SPACE else param_points(variant):
        _check_cluster_and_boxes(variant, dict(params), fail)
    for params in [p for p in param_points(variant) if not variant.problem(p)]:
        bound = dict(params)
        for key, items in (("block", variant.threads), ("shared", (variant.shared,))):
            for expression in items:
                value = _value(key, expression, bound, fail)
                if key == "block" and value < 1:
                    raise fail(key, f"{expression!r} is {value} at {_at(bound)}: a block has at least one thread "
                                    f"in each dimension")
                if key == "shared" and value > MAX_DYNAMIC_SHARED:
                    raise fail(key, f"{expression!r} is {value} bytes at {_at(bound)}: more dynamic shared memory "
                                    f"than any GPU gives a block ({MAX_DYNAMIC_SHARED} bytes)")
        for size in LOAD_SIZES:
            shape = op.parse_sizes(size)[0]
            at = {**dimensions(op, shape), **bound}
            for expression in variant.grid:
                value = _value("grid", expression, at, fail)
                if value < 1:
                    raise fail("grid", f"{expression!r} is {value} at {_at(at)}: a grid has at least one block in "
                                       f"each dimension")
            for key, items in (("requires", variant.requires), ("arguments", tuple(integers)),
                               *((f"defines.{n}", (e,)) for n, e in variant.defines.items())):
                for expression in items:
                    _value(key, expression, at, fail)


def _check_cluster_and_boxes(variant: Variant, bound: dict, fail) -> None:
    """At a default point: a cluster of 1 to MAX_CLUSTER_BLOCKS blocks, each side at least 1; a tensor
    map's box of 1 to 256 elements a side (TMA's limits)."""
    from ..launch_ex import MAX_BOX, tensor_map_problem

    sides = [_value("cluster", e, bound, fail) for e in variant.cluster]
    if any(side < 1 for side in sides) or int(np.prod(sides or [1])) > MAX_CLUSTER_BLOCKS:
        raise fail("cluster", f"{sides} at {_at(bound)}: a cluster is 1 to {MAX_CLUSTER_BLOCKS} blocks, each side "
                              f"at least 1")
    precision = PRECISIONS[variant.dtypes[0]]  # a variant file's one precision: its elements' widths
    widths = {"A": precision.a_type.itemsize, "B": precision.b_type.itemsize, "C": precision.c_type.itemsize}
    for t in variant.tensor_maps:
        box = [_value(f"tensor_maps.{t.buffer}.box", e, bound, fail) for e in t.box]
        if not all(1 <= b <= MAX_BOX for b in box):
            raise fail(f"tensor_maps.{t.buffer}.box", f"{box} at {_at(bound)}: each side 1 to {MAX_BOX} elements")
        problem = tensor_map_problem(1024, 1024, widths[t.buffer], tuple(box), t.swizzle)  # the box alone
        if problem:
            raise fail(f"tensor_maps.{t.buffer}.box", f"{box} at {_at(bound)}: {problem}")


def _value(key: str, expression: str, bound: dict, fail) -> int:
    try:
        return int(expressions.evaluate(expression, bound))
    except expressions.ExpressionError as exc:
        raise fail(key, str(exc)) from None


def _at(bound: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(bound.items()))


def use(paths: Iterable[Path | str]) -> list[Variant]:
    """Load variant files into the registry, after the built-in variants, every command then taking
    their variants by name; a file loaded before is read again (its variants replaced: you edited
    it). A name another loaded file declares is refused. The variants loaded, in order."""
    out = []
    for path in paths:
        out += _registered(load(path), Path(path))
    return out


def use_declared(tables: Any, where: Path | str = PYTHON, base: Path | str = ".") -> list[Variant]:
    """[[variant]] tables given as dicts into the registry (replacing those declared before under the
    same name `where`): the Python API's variants, and a worker's copy of a point's variant."""
    return _registered(declared(tables, Path(where), Path(base)), Path(where))


def _registered(variants: list[Variant], where: Path) -> list[Variant]:
    for v in variants:
        other = REGISTRY.get(v.name)
        if other is not None and other.origin != v.origin:
            raise VariantFileError(f"{where}: variant '{v.name}' is declared in {other.origin} too")
    replace_from(where.resolve(), variants)
    return variants


def loaded() -> list[str]:
    """The variant files loaded in this process, for a process it starts (environment())."""
    return list(dict.fromkeys(str(v.origin) for v in REGISTRY.values() if v.origin))


def environment() -> dict[str, str]:
    """This process's environment with the variant files it loaded named in $MMBENCH_VARIANT_FILES,
    for a process it starts that must know the same variants (a profiler's target)."""
    return {**os.environ, ENVIRONMENT: os.pathsep.join(dict.fromkeys([*from_environment(), *loaded()]))}


def from_environment() -> list[str]:
    """The variant files $MMBENCH_VARIANT_FILES names (separated as PATH is: ':' here)."""
    return [p for p in os.environ.get(ENVIRONMENT, "").split(os.pathsep) if p]


ENVIRONMENT = "MMBENCH_VARIANT_FILES"
