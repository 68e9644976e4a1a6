"""Variant files: your kernels declared in TOML (mmbench/variants/files.py), the examples/ that ship
with the project, and the commands that take them. No GPU: loading, refusals, the declared launch's
arguments and grid, and compiling with nvcc (the CI compile check of every example kernel)."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mmbench import source
from mmbench.cli import main
from mmbench.engine.wire import unwire, wire
from mmbench.engine.plan import Point, kernel_key
from mmbench.ops import get_op
from mmbench.ops.base import DeviceBuffers
from mmbench.ops.declared import declared_arguments, declared_grid
from mmbench.sizes import Shape
from mmbench.variants import REGISTRY, files, registry, tuning_space
from mmbench.variants.model import compile_params

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*/*.toml"))


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    """Every test leaves the registry as it found it (loading a file adds to it), and reads no
    variant files from the environment of whoever runs the tests."""
    monkeypatch.delenv(files.ENVIRONMENT, raising=False)
    before = dict(registry._ENTRIES)
    yield
    registry._ENTRIES.clear()
    registry._ENTRIES.update(before)


GOOD = """
[[variant]]
name = "mine"
op = "gemm"
source = "mine.cu"
entry = "my_kernel"
arguments = ["C", "A", "B", "m", "n * 1", "k"]
block = ["T", "T"]
grid = ["ceil_div(n, T)", "ceil_div(m, T)"]
params = { T = 16 }
space = { T = [8, 16, 32, 64] }
constraints = ["T * T <= 1024"]
defines = { WIDTH = "n" }
"""
KERNEL = """__global__ void my_kernel(float *C, const float *A, const float *B, int m, int n, int k) {
    int i = blockIdx.y * T + threadIdx.y, j = blockIdx.x * T + threadIdx.x;
    if (i < m && j < WIDTH) { float s = 0; for (int p = 0; p < k; ++p) s += A[i * k + p] * B[p * WIDTH + j];
                              C[i * WIDTH + j] = s; }
}
"""


def write(tmp_path, toml=GOOD, kernel=KERNEL) -> Path:
    (tmp_path / "mine.cu").write_text(kernel)
    path = tmp_path / "mine.toml"
    path.write_text(toml)
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_variant_file_declares_a_variant_as_the_registry_holds_them(tmp_path):
    (v,) = files.use([write(tmp_path)])
    assert REGISTRY["mine"] is v and list(REGISTRY)[-1] == "mine"  # after the built-in ones
    assert (v.op, v.backend, v.entry_name, v.family, v.source_dir) == ("gemm", "cuda", "my_kernel", "mine", tmp_path)
    assert source.source_path(v) == tmp_path / "mine.cu"
    assert tuning_space(v) == [(("T", 8),), (("T", 16),), (("T", 32),)]  # 64 x 64 threads break the constraint
    assert v.origin == (tmp_path / "mine.toml").resolve() and v.label == "mine"


def test_shape_bound_defines_join_the_parameters_the_kernel_is_compiled_with(tmp_path):
    (v,) = files.use([write(tmp_path)])
    assert compile_params(v, (("T", 16),), {"m": 5, "n": 7, "k": 9}) == (("T", 16), ("WIDTH", 7))
    point = Point(v, (("T", 16),), Shape(5, 7, 9), "cold")
    assert point.compiled_params == (("T", 16), ("WIDTH", 7))
    assert kernel_key(v, point.compiled_params) == f"mine[T=16,WIDTH=7]@{source.source_hash(v)}"
    built_in = REGISTRY["naive"]
    assert compile_params(built_in, (("BLOCK", 16),), {"m": 5, "n": 7, "k": 9}) == (("BLOCK", 16),)


def test_the_declared_launch_takes_the_kernels_own_argument_order_and_grid(tmp_path):
    (v,) = files.use([write(tmp_path)])
    op = get_op("gemm")
    bufs = DeviceBuffers(("bufA", "bufB"), "bufC", 35)
    args = declared_arguments(op, v, (("T", 16),), Shape(5, 7, 9), bufs)
    assert args[:3] == ["bufC", "bufA", "bufB"]
    assert [(type(a), int(a)) for a in args[3:]] == [(np.int32, 5), (np.int32, 7), (np.int32, 9)]
    assert declared_grid(op, v, (("T", 16),), Shape(100, 33, 9)) == (3, 7, 1)
    with pytest.raises(ValueError, match="outside CUDA's limits"):
        declared_grid(op, v, (("T", 16),), Shape(70000 * 16, 1, 1))


def test_an_edited_kernel_has_another_source_hash_so_tuned_parameters_do_not_follow_it(tmp_path):
    (v,) = files.use([write(tmp_path)])
    before = source.source_hash(v)
    (tmp_path / "mine.cu").write_text(KERNEL + "// edited\n")
    assert source.source_hash(v) != before


def test_the_entry_point_is_read_from_the_compiled_module(tmp_path):
    """A C++ kernel (no extern "C") is found by its mangled symbol; a name the module lacks is one line
    naming what it has; nvcc's first error line for a source that does not compile."""
    (v,) = files.use([write(tmp_path)])
    params = (("T", 16), ("WIDTH", 7))
    reports = source.compile_reports(v, params)
    assert source.entry_symbol(v, reports).startswith("_Z9my_kernel")
    assert source.compile_report(v, params).spills is False
    (w,) = files.use([write(tmp_path, GOOD.replace('"my_kernel"', '"their_kernel"'))])
    with pytest.raises(source.CompileError, match=r"mine.cu: entry point 'their_kernel' is not in the compiled "
                                                   r"module; its entry functions: _Z9my_kernel"):
        source.compile_reports(w, params)
    (x,) = files.use([write(tmp_path, kernel=KERNEL.replace("float s = 0;", "float s = 0"))])
    with pytest.raises(source.CompileError, match=r"mine.cu\(\d+\): error"):
        source.compile_reports(x, params)


