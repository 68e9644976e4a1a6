"""results/ holds reference runs only: one folder per study and GPU, each whole, each in the index
(tests/test_docs.py checks the links); the tracked tree stays small enough to travel."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
INDEX = RESULTS / "README.md"
TRACKED_LIMIT = 20 * 2**20  # bytes (20 MiB): the tool, its reference runs (about 0.6 MB a study and GPU at 10 samples a
# point, 2 MB for the tensor-core study sampled to +- 0.5 % intervals), their companions, the cluster comparisons
# (compare files only) and test data, not the lab notebook (exploratory runs, tuning logs, probes and the
# cluster runs' metadata go in the issue's note or stay in git history); with the GPU machine's wheels (about
# 30 MB) under the 64 MiB a call carries


def test_every_folder_is_a_whole_reference_run_listed_in_the_index():
    text = INDEX.read_text(encoding="utf-8")
    folders = sorted(p for p in RESULTS.iterdir() if p.is_dir())
    assert folders, "no reference runs"
    for folder in folders:
        assert f"[{folder.name}/]({folder.name}/)" in text, f"{folder.name} is not in results/README.md"
        stem = folder / folder.name
        assert stem.with_suffix(".csv").exists() or Path(f"{stem}.csv.gz").exists(), folder.name
        assert stem.with_suffix(".meta.json").exists(), folder.name
        assert (folder / "REPORT.md").exists(), folder.name


def test_the_tracked_tree_is_small():
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = [REPO / n for n in names.decode().split("\0") if n]
    size = sum(p.stat().st_size for p in paths if p.is_file())
    assert size < TRACKED_LIMIT, f"the tracked tree is {size / 2**20:.1f} MiB (limit {TRACKED_LIMIT / 2**20:.0f} MiB)"
