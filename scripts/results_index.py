"""Write the indexes of results/: results/README.md (reference runs and checks) and
results/tuning/README.md (every tuning session, oldest first), from what the folders hold:
each folder's README.md or REPORT.md title, and the metadata beside each CSV (GPU, date, commit).
In a git checkout it indexes the files git tracks (`git add` a new folder first), so a run left
lying in results/ does not change the committed index; elsewhere, every file.
The cache column counts the entries of the shipped tuning cache (mmbench/data/tuning-cache.json)
that name a CSV of the folder.
tests/test_results_index.py fails when a committed index differs from what this writes, so a
new folder comes with its index line.
    usage: python3 scripts/results_index.py [--check]
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402

from mmbench import batched, places  # noqa: E402
from mmbench.results import ResultsError, finished_at, metadata_path, read_metadata, read_results  # noqa: E402

RESULTS = Path("results")
GROUPS = ("checks", "tuning")  # folders of folders; every other folder under results/ is a reference run
CACHE = places.SHIPPED_CACHE.relative_to(REPO)  # the shipped cache, as the repository holds it
DERIVED = ("table1.csv",)  # tables drawn from a run, not runs
FILES: set[Path] = set()  # what indexes() lists, relative to REPO


def listed() -> list[Path]:
    """The files under results/, relative to REPO: those git tracks (staged ones included), or all."""
    proc = subprocess.run(["git", "-C", str(REPO), "ls-files", "results"], capture_output=True, text=True)
    if proc.returncode == 0 and (REPO / ".git").exists():
        return [Path(line) for line in proc.stdout.splitlines()]
    return [p.relative_to(REPO) for p in (REPO / RESULTS).rglob("*") if p.is_file()]


def within(folder: Path) -> list[Path]:
    return [p for p in FILES if p.is_relative_to(folder)]


def title(folder: Path) -> str:
    for name in ("README.md", "REPORT.md"):
        path = REPO / folder / name
        if folder / name in FILES and path.read_text().strip():
            first = path.read_text().splitlines()[0]
            return first.lstrip("# ").strip().replace("|", "/")
    return "(no README.md)"


def plain(path: Path) -> Path:
    """X.csv for a batched tuning file's X.csv.gz (its metadata is X.meta.json); the path itself otherwise."""
    return path.with_name(path.name[:-3]) if path.name.endswith(".csv.gz") else path


def is_batched(path: Path) -> bool:
    """A batched tuning file (X.csv.gz of batched.COLUMNS), not a results CSV gzipped to save room."""
    if not path.name.endswith(".csv.gz"):
        return False
    with gzip.open(REPO / path, "rt", encoding="utf-8") as f:
        return f.readline().strip() == ",".join(batched.COLUMNS)


def runs(folder: Path) -> list[Path]:
    """The results CSVs of a folder and its subfolders, and batched tuning files (X.csv.gz): those
    with metadata beside them."""
    return sorted(p for p in within(folder) if (p.suffix == ".csv" or p.name.endswith(".csv.gz"))
                  and p.name not in DERIVED and metadata_path(plain(p)) in FILES)


def summary(folder: Path, cache_counts: Counter) -> dict:
    found, probes = [], 0  # (finished, gpu, commit, rows, ok) per CSV; rows of timing probes (no check column)
    for csv in runs(folder):
        try:
            meta = read_metadata(REPO / plain(csv))
        except ResultsError as exc:  # listed, but not readable: say so in the index, not in a traceback
            print(f"warning: {csv}: {exc}", file=sys.stderr)
            continue
        try:
            df = batched.read_rows(REPO / plain(csv)) if is_batched(csv) else read_results(REPO / csv)
        except ResultsError as exc:
            if "not an mmbench results CSV" not in str(exc) or not meta:
                print(f"warning: {csv}: {exc}", file=sys.stderr)
                continue
            # a probe's table (scripts/l2_flush_probe.py): its metadata says where and when, its rows are not checked
            probes += len(pd.read_csv(REPO / csv))
            df = pd.DataFrame({"status": []})
        gpu = meta.get("gpu")
        # a file whose metadata lacks times still has each row's own
        end = finished_at(meta) or (pd.to_datetime(df.finished_at, utc=True).max() if len(df) and "finished_at" in df else None)
        found.append((end.isoformat() if end is not None else "", gpu.get("name") if isinstance(gpu, dict) else None,
                      ((meta.get("git") or {}).get("commit") or "")[:7], len(df), int((df.status == "ok").sum())))
    found.sort()
    known = [f[0][:10] for f in found if f[0]]
    span = "?" if not known else known[0] if known[0] == known[-1] else f"{known[0]} to {known[-1]}"
    commits = list(dict.fromkeys(f[2] for f in found if f[2]))
    cache = sum(n for path, n in cache_counts.items() if Path(path).is_relative_to(folder))
    return {"gpu": ", ".join(sorted({f[1] for f in found if f[1]})) or "?", "dates": span,
            "first": next((f[0] for f in found if f[0]), ""), "commits": ", ".join(commits) or "?", "csvs": len(found),
            "rows": f"{sum(f[4] for f in found)} / {sum(f[3] for f in found)}" + (f" (and {probes} probe rows)" if probes else ""),
            "cache": cache}


