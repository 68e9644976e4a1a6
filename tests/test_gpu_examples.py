"""GPU tests (pytest -m gpu) of the examples/ variant files: each example's kernel at its default
and at a seeded sample of its tuning space, at its operation's awkward shapes, verified against
float64; and the commands a new user runs on them (check, run against the library, tune)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmbench import checking
from mmbench.cli import main
from mmbench.ops import get_op
from mmbench.precisions import form_suffix
from mmbench.results import read_results
from mmbench.variants import files, format_params, param_points, registry, tuning_space
from test_gpu import _run  # every variant's GPU test runs its points so

pytestmark = pytest.mark.gpu

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*/*.toml"))
LIBRARY = {"gemm": "cublas", "gemv": "cublas_gemv", "transpose": "memcpy"}  # each operation's yardstick


@pytest.fixture(autouse=True)
def registry_restored():
    before = dict(registry._ENTRIES)
    yield
    registry._ENTRIES.clear()
    registry._ENTRIES.update(before)


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_is_correct_at_awkward_shapes_over_its_space(gpu, example):
    """At the shapes `mmbench check` runs it at (the awkward ones it takes, and tiled ones for a kernel with
    requirements), at every precision and layout it takes; shapes it does not take are skipped, never wrong."""
    for variant in files.use([example]):
        op = get_op(variant.op)
        spec, _ = checking.check_shapes(variant)
        sample = random.Random(3).sample(tuning_space(variant), min(3, len(tuning_space(variant))))
        configs = [{}] + [{k: (v,) for k, v in params} for params in sample]
        rows = _run(gpu, [variant], spec, configs, dtypes=variant.dtypes, layouts=variant.layouts)
        each = len(op.parse_sizes(spec)) * len(variant.dtypes) * len(variant.layouts)  # rows of one configuration
        ran = {format_params(p) for p in [param_points(variant, {})[0], *sample]}  # the defaults and the sample
        assert {r["params"] for r in rows} == ran and len(rows) == each * len(ran)  # none lost, none twice
        bad = [(r["params"], r["m"], r["n"], r["k"], r["reason"]) for r in rows
               if r["status"] != "ok" and not (r["status"] == "skipped" and " requires " in r["reason"])]
        assert not bad
        for params in {r["params"] for r in rows}:
            assert any(r["status"] == "ok" for r in rows if r["params"] == params), params


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_a_new_users_commands_on_the_example(example, tmp_path, monkeypatch):
    """check, then a run against the operation's library, then a tuning into the user's cache that
    the next run reads: what the README walks a new user through."""
    monkeypatch.setenv("MMBENCH_TUNING_CACHE", str(tmp_path / "cache.json"))
    monkeypatch.setenv("MMBENCH_RUNS", str(tmp_path / "runs"))
    (variant,) = files.load(example)
    runner = CliRunner()
    checked = runner.invoke(main, ["check", str(example), "-o", str(tmp_path / "check.csv")])
    assert checked.exit_code == 0, checked.output
    assert set(read_results(tmp_path / "check.csv").status) == {"ok"}
    tuned = runner.invoke(main, ["-f", str(example), "tune", "-v", variant.name, "-s", "1024", "--strategy", "brute",
                                 "--engine", "points", "-o", str(tmp_path / "tune.csv")])
    assert tuned.exit_code == 0, tuned.output
    assert "written to your cache" in tuned.output
    forms = ["--dtype", variant.dtypes[0], "--layout", variant.layouts[0]]
    ran = runner.invoke(main, ["-f", str(example), "run", "-v", f"{variant.name},{LIBRARY[variant.op]}", *forms,
                               "-s", "1024,2048", "-o", str(tmp_path / "run.csv")])
    assert ran.exit_code == 0, ran.output
    # the line names the precision and layout whose entry it took, where they are not fp32, nn
    assert f"{variant.name}{form_suffix(variant.dtypes[0], variant.layouts[0])}: tuned parameters from your cache" \
        in ran.output
    df = read_results(tmp_path / "run.csv")
    assert set(df.status) == {"ok"} and set(df.variant) == {variant.name, LIBRARY[variant.op]}
