"""The agent proposer on scripted replies: accepted, rejected and retried with the reason, or fallen back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from ttscale.allocsearch import AgentProposer, GridProposer, Proposal, Trial, json_schema, search_allocation
from ttscale.allocsearch.agent import build_prompt, first_json_object
from ttscale.allocsearch.proposers import random_unseen
from ttscale.testing.allocsearch import ScriptedGenerator, SimulatedGenRM, genrm_space

SPACE = genrm_space()


def history(n: int) -> tuple[Trial, ...]:
    task = SimulatedGenRM()
    return asyncio.run(search_allocation(space=task.space, evaluate=task.evaluate, proposer=GridProposer(),
                                         trials=n)).trials


def propose(replies: Sequence[str], past: Sequence[Trial] = (), retries: int = 3) -> tuple[Proposal, list[str]]:
    generate = ScriptedGenerator(replies)
    proposal = asyncio.run(AgentProposer(generate=generate, seed=7, retries=retries).propose(SPACE, past))
    return proposal, generate.prompts


def reply(s: object, v: object, reasoning: str = "more verification") -> str:
    return json.dumps({"reasoning": reasoning, "allocation": {"S": s, "V": v}})


def test_valid_reply_is_accepted() -> None:
    proposal, prompts = propose([reply(8, 2)])
    assert proposal == Proposal(allocation={"S": 8, "V": 2}, reasoning="more verification", invalid=0, fallback=False)
    assert len(prompts) == 1


def test_code_fenced_reply_with_prose_is_accepted() -> None:
    text = 'Let me think {about it}.\n```json\n' + reply(4, 1) + '\n```\nThat is my answer.'
    proposal, _ = propose([text])
    assert proposal.allocation == {"S": 4, "V": 1} and proposal.invalid == 0
    bare, _ = propose(['{"S": "16", "V": 2.0}'])  # the schema's inner object, numbers quoted or as floats
    assert bare.allocation == {"S": 16, "V": 2} and bare.reasoning is None


def test_each_rejected_reply_is_counted_and_its_reason_goes_into_the_next_prompt() -> None:
    past = history(2)  # (1, 0) and (1, 1) tried
    replies = [
        "I would pick S=8 and V=2",  # no JSON
        '{"allocation": {"S": 8, "V": 2, "W": 1}}',
        reply(3, 2),
        reply(32, 4),
        reply(1, 1),
        reply(8, 2),
    ]
    proposal, prompts = propose(replies, past, retries=5)
    assert proposal.allocation == {"S": 8, "V": 2} and proposal.invalid == 5 and not proposal.fallback
    reasons = [
        "no JSON object found in the reply",
        "unknown key 'W'; the keys are S, V",
        "S=3 is not allowed; allowed: 1, 2, 4, 8, 16, 32",
        "S=32, V=4 costs 81920, over the total budget 32768",
        "S=1, V=1 was already tried (trial 2, accuracy 0.327); propose an allocation not in the table",
    ]
    for k, reason in enumerate(reasons, start=1):
        assert f"Reply {k} was rejected: {reason}." in prompts[k]
        assert reason not in prompts[k - 1]


def test_exhausted_retries_fall_back_to_a_seeded_random_unseen_point() -> None:
    past = history(3)
    proposal, prompts = propose(["nope", "{}", reply(1, 2), "[1, 2]"], past, retries=3)
    assert len(prompts) == 4 and proposal.fallback and proposal.invalid == 4
    assert proposal.allocation == random_unseen(SPACE, past, seed=7, salt="agent-fallback")
    assert proposal.reasoning is not None and "after 4 rejected replies" in proposal.reasoning


def test_a_search_finishes_whatever_the_model_writes() -> None:
    task = SimulatedGenRM()
    agent = AgentProposer(generate=ScriptedGenerator(lambda prompt: "I cannot decide."), seed=1, retries=2)
    result = asyncio.run(search_allocation(space=task.space, evaluate=task.evaluate, proposer=agent, trials=30))
    assert len(result.trials) == 26 and result.exhausted
    # The last allocation is no choice: taken without asking. Every other trial fell back after 3 rejections.
    assert result.fallbacks == 25 and result.invalid == 25 * 3
    assert result.trials[-1].reasoning == "the only allocation not yet tried" and not result.trials[-1].fallback


def test_prompt_holds_the_space_the_table_the_best_and_the_instruction() -> None:
    past = history(10)
    prompt = build_prompt(SPACE, past)
    assert "one of 1, 2, 4, 8, 16, 32" in prompt and "at most 32768" in prompt and "S·(1+V)·512 tokens" in prompt
    assert "# | S | V | accuracy [95% CI] | cost" in prompt and "Trials so far (10):" in prompt
    best = max(past, key=lambda t: t.accuracy)
    assert f"Best so far: trial {best.index + 1} (S=2, V=4): accuracy {best.accuracy:.3f}" in prompt
    assert 'Reply with ONLY a JSON object' in prompt and '"allocation": {"S": <one of its values>' in prompt
    assert "none yet" in build_prompt(SPACE, ())


def test_json_schema_has_an_enum_per_dimension() -> None:
    schema = json_schema(SPACE)
    allocation = schema["properties"]["allocation"]
    assert allocation["properties"] == {"S": {"enum": [1, 2, 4, 8, 16, 32]}, "V": {"enum": [0, 1, 2, 4, 8, 16]}}
    assert allocation["required"] == ["S", "V"] and allocation["additionalProperties"] is False
    assert schema["required"] == ["reasoning", "allocation"]
    json.dumps(schema)


def test_first_json_object_survives_deep_nesting_and_many_braces() -> None:
    assert first_json_object("[" * 100_000 + '{"a": 1}') == {"a": 1}
    assert first_json_object('{"a": ' + "[" * 100_000) is None
    assert first_json_object("{" * 5000) is None
    huge, _ = propose([reply(10**400, 1), reply(8, "1" + "0" * 400), reply(2, 1)])
    assert huge.allocation == {"S": 2, "V": 1} and huge.invalid == 2


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                       max_leaves=8)
REPLIES = st.one_of(
    st.text(),
    st.builds(lambda a, b, c: a + json.dumps(b) + c, st.text(max_size=20), JSONISH, st.text(max_size=20)),
    st.builds(lambda s, v, r: json.dumps({"reasoning": r, "allocation": {"S": s, "V": v}}), JSONISH, JSONISH, JSONISH),
    st.builds(lambda s, v: '```json\n{"allocation": {"S": ' + s + ', "V": ' + v + "}}\n```",
              st.sampled_from(["8", "8.0", '"8"', "NaN", "1e999", "true", "-1"]), st.text(max_size=6)),
)


@given(replies=st.lists(REPLIES, min_size=3, max_size=3))
def test_arbitrary_replies_never_raise(replies: list[str]) -> None:
    past = history(4)
    proposal, _ = propose(replies, past, retries=2)
    assert SPACE.feasible(proposal.allocation)
    assert SPACE.key(proposal.allocation) not in {SPACE.key(t.allocation) for t in past}
    assert proposal.fallback == (proposal.invalid == 3)


@given(reasoning=st.text(alphabet=st.characters(blacklist_characters='"\\', blacklist_categories=("Cs", "Cc")),
                         max_size=300),
       pick=st.integers(0, 10_000))
def test_every_reply_the_engine_can_be_constrained_to_reads_back(reasoning: str, pick: int) -> None:
    """`reply_regex` (what the engine constrains the agent to) admits exactly compact replies of `json_schema`'s
    shape: each reads back with its allocation, which is then checked against the budget like any other."""
    import re

    from ttscale.allocsearch.agent import parse_reply, reply_regex

    shape = reply_regex(SPACE)
    combos = [{"S": s, "V": v} for s in SPACE.dimensions[0].values for v in SPACE.dimensions[1].values]
    allocation = combos[pick % len(combos)]
    text = json.dumps({"reasoning": reasoning, "allocation": allocation}, separators=(",", ":"), ensure_ascii=False)
    assert re.fullmatch(shape, text)
    if SPACE.feasible(allocation):
        assert parse_reply(text, SPACE) == (allocation, reasoning)
    assert not re.fullmatch(shape, text.replace('"allocation":{', '"allocation": {'))  # no free whitespace
    assert not re.fullmatch(shape, text.replace('"S":', '"T":'))
    raw = '{"reasoning":"a\ttab","allocation":{"S":1,"V":0}}'  # a raw control character, as a model may write
    assert re.fullmatch(shape, raw) and parse_reply(raw, SPACE) == ({"S": 1, "V": 0}, "a\ttab")
