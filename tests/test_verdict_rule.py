"""The rule every study's verdict follows (mmbench/studies/rule.py): its thresholds, pinned."""

import pytest

from mmbench.studies import rule
from mmbench.studies.common import Verdict


@pytest.mark.parametrize("held,total,outcome", [(75, 100, "yes"), (74, 100, "partly"), (34, 100, "partly"),
                                                (33, 100, "no"), (138, 456, "no"), (4, 30, "no"), (1, 30, "no"),
                                                (3, 4, "yes"), (2, 4, "partly"), (1, 4, "no"), (1, 3, "partly"),
                                                (1, 2, "partly"), (0, 0, "not checked")])
def test_a_claim_over_shapes_needs_three_quarters_for_yes_and_a_third_for_partly(held, total, outcome):
    assert rule.by_share(held, total) == outcome


@pytest.mark.parametrize("ours,paper,outcome", [(15.5, 15.51, "yes"), (7.8, 15.5, "yes"), (7.75, 15.5, "partly"),
                                                (2.4, 15.51, "partly"), (-2.4, 15.51, "no"), (0.0, 10.24, "no"),
                                                (-30.0, -20.0, "yes"), (float("nan"), 10.0, "not checked")])
def test_a_size_needs_the_papers_sign_and_half_its_size_for_yes(ours, paper, outcome):
    assert rule.by_size(ours, paper) == outcome


@pytest.mark.parametrize("ours,paper,outcome", [(2.0, 2.0, "yes"), (1.42, 2.0, "yes"), (1.41, 2.0, "partly"),
                                                (1.36, 2.0, "partly"), (0.9, 2.0, "no"), (0.5, 0.25, "partly"),
                                                (0.3, 0.25, "yes"), (1.2, 0.25, "no"), (0.0, 2.0, "not checked")])
def test_a_factor_is_a_size_on_a_log_scale(ours, paper, outcome):
    assert rule.by_factor(ours, paper) == outcome


@pytest.mark.parametrize("ours,paper,outcome", [(3.0, 3.0, "yes"), (4.5, 3.0, "yes"), (2.0, 3.0, "yes"),
                                                (6.24, 3.0, "partly"), (1.73, 3.0, "partly"), (6.99, 3.0, "no"),
                                                (1.3, 3.0, "no"), (-1.0, 3.0, "not checked")])
def test_an_estimate_holds_within_a_factor_of_one_and_a_half_either_way(ours, paper, outcome):
    assert rule.by_about(ours, paper) == outcome


def test_a_direction_and_a_size_are_the_weaker_of_the_two():
    assert rule.weakest("yes", "partly") == "partly" and rule.weakest("partly", "no") == "no"
    assert rule.weakest("yes", "yes") == "yes" and rule.weakest("yes", "not checked") == "not checked"
    assert rule.by_order(True) == "yes" and rule.by_order(False) == "no"


def test_other_scopes_are_named_as_evidence_never_the_verdict():
    text = rule.other_scopes({"kernel": "+2.4 %", "device": "-64.5 %", "end_to_end": "-59.5 %"}, "kernel")
    assert text == "; other scopes (not the verdict): device: -64.5 %; end_to_end: -59.5 %"
    assert rule.other_scopes({"kernel": "+2.4 %"}, "kernel") == ""


def test_the_count_is_every_claim_with_the_findings_apart():
    line = rule.claims_line(["yes", "no", "partly", "yes", "by construction", "not testable here", "not testable here"])
    assert line == ("Claims of the paper: 7; findings: 4 (2 yes, 1 partly, 1 no); not counted with them: "
                    "1 by construction, 2 not testable here.")
    with pytest.raises(ValueError, match="'setting'"):
        rule.tally(["yes", "setting"])


def test_a_verdict_outside_the_rules_outcomes_is_refused():
    with pytest.raises(ValueError, match="holds 'maybe'"):
        Verdict("a claim", "the paper", "maybe", "our numbers")
    assert Verdict("a claim", "the paper", "by construction", "our numbers").test == ""
