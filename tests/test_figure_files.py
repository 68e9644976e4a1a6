"""Commands that write figures never replace a file mmbench did not draw from the same inputs (unless
--force), and keep machine-readable output on stdout alone."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmbench import plots
from mmbench.cli import main


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("figures")
    for name in ("a", "b"):
        done = CliRunner().invoke(main, ["run", "-v", "blas", "-s", "32,64", "--runs", "3", "-o", str(root / f"{name}.csv")])
        assert done.exit_code == 0, done.output
    return root


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_figure_is_marked_with_what_it_was_drawn_from_and_redrawn_only_from_it(runs, tmp_path):
    a, b, out = runs / "a.csv", runs / "b.csv", tmp_path / "ratio.png"
    first = invoke("compare", a, b, "--plot", out)
    assert first.exit_code == 0, first.output
    assert plots.drawn_from(out) == plots.drawn_from(out.with_suffix(".svg")) == f"compare {runs.name}/a.csv {runs.name}/b.csv"
    assert invoke("compare", a, b, "--plot", out).exit_code == 0  # the same inputs: redrawn
    other = invoke("compare", b, a, "--plot", out)
    assert other.exit_code == 2 and "is a figure mmbench drew from compare" in other.stderr and "--force" in other.stderr
    assert invoke("compare", b, a, "--plot", out, "--force").exit_code == 0
    assert plots.drawn_from(out) == f"compare {runs.name}/b.csv {runs.name}/a.csv"


def test_a_file_mmbench_did_not_draw_is_never_replaced_without_force(runs, tmp_path):
    mine = tmp_path / "mine.png"
    mine.write_text("x,y\n1,2\n")  # a CSV named .png
    refused = invoke("compare", runs / "a.csv", runs / "b.csv", "--plot", mine)
    assert refused.exit_code == 2 and "exists and is not a figure mmbench drew" in refused.stderr
    assert mine.read_text() == "x,y\n1,2\n" and not mine.with_suffix(".svg").exists()
    (tmp_path / "rate.svg").write_text("<svg>someone's drawing</svg>")
    plotted = invoke("plot", "rate", runs / "a.csv", "--out", tmp_path)
    assert plotted.exit_code == 2 and "rate.svg exists and is not a figure mmbench drew" in plotted.stderr
    assert not (tmp_path / "rate.png").exists()  # nothing written: refused before the first file
    forced = invoke("plot", "rate", runs / "a.csv", "--out", tmp_path, "--force")
    assert forced.exit_code == 0 and plots.drawn_from(tmp_path / "rate.svg") == f"{runs.name}/a.csv"
    assert invoke("plot", "rate", runs / "a.csv", "--out", tmp_path).exit_code == 0  # its own: redrawn


def test_an_unmarked_image_beside_its_results_is_the_runs_own(runs):
    """Figures drawn before figures were marked (the reference runs') are redrawn where they lie, beside
    the results they were drawn from; a file there that is no image is not."""
    folder = runs / "a"
    folder.mkdir(exist_ok=True)
    (folder / "rate.png").write_bytes(plots.PNG_SIGNATURE + b"old")
    assert invoke("plot", "rate", runs / "a.csv").exit_code == 0
    (folder / "rate.png").write_text("not an image")
    assert invoke("plot", "rate", runs / "a.csv").exit_code == 2


def test_json_on_stdout_parses_when_a_figure_is_written(runs, tmp_path):
    made = invoke("compare", runs / "a.csv", runs / "b.csv", "--format", "json", "--plot", tmp_path / "r.png")
    assert made.exit_code == 0
    json.loads(made.stdout)
    assert "wrote" in made.stderr and "wrote" not in made.stdout