def test_an_overloaded_entry_point_must_be_declared_extern_c(tmp_path):
    overload = KERNEL + "__global__ void my_kernel(float *C) { C[0] = T; }\n"
    (v,) = files.use([write(tmp_path, kernel=overload)])
    with pytest.raises(source.CompileError, match="has 2 overloads"):
        source.compile_reports(v, (("T", 16), ("WIDTH", 7)))


MISTAKES = [  # (what replaces what in GOOD, the key the message names, words it says)
    ('name = "mine"', 'name = "mine"\nblok = 3', "unknown key 'blok'; choose from: name, op"),
    ('block = ["T", "T"]\n', "", "block: missing"),
    ('op = "gemm"', 'op = "conv"', "op: 'conv' is no operation a variant file may declare; choose from: gemm, gemv, "
                                   "transpose"),
    ('op = "gemm"', 'op = "copy"', "op: 'copy' is no operation"),
    ('name = "mine"', 'name = "dbuf"', "name: 'dbuf' is a built-in variant"),
    ('name = "mine"', 'name = "2fast"', "name: '2fast' is not a name"),
    ('source = "mine.cu"', 'source = "nothere.cu"', "source: "),
    ('source = "mine.cu"', 'source = "mine.toml"', "source: 'mine.toml' is not a .cu file"),
    ('"ceil_div(n, T)"', '"ceil_div(n, TT)"', "grid: 'ceil_div(n, TT)' names 'TT', which is no parameter or "
                                              "dimension; it may name: T, k, m, n"),
    ('block = ["T", "T"]', 'block = ["T", "n"]', "block: 'n' names 'n', which is no parameter; it may name: T"),
    ('"T * T <= 1024"', '"T.bit_length() < 9"', "constraints: expression 'T.bit_length() < 9': T.bit_length() is not "
                                                "allowed"),
    ('"T * T <= 1024"', '"open(\'x\') == 0"', "constraints: expression \"open('x') == 0\": open('x') is not allowed"),
    ('"T * T <= 1024"', '"T // 2 ** 40"', "is not allowed"),
    ('"ceil_div(n, T)"', '"().__class__"', "grid: expression '().__class__'"),
    ('WIDTH = "n"', "WIDTH = \"'n'\"", "defines.WIDTH: expression \"'n'\": 'n' is not allowed"),
    ('"C", "A", "B"', '"C", "A", "A"', "arguments: names the buffer 'A' 2 times (its tensor map 0); a gemm kernel "
                                       "takes each of A, B, C by pointer, as map_BUFFER or both, each once (C (m x n)"),
    ('"C", "A", "B"', '"C", "map_A", "B"', "arguments: 'map_A' names the tensor map of 'A', which tensor_maps does "
                                           "not declare"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntensor_maps = { A = { box = [64, 64] } }',
     'tensor_maps.A: declared, but the arguments never name "map_A"'),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntensor_maps = { x = { box = [64, 64] } }',
     "tensor_maps.x: 'x' is no buffer of a gemm; choose from: A, B, C"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntensor_maps = { A = { rows = 64 } }',
     "tensor_maps.A: {'rows': 64} is not { box = [rows, columns], swizzle = 128 }"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntensor_maps = { A = { box = [64] } }',
     "tensor_maps.A.box: 1 expressions; give 2 to 2"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntensor_maps = { A = { box = [64, 64], swizzle = 16 } }',
     "tensor_maps.A.swizzle: 16; choose from: 0, 32, 64, 128 (bytes)"),
    ('arguments = ["C", "A", "B"', 'tensor_maps = { A = { box = ["T * 32", "m"] } }\narguments = ["C", "map_A", "B"',
     "tensor_maps.A.box: 'm' names 'm', which is no parameter; it may name: T"),
    ('arguments = ["C", "A", "B"', 'tensor_maps = { A = { box = ["T * 32", 32] } }\narguments = ["C", "map_A", "B"',
     "tensor_maps.A.box: [512, 32] at T = 16: each side 1 to 256 elements"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ncluster = ["T", 1]',
     "cluster: [16, 1] at T = 16: a cluster is 1 to 8 blocks, each side at least 1"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ncluster = ["T - 16"]',
     "cluster: [-8] at T = 8: a cluster is 1 to 8 blocks"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ncluster = ["n"]',
     "cluster: 'n' names 'n', which is no parameter; it may name: T"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ncluster = []', "cluster: 0 expressions; give 1 to 3"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ncluster = ["T // 2"]',
     "cluster: [16] at T = 32: a cluster is 1 to 8 blocks"),  # a point of the space, not the defaults
    ('arguments = ["C", "A", "B"', 'tensor_maps = { A = { box = [64, 64], swizzle = 128.0 } }\narguments = ["C", '
                                   '"map_A", "B"', "tensor_maps.A.swizzle: 128.0; choose from: 0, 32, 64, 128"),
    ('arguments = ["C", "A", "B"', 'tensor_maps = { A = { box = [64, 64], swizzle = 128 } }\narguments = ["C", '
                                   '"map_A", "B"', "tensor_maps.A.box: [64, 64] at T = 8: a box row of 256 bytes is "
                                                   "wider than its 128-byte swizzle"),
    ('"T * T <= 1024"', '"T > 64"', "space: no point of the parameter space meets the constraints (zero points)"),
    ("params = { T = 16 }", "params = { T = 64 }", "params: the defaults cannot be built: constraint 'T * T <= 1024'"),
    ("params = { T = 16 }", "params = { T = -1 }", "params.T: -1 is not a non-negative integer"),
    ("space = { T = [8, 16, 32, 64] }", "space = { U = [1] }", "space.U: 'U' is no parameter; the parameters: T"),
    ("params = { T = 16 }", "params = { T = 16, m = 3 }", "params.m: 'm' cannot be a parameter's name"),
    ('WIDTH = "n"', 'T = "n"', "defines.T: 'T' is a parameter too"),
    ('zero_output', 'zero_output', ""),  # placeholder keeps the table aligned: GOOD has no zero_output
    ('"T * T <= 1024"', '"T >> -1 < 9"', "constraints: expression 'T >> -1 < 9': T >> -1 shifts by a negative count"),
    ('"T * T <= 1024"', '"min(T) < 9"', "constraints: expression 'min(T) < 9': min(T) gives min 1 argument; it takes "
                                        "at least 2"),
    ('"ceil_div(n, T)"', '"ceil_div(n)"', "grid: expression 'ceil_div(n)': ceil_div(n) gives ceil_div 1 argument; it "
                                          "takes exactly 2"),
    ('"ceil_div(n, T)"', '"ceil_div(n, T - 16)"', "grid: expression 'ceil_div(n, T - 16)' cannot be evaluated at T = 16, "
                                                  "n = 1: division by zero"),
    ('block = ["T", "T"]', 'block = ["T - 16", "T"]', "block: 'T - 16' is 0 at T = 16: a block has at least one thread"),
    ('"ceil_div(n, T)"', '"ceil_div(n, T) - 1"', "grid: 'ceil_div(n, T) - 1' is 0 at T = 16, k = 1, m = 1, n = 1: a grid "
                                                 "has at least one block"),
    ('block = ["T", "T"]', 'block = ["T", "T"]\nshared = "1024 * 1024"', "shared: '1024 * 1024' is 1048576 bytes at "
                                                                         "T = 16: more dynamic shared memory than any GPU"),
    ('"T * T <= 1024"', '"T * T // (T - T) <= 1024"', "(zero points); expression 'T * T // (T - T) <= 1024' cannot be "
                                                      "evaluated at T = 8: division by zero"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntarget = "compute_90a"',
     "target: 'compute_90a' is no architecture; give sm_XY or sm_XYa"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\nnvcc_options = ["-I/etc"]',
     "nvcc_options: '-I/etc' is not an option mmbench passes on; choose from: --use_fast_math"),
    ('defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\nnvcc_options = "--use_fast_math"',
     "nvcc_options: '--use_fast_math' is not a list of options"),
]


