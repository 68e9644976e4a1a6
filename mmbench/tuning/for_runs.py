"""A run's tunable variants given their tuned parameters from the tuning caches (the user's, then
the shipped one), each said in one line: which cache, measured on which GPU."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from .. import source
from ..ops import get_op
from ..engine.plan import Selection, takes
from ..precisions import form_suffix
from ..variants import format_params
from ..vocabulary import DeviceId, Tuned
from .cache import candidates, describe_cache, entry_form, nearest_of

RULE = "rule"  # a Tuned's origin when its parameters came from the variant's rule, not a cache

Say = Callable[[str], None]
Found = tuple[DeviceId | None, str]  # a GPU tuned parameters are for, and where none was found ("found here")


def tunable(sel: Selection) -> list:
    """The variants of a selection that take tuned parameters: a tuning space, and no axis set by the user.
    A built-in variant whose space is one parameter is a paper's block-size axis (Zosa's BLOCK), run at
    its default unless asked; a variant file's one parameter is what its tuning is for."""
    return [v for v in sel.variants if v.space and (len(v.space) > 1 or v.origin is not None)
            and not set(v.axes) & set(sel.overrides)]


def with_tuned(sel: Selection, caches: Sequence, say: Say, gpu: Callable[[], Found] | None = None) -> Selection:
    """Give each tunable variant whose parameters the user did not set its tuned parameters for
    the GPU (gpu(): the one the points run on, a cluster's, and where none was found; default: this
    machine's), kernel source, precision and layout from the tuning caches (cache.read_caches: the
    user's, then the shipped; empty: caches switched off), and say which cache gave them, for which
    GPU. Selection.tuned is keyed (variant, shape, dtype, layout)."""
    variants = tunable(sel)
    if not variants:
        return sel
    device, where = (gpu or this_machines_gpu)()
    forms = {v.name: [(d, lay) for d in sel.dtypes for lay in sel.layouts if takes(v, d, lay)] for v in variants}
    if not caches:
        ruled = {(v.name, f): _by_rule(v, sel.shapes(v), device, f) for v in variants for f in forms[v.name]}
        plain = list(dict.fromkeys(v.name for v in variants for f in forms[v.name] if not ruled[(v.name, f)]))
        if plain:
            say(f"{', '.join(plain)}: tuning caches off; default parameters")
        for (name, form), r in ruled.items():
            if r:
                say(_rule_line(name + form_suffix(*form), len(r), "tuning caches off", device))
        return replace(sel, tuned={**sel.tuned, **{k: t for r in ruled.values() for k, t in r.items()}})
    tuned = {}
    for v in variants:
        shapes = sel.shapes(v)
        digest = source.source_hash(v) if device else None  # once per variant, for all its shapes
        for form in forms[v.name]:
            tuned.update(_tuned_form(v, form, shapes, caches, device, digest, say, where))
    return replace(sel, tuned={**sel.tuned, **tuned})


def this_machines_gpu() -> Found:
    """The GPU this machine's CUDA device 0 is (None: none), and where none was found."""
    from ..device import device_identity

    return device_identity(), "found here"


def _tuned_form(v, form: tuple[str, str], shapes, caches: Sequence, device, digest, say: Say, where: str) -> dict:
    """with_tuned's entries for one variant at one precision and layout, said as it finds them."""
    name = v.name + form_suffix(*form)
    entries = candidates(caches, device, v, digest, *form) if device else None
    found = {shape: nearest_of(entries, v, shape) for shape in shapes} if device else {}
    found = {shape: t for shape, t in found.items() if t}
    tuned = {(v.name, shape, *form): t for shape, t in found.items()}
    for line in _tuned_lines(v, found, device, name):
        say(line)
    ruled = _by_rule(v, [s for s in shapes if s not in found], device, form)
    tuned.update(ruled)
    if ruled:
        say(_rule_line(name, len(ruled), f"no tuned entry at {len(ruled)} of its {len(shapes)} shapes", device))
    elif found and len(found) < len(shapes):
        say(f"{name}: no tuned entry at {len(shapes) - len(found)} of its {len(shapes)} shapes; defaults there")
    if not found and device is None:
        say(f"{name}: no GPU {where} to look up its tuned parameters for; using defaults")
    elif not found and not ruled and any(e.get("variant") == v.name and entry_form(e) == form
                                         for c in caches for e in c.entries.values()):
        say(f"{name}: the tuning caches have no entry for this GPU ({device}), nor for one of its architecture "
            f"and SM count, with this kernel source; using defaults (run `mmbench tune`)")
    elif not found and not ruled and any(e.get("variant") == v.name for c in caches for e in c.entries.values()):
        say(f"{name}: the tuning caches have entries of {v.name} at other precisions or layouts only; using "
            f"defaults (run `mmbench tune --dtype {form[0]} --layout {form[1]}`)")
    return tuned


