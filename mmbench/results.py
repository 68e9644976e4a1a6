"""Result files: the row schema, the streaming CSV writer, metadata JSON, and reading back.

A run writes ``NAME.csv`` (one row per point, written and flushed as the point finishes, every
sample kept in ``time_ms_samples``) and ``NAME.meta.json`` beside it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

# Units live in the column names; values stay raw.
COLUMNS = (
    "variant", "label", "backend", "params", "m", "n", "k", "cache",
    "status", "reason",
    "rel_err", "err_bound_ratio",
    "runs", "warmup",
    "time_ms_mean", "time_ms_median", "time_ms_min", "time_ms_max", "time_ms_std", "cv",
    "gflops_mean", "gflops_median", "gbytes_per_s",
    "sm_clock_mhz_before", "sm_clock_mhz_after", "clock_sagged",
    "threads", "time_ms_samples", "finished_at",
)
KEY = ("variant", "params", "m", "n", "k", "cache")  # one row per point; --resume skips these


class ResultsError(ValueError):
    """A results file that is missing, empty or not ours."""


RESULTS_DIR = Path("results")


def latest_results(root: Path = RESULTS_DIR) -> Path:
    """The newest results CSV under root (what RESULTS means when left out)."""
    found = [p for p in root.rglob("*.csv") if not p.name.endswith(".profile.csv")] if root.is_dir() else []
    if not found:
        raise ResultsError(f"no results CSV under {root}/; run `mmbench run` first or name one")
    return max(found, key=lambda p: p.stat().st_mtime)


def metadata_path(csv_path: Path) -> Path:
    return csv_path.with_suffix(".meta.json")


def row_key(row: Mapping) -> tuple:
    return (str(row["variant"]), str(row["params"] or ""), int(row["m"]), int(row["n"]), int(row["k"]), str(row["cache"]))


class CsvSink:
    """Appends rows to a CSV and flushes each one, so an interrupted run loses nothing."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists() or path.stat().st_size == 0
        if not fresh:
            with path.open(newline="") as f:
                header = next(csv.reader(f), [])
            if tuple(header) != COLUMNS:
                raise ResultsError(f"{path} has other columns than this mmbench writes; choose another --output")
        self._file = path.open("a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=COLUMNS, extrasaction="raise")
        if fresh:
            self._writer.writeheader()
            self._file.flush()

    def write(self, row: Mapping) -> None:
        self._writer.writerow({c: _cell(row.get(c)) for c in COLUMNS})
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # full precision, round-trips exactly
    return value


def done_keys(path: Path) -> set[tuple]:
    """Keys of the points a CSV already holds (for --resume)."""
    if not path.exists() or path.stat().st_size == 0:
        return set()
    with path.open(newline="") as f:
        return {row_key(r) for r in csv.DictReader(f)}


def read_results(path: Path) -> pd.DataFrame:
    """A results CSV as a DataFrame; a clear error when it is missing, empty or foreign."""
    if not path.exists():
        raise ResultsError(f"no results file at {path}")
    try:
        df = pd.read_csv(path, dtype={"params": str, "reason": str, "time_ms_samples": str})
    except pd.errors.EmptyDataError:
        raise ResultsError(f"{path} is empty") from None
    missing = [c for c in KEY + ("status",) if c not in df.columns]
    if missing:
        raise ResultsError(f"{path} is not an mmbench results CSV (no column {', '.join(missing)})")
    for col in ("params", "reason", "time_ms_samples"):
        df[col] = df[col].fillna("")
    return df


def samples_of(cell: str) -> list[float]:
    """The per-sample times of one row, in milliseconds."""
    return [float(x) for x in cell.split(";")] if cell else []


def join_samples(times_ms: Iterable[float]) -> str:
    return ";".join(repr(t) for t in times_ms)


def write_metadata(csv_path: Path, meta: Mapping) -> Path:
    path = metadata_path(csv_path)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=False, default=str) + "\n")
    tmp.replace(path)  # atomic: a reader never sees half a file
    return path


def update_metadata(csv_path: Path, **entries) -> Path:
    return write_metadata(csv_path, {**read_metadata(csv_path), **entries})


def read_metadata(csv_path: Path) -> dict:
    path = metadata_path(csv_path)
    return json.loads(path.read_text()) if path.exists() else {}
