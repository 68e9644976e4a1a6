"""Tuning plans: several variants tuned per shape in one resumable run (`mmbench tune --plan`).

A plan is a TOML file: the sizes it tunes at, how it measures, and its searches. A search names a
variant and the configurations to try, listed (`configurations`) or as parameters pinned to some
values with the rest of the space searched (`params`, as `mmbench tune --params` takes them), at the
plan's sizes or its own (`sizes`), at a precision and layout the variant takes (`dtype`, `layout`:
its first by default; the cache keeps each form's entries apart). Every configuration of every search runs at each of its shapes
as an ordinary sweep point; the best per shape and variant goes into the tuning cache, or with
`per = "class"` the best per size class over the search's shapes (an entry that also serves the
class's shapes the plan did not measure).

The plans mmbench ships live in mmbench/data/plans/ and are named by their file's stem
(`--plan ladder`); any other value is a path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.plan import Point, Settings
from ..engine.options import parse_params as parse_pins
from ..engine.refusals import RunRefused
from ..ops import get_op
from ..sizes import Shape, SizeSpecError
from ..toml_files import ConfigError, integer, read_toml, refuse_unknown, run_table
from ..variants import Params, Variant, VariantError, get_variant, parse_params, tuning_space
from .cache import TuneError
from .strategies import choose

SHIPPED_PLANS = Path(__file__).resolve().parent.parent / "data" / "plans"
TOP_KEYS = {"name", "description", "sizes", "run", "search"}
RUN_KEYS = {"runs", "warmup", "cache"}
SEARCH_KEYS = {"variant", "description", "sizes", "configurations", "params", "dtype", "layout", "per"}
PER = ("shape", "class")  # what a search's best is kept for


@dataclass(frozen=True)
class Search:
    """One variant's configurations tried at some shapes."""

    variant: Variant
    description: str
    shapes: tuple[Shape, ...]
    configs: tuple[Params, ...]
    dtype: str = "fp32"  # the precision and layout its points run at (precisions.py)
    layout: str = "nn"
    per: str = "shape"  # its best kept per shape, or per size class of its shapes

    @property
    def form(self) -> tuple[str, str]:
        return self.dtype, self.layout


@dataclass(frozen=True)
class TunePlan:
    path: Path
    name: str
    description: str
    sizes: str  # the plan's size spec (a search may give its own)
    runs: int
    warmup: int
    cache: str
    searches: tuple[Search, ...]
    digest: str  # of the file's text: a resume must continue the same plan

    def settings(self, seed: int) -> Settings:
        """How every point is measured; a configuration that spills registers is a skipped row."""
        return Settings(runs=self.runs, warmup=self.warmup, cache=self.cache, seed=seed, skip_spills=True)

    def points(self) -> list[Point]:
        """Every search's configurations at each of its shapes, shape by shape (so a partial run has
        whole shapes), each point once where searches overlap."""
        by_shape: dict[Shape, dict[tuple, Point]] = {}
        for s in self.searches:
            for shape in s.shapes:
                for p in s.configs:
                    point = Point(s.variant, p, shape, self.cache, dtype=s.dtype, layout=s.layout)
                    by_shape.setdefault(shape, {}).setdefault(point.key, point)
        return [p for shape in sorted(by_shape, key=lambda x: (x.m * x.n * x.k, x.m, x.n, x.k))
                for p in by_shape[shape].values()]

    def variants(self) -> dict[tuple[str, str, str, str], tuple[Variant, tuple[Shape, ...], tuple[Params, ...]]]:
        """Per variant, form and what its best is kept for (name, dtype, layout, per): (variant, every
        shape it is tuned at, every configuration it tries)."""
        out: dict[tuple[str, str, str, str], tuple[Variant, dict, dict]] = {}
        for s in self.searches:
            _, shapes, configs = out.setdefault((s.variant.name, *s.form, s.per), (s.variant, {}, {}))
            shapes.update(dict.fromkeys(s.shapes))
            configs.update(dict.fromkeys(s.configs))
        return {key: (v, tuple(shapes), tuple(configs)) for key, (v, shapes, configs) in out.items()}

    def about(self) -> dict:
        """What a tuning file's metadata says of its plan."""
        return {"plan": self.name, "plan_file": str(self.path), "plan_sha256": self.digest,
                "per_shape": all(s.per == "shape" for s in self.searches),
                "searches": [{"variant": s.variant.name, "description": s.description, "shapes": len(s.shapes),
                              "configurations": len(s.configs), "dtype": s.dtype, "layout": s.layout, "per": s.per}
                             for s in self.searches]}


def plan_path(name_or_path: str) -> Path:
    """A shipped plan's file by name (`ladder`), else the path given."""
    shipped = SHIPPED_PLANS / f"{name_or_path}.toml"
    return shipped if "/" not in name_or_path and shipped.is_file() else Path(name_or_path)


def shipped_plans() -> list[str]:
    return sorted(p.stem for p in SHIPPED_PLANS.glob("*.toml"))


