"""Size specs: text such as "63:2049" or "1000x37x2049" turned into shapes.

Accepted forms, joined by commas in any mix:

- ``N``            one square size, e.g. ``1024``
- ``A:B``          the paper's sweep: every n in [A, B] within 1 of a multiple of 32
                   (``63:2049`` gives 63, 64, 65, 95, 96, 97, ..., 2047, 2048, 2049: 189 sizes)
- ``A:B:+S``       a linear range A, A+S, A+2S, ... up to B
- ``A:B:xF``       a geometric range A, A*F, A*F^2, ... up to B (integer F >= 2)
- ``MxNxK``        one rectangular shape of an operation with three dimensions (GEMM:
                   C (M x N) = A (M x K) . B (K x N))
- ``MxN``          one rectangular shape of an operation with two (transpose: M x N)
- ``[S]x[S]x[S]``  a grid of rectangular shapes: every M of the first list, then every N of the
                   second, then every K of the third, where a dimension is a number or a 1-D spec
                   in brackets (numbers and ranges joined by commas), e.g. ``[16:4096:x2]x[31,32,33]x32``
                   (Lameski's hA x wB at k = 32); ``[S]x[S]`` for two dimensions

How many dimensions a shape has is the operation's (``Operation.dims``); a shape of two has k = 0.

Duplicates are dropped; the first occurrence keeps its place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORMS = ("N, A:B (paper sweep), A:B:+S, A:B:xF, MxNxK (or MxN for two dimensions), grids such as [16:4096:x2]x[31,33]x32 "
         "(a number or a bracketed list of sizes a dimension), joined by commas")

# The paper's sweep steps by 32 and takes each multiple with its two neighbours.
PAPER_STEP = 32
# More sizes than any sweep could run: a spec past this is a typo, refused before it is expanded.
MAX_SIZES = 100_000


class SizeSpecError(ValueError):
    """A size spec that cannot be read; the message names the spec and the accepted forms."""


@dataclass(frozen=True, order=True)
class Shape:
    """A problem's dimensions: m x n x k (GEMM: C (m x n) = A (m x k) . B (k x n)), or m x n
    with k = 0 for an operation without an inner dimension (transpose)."""

    m: int
    n: int
    k: int

    @property
    def is_square(self) -> bool:
        return self.m == self.n == self.k

    def __str__(self) -> str:
        if self.k == 0:
            return str(self.m) if self.m == self.n else f"{self.m}x{self.n}"
        return str(self.m) if self.is_square else f"{self.m}x{self.n}x{self.k}"


def row_shape(m, n, k) -> Shape:
    """The shape of a results row's m, n and k: what a message or a table shows of it (a
    transpose's 64 x 32 reads 64x32, not 64x32x0)."""
    return Shape(int(m), int(n), int(k))


_INT = r"(\d+)"
_RANGE = re.compile(rf"^{_INT}:{_INT}(?::([+x])(\d+))?$")
_SHAPE = re.compile(rf"^{_INT}x{_INT}x{_INT}$")
_SHAPE2 = re.compile(rf"^{_INT}x{_INT}$")
_SQUARE = re.compile(rf"^{_INT}$")


def paper_sweep(lo: int, hi: int) -> list[int]:
    """Every n in [lo, hi] that is a multiple of 32 (>= 32) or one away from one."""
    out = []
    for centre in range(PAPER_STEP, hi + 2, PAPER_STEP):
        out.extend(n for n in (centre - 1, centre, centre + 1) if lo <= n <= hi)
    return out


