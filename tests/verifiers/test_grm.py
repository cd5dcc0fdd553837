"""DeepSeek-GRM (`ttscale.verifiers.grm`) by hand, on a SCRIPTED engine (not a model, not vLLM): each GRM sample's
reply is written by the test from the order in which that sample was shown the responses, so the shuffle, the strict
parse, the voted reward and the meta-RM filter are each checked against numbers computed here."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ttscale.kit.params import parse_params
from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context
from ttscale.verifiers import VERIFIERS
from ttscale.verifiers.grm import GRM, meta_voters, parse_scores, shown_order, voted_rewards

A, B, C = "The answer is 11.", "The answer is 12.", "The answer is 13."
QUALITY = {A: 9, B: 4, C: 6}
"""What an honest GRM sample scores each response."""


class ScriptedGRM(SimulatedArithmeticPolicy):
    """SIMULATED: the simulator's tokenizer; a GRM request is answered by `reply(shown)`, where `shown` is the list of
    responses in the order the prompt shows them, and `reply` numbers the samples in the order they were asked."""

    def __init__(self, reply: Callable[[int, list[str]], str]) -> None:
        super().__init__(seed=0)
        self.reply, self.asked = reply, 0
        self.orders: list[list[str]] = []

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        await asyncio.sleep(0)
        text = self.detokenize(list(prompt))
        shown = re.findall(r"\[Response \d+\]\n(.*?)\n\[End of Response", text, re.S)
        if shown:
            self.orders.append(shown)
            reply = self.reply(self.asked, shown)
            self.asked += 1
        else:  # the meta RM's own request (an llm_judge): answered by the simulator
            return await super().generate(prompt, params, seed=seed)
        tokens = self.tokenize(reply)
        cut = len(tokens) > params.max_tokens
        tokens = tokens[: params.max_tokens]
        self.generated_tokens += len(tokens)
        completion = Completion(text=self.detokenize(tokens), token_ids=tuple(tokens),
                                finish_reason="length" if cut else "stop")
        return Generation(completions=(completion,), prompt_tokens=len(prompt))


def honest(_sample: int, shown: list[str]) -> str:
    return ("Principles: a right sum.\nCritique: checked each.\nScores: [[" +
            ", ".join(str(QUALITY[r]) for r in shown) + "]]")


def score(grm: GRM, engine: ScriptedGRM, responses: Sequence[str], budget: str = "20k") -> tuple[list[float], Any]:
    ctx = make_context(engine, budget)
    return asyncio.run(grm.score_outcomes(ctx, list(responses))), ctx.ledger.to_dict()


def test_scores_are_read_strictly() -> None:
    assert parse_scores("Principles: ...\nScores: [[7, 10, 1]]", 3) == [7, 10, 1]
    assert parse_scores("scores: [[3,4]] then Scores: [[5, 6]]", 2) == [5, 6]  # the last list is the verdict
    assert parse_scores("Scores: [[7, 11, 0]]", 3) == [7, None, None]  # the 1-10 scale only
    assert parse_scores("Scores: [[7.5, 8, x]]", 3) == [None, 8, None]  # integers only
    assert parse_scores("Scores: [[7, 8]]", 3) == [None, None, None]  # another length: no score can be placed
    assert parse_scores("I would give 7 and 8.", 2) == [None, None]  # no default, ever


def test_each_sample_is_shown_its_own_seeded_order_and_scores_come_back_in_the_responses_order() -> None:
    engine = ScriptedGRM(honest)
    scores, ledger = score(GRM(samples=4), engine, [A, B, C])
    # Every honest sample gives A 9, B 4, C 6 whatever order it was shown them in: 4 samples vote 36, 16, 24 of 40.
    assert scores == [pytest.approx(36 / 40), pytest.approx(16 / 40), pytest.approx(24 / 40)]
    assert len(engine.orders) == 4 and all(sorted(order) == sorted([A, B, C]) for order in engine.orders)
    assert len({tuple(order) for order in engine.orders}) > 1  # shuffled
    again = ScriptedGRM(honest)
    score(GRM(samples=4), again, [A, B, C])
    assert again.orders == engine.orders  # seeded: the same group is shown the same orders
    assert [shown_order(3, 5), shown_order(3, 5)] == [shown_order(3, 5)] * 2
    assert ledger["verifier"]["calls"] == 4 and ledger["verifier"]["generated_tokens"] > 0  # verifier work
    plain = ScriptedGRM(honest)
    score(GRM(samples=2, shuffle=False), plain, [A, B, C])
    assert plain.orders == [[A, B, C], [A, B, C]]


def test_position_bias_is_averaged_by_the_shuffle() -> None:
    # A GRM that gives 10 to whatever it is shown first and 1 to the rest: without the shuffle A always wins; with
    # it, every response is first in some samples, and the votes follow how often each was shown first.
    def first_wins(_sample: int, shown: list[str]) -> str:
        return "Scores: [[" + ", ".join("10" if i == 0 else "1" for i in range(len(shown))) + "]]"

    fixed, _ = score(GRM(samples=8, shuffle=False), ScriptedGRM(first_wins), [A, B, C])
    assert fixed == [pytest.approx(80 / 80), pytest.approx(8 / 80), pytest.approx(8 / 80)]
    engine = ScriptedGRM(first_wins)
    shuffled, _ = score(GRM(samples=8), engine, [A, B, C])
    firsts = [sum(order[0] == r for order in engine.orders) for r in (A, B, C)]
    assert shuffled == [pytest.approx((10 * f + 1 * (8 - f)) / 80) for f in firsts]
    assert max(firsts) < 8


def test_the_reward_is_the_sum_over_the_samples_and_a_missing_score_adds_nothing() -> None:
    # Hand example: 3 samples; the second cannot be read for B (a 0), the third gives the wrong number of scores.
    replies = {0: {A: "8", B: "5"}, 1: {A: "7", B: "0"}, 2: None}

    def scripted(sample: int, shown: list[str]) -> str:
        given = replies[sample]
        if given is None:
            return "Scores: [[9]]"
        return "Scores: [[" + ", ".join(given[r] for r in shown) + "]]"

    assert voted_rewards([[8, 5], [7, None], [None, None]], [0, 1, 2], 2) == [15, 5]
    scores, ledger = score(GRM(samples=3), ScriptedGRM(scripted), [A, B])
    assert scores == [pytest.approx(15 / 30), pytest.approx(5 / 30)]
    assert ledger["grm_missing_scores"] == 3  # B in sample 2, both in sample 3: counted, never defaulted


def test_meta_rm_guided_voting_keeps_the_top_k_meta_samples() -> None:
    assert meta_voters([0.2, 0.9, 0.5, 0.9], 2) == [1, 3] and meta_voters([0.5, 0.5, 0.1], 2) == [0, 1]

    class Meta:
        """SIMULATED meta RM: a sample's critique is worth what it says it is worth."""

        name = "meta"

        async def score_outcomes(self, ctx: Any, solutions: Sequence[str]) -> list[float]:
            return [float(re.search(r"worth (\d\.\d)", s).group(1)) for s in solutions]  # type: ignore[union-attr]

    # Samples 0 and 2 write good critiques and score A above B; samples 1 and 3 write poor ones and score B high.
    def scripted(sample: int, shown: list[str]) -> str:
        good = sample % 2 == 0
        marks = {A: 9, B: 3} if good else {A: 2, B: 10}
        return f"Critique worth {0.9 if good else 0.1}.\nScores: [[" + ", ".join(str(marks[r]) for r in shown) + "]]"

    voted, _ = score(GRM(samples=4), ScriptedGRM(scripted), [A, B])
    assert voted == [pytest.approx(22 / 40), pytest.approx(26 / 40)]  # plain voting: B wins 26 to 22
    import ttscale.verifiers.loading as loading

    original = loading.load_verifier
    asked: list[str] = []

    def load(spec: str) -> Any:
        asked.append(spec)
        return Meta() if spec.startswith(("llm_judge", "prm:")) else original(spec)

    loading.load_verifier = load  # type: ignore[assignment]
    try:
        # (meta names a registered verifier: an unknown one is refused when the GRM is built)
        guided, _ = score(GRM(samples=4, meta="llm_judge", meta_top=2), ScriptedGRM(scripted), [A, B])
        # The meta RM's own options, in parentheses inside grm's spec, reach it whole (commas and all).
        nested = loading.build_verifier("grm:samples=4,meta=(prm:model=DIR,aggregate=min),meta_top=2")
        again, _ = score(nested, ScriptedGRM(scripted), [A, B])
    finally:
        loading.load_verifier = original
    assert guided == [pytest.approx(18 / 20), pytest.approx(6 / 20)]  # the two good samples vote: A wins
    assert nested.meta == "prm:model=DIR,aggregate=min" and asked[-1] == nested.meta and again == guided


