"""parse_claim and claim_spec (ttscale.stats.claims): the edges of the grammar that a plan and a sequential comparison
both read, written to kill the mutants `make mutation MODULES=claims` left (issue 60). Every expectation is the
grammar as the module documents it: `better:T` with T in (-100, 100) points, `equal:M`/`not-worse:M` with M in
(0, 100), `ratio:H` with H > 0 and H != 1, one colon between kind and value; `claim_spec` writes a Claim back in the
words `parse_claim` reads."""

from __future__ import annotations

import pytest

from ttscale.stats.claims import ALLOWED, claim_spec, parse_claim
from ttscale.stats.power import Claim


@pytest.mark.parametrize(("claim", "spec"), [
    (Claim(kind="better", value=0.05), "better:5"),
    (Claim(kind="better", value=-0.025), "better:-2.5"),
    (Claim(kind="better", value=0.0), "better:0"),
    (Claim(kind="equal", value=0.01), "equal:1"),
    (Claim(kind="not_worse", value=0.02), "not-worse:2"),
    (Claim(kind="ratio", value=1.5), "ratio:1.5"),
    (Claim(kind="ratio", value=0.8), "ratio:0.8"),
])
def test_claim_spec_writes_points_or_times_and_parse_claim_reads_it_back(claim: Claim, spec: str) -> None:
    # By hand: an accuracy claim's proportion in points (0.05 -> 5), a ratio in times, not-worse with a hyphen.
    assert claim_spec(claim) == spec
    assert parse_claim(spec) == claim


@pytest.mark.parametrize("text", ["better:5:3", "equal:1:2"])
def test_a_second_colon_belongs_to_the_value_which_is_then_not_a_number(text: str) -> None:
    # The kind is everything before the first colon; the rest ("5:3") is the value, and it is not one number.
    value = text.partition(":")[2]
    with pytest.raises(ValueError) as caught:
        parse_claim(text)
    assert str(caught.value) == f"claim {text!r}: {value!r} is not a number; give {ALLOWED}"


@pytest.mark.parametrize(("text", "got"), [("better:-100", "-100"), ("better:-100.5", "-100.5"), ("better:100", "100")])
def test_better_s_threshold_is_refused_at_and_beyond_either_end(text: str, got: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_claim(text)
    assert str(caught.value) == (f"claim {text!r}: better's threshold must be in (-100, 100) points, got {got}; "
                                 f"give {ALLOWED}")


def test_better_just_inside_either_end_is_read() -> None:
    assert parse_claim("better:-99.5") == Claim(kind="better", value=-0.995)
    assert parse_claim("better:99.5") == Claim(kind="better", value=0.995)


@pytest.mark.parametrize("text", ["ratio:1", "ratio:0", "ratio:-2"])
def test_a_ratio_the_claim_refuses_is_refused_in_one_line_naming_the_claim_and_the_grammar(text: str) -> None:
    # A ratio of 1 claims nothing, and a ratio must be positive: Claim's own refusal, wrapped with the text given.
    with pytest.raises(ValueError) as caught:
        parse_claim(text, what="--claim")
    message = str(caught.value)
    assert message.startswith(f"--claim: claim {text!r}: ratio's h must be > 0 and ≠ 1")
    assert message.endswith(f"; give {ALLOWED}")
    assert "\n" not in message
