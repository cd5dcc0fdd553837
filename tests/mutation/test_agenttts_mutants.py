"""ttscale.allocsearch.agenttts (AgentTTS's loop): behaviour the mutation run (tools/mutation) found unchecked, on
hand examples: which insights a prompt shows, why candidates are dropped, the constraint's count, the reasons
trials carry, insights asked of their own model, a spent agent budget, the settings' checks. The model is SCRIPTED;
the task the simulated GenRM surface."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from ttscale.allocsearch import AgentTTSProposer, Dimension, Evaluation, Space, Trial, search_allocation
from ttscale.allocsearch.agent import AgentBudgetSpent, history_table
from ttscale.allocsearch.agenttts import (
    CANDIDATES,
    LATER_POINTS,
    candidates_prompt,
    candidates_regex,
    parse_candidates,
    rule_based_start,
    shown_insights,
)
from ttscale.allocsearch.proposers import random_unseen
from ttscale.allocsearch.search import SearchResult
from ttscale.testing.allocsearch import SimulatedGenRM, genrm_space

SPACE = genrm_space()


def candidates(*points: tuple[int, int]) -> str:
    return json.dumps({"candidates": [{"S": s, "V": v} for s, v in points]})


def search(trials: int, **options: Any) -> SearchResult:
    task = SimulatedGenRM()
    proposer = AgentTTSProposer(seed=3, **options)
    return asyncio.run(search_allocation(space=task.space, evaluate=task.evaluate, proposer=proposer, trials=trials))


def test_shown_insights_are_the_first_and_the_last_two_each_once() -> None:
    assert shown_insights([]) == []
    assert shown_insights(["a"]) == [(1, "a")]
    assert shown_insights(["a", "b"]) == [(1, "a"), (2, "b")]
    assert shown_insights(["a", "b", "c"]) == [(1, "a"), (2, "b"), (3, "c")]
    assert shown_insights(["a", "b", "c", "d", "e"]) == [(1, "a"), (4, "d"), (5, "e")]


def test_why_candidates_are_dropped() -> None:
    tried = {(1, 0): Trial.of(index=0, allocation={"S": 1, "V": 0}, proposer="x",
                              evaluation=Evaluation(accuracy=0.5, ci_low=0, ci_high=1, cost=1, n=1))}
    kept, dropped = parse_candidates(candidates((1, 0), (8, 2), (8, 2), (32, 4), (4, 1), (2, 1)), SPACE, tried, 2)
    assert kept == [{"S": 8, "V": 2}, {"S": 4, "V": 1}]
    assert dropped == ["candidate 1: S=1, V=0 was already tried (trial 1)", "candidate 3: S=8, V=2 is listed twice",
                       "candidate 4: S=32, V=4 costs 81920, over the total budget 32768",
                       "candidate 6: more than the 2 candidates asked"]
    for reply, message in ((None, r"^the reply is not text \(NoneType\)$"),
                           ("none", "^no JSON object found in the reply$"),
                           ('{"candidates": {"S": 8, "V": 2}}', '^the reply needs "candidates": a non-empty list'),
                           ('{"other": []}', '^the reply needs "candidates": a non-empty list of allocations$')):
        with pytest.raises(ValueError, match=message):
            parse_candidates(reply, SPACE, {}, 2)


def test_the_constraint_admits_one_to_count_candidates() -> None:
    one = re.compile(candidates_regex(SPACE, 1))
    assert one.fullmatch('{"candidates":[{"S":8,"V":2}]}')
    assert not one.fullmatch('{"candidates":[{"S":8,"V":2},{"S":4,"V":1}]}')
    three = re.compile(candidates_regex(SPACE, 3))
    compact = candidates((8, 2), (4, 1), (2, 1)).replace(" ", "")
    assert three.fullmatch(compact) and not three.fullmatch(compact.replace("]}", ',{"S":1,"V":0}]}'))
    assert CANDIDATES == 10


def test_the_start_says_why_each_point() -> None:
    reasons = [why for _, why in rule_based_start(SPACE)]
    assert reasons == ["S at the most the budget leaves it, every other dimension at its cheapest",
                       "V at the most the budget leaves it, every other dimension at its cheapest"]
    sizes = {"small": 1, "large": 4}
    models = Space(name="models", total_budget=4, cost=lambda a: sizes[str(a["model"])] * float(a["samples"]),
                   dimensions=(Dimension(name="model", values=("small", "large")),
                               Dimension(name="samples", values=(1, 2))))
    assert rule_based_start(models) == [
        ({"model": "small", "samples": 1}, 'model="small" with every other dimension at its cheapest'),
        ({"model": "large", "samples": 1}, 'model="large" with every other dimension at its cheapest'),
        ({"model": "small", "samples": 2}, "samples at the most the budget leaves it, every other dimension at its "
                                           "cheapest")]
    result = search(2, generate=lambda p: None)
    assert [t.reasoning for t in result.trials] == [f"rule-based start {k} of 2: {why}" for k, why in
                                                    enumerate(reasons, 1)]


def test_the_candidates_prompt_by_hand() -> None:
    prompt = candidates_prompt(SPACE, (), ["one", "two", "three", "four"], 3, ["bad reply"])
    parts = prompt.split("\n\n")
    assert parts[2] == "Trials so far: none yet."
    assert parts[3] == "Insights from earlier iterations:\nInsight 1: one\nInsight 3: three\nInsight 4: four"
    assert parts[4] == ('Propose 3 new allocations that follow the insights and stay within the total budget; do not '
                        'repeat an allocation from the trials. Reply with ONLY a JSON object, no other text: '
                        '{"candidates": [{"S": <one of its values>, "V": <one of its values>}, ...]} with exactly 3 '
                        'allocations.')
    assert parts[5] == "Reply 1 was rejected: bad reply. Reply again with ONLY the JSON object."
    assert "Insights from earlier iterations:\nnone yet" in candidates_prompt(SPACE, (), [], 3)


def test_insights_go_to_their_own_model_and_a_blank_one_is_none() -> None:
    asked: dict[str, list[str]] = {"generate": [], "reflect": []}

    async def generate(prompt: str) -> str:
        asked["generate"].append(prompt)
        return candidates((8, 2))

    async def reflect(prompt: str) -> str:
        asked["reflect"].append(prompt)
        return "   "

    result = search(3, generate=generate, reflect=reflect)
    assert len(asked["reflect"]) == 1 and "Summarise insights" in asked["reflect"][0]
    assert len(asked["generate"]) == 1 and "Summarise insights" not in asked["generate"][0]
    assert "Insights from earlier iterations:\nnone yet" in asked["generate"][0]  # the blank insight is none
    assert result.trials[2].reasoning == "iteration 1, candidate 1 of 1"  # and no insight is quoted


def test_a_reply_that_is_not_text_is_kept_as_its_repr() -> None:
    asked: list[str] = []

    async def generate(prompt: str) -> object:
        asked.append(prompt)
        return {"candidates": []} if "Summarise insights" not in prompt else 42

    result = search(3, generate=generate, retries=0)
    # The insight 42 is kept as "42"; the candidates reply (a dict, not text) is read as its repr, which (single
    # quotes) holds no JSON object: rejected, and with no retry the iteration falls back.
    assert "Insights from earlier iterations:\nInsight 1: 42" in asked[-1]
    third = result.trials[2]
    assert third.fallback and third.invalid_proposals == 1
    assert third.reasoning == "iteration 1: random fallback (last: no JSON object found in the reply)"


def test_a_spent_agent_budget_ends_the_iteration_with_the_fallback() -> None:
    calls: list[str] = []

    async def spent(prompt: str) -> str:
        calls.append(prompt)
        raise AgentBudgetSpent("nothing left")

    result = search(3, generate=spent, retries=3)
    third = result.trials[2]
    assert third.fallback and third.invalid_proposals == 0
    assert third.reasoning == "iteration 1: random fallback (last: the agent's budget is spent)"
    assert third.allocation == random_unseen(SPACE, result.trials[:2], seed=3, salt="agenttts-fallback")
    # The insight asked once and the candidates once (not 1 + retries times): nothing is left to ask with.
    assert len(calls) == 2 and "Summarise insights" in calls[0]


def test_settings_are_checked() -> None:
    async def model(prompt: str) -> str:
        return ""

    assert AgentTTSProposer(generate=model, seed=0, candidates=1, retries=0).candidates == 1
    for key, value, low in (("candidates", True, 1), ("retries", 1.5, 0)):
        with pytest.raises(ValueError, match=rf"^{key} must be an int ≥ {low}, got {value!r}$"):
            AgentTTSProposer(generate=model, seed=0, **{key: value})
    with pytest.raises(ValueError, match=r"^rule_start must be a bool, got 1$"):
        AgentTTSProposer(generate=model, seed=0, rule_start=1)  # type: ignore[arg-type]
    for options in ({"generate": "model"}, {"generate": model, "reflect": "model"}):
        with pytest.raises(ValueError, match=r"^generate and reflect must be async callables: prompt -> reply$"):
            AgentTTSProposer(seed=0, **options)  # type: ignore[arg-type]


def test_the_last_point_is_taken_without_asking_and_each_insight_sees_its_iteration_apart() -> None:
    # Beam's 8 feasible points (N·T ≤ 64): the rule's two, then 5 candidates of the 6 left, then the last one,
    # which no model is asked for (an insight is still asked about the iteration before it).
    space = Space(name="beam", total_budget=2048, cost=lambda a: float(a["N"]) * float(a["T"]) * 32,
                  dimensions=(Dimension(name="N", values=(4, 8, 16)), Dimension(name="T", values=(2, 4, 8))))
    asked: list[str] = []

    async def model(prompt: str) -> str:
        asked.append(prompt)
        if "Summarise insights" in prompt:
            return f"INSIGHT-{len(asked)}"
        return json.dumps({"candidates": [{"N": n, "T": t} for n, t in ((4, 2), (4, 4), (8, 2), (8, 4), (8, 8))]})

    proposer = AgentTTSProposer(generate=model, seed=1, candidates=5)
    result = asyncio.run(search_allocation(space=space, evaluate=_flat, proposer=proposer, trials=9))
    trials = result.trials
    assert [(t.allocation["N"], t.allocation["T"]) for t in trials] == [(16, 2), (4, 8), (4, 2), (4, 4), (8, 2),
                                                                        (8, 4), (8, 8), (16, 4)]
    assert trials[-1].reasoning == "the only allocation not yet tried" and not trials[-1].fallback
    assert ["insight" if "Summarise insights" in p else "candidates" for p in asked] == ["insight", "candidates",
                                                                                         "insight"]
    first, later = asked[0].split("\n\n"), asked[2].split("\n\n")
    assert first[2:4] == ["The first trials (a rule-based start: each stage in turn given the most of the budget):",
                          history_table(space, trials[:2])]
    assert later[2:6] == ["Earlier trials:", history_table(space, trials[:2]), "Trials of the last iteration:",
                          history_table(space, trials[2:7])]
    assert later[6] == ("Summarise insights from these trials on three points, in the most concise words, point by "
                        "point:\n" + "\n".join(LATER_POINTS))


async def _flat(allocation: dict[str, Any]) -> Evaluation:
    """Every allocation equally good (the loop, not the optimum, is under test)."""
    return Evaluation(accuracy=0.5, ci_low=0.4, ci_high=0.6, cost=float(allocation["N"]) * float(allocation["T"]) * 32,
                      n=10)
