"""The rule every study's verdict follows, in one place (docs/studies.md, "How a claim is judged").

1. The paper's scope. A claim is judged in the scope, metric and setting the paper measured; rows of
   other scopes are extra evidence, named as such (`other_scopes`), never the verdict.
2. The paper's subject. The paper's mechanism is judged, not ours: where our kernel differs from the
   paper's, the verdict says which one it judged, or reads "not testable here".
3. Thresholds that mean something. Across the shapes of the paper's setting (`by_share`): "yes" where
   the claim holds at 3/4 of them or more, "partly" at 1/3 or more and at two shapes or more (one
   shape of four or more is never "partly"), else "no". A size (`by_size`, "15.5 % faster"): "yes"
   with the paper's sign and more than half its size, "partly" with its sign and less, "no" with the
   other sign or none. A factor (`by_factor`, "twice as fast", "a quarter of the loads") is a size
   on a log scale: "yes" past the square root of the paper's factor (2x: more than 1.41x; a quarter:
   fewer than a half), "partly" in its direction, else "no". An estimate (`by_about`, "about 3x"):
   "yes" within a factor of 1.5 of it either way, "partly" within a factor of 2.25, else "no". An
   order (`by_order`, "more at k = 32 than at 64") or an existence (`by_order`, "some shapes go the
   other way"): "yes" or "no". A claim of a direction and a size is the weaker of the two
   (`weakest`). A proxy metric must measure the claim (IPC is not ILP) or the claim is "not testable
   here".
4. By construction. A claim true by how we built it is marked so and not counted with the findings.
5. Not testable here. A claim about another era's library or GPU, or one this harness cannot measure,
   says what would test it.
"""

from __future__ import annotations

import math
from typing import Iterable

YES, PARTLY, NO = "yes", "partly", "no"
BY_CONSTRUCTION = "by construction"
NOT_TESTABLE = "not testable here"
NOT_CHECKED = "not checked"  # the run lacks the data (a user's run of part of a study)
FINDINGS = (YES, PARTLY, NO)  # what the findings count; the other outcomes are listed apart
OUTCOMES = (*FINDINGS, BY_CONSTRUCTION, NOT_TESTABLE, NOT_CHECKED)

SHARE_YES, SHARE_PARTLY = 0.75, 1 / 3  # of the shapes in the paper's setting
SIZE_YES = 0.5  # more than this share of the paper's effect, with its sign (of its log for a factor)
ABOUT = 1.5  # an estimate holds within this factor of it, either way (partly within its square)

SHARE_RULE = "holds at >= 3/4 of the shapes: yes; >= 1/3 and >= 2 shapes: partly; else no"
SIZE_RULE = "the paper's sign and > 1/2 its size: yes; its sign, less: partly; else no"
FACTOR_RULE = "past the square root of the paper's factor: yes; its direction: partly; else no"
ABOUT_RULE = "within 1.5x of the paper's estimate: yes; within 2.25x: partly; else no"
ORDER_RULE = "the paper's order: yes, else no"


def by_share(held: int, total: int) -> str:
    """A claim over the shapes of the paper's setting, holding at `held` of `total`."""
    if total <= 0:
        return NOT_CHECKED
    share = held / total
    if share >= SHARE_YES:
        return YES
    return PARTLY if share >= SHARE_PARTLY and (held >= 2 or total < 4) else NO


def by_size(ours: float, paper: float) -> str:
    """A claimed effect size (paper's, signed) against ours in the same metric."""
    if paper == 0 or ours != ours:  # no size claimed, or none measured (NaN)
        return NOT_CHECKED
    if ours * paper <= 0:
        return NO
    return YES if ours / paper > SIZE_YES else PARTLY


def by_factor(ours: float, paper: float) -> str:
    """A claimed factor (2 for "twice", 0.25 for "a quarter") against ours, on a log scale."""
    if not (ours > 0 and paper > 0) or paper == 1:
        return NOT_CHECKED
    return by_size(math.log(ours), math.log(paper))


def by_about(ours: float, paper: float) -> str:
    """An estimate ("about 3x", "about 480 GFLOP/s") against ours: how far apart as a factor."""
    if not (ours > 0 and paper > 0):
        return NOT_CHECKED
    apart = max(ours / paper, paper / ours)
    return YES if apart <= ABOUT else PARTLY if apart <= ABOUT ** 2 else NO


def by_order(held: bool) -> str:
    return YES if held else NO


def weakest(*outcomes: str) -> str:
    """The weaker of findings judged together (a direction and a size): no < partly < yes."""
    found = [o for o in outcomes if o in FINDINGS]
    if len(found) < len(outcomes):  # one part could not be judged: the whole cannot
        return next(o for o in outcomes if o not in FINDINGS)
    return min(found, key=lambda o: (NO, PARTLY, YES).index(o))


def other_scopes(values: dict[str, str], paper_scope: str) -> str:
    """The evidence of the scopes the paper did not measure, named as extra (never the verdict)."""
    extra = [f"{scope}: {text}" for scope, text in values.items() if scope != paper_scope]
    return f"; other scopes (not the verdict): {'; '.join(extra)}" if extra else ""


def tally(outcomes: Iterable[str]) -> dict[str, int]:
    """How many verdicts of each outcome, in OUTCOMES' order (absent ones left out)."""
    listed = list(outcomes)
    unknown = sorted(set(listed) - set(OUTCOMES))
    if unknown:
        raise ValueError(f"verdict outcome(s) {unknown}; choose from: {', '.join(OUTCOMES)}")
    return {o: listed.count(o) for o in OUTCOMES if o in listed}


def claims_line(outcomes: Iterable[str]) -> str:
    """The report's count: every claim of the paper, the findings apart from the rest."""
    counts = tally(outcomes)
    found = sum(counts.get(o, 0) for o in FINDINGS)
    rest = [f"{n} {o}" for o, n in counts.items() if o not in FINDINGS]
    return (f"Claims of the paper: {sum(counts.values())}; findings: {found} ("
            + ", ".join(f"{counts.get(o, 0)} {o}" for o in FINDINGS) + ")"
            + (f"; not counted with them: {', '.join(rest)}" if rest else "") + ".")
