"""The figure families of any run (mmbench/generic_figures.py): `mmbench plot rate` and `mmbench plot
vs-library`, for every operation and for a variant file's kernels whether or not their file is
loaded; drawn from a run built here row by row as `mmbench run` writes them."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from click.testing import CliRunner

from mmbench import analysis, plots
from mmbench.cli import main
from mmbench.engine.plan import Point, Settings
from mmbench.ops import OPERATIONS, get_op
from mmbench.results import ResultsError, read_results, write_metadata
from mmbench.engine.rows import row, timing_fields
from mmbench.schema import COLUMNS
from mmbench.sizes import Shape
from mmbench.variants import REGISTRY, files, registry

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
META = {"format": 2, "gpu": {"name": "NVIDIA H100 80GB HBM3"}, "started_at": "2026-11-24T10:00:00+00:00",
        "settings": {"runs": 3, "warmup": 3, "cache": "cold", "seed": 2017}}


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    monkeypatch.delenv(files.ENVIRONMENT, raising=False)
    before = dict(registry._ENTRIES)
    yield
    registry._ENTRIES.clear()
    registry._ENTRIES.update(before)
    plt.close("all")


def a_row(variant: str, shape: Shape, ms: float, params=(), status="ok") -> dict:
    """A verified row as a run writes it, its samples around ms milliseconds."""
    point = Point(REGISTRY[variant], tuple(params), shape, "cold" if REGISTRY[variant].on_gpu else "hot")
    return row(point, Settings(runs=3), status, **timing_fields(point, [ms * f for f in (0.99, 1.0, 1.01)]))


def a_run(tmp_path: Path, rows: list[dict]) -> Path:
    import pandas as pd

    csv = tmp_path / "run" / "run.csv"
    csv.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).reindex(columns=COLUMNS).to_csv(csv, index=False)
    write_metadata(csv, META)
    return csv


def gemv_run(tmp_path: Path) -> Path:
    """The README's user: rows_gemv (a variant file's) and cuBLAS's GEMV from 256 to 8192, the
    variant file then forgotten, as in a new process that was not given it."""
    files.use([EXAMPLES / "gemv" / "rows_gemv.toml"])
    rows = [a_row(v, Shape(n, n, 0), ms * n * n / 2**16, params)
            for n in (256, 1024, 4096, 8192)
            for v, ms, params in (("rows_gemv", 0.02, (("BLOCK", 128),)), ("cublas_gemv", 0.016, ()))]
    registry._ENTRIES.pop("rows_gemv")
    return a_run(tmp_path, rows)


def test_every_operation_names_a_registered_library_variant_of_its_dimensions_as_its_yardstick():
    for op in OPERATIONS.values():
        if op.yardstick is None:
            continue
        v = REGISTRY[op.yardstick]
        assert v.on_gpu and v.backend != "cuda" and get_op(v.op).dims == op.dims, op.name
    assert {op.name: op.yardstick for op in OPERATIONS.values()} == {
        "gemm": "cublas", "gemv": "cublas_gemv", "transpose": "memcpy", "copy": "memcpy"}


def test_vs_library_compares_each_gpu_series_with_its_operations_library_at_the_same_shape(tmp_path):
    rows = [a_row("shared", Shape(512, 512, 512), 0.5, (("BLOCK", 16),)), a_row("cublas", Shape(512, 512, 512), 0.1),
            a_row("blas", Shape(512, 512, 512), 2.0),  # the CPU: no GPU series, not compared
            a_row("shared", Shape(1000, 37, 2049), 0.4, (("BLOCK", 16),)),
            a_row("cublas", Shape(1000, 37, 2049), 0.2),
            a_row("shared", Shape(64, 64, 64), 0.01, (("BLOCK", 16),)),  # no cuBLAS row at 64: left out
            a_row("transpose_naive", Shape(1024, 512, 0), 0.3), a_row("memcpy", Shape(1024, 512, 0), 0.1),
            a_row("memcpy", Shape(512, 1024, 0), 1.0)]  # another m x n than the transpose's: not its yardstick
    pct = analysis.percent_of_library(read_results(a_run(tmp_path, rows)))
    got = {(r.variant, r.m, r.n, r.k): round(r.percent, 6) for r in pct.itertuples()}
    assert got == {("shared", 512, 512, 512): 20.0, ("shared", 1000, 37, 2049): 50.0,
                   ("transpose_naive", 1024, 512, 0): round(100 / 3, 6)}
    sizes = dict(zip(zip(pct.variant, pct.m), pct["size"]))
    assert sizes[("shared", 512)] == 512 and sizes[("shared", 1000)] == pytest.approx((1000 * 37 * 2049) ** (1 / 3))


def test_padded_rows_are_compared_with_the_library_on_the_shape_as_given(tmp_path):
    """padded_percent_of_library: a padded row's rate (of the shape as given) against the yardstick's
    plain rate there; plain rows are percent_of_library's, not these."""
    def padded(shape, ms):
        point = Point(REGISTRY["shared"], (("BLOCK", 16),), shape, "cold", "kernel", True)
        return row(point, Settings(runs=3), "ok", **timing_fields(point, [ms * f for f in (0.99, 1.0, 1.01)]))

    rows = [a_row("shared", Shape(512, 512, 512), 0.5, (("BLOCK", 16),)), a_row("cublas", Shape(512, 512, 512), 0.1),
            padded(Shape(1000, 37, 2049), 0.4), a_row("cublas", Shape(1000, 37, 2049), 0.2),
            padded(Shape(64, 64, 64), 0.01)]  # no cuBLAS row at 64: left out
    pct = analysis.padded_percent_of_library(read_results(a_run(tmp_path, rows)))
    assert {(r.variant, r.m, r.n, r.k): round(r.percent, 6) for r in pct.itertuples()} == {
        ("shared", 1000, 37, 2049): 50.0}
    plain = analysis.padded_percent_of_library(read_results(a_run(tmp_path, rows[:2])))
    assert plain.empty and "percent" in plain