@pytest.mark.parametrize("old, new, said", [m for m in MISTAKES if m[2]])
def test_a_mistake_is_one_line_naming_the_file_the_variant_and_the_key(tmp_path, old, new, said):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(files.VariantFileError) as caught:
        files.use([path])
    message = str(caught.value)
    assert "\n" not in message and said in message
    assert message.startswith(f"{path}: variant ")
    assert "mine" not in REGISTRY and "dbuf" in REGISTRY and REGISTRY["dbuf"].origin is None


def test_tensor_maps_and_a_cluster_are_declared_and_reach_the_launch(tmp_path, monkeypatch):
    """A file's tensor maps go where its arguments name them (map_A), encoded from the buffer as the
    layout stores it with the box at the point's parameters; its cluster joins the variant, and both
    send the launch through cuda-python."""
    from mmbench.ops import declared
    from mmbench.ops.base import Unsupported

    text = GOOD.replace('"C", "A", "B"', '"C", "map_A", "B"').replace(
        'defines = { WIDTH = "n" }', 'defines = { WIDTH = "n" }\ntensor_maps = { A = { box = ["T * 4", 32], '
        'swizzle = 128 } }\ncluster = [2, 1]')
    (v,) = files.use([write(tmp_path, text)])
    assert v.launches_ex and v.cluster == ("2", "1") and v.cluster_dims((("T", 16),)) == (2, 1, 1)
    assert [(t.buffer, t.box, t.swizzle) for t in v.tensor_maps] == [("A", ("T * 4", "32"), 128)]
    encoded = []
    monkeypatch.setattr("mmbench.launch_ex.encode_tensor_map",
                        lambda pointer, rows, cols, dtype, box, swizzle: encoded.append(
                            (pointer, rows, cols, np.dtype(dtype).name, box, swizzle)) or "the map of A")
    bufs = DeviceBuffers((7, 8), 9, 35, precision="bf16", layout="nt")
    args = declared.declared_arguments(get_op("gemm"), v, (("T", 16),), Shape(5, 7, 16), bufs)
    assert args[:3] == [9, "the map of A", 8]
    assert encoded == [(7, 5, 16, "bfloat16", (64, 32), 128)]
    # a shape whose rows TMA cannot describe is a skipped point naming the map, not a failed launch
    with pytest.raises(Unsupported, match=r"map_A \(5 x 9, box 64 x 32\): TMA needs rows of a multiple of 16 bytes"):
        declared.declared_arguments(get_op("gemm"), v, (("T", 16),), Shape(5, 7, 9), bufs)


