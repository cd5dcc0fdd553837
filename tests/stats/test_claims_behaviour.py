"""parse_claim (ttscale.stats.claims), issue 60's named examples: a claim with an empty value is refused in one line
that names the claims allowed; spaces around the kind and the value are read past (the kind is stripped, the value
read by float(), which ignores surrounding whitespace), so ` better :5` and `better: 5` are `better:5`."""

from __future__ import annotations

import re

import pytest

from ttscale.stats.claims import parse_claim
from ttscale.stats.power import Claim

#: The grammar as the module documents it: better:T, equal:M, not-worse:M in points, ratio:H in times.
ALLOWED = "better:T, equal:M, not-worse:M (points) or ratio:H (times)"
ALLOWED_SEQUENTIAL = "better:T, equal:M or not-worse:M (points; better:0 = the first strategy more accurate)"


@pytest.mark.parametrize("text", ["better:", "equal:", "not-worse:", "ratio:", "better: ", "better :", " better:\t"])
def test_an_empty_value_is_refused_in_one_line_naming_the_claims_allowed(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_claim(text)
    message = str(caught.value)
    assert message == f"{text!r} is not a claim it can test; give {ALLOWED}"
    assert "\n" not in message
    for form in ("better:T", "equal:M", "not-worse:M", "ratio:H"):
        assert form in message


def test_an_empty_value_in_a_sequential_comparison_names_the_accuracy_claims_only() -> None:
    with pytest.raises(ValueError) as caught:
        parse_claim("better:", ratio=False, what="--until-decided")
    message = str(caught.value)
    assert message == f"--until-decided: 'better:' is not a claim it can test; give {ALLOWED_SEQUENTIAL}"
    assert "ratio:H" not in message and "\n" not in message


@pytest.mark.parametrize(("text", "kind", "value"), [
    (" better :5", "better", 0.05),
    ("better: 5", "better", 0.05),
    ("better :5", "better", 0.05),
    ("\tbetter\t:\t5\t", "better", 0.05),
    (" better : -2.5 ", "better", -0.025),
    ("equal : 1", "equal", 0.01),
    (" not-worse: 2", "not_worse", 0.02),
    ("not_worse :2", "not_worse", 0.02),
    (" ratio : 1.5", "ratio", 1.5),
])
def test_spaces_around_the_kind_and_the_value_are_read_past(text: str, kind: str, value: float) -> None:
    claim = parse_claim(text)
    assert claim == Claim(kind=kind, value=value)  # type: ignore[arg-type]
    # The same Claim as without the spaces, and in the accuracy-only grammar too (a ratio aside).
    assert claim == parse_claim("".join(text.split()))
    if kind != "ratio":
        assert parse_claim(text, ratio=False) == claim


def test_a_spaced_better_5_reads_as_better_by_more_than_5_points() -> None:
    claim = parse_claim(" better :5")
    assert (claim.kind, claim.value, claim.text()) == ("better", 0.05, "better by more than 5 pts")
    assert parse_claim("better: 5").text() == "better by more than 5 pts"


@pytest.mark.parametrize("text", ["bet ter:5", "not - worse:1", "not worse:1", "Better:5", "better"])
def test_spaces_inside_the_kind_or_another_spelling_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{text!r} is not a claim it can test; give {ALLOWED}")):
        parse_claim(text)


@pytest.mark.parametrize(("text", "shown"), [("better:5 pts", "5 pts"), ("better: 5 5", "5 5"), ("better:5%", "5%")])
def test_a_value_that_is_not_one_number_is_named_in_the_error(text: str, shown: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_claim(text)
    assert str(caught.value) == f"claim {text!r}: {shown!r} is not a number; give {ALLOWED}"


@pytest.mark.parametrize(
    ("text", "said"),
    [("better:100", "better's threshold must be in (-100, 100) points, got 100"),
     ("better:-150", "better's threshold must be in (-100, 100) points, got -150"),
     ("equal:0", "equal's margin must be in (0, 100) points, got 0"),
     ("not-worse:100", "not-worse's margin must be in (0, 100) points, got 100")],
)
def test_a_value_out_of_range_is_named_in_the_points_it_was_written_in(text: str, said: str) -> None:
    # It said "must be in (-1, 1) (a proportion ...), got 1.0" for better:100, which the user wrote in points.
    with pytest.raises(ValueError, match=re.escape(f"claim {text!r}: {said}; give ")):
        parse_claim(text)
