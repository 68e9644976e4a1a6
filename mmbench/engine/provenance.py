"""Where and with what a file was measured: the file keeps the machine that began it at the top
of its metadata, each invocation its own, and a resume elsewhere is said."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .refusals import Say


def first_record(previous: Mapping, now: Mapping) -> dict:
    """The file's top-level record of where and with what it was measured (host, software, git,
    GPU, ...): that of the invocation that began it, kept on every resume, since each invocation
    keeps its own; this run's where the file has none yet."""
    return {k: previous.get(k) or v for k, v in now.items()}


def _at(meta, *keys):
    """meta[k1][k2]..., or None where a level is missing."""
    for key in keys:
        meta = meta.get(key) if isinstance(meta, Mapping) else None
    return meta


SOFTWARE_PARTS = (("mmbench", "mmbench"), ("packages", "packages"), ("nvcc", "nvcc"), ("blas", "BLAS"),
                  ("kernel_sources", "kernel sources"))


def machine_changes(first: Mapping, now: Mapping) -> list[str]:
    """How this run's machine differs from the one that began a file: its host, GPU, commit and
    the parts of its software that differ ([] when nothing does, or the file does not say)."""
    changes = [f"{label} {_at(now, *keys)} (was {_at(first, *keys)})"
               for label, keys in (("host", ("host", "hostname")), ("GPU", ("gpu", "uuid")), ("commit", ("git", "commit")))
               if _at(first, *keys) and _at(now, *keys) and _at(first, *keys) != _at(now, *keys)]
    if first.get("software") and now.get("software"):
        parts = [label for key, label in SOFTWARE_PARTS if _at(first, "software", key) != _at(now, "software", key)]
        changes += [f"software ({', '.join(parts)})"] if parts else []
    return changes


def say_machine_changes(output: Path, previous: Mapping, facts: Mapping, say: Say) -> None:
    """A resume on another machine or software is allowed, and said in one line."""
    changes = machine_changes(previous, facts) if previous else []
    if changes:
        say(f"note: {output} was begun elsewhere; this run differs in {'; '.join(changes)}. Its rows name the host "
            f"(and GPU) that measured them; the metadata keeps the first machine at its top and each run's own in "
            f"its invocations")