@pytest.mark.parametrize("text, said", [
    ("[[variant]\nname = 1", "not TOML"), ("title = 'x'", "unknown key 'title' at the top"),
    ("", "declares no variant"), (GOOD + GOOD, "variant 'mine' is declared twice")])
def test_a_file_that_is_no_variant_file_is_one_line(tmp_path, text, said):
    path = write(tmp_path, text)
    with pytest.raises(files.VariantFileError, match=said):
        files.load(path)


def test_a_name_in_two_files_is_refused_and_a_file_read_again_replaces_its_variants(tmp_path):
    path = write(tmp_path)
    files.use([path])
    other = tmp_path / "sub"
    other.mkdir()
    with pytest.raises(files.VariantFileError, match="variant 'mine' is declared in .*mine.toml too"):
        files.use([write(other)])
    path.write_text(GOOD.replace('name = "mine"', 'name = "renamed"'))
    files.use([path])
    assert "renamed" in REGISTRY and "mine" not in REGISTRY


def test_reading_a_variant_file_runs_nothing_it_holds(tmp_path):
    """An expression that would run code is refused before anything is evaluated."""
    marker = tmp_path / "ran"
    path = write(tmp_path, GOOD.replace('"T * T <= 1024"', f"'__import__(\"os\").system(\"touch {marker}\")'"))
    for args in (["-f", path, "list"], ["-f", path, "run", "-v", "mine", "-s", "64", "--dry-run"], ["check", path]):
        result = invoke(*args)
        assert result.exit_code == 2 and "is not allowed" in result.output
    assert not marker.exists()


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_every_example_loads_and_compiles_at_every_point_of_its_space_without_spills(example):
    """The CI compile check of the examples: every tuning point, at a shape of its operation."""
    variants = files.use([example])
    assert variants and all(v.origin == example.resolve() for v in variants)
    for v in variants:
        op = get_op(v.op)
        shape = op.parse_sizes(op.tested_sizes)[-1]
        for params in tuning_space(v):
            if v.problem(params):
                continue
            report = source.compile_report(v, compile_params(v, params, {d: getattr(shape, d) for d in op.dims}))
            assert not report.spills, (v.name, params)


