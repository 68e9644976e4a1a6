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
               if p.name not in derived and not p.name.endswith(".profile.csv") and not p.with_suffix(".meta.json").exists()]
    assert missing == []


def test_committed_indexes_are_what_the_folders_say():
    proc = subprocess.run([sys.executable, str(INDEX), "--check"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_index_check_fails_for_a_new_folder(tmp_path, monkeypatch):
    """--check is not a rubber stamp: a folder the index does not list makes it fail."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("results_index", INDEX)
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    texts = index.indexes()
    new = RESULTS / "checks" / "zz-test-folder"
    new.mkdir()
    try:
        (new / "README.md").write_text("# a check added without its index line\n")
        assert index.indexes() != texts and index.main(["--check"]) == 1
    finally:
        (new / "README.md").unlink()
        new.rmdir()
