"""Result files: the streaming CSV writer, metadata JSON, and reading back (the row: schema.py).

A run writes ``NAME.csv`` (one row per point, each row written whole in one write and flushed as
the point finishes, every sample kept in ``time_ms_samples``) and ``NAME.meta.json`` beside it.

A row is complete or absent. Every row read back is checked (field count, numbers, status,
sample count, timestamp); a crash can only cut the last line short, so a torn last line is set
aside (``NAME.torn.txt``) and its point measured again, while a bad line anywhere else means the
file was damaged otherwise and is refused with the line named.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from .schema import ADDED_COLUMNS, COLUMNS, FLOATS, INTS, KEY, REQUIRED, STATUSES, utc_now

if TYPE_CHECKING:  # pandas is imported where a file is read into a frame: a run's start needs none of it
    import pandas as pd

_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d)$")


class ResultsError(ValueError):
    """A results file that is missing, empty, damaged or not ours."""


def run_csv(name: str, root: Path) -> Path:
    """Where a run named NAME writes by default: its own folder, ``root/NAME/NAME.csv`` (root: the
    user's runs, places.runs_dir()), so its metadata, figures and report end up together."""
    return root / name / f"{name}.csv"


COMPRESSED = ".csv.gz"  # a finished results CSV gzipped to keep the tree small: read like X.csv, never appended to


def _base(csv_path: Path) -> Path:
    """X for X.csv and X.csv.gz (what its metadata and other files are named after)."""
    name = csv_path.name
    return csv_path.with_name(name[:-len(COMPRESSED)]) if name.endswith(COMPRESSED) else csv_path.with_suffix("")


def figure_dir(csv_path: Path) -> Path:
    """Where the figures and reports of a results CSV go: its own folder when it has one
    (``results/X/X.csv`` -> ``results/X/``), else a folder named after it beside it."""
    base = _base(csv_path)
    return csv_path.parent if csv_path.parent.name == base.name else base


def sibling(csv_path: Path, suffix: str) -> Path:
    """A file that belongs to a results CSV: X.csv or X.csv.gz -> X + suffix."""
    base = _base(csv_path)
    return base.with_name(base.name + suffix)


def metadata_path(csv_path: Path) -> Path:
    return sibling(csv_path, ".meta.json")


def torn_path(csv_path: Path) -> Path:
    """Where a torn last line is set aside (not .csv: it must never pass for results)."""
    return sibling(csv_path, ".torn.txt")


def cell(row: Mapping, column: str) -> str:
    """A row's value as text, or, where it is empty, the value rows had before its column was added (a
    file made before it)."""
    value = row.get(column)
    if value in (None, "") and column in ADDED_COLUMNS:
        return str(ADDED_COLUMNS[column])
    return "" if value is None else str(value)


def row_key(row: Mapping) -> tuple:
    return (cell(row, "op"), str(row["variant"]), str(row["params"] or ""), int(row["m"]), int(row["n"]), int(row["k"]),
            str(row["cache"]), cell(row, "scope"), int(row.get("pad") or 0), cell(row, "dtype"), cell(row, "layout"))


def older_columns(header: tuple[str, ...]) -> bool:
    """Whether a header is this mmbench's columns less some added since (an older file it can bring up to date)."""
    missing = [c for c in COLUMNS if c not in header]
    return bool(missing) and all(c in ADDED_COLUMNS for c in missing) and [c for c in COLUMNS if c in header] == list(header)


# -- checking rows ---------------------------------------------------------------------------------
def _is_int(text: str) -> bool:
    return re.fullmatch(r"-?\d+", text) is not None


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _point_text(row: Mapping[str, str]) -> str:
    params = f"[{row['params']}]" if row.get("params") else ""
    dims = "x".join(row[d] for d in ("m", "n", "k") if row.get(d) not in (None, "", "0"))
    return f"{row.get('variant')}{params} at {dims}"


def row_problem(row: Mapping[str, str | None]) -> str | None:
    """Why one row, as read by csv.DictReader, is not complete; None when it is."""
    if None in row or any(v is None for v in row.values()):  # DictReader's marks for a wrong field count
        count = len([v for v in row.values() if v is not None]) + len(row.get(None) or ())
        return f"{count} fields where the header has {len([k for k in row if k is not None])}"
    for col in REQUIRED:
        if col in row and not row[col]:
            return f"empty {col}"
    if "status" in row and row["status"] not in STATUSES:
        return f"status '{row['status']}' is not one of {', '.join(STATUSES)}"
    for col in INTS:
        if row.get(col) and not _is_int(row[col]):
            return f"{col} '{row[col]}' is not an integer"
    for col in FLOATS:
        if row.get(col) and not _is_float(row[col]):
            return f"{col} '{row[col]}' is not a number"
    if row.get("clock_sagged") not in (None, "", "True", "False"):
        return f"clock_sagged '{row['clock_sagged']}' is not True or False"
    if "finished_at" in row and not _TIMESTAMP.match(row["finished_at"]):
        return f"finished_at '{row['finished_at']}' is not a whole timestamp"
    meaning = _meaning_problem(row)
    if meaning:
        return meaning
    if row.get("status") == "ok" and "time_ms_samples" in row:
        samples = row["time_ms_samples"].split(";") if row["time_ms_samples"] else []
        if len(samples) != int(row["runs"]) or not all(_is_float(s) for s in samples):
            return f"{len(samples)} samples where runs is {row['runs']}"
    if row.get("kernel_ms_samples"):  # the kernel clock's, when it ran: one per run too
        kernel = row["kernel_ms_samples"].split(";")
        if len(kernel) != int(row["runs"]) or not all(_is_float(s) for s in kernel):
            return f"{len(kernel)} kernel-clock samples where runs is {row['runs']}"
    return None


# Rates a row may hold, each never negative; an `ok` row's median time a positive number.
RATES = ("gflops_mean", "gflops_median", "gbytes_per_s")


def _meaning_problem(row: Mapping[str, str]) -> str | None:
    """Why a row whose fields parse cannot be a measurement, or None: a dimension below 1 (k of 0 is
    GEMV's and the moves'), an `ok` row without a positive finite median time, a negative rate."""
    for dim in ("m", "n", "k"):
        least = 0 if dim == "k" and row.get("op", "gemm") != "gemm" else 1
        if row.get(dim) and _is_int(row[dim]) and int(row[dim]) < least:
            return f"{dim} = {row[dim]}: a {row.get('op') or 'gemm'} dimension is at least {least}"
    if row.get("status") == "ok" and "time_ms_median" in row:
        median = float(row["time_ms_median"]) if _is_float(row["time_ms_median"]) else math.nan
        if not (math.isfinite(median) and median > 0):
            return f"status ok with a median time of '{row['time_ms_median']}' (a measured point has a positive one)"
    for rate in RATES:
        if row.get(rate) and _is_float(row[rate]) and float(row[rate]) < 0:
            return f"{rate} {row[rate]} is negative"
    return None


@dataclass(frozen=True)
class Torn:
    """A last line that a crash cut short."""

    line: int  # 1-based line number in the file
    text: str
    problem: str


@dataclass(frozen=True)
class Scan:
    """A results file checked row by row: its header, its complete rows, and a torn tail if any."""

    header: tuple[str, ...]
    rows: list[dict]
    complete_text: str  # the header and every complete row, each line terminated
    torn: Torn | None

    @property
    def keys(self) -> set[tuple]:
        return {row_key(r) for r in self.rows}


def _decode(path: Path) -> str:
    try:
        data = path.read_bytes()
        if path.name.endswith(COMPRESSED):
            data = gzip.decompress(data)
    except IsADirectoryError:
        raise ResultsError(f"{path} is a folder, not a results CSV") from None
    except OSError as exc:  # gzip's BadGzipFile and EOFError of a cut stream included
        raise ResultsError(f"{path} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    except EOFError:
        raise ResultsError(f"{path} cannot be read: the compressed stream is cut short") from None
    if b"\0" in data:
        raise ResultsError(f"{path} is not an mmbench results CSV (a binary file)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultsError(f"{path} is not an mmbench results CSV (not UTF-8 text)") from None


def scan(path: Path) -> Scan:
    """Check every row of a results CSV. Only the last line may be torn; any other bad line is an
    error naming it, as is a file without mmbench's key columns."""
    if not path.exists():
        raise ResultsError(f"no results file at {path}")
    text = _decode(path)
    if not text.strip():
        raise ResultsError(f"{path} is empty")
    lines = text.split("\n")
    ended = lines[-1] == ""  # the text ends with a line terminator
    if ended:
        lines.pop()
    first = lines[0].rstrip("\r")
    if len(lines) == 1 and not ended and ",".join(COLUMNS).startswith(first):
        # A crash while the header itself was written: nothing measured yet; the file starts anew.
        return Scan(COLUMNS, [], "", Torn(1, first, "a header cut short"))
    try:
        header = tuple(next(csv.reader([first])))
    except csv.Error:
        header = ()
    missing = [c for c in KEY + ("status",) if c not in header and c not in ADDED_COLUMNS]
    if missing:
        shown = ", ".join(header[:8]) + (", ..." if len(header) > 8 else "")
        raise ResultsError(f"{path} is not an mmbench results CSV: it has no column {', '.join(missing)} "
                           f"(its columns: {shown or 'none'})")
    rows, kept, torn = [], [lines[0].rstrip("\r")], None
    seen: dict[tuple, int] = {}  # a point's key -> the line that holds it
    for number, line in enumerate(lines[1:], start=2):
        body = line.rstrip("\r")
        last = number == len(lines)
        if not body and not last:
            raise ResultsError(f"{path}: line {number} is empty; a results file has no blank lines")
        try:
            row = next(csv.DictReader([body], fieldnames=header))
            problem = row_problem(row)
        except (csv.Error, StopIteration) as exc:
            problem = f"not CSV ({exc})" if str(exc) else "an empty line"
        if problem is None:
            key = tuple(row.get(c, ADDED_COLUMNS.get(c, "")) for c in KEY)
            if key in seen:
                raise ResultsError(f"{path}: lines {seen[key]} and {number} are the same point ({_point_text(row)}); "
                                   f"a results file holds each point once: remove one of them")
            seen[key] = number
            rows.append(row)
            kept.append(body)
        elif last:
            torn = Torn(number, body, problem)
        else:
            raise ResultsError(f"{path}: line {number} is not a complete row ({problem}); only the last line can "
                               f"be cut by a crash, so this file was changed otherwise: repair or remove that line")
    # A complete last row that lacks only its line end is kept; set_aside_torn ends it before appending.
    return Scan(header, rows, "".join(line + "\r\n" for line in kept), torn)


def torn_message(path: Path, torn: Torn, action: str) -> str:
    return f"warning: {path}: the last line (line {torn.line}) is a torn row ({torn.problem}); {action}"


def set_aside_torn(path: Path, found: Scan) -> str | None:
    """Move a torn last line into NAME.torn.txt and leave the file with its complete rows, every
    line terminated (the next row must not join an unended one); returns the one-line warning,
    or None when there was nothing torn."""
    if found.torn is None:
        if not path.read_bytes().endswith(b"\n"):
            _rewrite(path, found.complete_text)
        return None
    stamp = utc_now()
    with torn_path(path).open("a", encoding="utf-8") as f:
        f.write(f"# {stamp}: line {found.torn.line} of {path.name}, set aside by mmbench ({found.torn.problem})\n"
                f"{found.torn.text}\n")
    _rewrite(path, found.complete_text)
    return torn_message(path, found.torn, f"set aside in {torn_path(path)}; its point, if planned, is measured again")


def add_columns(path: Path, found: Scan) -> str | None:
    """Give a file written before some columns existed those columns, each with the value every
    row of such a file has (ADDED_COLUMNS), so that rows appended now match it; returns the
    one-line notice, or None when it has them all."""
    if not older_columns(found.header):
        return None
    missing = [c for c in COLUMNS if c not in found.header]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in found.rows:
        writer.writerow([row[c] if c in row else ADDED_COLUMNS[c] for c in COLUMNS])
    _rewrite(path, buf.getvalue())
    return (f"{path}: written before the columns {', '.join(missing)} existed; its {len(found.rows)} rows now have them ("
            + ", ".join(f"{c} = {ADDED_COLUMNS[c] or 'empty'}" for c in missing) + ")")


def _rewrite(path: Path, text: str) -> None:
    tmp = path.with_suffix(".csv.tmp")
    try:
        tmp.write_text(text, encoding="utf-8", newline="")
        tmp.replace(path)  # atomic: the file is whole before and after
    except BaseException:  # interrupted: the file stays as it was, and no copy beside it
        tmp.unlink(missing_ok=True)
        raise


# -- writing rows ------------------------------------------------------------------------------------
class CsvSink:
    """Appends rows to a CSV, each in one write of the whole line, so an interrupted run loses
    nothing and leaves at most one torn line (which scan() recognizes). A new file appears with its
    first row: the header and that row are written aside and renamed into place together, so a
    results CSV never stands with a header alone (a run stopped before its first row leaves none)."""

    def __init__(self, path: Path, header: tuple[str, ...] | None = None):
        """header: the file's, where its owner has scanned it (else it is read here)."""
        self.path = path
        self._fd: int | None = None
        self.exists = False  # whether the file is there: a new one only from its first row on
        try:
            if path.exists() and path.stat().st_size > 0:
                header = header if header is not None else scan(path).header
                if tuple(header) != COLUMNS:
                    raise ResultsError(f"{path} has other columns than this mmbench writes; choose another --output")
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                self.exists = True
            else:
                check_creatable(path)
        except OSError as exc:
            raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None

    @staticmethod
    def _line(values) -> bytes:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\r\n").writerow(values)
        return buf.getvalue().encode("utf-8")

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        while data:  # a regular file takes it in one write; loop for the rare partial write
            data = data[os.write(fd, data):]

    def write(self, row: Mapping) -> None:
        line = self._line([_cell(row.get(c)) for c in COLUMNS])
        if not self.exists:
            self._create(line)
        else:
            self._write(self._fd, line)

    def _create(self, first_row: bytes) -> None:
        """The new file with its header and first row, renamed into place whole; the open
        descriptor goes on appending to it."""
        part = self.path.with_name(self.path.name + ".part")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(part, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self._write(fd, self._line(COLUMNS))
            self._write(fd, first_row)
            os.replace(part, self.path)
        except BaseException:  # Ctrl-C or a full disk: no half-made file stays behind
            os.close(fd)
            part.unlink(missing_ok=True)
            raise
        self._fd, self.exists = fd, True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class ResultsFile:
    """The results CSV a run writes, owned by one object: scanned once (or given the scan a resume's
    planning made of it), repaired on resume (a torn last row set aside, the columns a later mmbench
    added given), appended to row by row (CsvSink), and its rows counted by status as they go, so
    that nothing reads it again while the run writes it. ResultsError where it cannot be."""

    def __init__(self, path: Path, resume: bool = False, found: Scan | None = None):
        self.path, self.notices, self.counts = path, [], {}
        if path.exists() and path.stat().st_size > 0:
            found = found if found is not None else scan(path)
            header = found.header
            if resume:
                self.notices = [n for n in (set_aside_torn(path, found), add_columns(path, found)) if n]
                header = COLUMNS if older_columns(found.header) else found.header
            for r in found.rows:
                self.counts[r["status"]] = self.counts.get(r["status"], 0) + 1
            self.sink = CsvSink(path, header)
        else:
            self.sink = CsvSink(path)

    @property
    def exists(self) -> bool:
        return self.sink.exists

    def write(self, row: Mapping) -> None:
        self.sink.write(row)
        self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1

    def close(self) -> None:
        self.sink.close()


def check_creatable(path: Path) -> None:
    """OSError when a file cannot be created at path: a file is made and removed in the nearest
    folder that exists (the folders missing below it would be made there), so nothing is left."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".mmbench-probe-")
    os.close(fd)
    os.unlink(probe)


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # full precision, round-trips exactly
    if isinstance(value, str):
        return " ".join(value.split("\n"))  # one row, one line
    return value


# -- reading ----------------------------------------------------------------------------------------
def done_keys(path: Path) -> set[tuple]:
    """Keys of the points a CSV already holds completely (for --resume)."""
    if not path.exists() or path.stat().st_size == 0:
        return set()
    return scan(path).keys


def read_results(path: Path) -> pd.DataFrame:
    """A results CSV as a DataFrame; a clear error when it is missing, empty, damaged or foreign.
    A torn last row is left out, and ``df.attrs["warning"]`` says so."""
    import pandas as pd

    found = scan(path)
    if not found.complete_text:
        raise ResultsError(f"{path} holds nothing but a header cut short")
    df = pd.read_csv(io.StringIO(found.complete_text), dtype={"params": str, "reason": str, "time_ms_samples": str,
                                                                 "padded_shape": str, "host": str, "gpu": str,
                                                                 "gpu_uuid": str, "kernel_ms_samples": str,
                                                                 "stopped": str, "noise_clock": str})
    for col in ("params", "reason", "time_ms_samples", "padded_shape", "host", "gpu", "gpu_uuid", "kernel_ms_samples",
                "stopped", "noise_clock"):
        if col in df:
            df[col] = df[col].fillna("")
    for position, column in enumerate(COLUMNS):
        if column in ADDED_COLUMNS and column not in df:
            default = ADDED_COLUMNS[column]
            df.insert(min(position, len(df.columns)), column, int(default) if column == "pad" else default)
    if found.torn:
        df.attrs["warning"] = torn_message(path, found.torn, "left out")
    return df


def finished_at(meta: Mapping) -> dt.datetime | None:
    """When the run recorded in a metadata file finished: its own record, else its start plus
    its wall time, else its start."""
    def parse(text):
        try:
            stamp = dt.datetime.fromisoformat(str(text))
        except (TypeError, ValueError):
            return None
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)

    if end := parse(meta.get("finished_at")):
        return end
    runs = meta.get("invocations")
    last = runs[-1] if isinstance(runs, list) and runs and isinstance(runs[-1], dict) else {}
    if end := parse(last.get("finished_at")) or parse(last.get("started_at")):
        return end  # a resumed run killed before it could record its end: its last start
    start = parse(meta.get("started_at"))
    wall = meta.get("wall_s")
    if start and isinstance(wall, (int, float)) and math.isfinite(wall):
        return start + dt.timedelta(seconds=wall)
    return start


def _is_results_csv(path: Path) -> bool:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return all(c in header for c in KEY + ("status",) if c not in ADDED_COLUMNS)


def runs_newest_first(root: Path, skip: Path | None = None) -> list[Path]:
    """The results CSVs under root that have metadata beside them, the run that finished last
    first (by its metadata, not the file's mtime), leaving out those under skip (the tunings);
    where a command finds its input when none is named."""
    found = []
    for path in sorted(root.rglob("*.csv")) if root.is_dir() else []:
        if skip is not None and path.is_relative_to(skip):
            continue
        if metadata_path(path).exists() and _is_results_csv(path):
            try:
                end = finished_at(read_metadata(path))
            except ResultsError:
                continue
            if end:
                found.append((end, str(path), path))
    return [path for *_, path in sorted(found, reverse=True)]


# -- metadata ----------------------------------------------------------------------------------------
def write_metadata(csv_path: Path, meta: Mapping) -> Path:
    path = metadata_path(csv_path)
    tmp = path.with_suffix(".json.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)  # a new run's metadata comes before its CSV
    try:
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=False, default=str) + "\n")
        tmp.replace(path)  # atomic: a reader never sees half a file
    except BaseException:  # interrupted: the metadata stays as it was, and no copy beside it
        tmp.unlink(missing_ok=True)
        raise
    return path


def update_metadata(csv_path: Path, **entries) -> Path:
    return write_metadata(csv_path, {**read_metadata(csv_path), **entries})


def read_metadata(csv_path: Path) -> dict:
    """A run's metadata: X.meta.json, or X.meta.json.gz for a finished run kept compressed (a large
    tuning's, whose kernels' reports run to a megabyte); {} where there is none."""
    path = metadata_path(csv_path)
    packed = path.with_name(path.name + ".gz")
    if not path.exists() and packed.exists():
        path = packed
    elif not path.exists():
        return {}
    try:
        meta = json.loads(gzip.decompress(path.read_bytes()) if path == packed else path.read_text())
    except (ValueError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise ResultsError(f"{path} is not mmbench metadata (bad JSON: {exc})") from None
    except OSError as exc:  # a folder of that name, no permission
        raise ResultsError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if not isinstance(meta, dict):
        raise ResultsError(f"{path} is not mmbench metadata (not a JSON object)")
    problem = _metadata_problem(meta)
    if problem:
        raise ResultsError(f"{path} is not mmbench metadata: {problem}")
    return meta


def _metadata_problem(meta: Mapping) -> str | None:
    """What is wrong with the shape of a metadata object (the parts mmbench reads back)."""
    for key, kind in (("settings", dict), ("gpu", dict), ("kernels", dict), ("invocations", list)):
        if meta.get(key) is not None and not isinstance(meta[key], kind):
            return f"'{key}' is not a JSON {'object' if kind is dict else 'array'}"
    if any(not isinstance(i, dict) for i in meta.get("invocations") or ()):
        return "an entry of 'invocations' is not a JSON object"
    settings = meta.get("settings") or {}
    rules = {"runs": lambda v: _count(v, 1), "warmup": lambda v: _count(v, 0), "seed": lambda v: _count(v, None),
             "cache": lambda v: v in ("cold", "hot"), "threads": lambda v: v is None or _count(v, 1)}
    for key, ok in rules.items():
        if key in settings and not ok(settings[key]):
            return f"settings.{key} is {settings[key]!r}"
    return None


def _count(value, least: int | None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (least is None or value >= least)


# What one invocation of a run records of itself; the rest of the metadata describes the file.
INVOCATION_KEYS = ("command", "started_at", "finished_at", "state", "wall_s", "points_planned", "status_counts",
                   "git", "repaired")
# Settings every row of one file must share: a resume may not change them.
MEASUREMENT_SETTINGS = ("runs", "warmup", "cache", "threads", "seed", "l2_flush", "max_noise", "max_interval",
                        "noise_clock")
# Files whose settings do not say how the L2 was flushed were flushed by a write (before 2026-11-24).
L2_FLUSH_BEFORE = "write"


def history(meta: Mapping) -> list[dict]:
    """Every invocation that wrote into a results file, oldest first (metadata written before
    histories existed holds one, at its top level)."""
    if "invocations" in meta:
        return list(meta["invocations"])
    if not meta:
        return []
    end = finished_at(meta)
    return [{k: meta[k] for k in INVOCATION_KEYS if k in meta and k != "finished_at"}
            | {"finished_at": end.isoformat() if end else None}]


def recorded_settings(csv_path: Path, meta: Mapping | None = None) -> dict:
    """The measurement settings a results file was made with: from its metadata (given, or read
    beside it), else from its rows (runs, warmup and the GPU rows' cache mode); {} for a new file."""
    settings = (read_metadata(csv_path) if meta is None else meta).get("settings")
    if settings:
        # a file from before a setting existed was measured the way that setting's absence means
        return ({"l2_flush": L2_FLUSH_BEFORE, "max_noise": None, "max_interval": None, "noise_clock": "events"}
                | {k: settings[k] for k in MEASUREMENT_SETTINGS if k in settings})
    if not csv_path.exists() or csv_path.stat().st_size == 0:
        return {}
    rows = scan(csv_path).rows
    out = {}
    for col in ("runs", "warmup"):
        values = {int(r[col]) for r in rows if r.get(col)}
        if len(values) == 1:
            out[col] = values.pop()
    caches = {r["cache"] for r in rows if r.get("backend") != "blas"}
    if len(caches) == 1:
        out["cache"] = caches.pop()
    if rows:
        out["l2_flush"] = L2_FLUSH_BEFORE
    return out


def status_counts(csv_path: Path) -> dict[str, int]:
    """How many rows of each status the whole file holds (none when there is no file yet)."""
    counts: dict[str, int] = {}
    if not csv_path.exists() or csv_path.stat().st_size == 0:
        return counts
    for r in scan(csv_path).rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts
