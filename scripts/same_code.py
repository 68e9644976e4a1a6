"""Did a change to kernel sources change the code? For every variant whose source hash differs
between REV and the working tree, compile each parameter point that the tuning cache holds for it
(at REV's hash, at its precision and layout) and its default point, from REV's kernels/ and from the
tree's, to PTX (nvcc -ptx -arch sm_90, or the variant's target, without -lineinfo, so moved lines do
not count), and compare the text, its
comments left out and its C++-mangled symbols named by order of first use (a device function that
became a template renames the shared arrays declared in it, and nothing else); where the text
differs, compare the cubins nvcc makes (PTX whose virtual registers are numbered otherwise).
A parameter the kernel gained since REV is compiled at its default for the tree's side (a switch
whose default reproduces the old code). Identical PTX or cubin means identical machine code: the tuned
measurements still describe the kernel, and --rehash moves those cache entries to the new hash,
recording the one measured (`rehashed_from`: the old hash, or the one an earlier rehash recorded) and
the defaults it added to their parameters.
Needs nvcc only (no GPU).
    usage: python3 scripts/same_code.py REV [--cache mmbench/data/tuning-cache.json] [--rehash]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mmbench import places, source  # noqa: E402
from mmbench.tuning.cache import cache_key, entry_form, load_cache, write_cache  # noqa: E402
from mmbench.precisions import DEFAULT, DEFAULT_LAYOUT  # noqa: E402
from mmbench.variants import REGISTRY, param_points, parse_params  # noqa: E402
from mmbench.variants.model import typed_defines  # noqa: E402


def compiled(variant, params, kind: str, arch: str = "sm_90") -> bytes | None:
    """What nvcc makes of one point, kind "ptx" or "cubin" (without -lineinfo, so moved lines do not
    count); None when it does not compile (never equal to anything)."""
    with tempfile.TemporaryDirectory(prefix="same-code-") as tmp:
        Path(tmp, "k.cu").write_text(source.module_source(variant, params))
        arch = variant.target or arch  # sm_90a for the kernels that use wgmma, setmaxnreg
        proc = subprocess.run(["nvcc", f"-{kind}", "-arch", arch, "k.cu", "-o", f"k.{kind}"], cwd=tmp,
                              capture_output=True, text=True)
        if proc.returncode:
            print(f"{variant.name} {params}: nvcc failed: {proc.stderr.strip()[:300]}", file=sys.stderr)
            return None
        return Path(tmp, f"k.{kind}").read_bytes()


def same_code(old, new, params, form=(DEFAULT, DEFAULT_LAYOUT)) -> bool:
    """Whether the point compiles to the same code from both trees (canonical PTX, else the cubin), at
    its entry's precision and layout (the typed kernels compile nothing at the default fp32, nn)."""
    typed = typed_defines(new, *form)
    before, after = with_defines(params, typed), with_defines(completed(new, params), typed)
    texts = compiled(old, before, "ptx"), compiled(new, after, "ptx")
    if None not in texts and canonical(texts[0].decode()) == canonical(texts[1].decode()):
        return True
    # PTX that differs in its virtual registers' numbers alone can still make the same machine code
    codes = compiled(old, before, "cubin"), compiled(new, after, "cubin")
    return codes[0] is not None and codes[0] == codes[1]


def with_defines(params: tuple, typed: tuple) -> tuple:
    return tuple(sorted((*params, *typed)))


MANGLED = re.compile(r"\b_Z\w+")


def canonical(text: str) -> str:
    """PTX without its comment lines, each C++-mangled symbol (`_Z...`: shared arrays of device
    functions, never an extern "C" entry) replaced by its order of first use."""
    names: dict[str, str] = {}
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    return MANGLED.sub(lambda m: names.setdefault(m.group(0), f"_SYM{len(names)}"), "\n".join(lines))


def completed(variant, params: tuple) -> tuple:
    """params with the variant's axes they lack at their defaults (the first value of each)."""
    have = dict(params)
    return tuple(sorted({**{k: v[0] for k, v in variant.axes.items() if k not in have}, **have}.items()))


def kernels_at(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "kernels"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        try:
            tar.extractall(into, filter="data")
        except TypeError:  # a Python without extraction filters (before 3.10.12); git's own archive
            tar.extractall(into)
    return into / "kernels"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev")
    ap.add_argument("--cache", type=Path, default=places.SHIPPED_CACHE)
    ap.add_argument("--rehash", action="store_true", help="move the entries of variants whose code is unchanged")
    args = ap.parse_args(argv)
    cache = load_cache(args.cache)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="same-code-rev-") as tmp:
        old_root = kernels_at(args.rev, Path(tmp))
        changed, hashes = {}, {}
        for name, v in REGISTRY.items():
            if not v.family or not (old_root / f"{v.family}.cu").exists():
                continue
            old = dataclasses.replace(v, source_dir=old_root)
            digests = (source.source_hash(old), source.source_hash(v))  # each once
            if digests[0] != digests[1]:
                changed[name], hashes[name] = (old, v), digests
        jobs = []
        for name, (old, new) in changed.items():
            was = hashes[name][0]
            points = {(tuple(parse_params(e["params"])), entry_form(e)) for e in cache.values()
                      if e["variant"] == name and e["source_hash"] == was}
            points.add((tuple(param_points(new)[0]), (new.dtypes[0], new.layouts[0])))
            jobs += [(name, p, form) for p, form in sorted(points)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda job: same_code(*changed[job[0]], job[1], job[2]), jobs))
    same = {name: all(ok for (n, _, _), ok in zip(jobs, results) if n == name) for name in changed}
    for name in changed:
        count = sum(1 for n, _, _ in jobs if n == name)
        print(f"{name}: {hashes[name][0]} -> {hashes[name][1]}: {count} point(s), code "
              + ("identical" if same[name] else "DIFFERS at " + ", ".join(
                  ",".join(f"{k}={val}" for k, val in p) or "defaults" for (n, p, _), ok in zip(jobs, results) if n == name and not ok)))
    if args.rehash:
        moved = 0
        for key in list(cache):
            e = cache[key]
            if same.get(e["variant"]) and e["source_hash"] == hashes[e["variant"]][0]:
                new_hash = hashes[e["variant"]][1]
                new_key = cache_key(e["device"], e["variant"], new_hash, e["size_class"], *entry_form(e))
                recorded = tuple(parse_params(e["params"]))
                params = completed(changed[e["variant"]][1], recorded)
                added = ",".join(f"{k}={v}" for k, v in params if k not in dict(recorded))
                # rehashed_from names the source that was measured: kept through a second rehash
                cache[new_key] = {**cache.pop(key), "source_hash": new_hash,
                                  "rehashed_from": e.get("rehashed_from") or e["source_hash"],
                                  "params": ",".join(f"{k}={v}" for k, v in params),
                                  "rehashed_because": rehash_reason(rev, added, e.get("rehashed_because"))}
                moved += 1
        write_cache(args.cache, cache)
        print(f"rehashed {moved} entries in {args.cache}")
    return 0 if all(same.values()) else 1


def rehash_reason(rev: str, added: str, earlier: str | None) -> str:
    """Why an entry moved to a new hash, after the reasons of its earlier moves (the metadata keeps its history)."""
    reason = f"kernel text changed since {rev}; code identical (scripts/same_code.py)"
    reason += f"; {added} added, the new parameter's default" if added else ""
    return f"{earlier} | then: {reason}" if earlier else reason


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