def _by_rule(variant, shapes, device, form: tuple[str, str]) -> dict:
    """{(variant, shape, dtype, layout): Tuned} from the variant's rule (tuning/rules.py) on this GPU,
    for the shapes given; none without a rule or a GPU to read the SM count of."""
    from .rules import RULES

    rule = RULES.get(variant.name)
    if rule is None or device is None:
        return {}
    return {(variant.name, shape, *form): Tuned(rule(shape, device), device.name, False, None, RULE)
            for shape in shapes}


def _rule_line(name: str, shapes: int, why: str, device) -> str:
    return (f"{name}: {why}; parameters by its rule over the shape and this GPU's {device.sm_count} SMs "
            f"(mmbench/tuning/rules.py) at {shapes} shape{'s' if shapes != 1 else ''}")


def _tuned_lines(variant, found: dict, device, name: str) -> list[str]:
    """One line per cache and GPU that gave a variant tuned parameters: which cache (yours or the
    shipped one, and its path), measured on which GPU, and the parameters."""
    groups: dict[tuple, list] = {}
    for shape, t in found.items():
        groups.setdefault((t.cache, t.origin, t.device, t.borrowed), []).append((shape, t))
    lines = []
    for (path, origin, lender, borrowed), items in groups.items():
        kinds = sorted({format_params(t.params) for _, t in items})
        if len(kinds) > 4:  # a mesh of cells: say how many, not each
            kinds = [f"{len(kinds)} configurations over {len({get_op(variant.op).size_class(s) for s, _ in items})} "
                     f"size classes"]
        whose = (f"for {device.name}" if not borrowed else
                 f"of {lender}: {device.name} has no entry, and {lender} has the same "
                 f"architecture ({device.arch}) and SM count ({device.sm_count})")
        lines.append(f"{name}: tuned parameters from {describe_cache(path, origin)} {whose}: {'; '.join(kinds)}")
    return lines


def tuning_record(selections: Sequence[Selection], caches: Sequence) -> dict:
    """What a run's metadata keeps of its tuning: the caches read (none: switched off) and, per
    tunable variant, where its parameters came from: each cache (path, yours or shipped), the GPU
    its entries were measured on, whether borrowed, over how many shapes; "defaults" where none."""
    variants: dict[str, dict[tuple, int]] = {}
    for sel in selections:
        for v in tunable(sel):
            sources = variants.setdefault(v.name, {})
            for shape in sel.shapes(v):
                for form in [(d, lay) for d in sel.dtypes for lay in sel.layouts if takes(v, d, lay)]:
                    t = sel.tuned.get((v.name, shape, *form))
                    key = ((str(t.cache) if t.cache else None, t.origin, t.device, t.borrowed) if t
                           else (None, "defaults", None, False))
                    sources[key] = sources.get(key, 0) + 1
    fields = ("cache", "origin", "measured_on", "borrowed")
    return {"read": [{"path": str(c.path), "origin": c.origin, "entries": len(c.entries)} for c in caches],
            "variants": {name: [{**dict(zip(fields, key)), "shapes": n} for key, n in sources.items()]
                         for name, sources in variants.items()}}