def cache_sources() -> Counter:
    """How many tuning-cache entries name each CSV."""
    path = REPO / CACHE
    entries = json.loads(path.read_text()) if path.exists() else {}
    return Counter(e.get("results") for e in entries.values() if isinstance(e, dict) and e.get("results"))


def table(folders: list[Path], base: Path, cache_counts: Counter, with_cache: bool) -> list[str]:
    head = ["folder", "what", "GPU", "finished", "commits", "CSVs", "rows ok / all"] + (["cache entries"] if with_cache else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([" --- "] * 2 + [" --- "] * 3 + [" ---: "] * (len(head) - 5)) + "|"]
    for folder in folders:
        s = summary(folder, cache_counts)
        cells = [f"[{folder.relative_to(base)}/]({folder.relative_to(base)}/)", title(folder), s["gpu"], s["dates"],
                 s["commits"], str(s["csvs"]), s["rows"]] + ([str(s["cache"])] if with_cache else [])
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def subfolders(folder: Path) -> list[Path]:
    """The folders directly under folder that hold a listed file."""
    depth = len(folder.parts)
    return sorted({Path(*p.parts[:depth + 1]) for p in within(folder) if len(p.parts) > depth + 1})


def top_index(cache_counts: Counter) -> str:
    reference = [p for p in subfolders(RESULTS) if p.name not in GROUPS]
    return "\n".join([
        "# Results",
        "",
        "One folder per run or session. In each: the results CSVs with their metadata beside them",
        "(`X.csv` and `X.meta.json`: GPU, driver and library versions, settings, git commit and the",
        "commands that wrote it), the figures drawn from them, and a README.md or REPORT.md saying what",
        "they show. This index is written by `python3 scripts/results_index.py` from those files; a test",
        "fails when it is out of date. The tuning cache that mmbench ships (read by `mmbench run` after",
        "the user's own) is [mmbench/data/tuning-cache.json](../mmbench/data/tuning-cache.json).",
        "",
        "## Reference runs: one per study and GPU",
        "",
        "`mmbench run --config configs/STUDY.toml -o results/STUDY-GPU/STUDY-GPU.csv`, then `mmbench",
        "report --config configs/STUDY.toml results/STUDY-GPU/STUDY-GPU.csv` (figures and REPORT.md go",
        "into the same folder).",
        "",
        *table(reference, RESULTS, cache_counts, with_cache=False),
        "",
        "## Checks: one question each",
        "",
        *table(subfolders(RESULTS / "checks"), RESULTS, cache_counts, with_cache=False),
        "",
        "## Tuning history",
        "",
        f"Every tuning session, oldest first, with the cache entries each one gave: [tuning/README.md](tuning/README.md)"
        f" ({len(subfolders(RESULTS / 'tuning'))} folders).",
        "",
    ])


def tuning_index(cache_counts: Counter) -> str:
    folders = sorted(subfolders(RESULTS / "tuning"), key=lambda f: (summary(f, cache_counts)["first"], f.name))
    named = sum(cache_counts.values())
    return "\n".join([
        "# Tuning history",
        "",
        "Every session that tuned a kernel or tried a change to one, oldest first. A folder holds the",
        "`mmbench tune` runs of one GPU session (each CSV has one row per configuration and shape, with",
        "its metadata beside it), the comparisons with the vendor library that followed, and a README.md",
        "with the commands, what was chosen and why. `cache entries` counts the entries of",
        f"[mmbench/data/tuning-cache.json](../../mmbench/data/tuning-cache.json) that came from the folder ({named} of",
        f"{len(json.loads((REPO / CACHE).read_text()))} entries name their CSV). Written by `python3 scripts/results_index.py`.",
        "",
        *table(folders, RESULTS / "tuning", cache_counts, with_cache=True),
        "",
    ])


def indexes() -> dict[Path, str]:
    global FILES
    FILES = set(listed())
    counts = cache_sources()
    return {RESULTS / "README.md": top_index(counts), RESULTS / "tuning" / "README.md": tuning_index(counts)}


def main(argv: list[str]) -> int:
    stale = []
    for path, text in indexes().items():
        if "--check" in argv:
            if not (REPO / path).exists() or (REPO / path).read_text() != text:
                stale.append(str(path))
        else:
            (REPO / path).write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python3 scripts/results_index.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
