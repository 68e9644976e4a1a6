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


class EvaluationError(ExpressionError):
    """An expression that cannot be evaluated at the values given (a division by zero, a shift by a
    negative count); the message names the expression and those values."""


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, in integers (the blocks that cover a length)."""
    return -(-a // b)


FUNCTIONS = {"min": min, "max": max, "ceil_div": ceil_div}
# How many arguments each takes: (fewest, most)
ARITY = {"min": (2, 99), "max": (2, 99), "ceil_div": (2, 2)}

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


def _misuse(node: ast.AST) -> str | None:
    """A use of an allowed part that can never be evaluated, known from the text: a function given
    the wrong number of arguments, a shift by a negative count, a division by the literal 0."""
    if isinstance(node, ast.Call):
        name, given = node.func.id, len(node.args)
        least, most = ARITY[name]
        if not least <= given <= most:
            wanted = f"exactly {least}" if least == most else f"at least {least}"
            return f"{ast.unparse(node)} gives {name} {given} argument{'s' if given != 1 else ''}; it takes {wanted}"
    if isinstance(node, ast.BinOp):
        right = _literal(node.op, node.right)
        if isinstance(node.op, ast.RShift) and right is not None and right < 0:
            return f"{ast.unparse(node)} shifts by a negative count"
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            return f"{ast.unparse(node)} divides by zero"
    return None


def _literal(op: ast.AST, node: ast.AST) -> int | None:
    """The integer a literal operand holds (-1 for `-1`), or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
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
    for node in ast.walk(tree):
        misuse = _misuse(node)
        if misuse is not None:
            raise ExpressionError(f"expression {expression!r}: {misuse}")
    return compile(tree, "<expression>", "eval")


def names(expression: str) -> set[str]:
    """The names an expression reads (its functions left out)."""
    return set(compiled(expression).co_names) - set(FUNCTIONS)


def evaluate(expression: str, values: Mapping[str, int]):
    """The expression's value with these names bound (NameError names one that is not);
    EvaluationError where it cannot be evaluated at them (a division by zero, a negative shift)."""
    code = compiled(expression)
    try:
        return eval(code, {"__builtins__": {}, **FUNCTIONS}, dict(values))  # checked: no attribute access
    except (ArithmeticError, ValueError, TypeError) as exc:
        at = ", ".join(f"{n} = {values[n]}" for n in sorted(names(expression)) if n in values)
        why = "division by zero" if isinstance(exc, ZeroDivisionError) else str(exc)
        raise EvaluationError(f"expression {expression!r} cannot be evaluated" + (f" at {at}" if at else "")
                              + f": {why}") from None
