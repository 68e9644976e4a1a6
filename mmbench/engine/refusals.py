"""The checks before a run: an output that can be written, a file that can be resumed, the
settings it was measured with, points a GPU can run. No Click here: a refusal before anything is
touched is ``RunRefused`` (the CLI exits 2 with its one line), a run that cannot go on is
``RunAborted`` (exit 1); messages go to a ``say`` callable."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from ..results import (COMPRESSED, MEASUREMENT_SETTINGS, ResultsError, metadata_path, older_columns, read_metadata,
                       recorded_settings, scan, sibling)
from ..schema import COLUMNS
from ..variants import format_params
from .plan import Point, Settings

DEFAULTS = {k: getattr(Settings(), k) for k in MEASUREMENT_SETTINGS}  # what a run measures with unless told
Say = Callable[[str], None]


class RunRefused(ValueError):
    """Bad input found before anything was touched: one line naming the value and the choices."""


class RunAborted(RuntimeError):
    """The run could not start or go on (no GPU, a failure): one line saying what the file holds."""


class RunInterrupted(RunAborted):
    """Ctrl-C: what finished is kept; the message says what the file holds and how to go on."""


def check_output(output: Path, compressed_resumes: bool = False) -> None:
    """Refuse an output that cannot be written, or whose run was finished and compressed (X.csv.gz
    beside it; compressed_resumes: a batched tuning's resume, which unpacks it), before anything
    runs or is touched."""
    if output.is_dir():
        raise RunRefused(f"--output {output} is a folder; name a CSV file")
    if output.suffix != ".csv":
        raise RunRefused(f"--output {output}: a results file ends in .csv")
    problem = cannot_create(output)
    if problem:
        raise RunRefused(f"--output {output}: {problem}")
    if metadata_path(output).is_dir():  # found only after the first row, as a traceback
        raise RunRefused(f"--output {output}: its metadata goes to {metadata_path(output)}, which is a folder")
    packed = sibling(output, COMPRESSED)
    if packed.exists() and not compressed_resumes:
        raise RunRefused(f"--output {output}: {packed} is that run, finished and compressed, with its metadata "
                         f"{metadata_path(output)}; a compressed run is not written to again: choose another --output")


def cannot_create(path: Path) -> str | None:
    """Why a file or folder at path (and the folders above it) cannot be made or written, or None:
    the nearest existing folder above it is a file, or this user may not write there."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    target = path if path.exists() else ancestor
    if not os.access(target, os.W_OK):  # root passes this anywhere; opening the file later says the rest
        return f"cannot be written: no write permission in {target}"
    return None


NEW_OUTPUT_HINT = "pass --resume to continue it or choose another --output"  # what a run says of a file that is there


def check_new_output(output: Path, hint: str) -> None:
    """Refuse to begin a new results file where one is: its rows, or its metadata standing alone
    (the record of a run whose CSV is elsewhere), would be lost."""
    for path in (output, sibling(output, COMPRESSED)):
        if path.exists() and path.stat().st_size > 0:
            raise RunRefused(f"{path} already exists; {hint}")
    if metadata_path(output).exists():
        raise RunRefused(f"{metadata_path(output)} already exists without {output.name}: it records an earlier run; {hint}")


def resumable(output: Path):
    """The file to continue, checked row by row (nothing is changed here); None when it is new."""
    if not output.exists() or output.stat().st_size == 0:
        return None
    try:
        found = scan(output)
    except ResultsError as exc:
        raise RunRefused(f"{output} cannot be resumed: {exc}") from None
    if found.header != COLUMNS and not older_columns(found.header):
        missing = [c for c in COLUMNS if c not in found.header]
        raise RunRefused(f"{output} cannot be resumed: its columns are not those this mmbench writes"
                         + (f" (missing {', '.join(missing)})" if missing else ""))
    return found


def previous_metadata(output: Path, found, say: Say) -> dict:
    """The metadata of the file to continue, checked now (before anything is touched); a file
    without it is continued with the settings its rows show, and a warning says so."""
    try:
        previous = read_metadata(output)
    except ResultsError as exc:
        raise RunRefused(f"{output} cannot be resumed: {exc}") from None
    if found and not previous:
        say(f"warning: {output.with_suffix('.meta.json')} is missing: runs, warmup and cache are taken "
            f"from the rows; threads and seed are this run's")
    recorded, held = set(previous.get("operations") or ()), {row.get("op") or "gemm" for row in found.rows} if found else set()
    if recorded and held - recorded:
        raise RunRefused(f"{output} cannot be resumed: its rows are of {', '.join(sorted(held))}, but "
                         f"{metadata_path(output)} records a run of {', '.join(sorted(recorded))} (another run's metadata)")
    return previous


def resolve_settings(given: dict, output: Path, previous: dict | None) -> dict:
    """The run's measurement settings: those given (options or config), else on a resume
    (previous: the file's metadata) the file's, else the defaults. A resume that asks for other
    settings than the file has is refused: one file, one way of measuring."""
    recorded = {}
    if previous is not None:
        try:
            recorded = recorded_settings(output, previous)
        except ResultsError as exc:
            raise RunRefused(str(exc)) from None
    clash = {k: (recorded[k], v) for k, v in given.items() if k in recorded and recorded[k] != v}
    if clash:
        then = ", ".join(f"{k}={a}" for k, (a, _) in clash.items())
        now = ", ".join(f"{k}={b}" for k, (_, b) in clash.items())
        raise RunRefused(f"{output} was measured with {then}; this resume asks for {now}: one file holds one way of "
                         f"measuring, so resume with the file's settings (leave them out) or choose another --output")
    return {**DEFAULTS, **{k: v for k, v in recorded.items() if k in DEFAULTS}, **given}


def check_buildable(points: Sequence[Point]) -> None:
    """Refuse a plan with a point no GPU can run (a broken constraint, too many threads a block):
    known from the registry alone, so it is said before anything runs, dry runs included."""
    for p in points:
        problem = p.variant.problem(p.params)
        if problem:
            raise RunRefused(f"{p.variant.name} {format_params(p.params)}: {problem}")

