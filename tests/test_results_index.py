"""results/ as a newcomer reads it: folders only, every run with its metadata, indexes current."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
INDEX = REPO / "scripts" / "results_index.py"


def tracked(pattern: str) -> list[Path]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", pattern], capture_output=True, text=True).stdout
    return [REPO / line for line in out.splitlines()]


def test_results_top_level_holds_folders_and_the_index_only():
    loose = [p.name for p in tracked("results/*") if p.parent == RESULTS and p.name != "README.md"]
    assert loose == []


def test_every_results_csv_has_its_metadata_beside_it():
    derived = ("table1.csv",)
    missing = [str(p.relative_to(REPO)) for p in tracked("results/**.csv")
               if p.name not in derived and not p.name.endswith((".profile.csv", ".verify.csv"))  # tables beside a run
               and not p.with_suffix(".meta.json").exists()]
    assert missing == []


def test_committed_indexes_are_what_the_folders_say():
    proc = subprocess.run([sys.executable, str(INDEX), "--check"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_index_check_fails_for_a_new_folder(tmp_path, monkeypatch):
    """--check is not a rubber stamp: a folder the index does not list makes it fail (on a copy of
    results/ outside git, where every file counts; the repository is not touched)."""
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("results_index", INDEX)
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    shutil.copytree(RESULTS, tmp_path / "results")
    (tmp_path / "configs").mkdir()
    shutil.copy(REPO / "configs" / "tuning-cache.json", tmp_path / "configs")
    monkeypatch.setattr(index, "REPO", tmp_path)
    assert index.main(["--check"]) == 0  # the copy, as committed
    new = tmp_path / "results" / "checks" / "zz-new-check"
    new.mkdir()
    (new / "README.md").write_text("# a check added without its index line\n")
    assert index.main(["--check"]) == 1
    index.main([])
    assert "| [checks/zz-new-check/](checks/zz-new-check/) | a check added without its index line |" in \
        (tmp_path / "results" / "README.md").read_text()


def test_a_run_left_in_results_does_not_change_the_index(tmp_path, monkeypatch):
    """Only what git tracks is indexed: a folder a `mmbench run` left behind is not (in a git
    repository of its own holding a copy of results/: the checkout is never written)."""
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("results_index", INDEX)
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    shutil.copytree(RESULTS, tmp_path / "results")
    if (REPO / "configs" / "tuning-cache.json").exists():  # the cache the index reads, where it is read from
        (tmp_path / "configs").mkdir()
        shutil.copy(REPO / "configs" / "tuning-cache.json", tmp_path / "configs")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)  # tracked: staged is enough
    stray = tmp_path / "results" / "zz-untracked-run"
    stray.mkdir()
    (stray / "README.md").write_text("# not committed\n")
    monkeypatch.setattr(index, "REPO", tmp_path)
    assert index.main(["--check"]) == 0
