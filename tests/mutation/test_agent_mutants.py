"""ttscale.allocsearch.agent (the one-at-a-time agent): behaviour the mutation run (tools/mutation) found
unchecked, on hand examples: how a reply is read and why one is rejected, the table and prompt the model reads, the
constraint's limits, a spent agent budget, the settings' checks. The model is a SCRIPTED generator."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence

import pytest

from ttscale.allocsearch import AgentProposer, Evaluation, Proposal, SpaceExhausted, Trial, json_schema
from ttscale.allocsearch.agent import (
    INSTRUCTION,
    MAX_STARTS,
    REASONING_CHARS,
    AgentBudgetSpent,
    build_prompt,
    first_json_object,
    history_table,
    parse_reply,
    reply_regex,
)
from ttscale.allocsearch.proposers import random_unseen
from ttscale.testing.allocsearch import ScriptedGenerator, genrm_space

SPACE = genrm_space()


def trial(index: int, s: int, v: int, accuracy: float, cost: float) -> Trial:
    return Trial.of(index=index, allocation={"S": s, "V": v}, proposer="agent",
                    evaluation=Evaluation(accuracy=accuracy, ci_low=accuracy - 0.1, ci_high=accuracy + 0.1,
                                          cost=cost, n=10))


def propose(replies: Sequence[str], past: Sequence[Trial] = (), retries: int = 3) -> tuple[Proposal, list[str]]:
    generate = ScriptedGenerator(replies)
    proposal = asyncio.run(AgentProposer(generate=generate, seed=7, retries=retries).propose(SPACE, past))
    return proposal, generate.prompts


def test_why_a_reply_is_not_read() -> None:
    with pytest.raises(ValueError, match=r"^the reply is not text \(int\)$"):
        parse_reply(3, SPACE)
    with pytest.raises(ValueError, match=r'^the JSON object has no "allocation" key$'):
        parse_reply('{"reasoning": "hm", "S": 1}', SPACE)
    with pytest.raises(ValueError, match=r'^the JSON object has no "allocation" key$'):
        parse_reply("{}", SPACE)  # an empty object is no bare allocation
    with pytest.raises(ValueError, match=r'^"allocation" must be a JSON object of S, V$'):
        parse_reply('{"allocation": [8, 2]}', SPACE)
    # A reasoning that is not a string is kept as its JSON, non-ASCII as written.
    assert parse_reply('{"reasoning": {"why": "größer"}, "allocation": {"S": 8, "V": 2}}', SPACE) == (
        {"S": 8, "V": 2}, '{"why": "größer"}')


def test_first_json_object_tries_a_thousand_starts() -> None:
    assert MAX_STARTS == 1000
    assert first_json_object("{" * 999 + '{"a": 1}') == {"a": 1}  # the 1000th start is the object
    assert first_json_object("{" * 1000 + '{"a": 1}') is None  # the 1001st: not tried
    assert first_json_object('no braces at all') is None


def test_a_long_rejection_is_quoted_back_on_one_line_of_240_characters() -> None:
    key = "W" * 300
    proposal, prompts = propose(['{"allocation": {"S": 8, "V": 2, "' + key + '": 1}}', '{"allocation": {"S": 8, '
                                 '"V": 2}}'])
    assert proposal.allocation == {"S": 8, "V": 2} and proposal.invalid == 1
    quoted = prompts[1].split("Reply 1 was rejected: ", 1)[1].split(". Reply again", 1)[0]
    assert len(quoted) == 240 and quoted.endswith("…") and quoted.startswith("unknown key 'WWW")
    # Line breaks and runs of spaces in a reason become single spaces.
    _, prompts = propose(["I think\n\n   S=8", '{"allocation": {"S": 8, "V": 2}}'])
    assert "Reply 1 was rejected: no JSON object found in the reply. Reply again with ONLY the JSON object." \
        in prompts[1]


def test_the_table_and_the_prompt_by_hand() -> None:
    past = [trial(0, 1, 0, 0.25, 1024), trial(1, 2, 1, 0.5, 2048)]
    assert history_table(SPACE, past) == "\n".join([
        "Trials so far (2):",
        "# | S | V | accuracy [95% CI] | cost",
        "1 | 1 | 0 | 0.250 [0.150, 0.350] | 1024",
        "2 | 2 | 1 | 0.500 [0.400, 0.600] | 2048",
        "Best so far: trial 2 (S=2, V=1): accuracy 0.500 [0.400, 0.600], cost 2048.",
    ])
    prompt = build_prompt(SPACE, past, ["first reason", "second reason"])
    parts = prompt.split("\n\n")
    assert parts[0].startswith("You are allocating test-time compute for a task: choose one value for each")
    assert parts[1] == SPACE.describe() and parts[2] == history_table(SPACE, past)
    assert parts[3] == INSTRUCTION + '{"S": <one of its values>, "V": <one of its values>}}'
    assert parts[4:] == ["Reply 1 was rejected: first reason. Reply again with ONLY the JSON object.",
                         "Reply 2 was rejected: second reason. Reply again with ONLY the JSON object."]


def test_the_constraint_bounds_the_reasoning_to_300_characters() -> None:
    assert REASONING_CHARS == 300
    assert json_schema(SPACE) == {
        "type": "object", "additionalProperties": False, "required": ["reasoning", "allocation"],
        "properties": {
            "reasoning": {"type": "string", "maxLength": 300},
            "allocation": {"type": "object", "additionalProperties": False, "required": ["S", "V"],
                           "properties": {"S": {"enum": [1, 2, 4, 8, 16, 32]}, "V": {"enum": [0, 1, 2, 4, 8, 16]}}},
        },
    }
    shape = re.compile(reply_regex(SPACE))
    for length, fits in ((0, True), (300, True), (301, False)):
        text = json.dumps({"reasoning": "r" * length, "allocation": {"S": 8, "V": 2}}, separators=(",", ":"))
        assert bool(shape.fullmatch(text)) == fits, length
    assert not shape.fullmatch('{"reasoning":"a\\"b","allocation":{"S":8,"V":2}}')  # no quotes or backslashes


def test_a_spent_agent_budget_falls_back_at_once() -> None:
    calls = []

    async def spent(prompt: str) -> str:
        calls.append(prompt)
        raise AgentBudgetSpent("nothing left")

    past = [trial(0, 1, 0, 0.25, 1024)]
    proposal = asyncio.run(AgentProposer(generate=spent, seed=7, retries=3).propose(SPACE, past))
    assert len(calls) == 1 and proposal.fallback and proposal.invalid == 1
    assert "Trials so far (1):\n# | S | V | accuracy [95% CI] | cost\n1 | 1 | 0 | 0.250" in calls[0]
    assert proposal.allocation == random_unseen(SPACE, past, seed=7, salt="agent-fallback")
    assert proposal.reasoning == "random fallback after 1 rejected replies (last: the agent's budget is spent)"


def test_the_only_point_left_is_taken_without_asking() -> None:
    points = SPACE.points()
    past = [trial(i, int(p["S"]), int(p["V"]), 0.5, 1) for i, p in enumerate(points[1:])]
    proposal, prompts = propose([], past)
    assert prompts == [] and proposal == Proposal(allocation=points[0], reasoning="the only allocation not yet tried")


def test_an_exhausted_space_is_said_without_asking() -> None:
    past = [trial(i, int(p["S"]), int(p["V"]), 0.5, 1) for i, p in enumerate(SPACE.points())]
    with pytest.raises(SpaceExhausted, match=r"^every one of the 26 feasible allocations was tried$"):
        propose([], past)


def test_settings_are_checked() -> None:
    assert AgentProposer(generate=ScriptedGenerator([]), seed=0, retries=0).retries == 0
    for retries in (-1, True, 1.5):
        with pytest.raises(ValueError, match=rf"^retries must be an int ≥ 0, got {retries!r}$"):
            AgentProposer(generate=ScriptedGenerator([]), seed=0, retries=retries)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^generate must be an async callable: prompt -> reply$"):
        AgentProposer(generate="model", seed=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^seed must be an int, got None$"):
        AgentProposer(generate=ScriptedGenerator([]), seed=None)  # type: ignore[arg-type]
    # retries=0: one reply asked, then the fallback.
    proposal, prompts = propose(["nope"], retries=0)
    assert len(prompts) == 1 and proposal.fallback and proposal.invalid == 1
