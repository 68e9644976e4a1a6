"""Helpers several test modules share, imported by name (`from helpers import verified`): pytest's
default import mode puts tests/ on sys.path."""

from __future__ import annotations


def verified(runner, point, *args):
    """LocalPoints._verify_and_time's row, as the runner makes it (a wrong or skipped point raises its reason)."""
    return runner.row_of(point, lambda: runner._verify_and_time(point, *args))
