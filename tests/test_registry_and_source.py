"""Registry consistency and the CI compile check: every variant at every parameter point."""

import random
import re

import pytest

from mmbench import source
from mmbench.ops import get_op
from mmbench.ops.gemm import accumulates, entries, launch_geometry, launches
from mmbench.places import SHIPPED_CACHE
from mmbench.tuning.cache import entry_form, load_cache
from mmbench.variants import (REGISTRY, VariantError, format_params, get_variant, param_points, parse_params,
                              tuning_space)
from mmbench.variants.model import compile_params

CUDA_VARIANTS = [v for v in REGISTRY.values() if v.backend == "cuda"]
SAMPLE_PER_SPACE = 4


def compile_points(variant):
    """(params, used) for every point of a small tuning space (the paper's blocks); for the
    ladder's spaces of hundreds of points, the defaults and every configuration the shipped
    tuning cache holds (used: run builds them), and a seeded sample (the tuner itself compiles
    and verifies whatever it tries, and skips configurations that spill)."""
    space = tuning_space(variant)
    if not space:  # no tuning space: its default point is all it runs
        return [(p, True) for p in param_points(variant)]
    if len(space) <= 3:
        return [(p, True) for p in space]
    cached = [parse_params(e["params"]) for e in load_cache(SHIPPED_CACHE).values()
              if e["variant"] == variant.name and e["source_hash"] == source.source_hash(variant)]
    used = list(dict.fromkeys(param_points(variant) + cached))
    sample = random.Random(variant.name).sample(space, SAMPLE_PER_SPACE)
    return [(p, True) for p in used] + [(p, False) for p in sample if p not in used]


def typed_points(variant):
    """A typed kernel's points at each precision and layout it takes (its #defines: DTYPE, TRANS_A,
    TRANS_B), at its defaults and at every configuration the shipped cache holds for that form (run
    builds them); at fp32, nn only where it takes them."""
    if len(variant.dtypes) < 2 and len(variant.layouts) < 2 and takes_fp32_nn(variant):
        return []
    forms = [(d, lay) for d in variant.dtypes for lay in variant.layouts if (d, lay) != ("fp32", "nn")]
    cached = {}
    for e in load_cache(SHIPPED_CACHE).values():
        if e["variant"] == variant.name and e["source_hash"] == source.source_hash(variant):
            cached.setdefault(entry_form(e), {})[parse_params(e["params"])] = None
    return [(compile_params(variant, p, {}, d, lay), True) for d, lay in forms
            for p in dict.fromkeys([*param_points(variant), *cached.get((d, lay), {})])]


def takes_fp32_nn(variant):
    return "fp32" in variant.dtypes and "nn" in variant.layouts


COMPILE_POINTS = [(v, p, used) for v in CUDA_VARIANTS for p, used in
                  (compile_points(v) if takes_fp32_nn(v) else []) + typed_points(v)]


def test_kernel_files_define_exactly_the_registered_variants():
    """One name per kernel: every extern "C" kernel in kernels/ is a registry key (or one of its
    strip kernels), and back."""
    found = {}
    root = source.kernels_dir()
    for path in root.rglob("*.cu"):
        if path.stem == "harness":
            continue
        family = str(path.relative_to(root).with_suffix(""))
        for name in re.findall(r'extern "C" __global__ void(?:\s+__launch_bounds__\([^)]*\))?\s+(\w+)\s*\(', path.read_text()):
            found[name] = family
    assert found == {e: v.family for v in CUDA_VARIANTS for d in v.dtypes for e in get_op(v.op).entries(v, d)}


def test_each_operations_entries_live_in_the_module_named_after_it():
    """The registry is every operation's BUILT_IN, by place: a variant's entry sits in the module of
    mmbench/variants/ named after the ops module that defines its operation, found by that rule."""
    import importlib
    import pkgutil

    import mmbench.variants
    from mmbench.ops import OPERATIONS
    from mmbench.variants.registry import SHARED

    modules = sorted(i.name for i in pkgutil.iter_modules(mmbench.variants.__path__) if i.name not in SHARED)
    places = []
    for name in modules:
        built_in = importlib.import_module(f"mmbench.variants.{name}").BUILT_IN
        assert {type(OPERATIONS[v.op]).__module__ for group in built_in.values() for v in group} == {f"mmbench.ops.{name}"}
        places += built_in.items()
    assert list(REGISTRY.values()) == [v for _, group in sorted(places, key=lambda p: p[0]) for v in group]
    assert set(modules) == {type(op).__module__.rsplit(".", 1)[1] for op in OPERATIONS.values()}