def _range_item(item: str, lo: int, hi: int, kind: str | None, step: int | None) -> list[int]:
    if lo > hi:
        raise SizeSpecError(f"size spec '{item}': start {lo} is after end {hi}")
    if kind is None:
        _at_most(item, 3 * ((hi - lo) // PAPER_STEP + 2))
        return paper_sweep(lo, hi)
    if kind == "+":
        if step < 1:
            raise SizeSpecError(f"size spec '{item}': step must be positive")
        _at_most(item, (hi - lo) // step + 1)
        return list(range(lo, hi + 1, step))
    if step < 2:
        raise SizeSpecError(f"size spec '{item}': geometric factor must be at least 2")
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= step
    return out


def _at_most(item: str, count: int) -> None:
    if count > MAX_SIZES:
        raise SizeSpecError(f"size spec '{item}' selects about {count} sizes, more than {MAX_SIZES} any sweep could run")


def _parse_item(item: str, dims: int) -> list[Shape]:
    if "[" in item:
        return _grid_item(item, dims)
    two = _SHAPE2.match(item)
    if (m := _SQUARE.match(item)) is not None:
        sides = [int(m.group(1))]
    elif (m := _SHAPE.match(item) if dims == 3 else two) is not None:
        sizes = tuple(int(g) for g in m.groups())
        if min(sizes) < 1:
            raise SizeSpecError(f"size spec '{item}': dimensions must be positive")
        return [Shape(*sizes) if dims == 3 else Shape(*sizes, 0)]
    elif m := _RANGE.match(item):
        lo, hi = int(m.group(1)), int(m.group(2))
        if min(lo, hi) < 1:
            raise SizeSpecError(f"size spec '{item}': sizes must be positive")
        step = int(m.group(4)) if m.group(4) is not None else None
        sides = _range_item(item, lo, hi, m.group(3), step)
        if not sides:
            raise SizeSpecError(f"size spec '{item}' selects no sizes; accepted forms: {FORMS}")
    elif dims == 2 and _SHAPE.match(item):
        raise SizeSpecError(f"size spec '{item}': this operation's shapes have two dimensions, MxN")
    elif dims == 3 and two:
        raise SizeSpecError(f"malformed size spec '{item}' (this operation's shapes have three dimensions, "
                            f"MxNxK); accepted forms: {FORMS}")
    else:
        raise SizeSpecError(f"malformed size spec '{item}'; accepted forms: {FORMS}")
    if min(sides) < 1:
        raise SizeSpecError(f"size spec '{item}': sizes must be positive")
    return [Shape(s, s, s if dims == 3 else 0) for s in sides]


def split_items(spec: str) -> list[str]:
    """A spec's items: split at the commas outside brackets (a grid's lists hold commas)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        if ch in "[]":
            depth += 1 if ch == "[" else -1
            if depth not in (0, 1):
                raise SizeSpecError(f"size spec '{spec}': brackets do not pair (a grid's dimension is one [list])")
        elif ch == "," and depth == 0:
            items.append(spec[start:i])
            start = i + 1
    if depth:
        raise SizeSpecError(f"size spec '{spec}': a '[' is not closed")
    return [*items, spec[start:]]


def _grid_item(item: str, dims: int) -> list[Shape]:
    """[S]x[S]x[S]: every combination, the first dimension slowest."""
    parts = re.findall(r"\[[^\]]*\]|\d+", item)
    if "x".join(parts) != item or len(parts) != dims:
        want = "x".join(["[S]"] * dims)
        raise SizeSpecError(f"size spec '{item}': a grid is {want}, each dimension a number or a bracketed list "
                            f"(this operation's shapes have {dims} dimensions)")
    lists = []
    for part in parts:
        inner = part[1:-1] if part.startswith("[") else part
        if not inner:
            raise SizeSpecError(f"size spec '{item}': an empty list [] in a grid")
        if any(not _SQUARE.match(x) and not _RANGE.match(x) for x in inner.split(",")):
            raise SizeSpecError(f"size spec '{item}': a grid's list holds numbers and ranges only, not '{inner}'")
        try:
            lists.append([s.m for s in parse_sizes(inner, dims)])
        except SizeSpecError as exc:
            raise SizeSpecError(f"{exc} (in the grid '{item}')") from None
    count = 1
    for sides in lists:
        count *= len(sides)
    _at_most(item, count)
    grid = [()]
    for sides in lists:
        grid = [(*g, s) for g in grid for s in sides]
    return [Shape(*g) if dims == 3 else Shape(*g, 0) for g in grid]


def parse_sizes(spec: str, dims: int = 3) -> list[Shape]:
    """Parse a size spec into shapes of `dims` dimensions (3: m x n x k, 2: m x n), in order,
    without duplicates."""
    text = spec.strip().replace(" ", "")
    if not text:
        raise SizeSpecError(f"empty size spec; accepted forms: {FORMS}")
    shapes: dict[Shape, None] = {}
    for item in split_items(text):
        if not item:
            raise SizeSpecError(f"malformed size spec '{spec}' (empty item); accepted forms: {FORMS}")
        for shape in _parse_item(item, dims):
            shapes.setdefault(shape, None)
    return list(shapes)


def parse_shape(text: str, dims: int = 3) -> Shape:
    """Parse one shape as written in a CSV row or on the command line ("1024", "1000x37x2049")."""
    shapes = parse_sizes(text, dims)
    if len(shapes) != 1:
        raise SizeSpecError(f"'{text}' names {len(shapes)} shapes, expected one")
    return shapes[0]