def test_every_operation_that_takes_variant_files_has_an_example():
    ops = {files.load(p)[0].op for p in EXAMPLES}
    assert ops == {"gemm", "gemv", "transpose"}


def test_every_command_takes_variant_files_by_option_and_environment(tmp_path, monkeypatch):
    path = write(tmp_path)
    result = invoke("-f", path, "list", "-v", "mine")
    assert result.exit_code == 0, result.output
    assert f"variant file {path.resolve()}" in result.output and "arguments: (C, A, B, m, n * 1, k)" in result.output
    assert "defines bound to the shape: WIDTH = n" in result.output
    result = invoke("-f", path, "run", "-v", "mine,cublas", "-s", "33,64", "--dry-run", "-o", tmp_path / "r.csv")
    assert result.exit_code == 0 and "mine" in result.output and "cublas" in result.output
    result = invoke("-f", path, "tune", "-v", "mine", "-s", "64", "--strategy", "brute", "--dry-run")
    assert result.exit_code == 0, result.output
    monkeypatch.setenv(files.ENVIRONMENT, str(path))
    assert invoke("list", "-v", "mine").exit_code == 0
    assert not (tmp_path / "r.csv").exists()


def test_variant_file_mistakes_on_the_command_line_are_one_line_exit_2(tmp_path):
    path = write(tmp_path, GOOD.replace("block =", "blocks =", 1))
    result = invoke("-f", path, "list")
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "unknown key 'blocks'" in result.output
    result = invoke("-f", tmp_path / "none.toml", "list")
    assert result.exit_code == 2 and "no such variant file" in result.output
    result = invoke("run", "-f", path)
    assert result.exit_code == 2 and "it goes before the command: mmbench --variant-file FILE" in result.output


