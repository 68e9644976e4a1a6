"""The session fixture that fails a test session writing into the checkout (tests/conftest.py)
sees what it must: new, changed and removed files, a further change to a file already changed,
and not what git ignores."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import tree_state


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_checkouts_state_shows_every_write_but_ignored_ones(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("/runs/\n")
    (tmp_path / "kept.txt").write_text("a\n")
    (tmp_path / "gone.txt").write_text("b\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    clean = tree_state(tmp_path)
    assert clean == {}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r.csv").write_text("x\n")  # the user's runs: ignored
    assert tree_state(tmp_path) == clean
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "new.csv").write_text("x\n")
    (tmp_path / "kept.txt").write_text("changed\n")
    (tmp_path / "gone.txt").unlink()
    dirty = tree_state(tmp_path)
    assert set(dirty) == {"results/new.csv", "kept.txt", "gone.txt"}
    (tmp_path / "kept.txt").write_text("changed again\n")  # the same status, other bytes
    assert tree_state(tmp_path)["kept.txt"] != dirty["kept.txt"]
    assert tree_state(tmp_path / "not-a-checkout") is None