def test_groups_and_step_scores() -> None:
    engine = ScriptedGRM(honest)
    scores, _ = score(GRM(samples=2, group=2), engine, [A, B, C])
    assert [len(order) for order in engine.orders] == [2, 2, 1, 1]  # [A, B] then [C], 2 samples each
    assert scores == [pytest.approx(0.9), pytest.approx(0.4), pytest.approx(0.6)]
    steps = asyncio.run(GRM(samples=1).score_steps(make_context(ScriptedGRM(honest), "20k"), [[A]]))
    assert steps == [[pytest.approx(0.9)]]


def test_the_budget_is_kept_and_a_cut_reply_scores_nothing() -> None:
    # 100 tokens pay for one whole sample of the 4 (its 65 characters): it votes alone, 9 and 4 of 10.
    reply = honest(0, [A, B])
    assert len(reply) == 65
    scores, ledger = score(GRM(samples=4), ScriptedGRM(honest), [A, B], budget="100")
    assert ledger["spent"] <= 100 and scores == [pytest.approx(0.9), pytest.approx(0.4)]
    # 30 tokens cut the one sample they pay for before its scores: nothing is voted in their place.
    scores, ledger = score(GRM(samples=4), ScriptedGRM(honest), [A, B], budget="30")
    assert ledger["spent"] <= 30 and scores == [0.0, 0.0] and ledger["grm_missing_scores"] == 2


def test_registered_with_validated_parameters() -> None:
    assert VERIFIERS.get("grm") is GRM and VERIFIERS.get("deepseek_grm") is GRM
    assert parse_params(GRM, {"samples": "8", "meta": "llm_judge", "meta_top": "4"}).meta_top == 4
    for options, message in [({"samples": "0"}, "samples must be ≥ 1, got 0"),
                             ({"meta_top": "2"}, "meta_top needs a meta verifier"),
                             ({"samples": "2", "meta": "llm_judge", "meta_top": "3"}, "meta_top must be ≤ samples")]:
        with pytest.raises(ValueError, match=message):
            parse_params(GRM, options)
