"""What a run leaves when it stops: its outcome, the one line an interrupted or failed run says,
and a new file that measured nothing taken back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..results import ResultsError, metadata_path, status_counts


@dataclass


class Outcome:
    output: Path
    state: str  # finished or interrupted
    counts: dict[str, int] = field(default_factory=dict)  # this run's rows by status
    in_file: dict[str, int] = field(default_factory=dict)  # the file's, earlier runs' included

    @property
    def failures(self) -> dict[str, int]:
        return {s: n for s, n in self.counts.items() if s in ("wrong", "failed")}


def missing_folders(path: Path) -> list[Path]:
    """The folders above path that do not exist yet, deepest first: what a run makes, and takes
    back when it measured nothing."""
    missing, folder = [], path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_unmeasured(output: Path, folders: Sequence[Path]) -> None:
    """Take back what a new run that measured nothing made: its CSV (a header at most), its
    metadata and the folders it made (left where something else is in them)."""
    output.unlink(missing_ok=True)
    metadata_path(output).unlink(missing_ok=True)
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty: not ours alone
            break


def file_counts(output: Path) -> dict[str, int]:
    """The file's rows by status as it is now ({} when there is none or it cannot be read)."""
    try:
        return status_counts(output)
    except ResultsError:
        return {}


def counted(n: int, one: str, many: str) -> str:
    """1 finished point, 2 finished points."""
    return f"{n} {one if n == 1 else many}"


def interrupted_message(output: Path, in_file: Mapping[str, int], mine: int | None = None) -> str:
    """What an interrupted run says: how many finished points the file holds (this run's among
    them), and how to go on; or that nothing was written."""
    held = sum(in_file.values())
    if not held and not output.exists():
        return "interrupted before the first point finished: nothing was written"
    ours = "" if mine is None else f" ({mine} from this run)"
    return (f"interrupted: {output} holds {counted(held, 'finished point', 'finished points')}{ours}; rerun with "
            f"--output {output} --resume to continue")


def first_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def failed_message(output: Path, failure: BaseException, in_file: Mapping[str, int]) -> str:
    """What a failed run says: the error, and what the file holds (or that nothing was written)."""
    held = sum(in_file.values())
    if not held and not output.exists():
        return f"the run failed before the first point finished, and nothing was written: {first_line(failure)}"
    return (f"the run failed: {first_line(failure)}; {output} holds {counted(held, 'finished point', 'finished points')} "
            f"and its metadata the error; rerun with --output {output} --resume to continue")