def test_a_variant_files_kernel_is_drawn_and_labelled_by_name_when_its_file_is_not_loaded(tmp_path):
    csv = gemv_run(tmp_path)
    assert "rows_gemv" not in REGISTRY
    result = CliRunner().invoke(main, ["plot", "vs-library", str(csv)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "vs-library.png").exists() and (tmp_path / "run" / "vs-library.svg").exists()
    assert "rows_gemv" in result.output and "80.0 %" in result.output  # the summary: 0.016 / 0.02 at every size
    fig = plots.fig_vs_library(read_results(csv), META)
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")] == ["rows_gemv"]
    assert ax.get_xlabel() == "matrix size n, log2 scale" and ax.get_ylabel() == "GFLOP/s (median of samples) as % of cuBLAS sgemv's at the same shape"


def test_rate_draws_every_series_a_panel_per_operation_the_baselines_dashed(tmp_path):
    rows = [a_row("shared", Shape(n, n, n), 0.001 * n, (("BLOCK", 16),)) for n in (128, 256)]
    rows += [a_row("cublas", Shape(n, n, n), 0.0005 * n) for n in (128, 256)]
    rows += [a_row(v, Shape(n, 2 * n, 0), 0.001 * n) for n in (128, 256) for v in ("transpose_naive", "memcpy")]
    fig = plots.fig_rate(read_results(a_run(tmp_path, rows)), META)
    gemm, transpose = fig.axes
    styles = {line.get_label(): line.get_linestyle() for line in gemm.get_lines()}
    assert styles == {REGISTRY["shared"].label + " (16x16)": "-", "cuBLAS": "--"}
    moved = {line.get_label(): line.get_linestyle() for line in transpose.get_lines()}
    assert moved == {REGISTRY["transpose_naive"].label: "-", "GPU memcpy": "--"}  # the copy beside the transpose
    assert gemm.get_ylabel().startswith("GFLOP/s") and transpose.get_ylabel().startswith("GB/s")
    assert "geometric mean" in transpose.get_xlabel() and gemm.get_xlabel() == "matrix size n, log2 scale"
    x = sorted(transpose.get_lines()[0].get_xdata())
    assert x == pytest.approx([128 * 2**0.5, 256 * 2**0.5])


def test_rate_of_a_variant_files_run_without_its_file(tmp_path):
    result = CliRunner().invoke(main, ["plot", "rate", str(gemv_run(tmp_path))])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "rate.png").exists()


@pytest.mark.parametrize("rows, said", [
    (lambda: [a_row("shared", Shape(256, 256, 256), 0.1, (("BLOCK", 16),))], "no 'cublas' rows (gemm's library"),
    (lambda: [a_row("blas", Shape(256, 256, 256), 0.1), a_row("cublas", Shape(256, 256, 256), 0.1)],
     "the results hold no GPU kernel of gemm beside the baselines"),
    (lambda: [a_row("shared", Shape(256, 256, 256), 0.1, (("BLOCK", 16),)), a_row("cublas", Shape(512, 512, 512), 1)],
     "no gemm GPU series at the shapes of its 'cublas' rows"),
    (lambda: [a_row("cublas", Shape(256, 256, 256), 0.1, status="wrong")], "no verified (status ok) rows"),
])
def test_vs_library_says_what_it_lacks_and_writes_nothing(tmp_path, rows, said):
    csv = a_run(tmp_path, rows())
    result = CliRunner().invoke(main, ["plot", "vs-library", str(csv)])
    assert result.exit_code == 2 and said in result.output and len(result.output.strip().splitlines()) == 1, \
        result.output
    assert sorted(p.name for p in csv.parent.iterdir()) == ["run.csv", "run.meta.json"]
    with pytest.raises(ResultsError, match=re.escape(said)):
        plots.fig_vs_library(read_results(csv), META)


def test_rate_says_so_when_no_row_was_verified(tmp_path):
    csv = a_run(tmp_path, [a_row("cublas", Shape(256, 256, 256), 0.1, status="failed")])
    result = CliRunner().invoke(main, ["plot", "rate", str(csv)])
    assert result.exit_code == 2 and "no verified (status ok) rows" in result.output