def test_unknown_variant_names_the_choices():
    with pytest.raises(VariantError, match=r"unknown variant 'bset'; choose from: best_const, best,"):
        get_variant("bset")


def test_param_points_and_overrides():
    best = REGISTRY["best"]
    assert param_points(best) == [(("BLOCK", 32),)]
    assert param_points(best, {"BLOCK": (8, 16)}) == [(("BLOCK", 8),), (("BLOCK", 16),)]
    assert param_points(REGISTRY["blas"], {"BLOCK": (8,)}) == [()]
    with pytest.raises(VariantError, match="positive integers"):
        param_points(best, {"BLOCK": (0,)})
    assert parse_params(format_params((("BLOCK", 16),))) == (("BLOCK", 16),) and parse_params("") == ()


def test_constraints_and_space_sizes():
    assert len(tuning_space(REGISTRY["best"])) == 3 and len(tuning_space(REGISTRY["tile2d"])) == 48
    assert len(tuning_space(REGISTRY["vec4"])) == 35  # TM, TN, BK multiples of 4; loads divide evenly
    assert len(tuning_space(REGISTRY["warptile"])) == 665 and len(tuning_space(REGISTRY["pipelined"])) == 1005
    # warptile's space x SPLITK x MINB x VEC4 x STAGE x STRIP, BK 8 or 16, registers fit; SK = 1 only without split-K
    assert len(tuning_space(REGISTRY["dbuf"])) == 2 * (31680 + 31680 // 4) == 79200  # ORDER 0 or 1
    assert len(tuning_space(REGISTRY["multistage"])) == 1112 * 4  # x SPLITK 1 to 4
    warp = REGISTRY["warptile"]
    default = param_points(warp)[0]
    assert warp.violated(default) == [] and warp.block_threads(default) == 128
    bad = tuple(sorted({**dict(default), "THREADS": 256}.items()))
    assert warp.violated(bad) == ["THREADS == (BM // WM) * (BN // WN) * 32"]
    assert not warp.violated(tuple(sorted({**dict(default), "WNITER": 2}.items())))  # 2 x 2 sub-tiles of 32 x 32
    zero = tuple(sorted({**dict(default), "WM": 32, "WN": 32, "WNITER": 4}.items()))  # WMITER would be 0
    assert warp.violated(zero)


def test_launch_geometry_covers_the_output():
    from mmbench.sizes import Shape

    block, grid = launch_geometry(REGISTRY["best"], (("BLOCK", 16),), Shape(1000, 37, 5))
    assert block == (16, 16, 1) and grid == (2, 32, 1)  # 32 x 32 outputs per block
    block, grid = launch_geometry(REGISTRY["naive"], (("BLOCK", 32),), Shape(33, 65, 1))
    assert grid == (3, 2, 1)
    tiles = (("BK", 8), ("BM", 64), ("BN", 128), ("TM", 8), ("TN", 4))
    block, grid = launch_geometry(REGISTRY["tile2d"], tiles, Shape(65, 129, 7))
    assert block == (256, 1, 1) and grid == (2, 2, 1)
    assert not accumulates(REGISTRY["tile2d"], tiles)


def test_split_k_adds_grid_layers_and_zeroes_c():
    from mmbench.sizes import Shape

    dbuf = REGISTRY["dbuf"]
    default = dict(param_points(dbuf)[0])
    assert default["SPLITK"] == 1 and not accumulates(dbuf, param_points(dbuf)[0])
    split = tuple(sorted({**default, "SPLITK": 3}.items()))
    block, grid = launch_geometry(dbuf, split, Shape(2049, 2049, 2049))
    assert block == (256, 1, 1) and grid == (17, 17, 3) and accumulates(dbuf, split)


def test_thin_remainders_go_to_the_strip_kernels():
    """With STRIP = 4, at most 4 rows (columns) past the last whole tile become a strip launch;
    the launches cover C exactly once."""
    from mmbench.sizes import Shape

    dbuf = REGISTRY["dbuf"]
    params = param_points(dbuf)[0]  # 128 x 128 tiles, STRIP = 4
    whole, rows, cols = launches(dbuf, params, Shape(2049, 2049, 2049))
    assert (whole.entry, whole.grid, whole.args) == ("dbuf", (16, 16, 1), (2048, 2049, 2049))
    assert (rows.entry, rows.block, rows.grid, rows.args) == ("dbuf_row_strip", (32, 16, 1), (65, 1, 1),
                                                              (2049, 2049, 2049, 2048))
    assert (cols.entry, cols.grid, cols.args) == ("dbuf_col_strip", (128, 1, 1), (2048, 2049, 2049, 2048))
    # a remainder wider than STRIP stays in the tiled kernel's edge blocks
    (whole,) = launches(dbuf, params, Shape(2047, 2047, 2047))
    assert whole.grid == (16, 16, 1) and whole.args == (2047, 2047, 2047)
    # rows only: the column remainder (5) is too wide
    whole, rows = launches(dbuf, params, Shape(132, 133, 5))
    assert whole.grid == (2, 1, 1) and whole.args == (128, 133, 5) and rows.args == (132, 133, 5, 128)
    # fewer rows than a tile: no tiled kernel, the row strip computes all of C
    (rows,) = launches(dbuf, params, Shape(3, 1000, 33))
    assert rows.entry == "dbuf_row_strip" and rows.args == (3, 1000, 33, 0)
    (cols,) = launches(dbuf, params, Shape(300, 4, 9))  # fewer columns than a tile
    assert cols.entry == "dbuf_col_strip" and cols.grid == (19, 1, 1) and cols.args == (300, 4, 9, 0)
    off = tuple(sorted({**dict(params), "STRIP": 0}.items()))  # one launch over all of C
    assert [x.grid for x in launches(dbuf, off, Shape(2049, 2049, 2049))] == [(17, 17, 1)]
    assert entries(REGISTRY["best"]) == ("best",) and entries(dbuf) == ("dbuf", "dbuf_row_strip", "dbuf_col_strip")


def test_stream_k_launches_a_persistent_grid():
    """SK = 1: MINB blocks per SM (no more than there are k-iterations), the columns the tiles
    cover as a fourth argument, C zeroed first; the SM count is required."""
    from mmbench.sizes import Shape

    dbuf = REGISTRY["dbuf"]
    sk = tuple(sorted({**dict(param_points(dbuf)[0]), "SK": 1, "STAGE": 1}.items()))  # 128 x 128 x 16, MINB = 2
    assert not dbuf.violated(sk) and accumulates(dbuf, sk)
    (whole,) = launches(dbuf, sk, Shape(4096, 4096, 4096), sms=132)
    assert (whole.entry, whole.grid, whole.args) == ("dbuf", (264, 1, 1), (4096, 4096, 4096, 4096))
    whole, rows, cols = launches(dbuf, sk, Shape(2049, 2049, 2049), sms=132)  # strips beside it, as before
    assert whole.grid == (264, 1, 1) and whole.args == (2048, 2049, 2049, 2048) and rows.args[-1] == 2048
    (tiny,) = launches(dbuf, sk, Shape(7, 7, 7), sms=132)  # one tile, one k-tile: one block
    assert tiny.grid == (1, 1, 1) and tiny.args == (7, 7, 7, 7)
    with pytest.raises(VariantError, match="SM count"):
        launches(dbuf, sk, Shape(64, 64, 64))
    assert "SK == 0 or SPLITK == 1" in dbuf.violated(tuple(sorted({**dict(sk), "SPLITK": 2}.items())))


def test_dynamic_shared_memory_goes_with_the_launch():
    from mmbench.sizes import Shape

    multi = REGISTRY["multistage"]
    default = param_points(multi)[0]  # 256 x 128 x 8, three stages: 3 * (256 * 12 + 8 * 128) floats
    (launch,) = launches(multi, default, Shape(4096, 4096, 4096))
    assert launch.shared == multi.dynamic_shared(default) == 49152 and launch.grid == (32, 16, 1)
    assert REGISTRY["dbuf"].dynamic_shared(param_points(REGISTRY["dbuf"])[0]) == 0
    big = tuple(sorted({**dict(default), "BK": 32, "STAGES": 4, "MINB": 2}.items()))
    assert "MINB * 4 * STAGES * (BM * (BK + 4) + BK * BN) <= 227 * 1024" in multi.violated(big)


def test_header_text_is_pinned():
    assert source.header((("BLOCK", 32), ("TM", 4)), "best.cu") == '#define BLOCK 32\n#define TM 4\n#line 1 "best.cu"\n'


def test_module_source_starts_with_header_then_the_file():
    v = REGISTRY["shared"]
    text = source.module_source(v, (("BLOCK", 16),))
    assert text == '#define BLOCK 16\n#line 1 "shared.cu"\n' + source.source_path(v).read_text()


def _copy_kernels(tmp_path, dbuf_extra: str = "", header_extra: str = ""):
    """A copy of kernels/gemm/dbuf.cu and its headers under tmp_path (a second tree, as ab_kernels uses)."""
    import dataclasses
    import shutil

    root = tmp_path / "kernels"
    shutil.copytree(source.kernels_dir() / "common", root / "common")
    (root / "gemm").mkdir()
    (root / "gemm" / "dbuf.cu").write_text(source.source_path(REGISTRY["dbuf"]).read_text() + dbuf_extra)
    header = root / "common" / "unpack.cuh"
    header.write_text(header.read_text() + header_extra)
    return dataclasses.replace(REGISTRY["dbuf"], source_dir=root)


def test_headers_are_expanded_in_place_and_each_once():
    v = REGISTRY["warptile"]  # includes unpack.cuh at the top and cp_async.cuh half way down
    text = source.module_source(v, param_points(v)[0])
    body, used = source.expanded(v)
    assert set(used) == {"common/unpack.cuh", "common/cp_async.cuh"} and "#include" not in body
    assert body.count("void cp_async16(") == 1 and body.count("#define UNPACK4(") == 1
    assert "#pragma once" not in body  # taken once by the expansion; nvcc would warn of it in a main file
    assert '#line 1 "common/cp_async.cuh"' in text and text.startswith("#define ")
    # after each header, the kernel's own lines carry their own numbers again
    lines = source.source_path(v).read_text().splitlines()
    at = next(i for i, line in enumerate(lines, 1) if line == '#include "common/cp_async.cuh"')
    after = body.split('#line 1 "common/cp_async.cuh"\n', 1)[1]
    assert f'#line {at + 1} "warptile.cu"\n{lines[at]}' in after


def test_nvcc_errors_in_a_header_name_the_header_and_its_line(tmp_path):
    v = _copy_kernels(tmp_path, header_extra="\nthis is not C++;\n")
    with pytest.raises(source.CompileError, match=r"common/unpack.cuh\(\d+\)"):
        source.compile_report(v, param_points(v)[0])


def test_the_source_hash_covers_the_headers(tmp_path):
    same = _copy_kernels(tmp_path / "a")
    assert source.source_hash(same) == source.source_hash(REGISTRY["dbuf"])
    changed = _copy_kernels(tmp_path / "b", header_extra="// a changed header\n")
    assert source.source_hash(changed) != source.source_hash(REGISTRY["dbuf"])
    plain = REGISTRY["naive"]  # no headers: its bytes alone, as before headers existed
    import hashlib

    assert source.source_hash(plain) == hashlib.sha256(source.source_path(plain).read_bytes()).hexdigest()[:16]


def test_nvcc_command_matches_sourcemodule():
    # SourceModule runs: nvcc --cubin <options> -arch <arch> -I<pycuda include> kernel.cu
    assert source.nvcc_command("sm_90") == ["nvcc", "--cubin", *source.NVCC_OPTIONS, "-arch", "sm_90",
                                            "-Xptxas", "-v", "kernel.cu"]


PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'best_const' for 'sm_90'
ptxas info    : Function properties for best_const
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 16384 bytes smem
ptxas info    : Compiling entry function 'spilly' for 'sm_90'
ptxas info    : Function properties for spilly
    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers
"""


def test_parse_ptxas_counts_callee_frames():
    log = PTXAS_LOG.split("ptxas info    : Compiling entry function 'spilly'")[0] + (
        "ptxas info    : Function properties for _Z9vec4_gemmILb0EEvPKf\n"
        "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n")
    assert source.parse_ptxas(log)["best_const"] == source.PtxasReport(32, 16384, 8, 4, 4)


def test_parse_ptxas():
    reports = source.parse_ptxas(PTXAS_LOG)
    assert reports["best_const"] == source.PtxasReport(32, 16384, 0, 0, 0)
    assert reports["spilly"] == source.PtxasReport(255, 0, 48, 40, 36) and reports["spilly"].spills


def test_nvcc_is_installed():
    """CI must compile every kernel: a missing nvcc fails here instead of skipping."""
    assert source.nvcc_path() is not None, "nvcc not on PATH: the compile checks cannot run"


@pytest.mark.parametrize("variant,params,used", COMPILE_POINTS,
                         ids=[f"{v.name}-{format_params(p)}" for v, p, _ in COMPILE_POINTS])
def test_compiles_for_sm90_without_spills(variant, params, used):
    """Every kernel compiles; those that run uses (defaults, tuned) use no local memory."""
    assert not variant.violated(params)
    report = source.compile_report(variant, params, "sm_90")
    # The register file (64K) must hold a whole block: 64 registers a thread at 1024 threads.
    assert 0 < report.registers <= min(255, 65536 // variant.block_threads(params))
    if used:
        assert not report.spills and report.stack_bytes == 0, report
    assert report.shared_bytes <= 48 * 1024


def test_strip_kernels_compile_without_spills():
    """The strip kernels depend only on STRIP: at its widest they keep to registers and to the
    geometry Python launches them with."""
    from mmbench.ops.gemm import COL_STRIP_BLOCK, ROW_STRIP_BLOCK

    dbuf = REGISTRY["dbuf"]
    params = tuple(sorted({**dict(param_points(dbuf)[0]), "STRIP": max(dbuf.space["STRIP"])}.items()))
    reports = source.compile_reports(dbuf, params, "sm_90")
    for entry, block in zip(entries(dbuf)[1:], (ROW_STRIP_BLOCK, COL_STRIP_BLOCK)):
        report = reports[entry]
        assert not report.spills and report.stack_bytes == 0, (entry, report)
        assert report.registers * block[0] * block[1] <= 65536 and report.shared_bytes <= 48 * 1024, (entry, report)


def test_harness_kernel_compiles():
    from mmbench.variants import Variant

    hold = Variant(name="hold_stream", backend="cuda", label="", description="", family="harness")
    assert source.compile_report(hold, ()).registers > 0


def test_compile_error_names_the_file_and_line(tmp_path):
    from mmbench.variants import Variant

    (tmp_path / "broken.cu").write_text('extern "C" __global__ void broken(float* c)\n{\n    c[0] = undefined_thing;\n}\n')
    broken = Variant(name="broken", backend="cuda", label="", description="", family="broken", source_dir=tmp_path)
    with pytest.raises(source.CompileError, match=r'broken\.cu\(3\).*undefined_thing'):
        source.compile_report(broken, (("BLOCK", 8),))


def test_too_much_shared_memory_is_a_compile_error():
    with pytest.raises(source.CompileError, match="too much shared data"):
        source.compile_report(REGISTRY["best"], (("BLOCK", 64),))


def test_a_module_is_compiled_once_a_host_into_its_cubin_and_report(monkeypatch, tmp_path):
    """One nvcc run gives a module's cubin and ptxas's report, kept on disk: a second process asks nvcc
    nothing (no compile, no preprocessing) for a module it has; another source, a damaged report, a
    cubin gone or another nvcc compiles again."""
    import subprocess

    monkeypatch.setenv("MMBENCH_CACHE_DIR", str(tmp_path))
    source.nvcc_version()  # memoized before counting: only compiles count
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(source.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or real_run(cmd, **kw))
    best = REGISTRY["best"]
    build = source.module_build.__wrapped__  # as a fresh process would: the memo left out
    first = build(source.module_source(best, (("BLOCK", 16),)), "sm_90")
    kept = tmp_path / "modules"
    assert len(calls) == 1 and len(list(kept.glob("*.json"))) == len(list(kept.glob("*.cubin"))) == 1
    assert first.cubin.read_bytes()[:4] == b"\x7fELF" and first.reports["best"].registers > 0
    again = build(source.module_source(best, (("BLOCK", 16),)), "sm_90")
    assert (again.reports, again.cubin) == (first.reports, first.cubin) and len(calls) == 1
    build(source.module_source(best, (("BLOCK", 8),)), "sm_90")
    assert len(calls) == 2  # other parameters: another source
    for report in kept.glob("*.json"):
        report.write_text("{not json")
    assert build(source.module_source(best, (("BLOCK", 16),)), "sm_90").reports == first.reports and len(calls) == 3
    first.cubin.unlink()
    assert build(source.module_source(best, (("BLOCK", 16),)), "sm_90").cubin.is_file() and len(calls) == 4
    monkeypatch.setattr(source, "nvcc_version", lambda: "V99.0")
    build(source.module_source(best, (("BLOCK", 16),)), "sm_90")
    assert len(calls) == 5
    assert not list(kept.glob("*.tmp"))  # written whole: nothing half-written left beside


def test_the_tuning_space_is_every_raw_point_whose_constraints_all_hold():
    """tuning_space binds one parameter at a time and tests each constraint as soon as its names
    are bound; it keeps exactly the points Variant.violated passes, in the raw product's order
    (a seeded random choice depends on it), for every variant with a space small enough to walk
    twice here."""
    import itertools
    import math

    from mmbench.variants import tuning_space

    checked = 0
    for v in REGISTRY.values():
        names = sorted(v.space)
        if not names or math.prod(len(v.space[n]) for n in names) > 200_000:
            continue
        raw = [tuple(zip(names, c)) for c in itertools.product(*(v.space[n] for n in names))]
        assert tuning_space(v) == [p for p in raw if not v.violated(p)], v.name
        assert [v.allows(p) for p in raw[::97]] == [not v.violated(p) for p in raw[::97]], v.name  # the short-circuit
        checked += 1
    assert checked >= 5


def test_dbufs_space_of_a_million_raw_points_holds_exactly_the_points_that_violate_nothing():
    """Too big to walk twice here: its count, its order, and 3,000 random raw points, each in the
    space exactly when Variant.violated passes it."""
    from mmbench.variants import tuning_space

    dbuf = REGISTRY["dbuf"]
    space, names = tuning_space(dbuf), sorted(dbuf.space)
    assert len(space) == 79200 and not any(dbuf.violated(p) for p in space[::97])
    index = [tuple(dbuf.space[n].index(v) for n, v in p) for p in space]
    assert index == sorted(index)
    members, rng = set(space), random.Random(3)
    for _ in range(3000):
        p = tuple((n, rng.choice(dbuf.space[n])) for n in names)
        assert (p in members) == (not dbuf.violated(p)), p


def test_a_zero_divisor_fails_its_point_and_free_parameters_multiply_in_the_raw_order():
    from dataclasses import replace

    from mmbench.variants import tuning_space

    v = replace(REGISTRY["tile2d"], name="synthetic", space={"A": (0, 1, 2), "B": (0, 2, 4), "C": (1, 2)},
                constraints=("A > 0", "8 // B >= 2", "A * B <= 4"))
    expected = [(1, 2, 1), (1, 2, 2), (1, 4, 1), (1, 4, 2), (2, 2, 1), (2, 2, 2)]
    assert tuning_space(v) == [tuple(zip("ABC", values)) for values in expected]
    repeated = replace(v, name="repeated", space={"A": (1, 2, 1), "B": (3,)}, constraints=("B > A",))
    assert tuning_space(repeated) == [(("A", 1), ("B", 3)), (("A", 2), ("B", 3)), (("A", 1), ("B", 3))]