def test_check_compiles_and_reports_and_fails_on_a_kernel_that_does_not_build(tmp_path):
    path = write(tmp_path)
    result = invoke("check", path, "--compile-only")
    assert result.exit_code == 0, result.output
    assert "_Z9my_kernel" in result.output and "compiled only" in result.output
    broken = write(tmp_path, kernel=KERNEL.replace("float s = 0;", "float s = 0"))
    result = invoke("check", broken)
    assert result.exit_code == 1 and "does not build: mine.cu(" in result.output and "error" in result.output
    assert result.output.splitlines()[0].startswith("mine [T=16] does not build")  # no empty table before it


def test_a_cluster_worker_loads_the_variant_file_a_point_names(tmp_path):
    (v,) = files.use([write(tmp_path)])
    point = Point(v, (("T", 16),), Shape(5, 7, 9), "cold")
    sent = wire(point)
    registry._ENTRIES.pop("mine")  # a fresh worker process: the file not loaded
    assert unwire(sent).variant.name == "mine" and "mine" in REGISTRY


def test_a_script_declares_variants_as_dicts_and_a_worker_builds_them_from_the_point(tmp_path):
    """The same [[variant]] table as a dict (the Python API's form); a point on the wire carries what
    was declared, so a process that never saw the file or the dict builds the same variant."""
    import tomllib

    table = tomllib.loads(write(tmp_path).read_text())["variant"][0]
    (v,) = files.use_declared(table, base=tmp_path)
    assert v.origin.name == files.PYTHON and v.source_dir == tmp_path and REGISTRY["mine"] is v
    sent = wire(Point(v, (("T", 16),), Shape(5, 7, 9), "cold"))
    registry._ENTRIES.pop("mine")
    again = unwire(sent).variant
    assert again == v and again.declaration == v.declaration and again.source_dir == tmp_path
    with pytest.raises(files.VariantFileError, match="<python>: variant 'mine': source: "):
        files.use_declared({**table, "source": "elsewhere.cu"}, base=tmp_path)


def test_a_variant_files_one_parameter_is_tuned_for_runs_unlike_a_papers_block_axis(tmp_path):
    from mmbench.engine.plan import Selection
    from mmbench.tuning.for_runs import tunable

    (v,) = files.use([write(tmp_path)])
    assert list(v.space) == ["T"]
    assert tunable(Selection((v, REGISTRY["best"]), "64", {})) == [v]
    assert tunable(Selection((v,), "64", {"T": (8,)})) == []  # set by the user: not tuned


def test_a_fault_in_your_kernel_names_the_rerun_command_with_its_variant_file(tmp_path):
    from mmbench.engine.points_isolated import rerun_command

    path = write(tmp_path)
    (v,) = files.use([path])
    command = rerun_command(Point(v, (("T", 16),), Shape(64, 64, 64), "cold"), "compute-sanitizer")
    assert command.startswith(f"compute-sanitizer mmbench -f {path.resolve()} run -v mine --sizes 64 --params T=16")


def test_a_loaded_function_is_found_again_without_reading_its_source(tmp_path, monkeypatch):
    """Gpu.function (no GPU: its module loader faked) resolves a variant file's C++ symbol once, from
    what nvcc built, and serves later calls from what it loaded."""
    from types import SimpleNamespace

    from mmbench import device

    (v,) = files.use([write(tmp_path)])
    gpu = device.Gpu.__new__(device.Gpu)
    gpu._modules, gpu._functions, gpu._building, gpu.facts = {}, {}, {}, SimpleNamespace(arch="sm_90")
    asked = []
    gpu.drv = SimpleNamespace(module_from_buffer=lambda cubin: SimpleNamespace(
        get_function=lambda name: asked.append(name) or name))
    params = (("T", 16), ("WIDTH", 7))
    first = gpu.function(v, params)
    assert first.startswith("_Z9my_kernel") and asked == [first]
    monkeypatch.setattr(source, "compile_reports", lambda *a: pytest.fail("the symbol was looked up again"))
    assert gpu.function(v, params) == first and gpu.function(v, params, "my_kernel") == first and len(asked) == 1


WGMMA_KERNEL = KERNEL.replace("int i = blockIdx.y", 'asm volatile("wgmma.fence.sync.aligned;");\n    int i = blockIdx.y')