def load_plan(name_or_path: str) -> TunePlan:
    """The plan named or at a path; ConfigError naming the file and the key where it is wrong."""
    path = plan_path(name_or_path)
    text, data = read_toml(path, f"--plan {name_or_path}: no such plan file; shipped plans: {', '.join(shipped_plans())}")
    refuse_unknown(str(path), data, TOP_KEYS)
    run, cache = run_table(path, data, RUN_KEYS)
    sizes = data.get("sizes")
    if not isinstance(sizes, str) or not sizes:
        raise ConfigError(f"{path}: sizes: expected a size spec such as \"512:2049,4096\"")
    searches = data.get("search")
    if not isinstance(searches, list) or not searches:
        raise ConfigError(f"{path}: needs at least one [[search]] table")
    return TunePlan(path=path, name=str(data.get("name", path.stem)), description=str(data.get("description", "")),
                    sizes=sizes, runs=integer(f"{path}: run.runs", run.get("runs", 3), 1),
                    warmup=integer(f"{path}: run.warmup", run.get("warmup", 2), 0), cache=cache,
                    searches=tuple(_search(f"{path}: search[{i}]", s, sizes) for i, s in enumerate(searches)),
                    digest=hashlib.sha256(text.encode()).hexdigest())


def _search(where: str, table: Any, sizes: str) -> Search:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    refuse_unknown(where, table, SEARCH_KEYS)
    try:
        variant = get_variant(str(table.get("variant", "")))
    except VariantError as exc:
        raise ConfigError(f"{where}.variant: {exc}") from None
    if not variant.space:
        raise ConfigError(f"{where}.variant: '{variant.name}' has no tuning space")
    spec = table.get("sizes", sizes)
    try:
        shapes = tuple(get_op(variant.op).parse_sizes(str(spec)))
    except SizeSpecError as exc:
        raise ConfigError(f"{where}.sizes: {exc}") from None
    listed, pinned = table.get("configurations"), table.get("params")
    if (listed is None) == (pinned is None):
        raise ConfigError(f"{where}: give either configurations (a list of \"K=V,...\") or params (\"K=V/V,...\")")
    configs = _listed(where, variant, listed) if listed is not None else _pinned(where, variant, pinned)
    per = table.get("per", "shape")
    if per not in PER:
        raise ConfigError(f"{where}.per: {per!r}; choose from: {', '.join(PER)}")
    return Search(variant, str(table.get("description", "")), shapes, configs, *_form(where, variant, table), per)


def _form(where: str, variant: Variant, table: dict) -> tuple[str, str]:
    """The precision and layout a search runs at: one its variant takes, its first by default."""
    dtype, layout = table.get("dtype", variant.dtypes[0]), table.get("layout", variant.layouts[0])
    for key, value, takes in (("dtype", dtype, variant.dtypes), ("layout", layout, variant.layouts)):
        if value not in takes:
            raise ConfigError(f"{where}.{key}: {value!r}; {variant.name} takes {', '.join(takes)}")
    return dtype, layout


def _listed(where: str, variant: Variant, listed: Any) -> tuple[Params, ...]:
    if not isinstance(listed, list) or not listed:
        raise ConfigError(f"{where}.configurations: expected a non-empty list of \"K=V,...\" strings")
    space = set(tuning_space(variant))
    out = []
    for i, text in enumerate(listed):
        try:
            params = with_fixed(variant, parse_params(text))
        except (ValueError, AttributeError):
            params = None
        if not params or params not in space:
            missing = sorted(set(variant.space) - set(dict(params or ())))
            why = (f"it lacks {', '.join(missing)}" if missing else
                   "; ".join(variant.violated(params)) or "a value outside the tuning space") if params else \
                "expected K=V,... pairs"
            raise ConfigError(f"{where}.configurations[{i}]: {text!r} is not a configuration of {variant.name}'s "
                              f"tuning space ({why})")
        out.append(params)
    return tuple(dict.fromkeys(out))


def with_fixed(variant: Variant, params: Params) -> Params:
    """A listed configuration with the parameters its space holds at one value added at that value:
    a plan written before a kernel gained a switch still names its configurations."""
    have = dict(params)
    fixed = {k: values[0] for k, values in variant.space.items() if len(values) == 1 and k not in have}
    return tuple(sorted({**have, **fixed}.items())) if fixed and have else params


def _pinned(where: str, variant: Variant, pinned: Any) -> tuple[Params, ...]:
    try:
        return tuple(choose(variant, "brute", None, pinned=parse_pins((str(pinned),))))
    except (RunRefused, TuneError) as exc:
        raise ConfigError(f"{where}.params: {exc}") from None


def describe_plan(plan: TunePlan, total: int, done: int = 0) -> list[str]:
    """The plan in a few lines: its searches, and the points it runs."""
    lines = [f"plan {plan.name} ({plan.path}): {len(plan.searches)} searches, {total} points"
             + (f", {done} already measured" if done else "")]
    for s in plan.searches:
        form = "" if s.form == ("fp32", "nn") else f" {s.dtype} {s.layout}"
        per = "" if s.per == "shape" else ", kept per size class"
        lines.append(f"  {s.variant.name}{form}: {len(s.configs)} configuration(s) at {len(s.shapes)} shape(s){per}"
                     + (f": {s.description}" if s.description else ""))
    return lines
