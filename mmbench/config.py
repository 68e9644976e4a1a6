"""Experiment configs: configs/*.toml read into frozen dataclasses.

Errors name the file and the key: ``configs/x.toml: sweep[2].variants: unknown variant 'bset'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .ops import get_op, timing_problem
from .ops.base import SCOPES
from .papers import paper_problem, renamed
from .sizes import SizeSpecError
from .engine.plan import Selection, Settings, check_forms, form_scope_problem
from .precisions import PrecisionError
from .toml_files import ConfigError, integer, read_toml, refuse_unknown, run_table
from .variants import Variant, VariantError, get_variant, param_points

TOP_KEYS = {"name", "description", "paper", "run", "sweep", "reference"}
RUN_KEYS = {"runs", "warmup", "cache", "threads"}
SWEEP_KEYS = {"name", "description", "variants", "sizes", "params", "scopes", "pad", "dtypes", "layouts"}


@dataclass(frozen=True)
class SweepConfig:
    name: str
    description: str
    variants: tuple[Variant, ...]
    sizes: str  # a size spec; each variant's operation reads it as its shapes
    params: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    scopes: tuple[str, ...] = ("kernel",)  # what the samples cover (ops.base.SCOPES)
    pads: tuple[bool, ...] = (False,)  # pad = [false, true] runs both
    dtypes: tuple[str, ...] = ("fp32",)  # precisions and layouts, as --dtype and --layout (precisions.py)
    layouts: tuple[str, ...] = ("nn",)

    def selection(self) -> Selection:
        return Selection(self.variants, self.sizes, self.params, scopes=self.scopes, pads=self.pads, dtypes=self.dtypes,
                         layouts=self.layouts)


@dataclass(frozen=True)
class ExperimentConfig:
    path: Path
    name: str
    description: str
    paper: str
    runs: int
    warmup: int
    cache: str
    threads: int | None
    sweeps: tuple[SweepConfig, ...]
    reference: Mapping[str, Any] = field(default_factory=dict)  # the paper's own numbers, for reports
    run_keys: frozenset[str] = frozenset()  # the settings its [run] table sets (the rest are defaults)


def _name(path: Path, name: Any) -> str:
    """The run's name, which names its default output folder and files: a plain file name."""
    text = str(name)
    if not text or text.startswith(".") or "/" in text or "\\" in text:
        raise ConfigError(f"{path}: name {text!r}: a run's name names its folder and files, so no '/', '\\' "
                          f"or leading '.' (and not empty)")
    if renamed("name", text):  # a copy of a study's config from before the paper had one name
        raise ConfigError(f"{path}: {renamed('name', text)}")
    return text


def _paper(path: Path, paper: Any) -> str:
    """The study whose report the config's runs make (optional: a user's own experiment has none)."""
    problem = paper_problem(paper) if paper != "" else None
    if problem:
        raise ConfigError(f"{path}: {problem}")
    return paper


