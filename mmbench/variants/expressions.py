"""Expressions of variant entries (constraints, launch geometry, shared memory): data, never code.

An expression may hold integer literals, names (parameters, and a shape's dimensions where the
caller binds them), integer arithmetic (+ - * // % and the bitwise & | ^ >>), comparisons,
`and`/`or`/`not`, a conditional `a if c else b`, and the functions of FUNCTIONS. Anything else
(attribute access, other calls, subscripts, strings, lambdas, comprehensions, `/`, `**` and `<<`,
which can make numbers too large to hold) is
refused in one line naming the expression and what it holds, before it is ever evaluated. Checked
so, the compiled expression is evaluated with no builtins: nothing in it can reach an object's
attributes, the only way out of such an `eval`. Listing or planning a variant file therefore runs
nothing it contains.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Mapping


class ExpressionError(ValueError):
    """An expression that is not one a variant may hold; the message says which part."""


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, in integers (the blocks that cover a length)."""
    return -(-a // b)


FUNCTIONS = {"min": min, "max": max, "ceil_div": ceil_div}

_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Add,
          ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor, ast.RShift,
          ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.IfExp, ast.Name, ast.Load, ast.Call,
          ast.Constant)
ALLOWED = ("integers, names, + - * // % & | ^ >>, comparisons, and/or/not, a if c else b, "
           + "/".join(FUNCTIONS) + "(...)")


_SYMBOLS = {ast.Div: "/", ast.Pow: "**", ast.LShift: "<<", ast.MatMult: "@", ast.Is: "is", ast.IsNot: "is not",
            ast.In: "in", ast.NotIn: "not in", ast.Invert: "~"}


def _refusal(node: ast.AST) -> str | None:
    """What in node an expression may not hold, or None."""
    if not isinstance(node, _NODES):
        return ast.unparse(node) if isinstance(node, ast.expr) else _SYMBOLS.get(type(node), type(node).__name__)
    if isinstance(node, ast.Constant) and (type(node.value) not in (int, bool)):
        return repr(node.value)
    if isinstance(node, ast.Name) and node.id.startswith("_"):
        return node.id
    if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS
                                       or node.keywords or any(isinstance(a, ast.Starred) for a in node.args)):
        return ast.unparse(node)
    return None


@lru_cache(maxsize=None)
def compiled(expression: str):
    """The expression checked and compiled; ExpressionError names what it may not hold."""
    if not isinstance(expression, str):
        raise ExpressionError(f"expression {expression!r}: not text")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"expression {expression!r}: not an expression ({exc.msg})") from None
    for node in ast.walk(tree):
        bad = _refusal(node)
        if bad is not None:
            raise ExpressionError(f"expression {expression!r}: {bad!s} is not allowed; an expression holds {ALLOWED}")
    return compile(tree, "<expression>", "eval")


def names(expression: str) -> set[str]:
    """The names an expression reads (its functions left out)."""
    return set(compiled(expression).co_names) - set(FUNCTIONS)


def evaluate(expression: str, values: Mapping[str, int]):
    """The expression's value with these names bound (NameError names one that is not)."""
    return eval(compiled(expression), {"__builtins__": {}, **FUNCTIONS}, dict(values))  # checked: no attribute access