def test_a_target_and_safe_options_reach_nvcc_and_the_gpu_check(tmp_path):
    """A kernel with a wgmma instruction builds only for sm_90a: its variant file's target gets it
    built (nvcc's command names the target and the options); without it, nvcc refuses. A GPU of
    another architecture skips the variant's points, saying why."""
    from mmbench import source

    toml = GOOD + 'target = "sm_90a"\nnvcc_options = ["--use_fast_math", "--maxrregcount=64"]\n'
    (variant,) = files.use([write(tmp_path, toml, WGMMA_KERNEL)])
    assert variant.target == "sm_90a" and variant.nvcc_options == ("--use_fast_math", "--maxrregcount=64")
    assert source.build_arch(variant, "sm_90") == "sm_90a"
    assert source.nvcc_options(variant) == (*source.NVCC_OPTIONS, "--use_fast_math", "--maxrregcount=64")
    params = (("T", 16), ("WIDTH", 64))
    assert source.compile_report(variant, params, "sm_90").registers <= 64
    assert source.target_problem(variant, "sm_90") is None
    assert source.target_problem(variant, "sm_80") == "mine is built for sm_90a; this GPU is sm_80"
    (plain,) = files.use([write(tmp_path, GOOD, WGMMA_KERNEL)])
    with pytest.raises(source.CompileError, match="wgmma"):
        source.compile_report(plain, params, "sm_90")


def test_a_space_of_millions_is_never_built_by_commands_that_do_not_need_it(tmp_path):
    """Ten million raw points: reading the file, listing and sampling it count and draw without
    building the space (each well under a second here; it took about a minute when it was built)."""
    import time

    from mmbench.tuning import strategies
    from mmbench.variants.model import count_space, space_text

    many = ", ".join(f"P{i} = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" for i in range(6))
    toml = GOOD.replace("space = { T = [8, 16, 32, 64] }", f"space = {{ T = [8, 16, 32, 64], {many} }}").replace(
        "params = { T = 16 }", "params = { T = 16, " + ", ".join(f"P{i} = 0" for i in range(6)) + " }")
    started = time.perf_counter()
    (variant,) = files.use([write(tmp_path, toml)])
    assert space_text(variant) == "more than 100000" and count_space(variant) == (100000, False)
    chosen = strategies.choose(variant, "random", 20, seed=1)
    assert len(chosen) == 20 and len(set(chosen)) == 20 and not any(variant.violated(p) for p in chosen)
    assert time.perf_counter() - started < 10
    with pytest.raises(strategies.TuneError, match=r"are never listed\): use --strategy random"):
        strategies.choose(variant, "brute", None)


def test_a_variant_the_registry_lacks_travels_whole_and_pickles(tmp_path):
    """A variant file's variant this process does not hold under its name (its mappings, defines and
    declaration among them) goes to a worker whole: it pickles, and comes back equal."""
    import pickle

    from mmbench.engine.wire import unwire, wire

    (v,) = files.use([write(tmp_path)])
    point = Point(v, (("T", 16),), Shape(5, 7, 9), "cold")
    registry._ENTRIES.pop("mine")
    again = unwire(pickle.loads(pickle.dumps(wire(point))))
    assert again == point and again.variant.defines == v.defines and again.variant.declaration == v.declaration


def test_a_large_spaces_count_multiplies_its_free_parameters_and_agrees_with_walking_every_point():
    """count_space multiplies the parameters no constraint names (dbuf's ORDER and VEC4) instead of
    walking them: the count must be every point the walk yields, and a cap still stops it."""
    from mmbench.variants.model import LARGE_SPACE, _valid_points, count_space, raw_size

    dbuf = REGISTRY["dbuf"]
    assert raw_size(dbuf) > LARGE_SPACE  # counted, never built
    walked = sum(1 for _ in _valid_points(dbuf))
    assert count_space(dbuf) == (walked, True) == (79200, True)
    assert count_space(dbuf, cap=1000) == (1000, False)
    assert count_space(dbuf, cap=79200) == (79200, True) and count_space(dbuf, cap=79199) == (79199, False)
