"""Shared fixtures. GPU tests (marked `gpu`) skip where no GPU can be opened, and only there."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent

# mmbench's own cache (ptxas reports, compiled CPU loops) starts empty in every test session, so
# the compile checks run nvcc each time, never a report kept from an earlier session.
# The session's own folders, each removed when the session ends (pytest_unconfigure): a test run leaves
# nothing in $TMPDIR.
SESSION_FOLDERS = [tempfile.mkdtemp(prefix=f"mmbench-test-{what}-") for what in ("cache", "tuning", "runs")]
os.environ["MMBENCH_CACHE_DIR"] = SESSION_FOLDERS[0]
# The user's tuning cache (places.user_cache()) is the session's own file, not yet there: no test
# reads the tunings of whoever runs the tests, and none writes into theirs.
os.environ["MMBENCH_TUNING_CACHE"] = os.path.join(SESSION_FOLDERS[1], "tuning-cache.json")
# A run a test leaves to its default output lands here, never in the user's runs folder.
os.environ["MMBENCH_RUNS"] = SESSION_FOLDERS[2]
# pytest-xdist's workers run with COLUMNS=80 in their environment, and rich's console (mmbench/cli/common.py)
# keeps a COLUMNS it finds when it is made, at the CLI's first import: the tests that set COLUMNS to narrow a
# listing then saw 80 columns under `-n`. Without it the console reads COLUMNS as it prints, as in one process.
os.environ.pop("COLUMNS", None)


def pytest_unconfigure(config):
    """The session's folders removed (a worker process started by a test is gone by now)."""
    import shutil

    for folder in SESSION_FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)

# Property tests run the same examples on every run, with no time limit per example: a slow
# example (a large size spec) must fail or pass on its merits, never on the machine's speed.
settings.register_profile("mmbench", deadline=None, derandomize=True)
settings.load_profile("mmbench")


@pytest.fixture(scope="session")
def gpu():
    from mmbench.device import GpuUnavailable, open_gpu

    try:
        return open_gpu()
    except GpuUnavailable as exc:
        pytest.skip(f"no GPU: {exc}")


def pytest_collection_modifyitems(config, items):
    """Skip gpu-marked tests up front on a machine without PyCUDA (CI), before any fixture runs."""
    import importlib.util

    if importlib.util.find_spec("pycuda") is not None:
        return
    skip = pytest.mark.skip(reason="no GPU here: PyCUDA is not installed")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def tree_state(root: Path) -> dict[str, str] | None:
    """What `git status` lists in a checkout (changed, added and untracked files; ignored ones not),
    each with its status and a hash of its bytes, so that a further change to a file already
    changed shows too; None where root is not a git checkout (an unpacked sdist)."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all", "-z"],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    state, entries = {}, iter(proc.stdout.split("\0"))
    for entry in entries:
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            next(entries, None)  # -z gives a rename's source as the next entry
        file = root / path
        state[path] = status + " " + (hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else "-")
    return state


@pytest.fixture(scope="session", autouse=True)
def checkout_untouched():
    """No test writes into the checkout: the session fails, naming the files, when git sees any
    file created, changed or removed by it (write under tmp_path, chdir there, or set MMBENCH_RUNS)."""
    before = tree_state(REPO)
    yield
    after = tree_state(REPO)
    if before is None or after is None:
        return
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    if changed:
        pytest.fail(f"the tests wrote into the checkout {REPO}: {', '.join(changed)}", pytrace=False)


@pytest.fixture
def registry_kept(monkeypatch):
    """The registry as the test found it after the test (loading a variant file adds to it), and no
    variant files read from the environment of whoever runs the tests."""
    from mmbench.variants import files, registry

    monkeypatch.delenv(files.ENVIRONMENT, raising=False)
    before = dict(registry._ENTRIES)
    yield
    registry._ENTRIES.clear()
    registry._ENTRIES.update(before)
