"""GenRM's verdict read inside the verification chain, the paper's way (sc-genrm-scaling's `extract_P_yes`):
P(Yes) at the verdict token the chain ends with if "Yes" is among the top alternatives, else 1 − P(No).
Hand examples on a word-level token list; the expected values are worked out from that rule."""

from __future__ import annotations

import math

import pytest

from ttscale.schema import Completion
from ttscale.verifiers.genrm import VERIFY, GenRM, Verdict, chain_verdict, verdict_yes_probability

WORDS = ["<eos>", "The", " sum", " is", " 7", ".", "\n", "Is", " the", " answer", " correct", " (", "Yes", "/",
         "No", ")?", " Yes", " No", " **", "**", " But", " wait"]


def detokenize(ids: list[int] | tuple[int, ...]) -> str:
    return "".join("" if i == 0 else WORDS[i] for i in ids)


def chain(words: list[str], verdict_top: dict[str, float] | None, *, eos: bool = True) -> Completion:
    """A chain of these words (+ EOS); the LAST " Yes"/" No" gets `verdict_top` (probabilities), every other
    position a confident top-1, including the "Yes" and "No" inside the question's "(Yes/No)"."""
    ids = [WORDS.index(w) for w in words] + ([0] if eos else [])
    at = max((i for i, w in enumerate(words) if w in (" Yes", " No")), default=-1)
    top = tuple(
        {k: math.log(p) for k, p in verdict_top.items()} if i == at and verdict_top else {WORDS[t]: math.log(0.99)}
        for i, t in enumerate(ids)
    )
    return Completion(text=detokenize(ids), token_ids=tuple(ids), top_logprobs=top, logprobs=(0.0,) * len(ids))


QUESTION = ["The", " sum", " is", " 7", ".", "\n", "Is", " the", " answer", " correct", " (", "Yes", "/", "No", ")?"]


def test_the_prompt_asks_for_the_papers_verdict_line() -> None:
    assert "Is the answer correct (Yes/No)? X', where X is Yes or No" in VERIFY


@pytest.mark.parametrize(
    ("words", "top", "expected"),
    [
        # The brief's example: P(No) = 0.8, P(Yes) = 0.2 at the verdict → r = 0.2.
        ([*QUESTION, " No"], {" No": 0.8, " Yes": 0.2}, 0.2),
        # Yes among the alternatives: P(Yes) itself, not renormalised over Yes + No (0.5 / 0.8 = 0.625).
        ([*QUESTION, " Yes"], {" Yes": 0.5, " No": 0.3, " **": 0.2}, 0.5),
        # Only No among the alternatives: 1 − P(No) = 0.3 (a Yes/(Yes+No) read would say 0).
        ([*QUESTION, " No"], {" No": 0.7, ".": 0.1}, 0.3),
        # Markup after the verdict (the reference's position −3 case): the verdict token is still found.
        ([*QUESTION, " **", " Yes", "**"], {" Yes": 0.6, " No": 0.4}, 0.6),
    ],
)
def test_the_verdict_is_read_at_the_verdict_token_of_the_chain(
    words: list[str], top: dict[str, float], expected: float
) -> None:
    r = chain_verdict(chain(words, top), detokenize)
    assert r is not None and r == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "words",
    [
        QUESTION,  # the question and no verdict (a chain cut by T_V)
        ["The", " sum", " is", " 7", "."],  # off-format: no question at all
        [*QUESTION, " Yes", ".", " But", " wait"],  # a verdict that is not the chain's last word
    ],
)
def test_a_chain_that_does_not_end_with_its_verdict_is_not_read(words: list[str]) -> None:
    # Never the "(Yes/No)" of the question itself: the search stops at its "?".
    assert chain_verdict(chain(words, {" Yes": 0.9, " No": 0.1}), detokenize) is None


def test_a_verdict_without_log_probs_or_contradicting_its_text_is_not_read() -> None:
    plain = chain([*QUESTION, " No"], {" No": 0.8, " Yes": 0.2})
    assert chain_verdict(Completion(text=plain.text, token_ids=plain.token_ids), detokenize) is None
    # The text ends in Yes but the last verdict token is No: the two disagree, so nothing is read.
    odd = Completion(text=plain.text.removesuffix(" No") + " Yes", token_ids=plain.token_ids,
                     top_logprobs=plain.top_logprobs)
    assert chain_verdict(odd, detokenize) is None
    assert verdict_yes_probability({" maybe": math.log(0.9)}) is None
    assert verdict_yes_probability({"yes": math.log(0.25), " YES": math.log(0.25)}) == pytest.approx(0.5)


def read(r: float) -> Verdict:
    return Verdict(r=r, chain_tokens=8)


UNREADABLE = Verdict(r=None, chain_tokens=8, verdict_tokens=1, source="unreadable")


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        # Issue 27's examples, by sc-genrm-scaling's `get_solution_score` (NaN verdicts dropped, none left → 0).
        ([read(0.9), UNREADABLE], 0.9),  # not (0.9 + 0.5) / 2 = 0.7
        ([UNREADABLE, UNREADABLE], 0.0),  # not 0.5
        ([read(0.2), UNREADABLE, read(0.6), UNREADABLE], 0.4),  # the mean over the two readable ones
        ([read(0.3), read(0.5)], 0.4),  # every verdict readable: the plain mean
        ([], 0.0),  # no chain at all (the budget paid for none)
    ],
)
def test_a_solution_scores_the_mean_of_its_readable_verdicts_and_zero_without_one(
    verdicts: list[Verdict], expected: float
) -> None:
    assert GenRM().score(verdicts) == pytest.approx(expected, abs=1e-12)