def _sweep(where: str, table: Any) -> SweepConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    refuse_unknown(where, table, SWEEP_KEYS)
    for key in ("name", "variants", "sizes"):
        if key not in table:
            raise ConfigError(f"{where}: missing key '{key}'")
    names = table["variants"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where}.variants: expected a non-empty list of variant names")
    try:
        variants = tuple(get_variant(n) for n in names)
    except VariantError as exc:
        raise ConfigError(f"{where}.variants: {exc}") from None
    try:
        for op in dict.fromkeys(get_op(v.op) for v in variants):
            op.parse_sizes(str(table["sizes"]))
    except SizeSpecError as exc:
        raise ConfigError(f"{where}.sizes: {exc}") from None
    raw = table.get("params", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.params: expected a table such as {{ BLOCK = [8, 16, 32] }}")
    params = {}
    for pname, values in raw.items():
        values = values if isinstance(values, list) else [values]
        # 0 is an off switch (PAD = 0); param_points below says for which variants it may be.
        params[pname] = tuple(integer(f"{where}.params.{pname}", v, 0) for v in values)
        if not any(pname in v.axes for v in variants):
            raise ConfigError(f"{where}.params.{pname}: no variant of this sweep has that parameter")
    try:
        for v in variants:
            param_points(v, params)
    except VariantError as exc:
        raise ConfigError(f"{where}.params: {exc}") from None
    scopes, pads = _scopes(where, table, variants)
    forms = {}
    for key in ("dtypes", "layouts"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ConfigError(f"{where}.{key}: expected a list of names such as [\"{'bf16' if key == 'dtypes' else 'nt'}\"]")
        forms[key] = value
    try:
        dtypes, layouts, _ = check_forms(variants, forms["dtypes"], forms["layouts"],
                                         (f"{where}.dtypes", f"{where}.layouts"))
    except PrecisionError as exc:
        raise ConfigError(str(exc)) from None
    problem = form_scope_problem(dtypes, layouts, scopes, pads)
    if problem:
        raise ConfigError(f"{where}.scopes/pad: {problem}")
    return SweepConfig(str(table["name"]), str(table.get("description", "")), variants,
                       str(table["sizes"]), MappingProxyType(params), scopes, pads, dtypes, layouts)


def _scopes(where: str, table: Mapping, variants: tuple[Variant, ...]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """A sweep's scopes = [...] and pad = true | false | [false, true], checked against its variants' operations."""
    scopes = table.get("scopes", ["kernel"])
    if not isinstance(scopes, list) or not scopes or not all(isinstance(x, str) for x in scopes):
        raise ConfigError(f"{where}.scopes: expected a non-empty list such as [\"kernel\", \"end_to_end\"]")
    pads = table.get("pad", False)
    pads = pads if isinstance(pads, list) else [pads]
    if not pads or not all(isinstance(x, bool) for x in pads):
        raise ConfigError(f"{where}.pad: expected true, false or [false, true]")
    for scope in scopes:
        if scope not in SCOPES:
            raise ConfigError(f"{where}.scopes: '{scope}'; choose from: {', '.join(SCOPES)}")
    problem = timing_problem(variants, scopes, pads)
    if problem:
        raise ConfigError(f"{where}.{'pad' if problem[0] == 'pad' else 'scopes'}: {problem[1]}")
    return tuple(dict.fromkeys(scopes)), tuple(dict.fromkeys(pads))


def resolve_config(given: Path | str) -> Path:
    """A config's file: the path given where it exists, else a shipped config of that name (`--config
    limits` from any folder, in a checkout or an installed mmbench)."""
    from . import places

    path = Path(given)
    if path.exists():
        return path
    shipped = places.shipped_config(str(given))
    if shipped is not None:
        return shipped
    raise ConfigError(f"{given}: no such config file, nor a shipped config of that name; the shipped configs: "
                      f"{', '.join(places.shipped_config_names())}")


def load_config(path: Path | str) -> ExperimentConfig:
    path = resolve_config(path)
    _, data = read_toml(path)
    refuse_unknown(str(path), data, TOP_KEYS)
    run, cache = run_table(path, data, RUN_KEYS)
    sweeps = data.get("sweep")
    if not isinstance(sweeps, list) or not sweeps:
        raise ConfigError(f"{path}: needs at least one [[sweep]] table")
    return ExperimentConfig(
        path=path,
        name=_name(path, data.get("name", path.stem)),
        description=str(data.get("description", "")),
        paper=_paper(path, data.get("paper", "")),
        runs=integer(f"{path}: run.runs", run.get("runs", 10), 1, Settings().max_runs),
        warmup=integer(f"{path}: run.warmup", run.get("warmup", 3), 0, Settings().max_runs),
        cache=cache,
        threads=integer(f"{path}: run.threads", run["threads"], 1) if "threads" in run else None,
        sweeps=tuple(_sweep(f"{path}: sweep[{i}]", s) for i, s in enumerate(sweeps)),
        reference=MappingProxyType(_reference(f"{path}: reference", data.get("reference", {}))),
        run_keys=frozenset(run),
    )


def _reference(where: str, table: Any) -> dict:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    sizes = table.get("table_sizes", [])
    for key, values in table.items():
        if key.endswith("_gflops") and (not isinstance(values, list) or len(values) != len(sizes)):
            raise ConfigError(f"{where}.{key}: expected one number per table_sizes entry ({len(sizes)})")
    return dict(table)
