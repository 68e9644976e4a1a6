"""Variant expressions are data: only integers, names, integer arithmetic, comparisons, and/or/not,
a conditional and min/max/ceil_div; anything else is refused before it is evaluated, and the
registry's own text goes through the same check."""

from __future__ import annotations

import pytest

from mmbench.variants import REGISTRY, evaluate
from mmbench.variants.expressions import ExpressionError, ceil_div, compiled, names
from mmbench.variants.expressions import evaluate as evaluate_expression


@pytest.mark.parametrize("text, shown", [
    ("().__class__", "().__class__"), ("BM.real", "BM.real"), ("open('x')", "open('x')"),
    ("__import__('os')", "__import__('os')"), ("x[0]", "x[0]"), ("'s'", "'s'"), ("1.5", "1.5"),
    ("lambda: 1", "lambda: 1"), ("[i for i in (1, 2)]", "[i for i in (1, 2)]"), ("BM / 2", "/"),
    ("2 ** 99999", "**"), ("1 << 99999", "<<"), ("__class__", "__class__"), ("min(*BM)", "min(*BM)"),
    ("max(BM, key=BN)", "max(BM, key=BN)"), ("BM in (1, 2)", "in"), ("~BM", "~"), ("BM +", "not an expression"),
])
def test_anything_else_is_refused_in_one_line_naming_it(text, shown):
    with pytest.raises(ExpressionError) as err:
        compiled(text)
    message = str(err.value)
    assert "\n" not in message and repr(text) in message and shown in message


@pytest.mark.parametrize("text, values, expected", [
    ("(BM // TM) * (BN // TN)", {"BM": 128, "TM": 8, "BN": 64, "TN": 4}, 256),
    ("BM % 32 == 0 and BN >= 16 or not SK", {"BM": 64, "BN": 8, "SK": 0}, True),
    ("(BM & (BM - 1)) == 0", {"BM": 96}, False),
    ("ceil_div(m, BM) * ceil_div(n, BN)", {"m": 1000, "n": 37, "BM": 128, "BN": 32}, 16),
    ("min(BM, 64) if SK else max(BN, 3) >> 1", {"BM": 128, "BN": 8, "SK": 0}, 4),
])
def test_what_is_allowed_evaluates_as_integers(text, values, expected):
    assert evaluate_expression(text, values) == expected


def test_evaluation_has_no_builtins_and_names_what_is_read():
    with pytest.raises(NameError):
        evaluate_expression("len", {})
    assert names("ceil_div(m, BM) + min(TM, 2)") == {"m", "BM", "TM"}
    assert ceil_div(7, 2) == 4 and ceil_div(8, 2) == 4 and ceil_div(0, 3) == 0


def test_the_registrys_expressions_pass_the_check_and_go_through_it():
    for variant in REGISTRY.values():
        for text in (*variant.constraints, *variant.threads, variant.shared):
            if isinstance(text, str):
                compiled(text)
    with pytest.raises(ExpressionError):
        evaluate("().__class__", (("BM", 1),))
