"""What run and tune options share once read: comma-separated lists, integer lists, --params
pins, the cluster and the crash isolation asked for, and the ranges and choices a value given in
Python (not through the command line's option types) must fall in. RunRefused, one line naming
the value, for anything else. Below sweep.py and tuning/, which both read these options."""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Sequence

from .refusals import RunRefused


def split(values: Sequence[str]) -> list[str]:
    """Comma-separated items of repeatable values, blanks dropped: ("a,b", "c") -> [a, b, c]."""
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def int_list(option: str, text: str, minimum: int = 1) -> tuple[int, ...]:
    kind = "positive" if minimum >= 1 else "non-negative"
    message = f"{option} '{text}': expected comma-separated {kind} integers"
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise RunRefused(message) from None
    if not values or min(values) < minimum:
        raise RunRefused(message)
    return values


def parse_params(params: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """--params "BM=128,BK=8/16" -> {"BM": (128,), "BK": (8, 16)}."""
    out = {}
    if params and not split(params):
        raise RunRefused(f"--params '{','.join(params)}': expected NAME=V[/V...] pairs, e.g. BM=128,BK=8/16")
    given: dict[str, str] = {}
    for item in split(params):
        name, eq, values = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise RunRefused(f"--params '{item}': expected NAME=V[/V...] pairs, e.g. BM=128,BK=8/16")
        if name in given:  # the last would win silently
            raise RunRefused(f"--params sets {name} twice ({name}={given[name]} and {item}); give each parameter once "
                             f"({name}={given[name]}/{values.strip()} sweeps both)")
        given[name] = values.strip()
        out[name] = int_list(f"--params {name}", values.replace("/", ","), minimum=0)  # flags may be 0
    return out


def isolation_of(isolation: str, point_timeout: float | None):
    """The crash isolation a run asked for (engine/points_isolated.Isolation)."""
    from .points_isolated import Isolation

    if point_timeout is not None and isolation == "none":
        raise RunRefused(f"--point-timeout {point_timeout:g} stops a point's worker process, and --isolation none runs "
                         f"the points in this process: give --isolation process")
    return Isolation(isolation, point_timeout)


def cluster_spec(cluster: str | None, scheduler: str | None, workers: int | None, gpus: bool):
    """The cluster a run asked for, or None (Dask is then never imported); gpus: whether some
    point needs a GPU (a local cluster then has one worker per GPU)."""
    if cluster and scheduler:
        raise RunRefused("--cluster local starts a cluster and --scheduler uses a running one: give one of them")
    if workers is not None and not cluster:
        raise RunRefused("--workers sizes a cluster that --cluster local starts")
    if workers is not None and gpus:
        raise RunRefused(f"--workers {workers} sizes a local cluster of CPU processes; these points need a GPU, and "
                         f"--cluster local starts one worker per GPU (CUDA_VISIBLE_DEVICES chooses them)")
    if scheduler is not None and not _address(scheduler):
        raise RunRefused(f"--scheduler '{scheduler.strip()}': expected an address such as tcp://HOST:8786 (a host and "
                         f"its port)")
    if not (cluster or scheduler):
        return None
    from .points_dask import ClusterSpec

    return ClusterSpec(scheduler=scheduler, workers=workers)


def _address(text: str) -> bool:
    """Whether text looks like a Dask scheduler's address: [PROTOCOL://]HOST:PORT."""
    host, _, port = text.strip().split("://", 1)[-1].rpartition(":")
    return bool(host) and port.isdigit()


class Limit(NamedTuple):
    """The range an option's value falls in: an integer from least to most, or a finite number
    over least (from least, where least_taken) and under most; most None: no bound."""

    field: str
    kind: type  # int or float
    least: float
    most: float | None = None
    least_taken: bool = False  # a number: whether least itself is taken (an integer's always is)


def check_given(values: Mapping[str, Any], limits: Sequence[Limit], choices: Sequence[tuple[str, Sequence]]) -> None:
    """Refuse the first value (None: not given) outside its limit or its choices, named as the
    keyword argument it came as: a request built in Python has not been through the command
    line's option types (click.IntRange, Finite, Choice), which refuse these."""
    for limit in limits:
        value = values.get(limit.field)
        if value is None:
            continue
        if limit.kind is int:
            fits = isinstance(value, int) and not isinstance(value, bool) and limit.least <= value <= (limit.most or value)
            span = f"an integer from {limit.least}" + (f" to {limit.most}" if limit.most else " up")
        else:
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            fits = number and (value >= limit.least if limit.least_taken else value > limit.least) \
                and value < (limit.most or math.inf)
            span = (f"a finite number {'from' if limit.least_taken else 'over'} {limit.least}"
                    + (f" and under {limit.most}" if limit.most else ""))
        if not fits:
            raise RunRefused(f"{limit.field}={value!r}: expected {span}")
    for key, among in choices:
        value = values.get(key)
        if value is not None and value not in among:
            raise RunRefused(f"{key}={value!r}; choose from: {', '.join(among)}")


def shown_value(value) -> str:
    """An option's value as the user might have typed it ('' for a flag): what a refusal names."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(value)
