"""`mmbench compare` (mmbench/compare.py): pairs matched, ratios and their bootstrap intervals,
the four verdicts against a threshold, what is flagged or not compared, the outputs and the CI
gate; on runs built here row by row as `mmbench run` writes them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mmbench import compare as cmp
from mmbench.cli import main
from mmbench.engine.plan import Point, Settings
from mmbench.results import write_metadata
from mmbench.engine.rows import row, timing_fields
from mmbench.schema import COLUMNS
from mmbench.sizes import Shape
from mmbench.variants import REGISTRY

META = {"format": 2, "gpu": {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "driver_version": "580.1"},
        "settings": {"runs": 10, "cache": "cold"}, "git": {"commit": "aaa"}, "started_at": "2026-11-25T00:00:00+00:00"}


def a_row(variant: str, n: int, samples, cache="cold", status="ok", sagged=False) -> dict:
    point = Point(REGISTRY[variant], (("BLOCK", 32),) if "BLOCK" in REGISTRY[variant].axes else (), Shape(n, n, n), cache)
    timed = timing_fields(point, [float(x) for x in samples]) if len(samples) else {}
    r = row(point, Settings(runs=max(1, len(samples))), status, **timed)
    r["clock_sagged"] = sagged
    return r


def noisy(ms: float, rng, count=10, cv=0.003) -> np.ndarray:
    """count samples around ms, with a relative noise of cv."""
    return ms * (1 + cv * rng.standard_normal(count))


def a_run(path: Path, rows: list[dict], **meta) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).reindex(columns=COLUMNS).to_csv(path, index=False)
    write_metadata(path, {**META, **meta})
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("low, high, said", [
    (1.021, 1.05, "slower"), (0.95, 0.979, "faster"), (0.99, 1.01, "same"), (1.0 / 1.02, 1.02, "same"),
    (1.01, 1.03, "unclear"), (0.97, 1.0, "unclear"), (0.9, 1.1, "unclear")])
def test_the_verdict_is_where_the_interval_lies_against_the_threshold(low, high, said):
    assert cmp.verdict(low, high, 0.02) == said


def test_the_bootstrap_interval_holds_the_ratio_of_medians_and_narrows_with_less_noise():
    rng = np.random.default_rng(1)
    base, slow = noisy(1.0, rng, 10), noisy(1.03, rng, 10)
    ratio, low, high = cmp.bootstrap_ratio(base, slow, np.random.default_rng(2))
    assert ratio == pytest.approx(np.median(slow) / np.median(base)) and low <= ratio <= high
    assert 1.0 < low and high < 1.06
    wide = cmp.bootstrap_ratio(noisy(1.0, rng, 10, 0.05), noisy(1.03, rng, 10, 0.05), np.random.default_rng(2))
    assert wide[2] - wide[1] > 3 * (high - low)


def test_a_run_against_itself_is_never_slower_or_faster():
    rng = np.random.default_rng(3)
    rows = [a_row("dbuf", n, noisy(n / 1000, rng, cv=(0.001, 0.01, 0.05)[n // 256 % 3])) for n in range(256, 8193, 256)]
    made = cmp.compare(pd.DataFrame(rows), pd.DataFrame(rows))
    counts = made.counts()
    assert counts["slower"] == counts["faster"] == 0 and counts["same"] >= 20 and counts["unclear"] >= 1


def test_a_three_percent_slowdown_is_slower_at_the_default_threshold_and_fails_a_gate_of_two():
    rng = np.random.default_rng(4)
    base = [a_row("dbuf", n, noisy(n / 1000, rng)) for n in (512, 1024, 2048)]
    cand = [a_row("dbuf", 512, noisy(0.512 * 1.03, rng)), *(a_row("dbuf", n, noisy(n / 1000, rng)) for n in (1024, 2048))]
    made = cmp.compare(pd.DataFrame(base), pd.DataFrame(cand))
    verdicts = {p.key[3]: p.verdict for p in made.pairs}
    assert verdicts == {512: "slower", 1024: "same", 2048: "same"}
    assert [p.key[3] for p in made.slowdowns(0.02)] == [512] and made.slowdowns(0.05) == []


def test_what_cannot_be_compared_is_said_and_a_sagged_clock_is_flagged_and_left_out_of_the_gate():
    rng = np.random.default_rng(5)
    base = [a_row("dbuf", 256, noisy(1, rng)), a_row("dbuf", 512, noisy(1, rng)), a_row("dbuf", 1024, noisy(1, rng)),
            a_row("best", 64, noisy(1, rng)), a_row("dbuf", 2048, noisy(1, rng))]
    cand = [a_row("dbuf", 256, noisy(1, rng), cache="hot"), a_row("dbuf", 512, [], status="failed"),
            a_row("dbuf", 1024, noisy(1.2, rng), sagged=True), a_row("shared", 64, noisy(1, rng)),
            a_row("dbuf", 2048, noisy(1, rng))]
    made = cmp.compare(pd.DataFrame(base), pd.DataFrame(cand))
    by_n = {p.key[3]: p for p in made.pairs}
    assert (by_n[256].verdict, by_n[256].why) == ("not compared", "cache cold -> hot")
    assert (by_n[512].verdict, by_n[512].why) == ("not compared", "status ok -> failed")
    assert by_n[1024].verdict == "slower" and by_n[1024].flags == ("clock sagged in the candidate",)
    assert made.slowdowns(0.05) == []  # flagged: not gated on
    assert [k[1] for k in made.only_baseline] == ["best"] and [k[1] for k in made.only_candidate] == ["shared"]
    assert cmp.alone_lines(made) == ["only in the baseline (1): best[BLOCK=32] 64x64x64",
                                     "only in the candidate (1): shared[BLOCK=32] 64x64x64"]


def test_the_runs_differences_are_warned_of():
    other = {**META, "gpu": {**META["gpu"], "uuid": "GPU-2", "driver_version": "590.0"}, "git": {"commit": "bbb"}}
    said = cmp.differences(META, other)
    assert said == ["the runs differ in GPU (same model, another board): GPU-1 -> GPU-2",
                    "the runs differ in driver: 580.1 -> 590.0", "the runs differ in commit: aaa -> bbb"]
    assert cmp.differences(META, META) == []


def runs(tmp_path: Path, factor: float = 1.03) -> tuple[Path, Path]:
    rng = np.random.default_rng(6)
    base = [a_row("dbuf", n, noisy(n / 1000, rng)) for n in (512, 1024, 2048)]
    cand = [a_row("dbuf", 512, noisy(0.512 * factor, rng)), *(a_row("dbuf", n, noisy(n / 1000, rng)) for n in (1024, 2048))]
    return a_run(tmp_path / "a" / "a.csv", base), a_run(tmp_path / "b" / "b.csv", cand, git={"commit": "bbb"})


def test_the_command_prints_a_table_and_gates_on_a_slowdown(tmp_path):
    a, b = runs(tmp_path)
    result = invoke("compare", a, b)
    assert result.exit_code == 0, result.output
    assert "warning: the runs differ in commit: aaa -> bbb" in result.output
    assert "3 points compared at a threshold of 2.0%" in result.output and "1 slower, 2 same" in result.output
    assert re.search(r"\n dbuf +512 ", result.output) and not re.search(r"\n dbuf +1024 ", result.output)
    assert "most slowed: dbuf at 512" in result.output
    gated = invoke("compare", a, b, "--fail-slower", "2%")
    assert gated.exit_code == 1 and "1 point(s) significantly slower by more than 2.0%" in gated.output
    assert invoke("compare", a, b, "--fail-slower", "5").exit_code == 0
    assert "3 same" in invoke("compare", a, b, "--threshold", "loose").output


def test_markdown_json_and_the_figure(tmp_path):
    a, b = runs(tmp_path)
    md = invoke("compare", a, b, "--format", "markdown", "--all").output
    assert "| point | baseline ms |" in md and md.count("| dbuf ") == 3 and "> warning:" in md
    data = json.loads(invoke("compare", a, b, "--format", "json").output)
    assert data["counts"]["slower"] == 1 and len(data["pairs"]) == 3 and data["method"].startswith("percentile")
    result = invoke("compare", a, b, "--plot", tmp_path / "fig" / "ratios.png")
    assert result.exit_code == 0 and (tmp_path / "fig" / "ratios.png").exists() and (tmp_path / "fig" / "ratios.svg").exists()


@pytest.mark.parametrize("args, said", [
    (["--threshold", "huge"], "--threshold 'huge': choose a preset (tight, default, loose) or a percentage"),
    (["--threshold", "0%"], "--threshold '0%': expected a percentage between 0 and 100"),
    (["--fail-slower", "fast"], "--fail-slower 'fast': expected a percentage"),
    (["--clock", "wall"], "'wall' is not one of 'events', 'kernel'")])
def test_bad_options_are_one_line_exit_2(tmp_path, args, said):
    a, b = runs(tmp_path)
    result = invoke("compare", a, b, *args)
    assert result.exit_code == 2 and said in result.output and result.output.count("\n") == 1


def test_runs_with_nothing_in_common_are_refused(tmp_path):
    rng = np.random.default_rng(7)
    a = a_run(tmp_path / "a.csv", [a_row("dbuf", 512, noisy(1, rng))])
    b = a_run(tmp_path / "b.csv", [a_row("best", 512, noisy(1, rng))])
    result = invoke("compare", a, b)
    assert result.exit_code == 2 and "no point in common" in result.output


# -- what compare says of what it read, and a gate that cannot judge -------------------------------------------
@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory):
    from click.testing import CliRunner

    from mmbench.cli import main

    root = tmp_path_factory.mktemp("compare-cli")
    for name, sizes in (("a", "32,64"), ("b", "32,64"), ("other", "100")):
        done = CliRunner().invoke(main, ["run", "-v", "blas", "-s", sizes, "--runs", "3", "-o", str(root / f"{name}.csv")])
        assert done.exit_code == 0, done.output
    return root


def _compare(*args):
    from click.testing import CliRunner

    from mmbench.cli import main

    return CliRunner().invoke(main, ["compare", *map(str, args)])


def test_compare_says_what_could_mislead(cpu_runs, tmp_path):
    a = cpu_runs / "a.csv"
    assert "is compared with itself" in _compare(a, a).output
    bare = tmp_path / "bare.csv"
    bare.write_bytes((cpu_runs / "b.csv").read_bytes())  # no metadata beside it
    said = _compare(a, bare).output
    assert "no metadata" in said and "bare.meta.json" in said and "cache mode" not in said
    torn = tmp_path / "torn.csv"
    torn.write_text((cpu_runs / "b.csv").read_text() + "gemm,blas,BLAS")  # a last row cut short
    (tmp_path / "torn.meta.json").write_bytes((cpu_runs / "b.meta.json").read_bytes())
    assert "torn" in _compare(a, torn).output.lower()


def test_a_gate_never_passes_on_what_it_did_not_compare(cpu_runs, tmp_path):
    a, other = cpu_runs / "a.csv", cpu_runs / "other.csv"
    nothing = _compare(a, other, "--fail-slower", "5%")
    assert nothing.exit_code == 3 and "cannot judge" in nothing.output
    assert _compare(a, other).exit_code == 2  # without a gate: bad input, as before
    # a's samples again (two 3-sample runs of a 32 x 32 CPU BLAS can differ by half on a noisy host)
    twin = tmp_path / "twin.csv"
    twin.write_bytes(a.read_bytes())
    twin.with_suffix(".meta.json").write_bytes(a.with_suffix(".meta.json").read_bytes())
    assert _compare(a, twin, "--fail-slower", "50%").exit_code == 0
    too_few = _compare(a, twin, "--fail-slower", "50%", "--min-compared", "100%")  # 2 of 2: enough
    assert too_few.exit_code == 0


def test_a_large_comparison_leads_with_its_summary_and_its_table_fits_80_columns(tmp_path, monkeypatch):
    """Many tuned configurations: the counts, the change by variant and the extreme points come first;
    each table row is one line within 80 columns, the parameters a key listed after the table."""
    monkeypatch.setenv("COLUMNS", "80")
    rng = np.random.default_rng(3)
    params = [("BLOCK", b) for b in (8, 16, 32)]
    base, cand = [], []
    for i, n in enumerate(range(100, 400, 10)):
        for factor, rows in ((1.0, base), (1.06 if i % 5 == 0 else 1.0, cand)):
            point = Point(REGISTRY["best"], (params[i % 3],), Shape(n, n, n), "cold")
            rows.append(row(point, Settings(runs=10), "ok",
                            **timing_fields(point, [float(x) for x in noisy(n / 1000 * factor, rng)])))
    a, b = a_run(tmp_path / "a" / "a.csv", base), a_run(tmp_path / "b" / "b.csv", cand)
    said = invoke("compare", a, b).output
    lines = said.splitlines()
    summary = next(i for i, line in enumerate(lines) if "points compared" in line)
    table = next(i for i, line in enumerate(lines) if "not the same" in line)
    assert summary < table and "time change by variant" in said and "most slowed: best c" in said
    rows_ = [line for line in lines[table:] if line.startswith(" best ")]
    assert rows_ and all(len(line) <= 80 for line in rows_)
    assert "parameters:" in said and "c1 = BLOCK=" in said


def test_words_that_fit_the_runs(tmp_path):
    other = {**META, "gpu": {"name": "NVIDIA H200", "uuid": "GPU-2", "driver_version": "580.1"}}
    assert cmp.differences(META, other) == ["the runs differ in GPU: NVIDIA H100 80GB HBM3 -> NVIDIA H200"]
    rng = np.random.default_rng(1)
    cpu = [a_row("blas", n, noisy(n / 1000, rng)) for n in (64, 128)]
    said = invoke("compare", a_run(tmp_path / "x" / "x.csv", cpu), a_run(tmp_path / "y" / "y.csv", cpu)).output
    assert "the host's timer (CPU points)" in said and "events clock" not in said


def test_the_figure_of_many_series_keys_the_verdicts_not_each_series():
    from mmbench import plots

    rows = [{"variant": f"v{i}", "params": "", "m": n, "n": n, "k": n, "ratio": 1.0, "low": 0.99, "high": 1.01,
             "verdict": "same"} for i in range(12) for n in (256, 512)]
    pairs = pd.DataFrame(rows)
    pairs.attrs["threshold"] = 0.02
    fig = plots.fig_compare(pairs, "b against a")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["same band (+-2%)", "same (24)"] and fig.axes[0].get_legend().get_title().get_text().startswith("12 series")
    plots.plt.close(fig)


def test_each_runs_gpus_and_whole_command_are_said_and_the_speedup_is_their_ratio(tmp_path):
    """A run on one GPU against the same points on a cluster of two: every GPU by its UUID, each whole
    command (the last invocation's process_s), and speedup = baseline's process_s / candidate's."""
    rng = np.random.default_rng(5)
    rows = [a_row("shared", n, noisy(1.0, rng)) for n in (64, 128)]
    one = a_run(tmp_path / "one.csv", rows, invocations=[{"process_s": 30.0, "wall_s": 27.5}])
    cluster = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}, {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-2"}]}
    two = a_run(tmp_path / "two.csv", rows, invocations=[{"process_s": 16.0, "wall_s": 12.25, "cluster": cluster}])
    result = invoke("compare", one, two)
    assert result.exit_code == 0, result.output
    assert "baseline: 1 x NVIDIA H100 80GB HBM3 (GPU-1): whole command 30.0 s, the run 27.5 s" in result.output
    assert "candidate: 2 x NVIDIA H100 80GB HBM3 (GPU-1, GPU-2): whole command 16.0 s, the run 12.2 s" in result.output
    assert "speedup 1.88x" in result.output  # 30.0 / 16.0 = 1.875
    said = json.loads(invoke("compare", one, two, "--format", "json").output)
    assert said["runs"][-1].startswith("speedup 1.88x")
    older = a_run(tmp_path / "older.csv", rows)  # metadata from before process_s: no speedup claimed
    assert "speedup" not in invoke("compare", older, two).output


def test_the_process_age_counts_from_the_interpreters_start():
    import time

    from mmbench.environment import process_age_s

    before = process_age_s()
    time.sleep(0.2)
    after = process_age_s()
    assert before is not None and before > 0 and 0.15 <= after - before <= 1.0
