"""An LLM agent that proposes one allocation per call from the feedback of earlier trials (`agent_single`).

AgentTTS (2025, "AgentTTS: Large Language Model Agent for Test-time Compute-optimal Scaling Strategy in
Complex Tasks"): the model and budget of each stage of a multi-stage task form a combinatorial space too
expensive to search exhaustively; an LLM agent that reads the trials so far and proposes the next allocation
finds compute-optimal ones in fewer trials than grid, random or Bayesian search. The reference's own loop (a
rule-based start, insights, batches of candidates) is `ttscale.allocsearch.agenttts`, the `agent` proposer; this
simpler agent, one allocation per call and no insight step, is `agent_single`.

`AgentProposer` wraps any text generator (`async (prompt) -> reply`). The prompt gives the space (the task,
each dimension's allowed values, the cost formula and the total budget), the trials so far as a compact table
with accuracy, interval and cost, the best so far, and asks for ONLY a JSON object
`{"reasoning": "...", "allocation": {...}}`. The reply is read leniently (the first balanced JSON object in
the text, so code fences and prose around it do not matter; a bare allocation object is taken too), then held
strictly: `Space.check` and no repeat of a tried point. A rejected reply is counted and asked again with the
reason appended, up to `retries` times; then the proposal is a seeded random unseen point (`fallback=True`), so
a search always finishes whatever the model writes. `json_schema` gives the reply's schema, for an engine's
structured-output option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttscale.allocsearch.proposers import Proposal, SpaceExhausted, check_seed, random_unseen, seen_keys, unseen
from ttscale.allocsearch.space import Space, Value
from ttscale.allocsearch.trials import Trial, best_of

Generate = Callable[[str], Awaitable[str]]
"""A text generator: the prompt in, the model's reply out."""


class AgentBudgetSpent(RuntimeError):
    """Raised by a `Generate` when the search's budget for the agent has nothing left for another call."""

MAX_STARTS = 1000
"""The most `{` a reply is tried from before it is called malformed (each try may scan the rest of it)."""
_SHOWN = 240
"""The most characters of a rejected reply's detail quoted back to the model."""

INSTRUCTION = (
    "Propose the next allocation to evaluate. Aim for the highest accuracy within the total budget, in as "
    "few trials as possible; do not repeat an allocation from the table.\n"
    'Reply with ONLY a JSON object, no other text: {"reasoning": "<one or two sentences>", "allocation": '
)


REASONING_CHARS = 300
"""The longest reasoning a constrained reply may write (about 75 tokens), so it always reaches its allocation."""


def json_schema(space: Space) -> dict[str, Any]:
    """The JSON schema of a reply: a reasoning string and an allocation with one allowed value per dimension
    (an `enum` each). Budget and repeats are not expressible in it: replies are still checked."""
    allocation = {"type": "object", "additionalProperties": False, "required": list(space.names),
                  "properties": {d.name: {"enum": list(d.values)} for d in space.dimensions}}
    # The reasoning is bounded, so a reply of a few hundred tokens always gets to its allocation and closes.
    return {"type": "object", "additionalProperties": False, "required": ["reasoning", "allocation"],
            "properties": {"reasoning": {"type": "string", "maxLength": REASONING_CHARS}, "allocation": allocation}}


def reply_regex(space: Space) -> str:
    """A regular expression of exactly the replies `json_schema` allows, written compactly (no free whitespace):
    what the engine constrains the agent's generation to (`SamplingParams.regex`). Budget and repeats are not in
    it: replies are still checked."""
    values = ",".join(f'"{re.escape(d.name)}":(?:' + "|".join(re.escape(json.dumps(v)) for v in d.values) + ")"
                      for d in space.dimensions)
    reasoning = r'"[^"\\\n\r]{0,' + str(REASONING_CHARS) + '}"'  # any text but quotes, backslashes, line breaks
    return r'\{"reasoning":' + reasoning + r',"allocation":\{' + values + r'\}\}'


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first balanced JSON object in `text` (from the first `{` that starts a valid one), or None."""
    decoder = json.JSONDecoder(strict=False)  # a raw tab or control character in a model's string is kept
    start = text.find("{")
    for _ in range(MAX_STARTS):
        if start < 0:
            return None
        try:
            value, _end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
            start = text.find("{", start + 1)
            continue
        return value if isinstance(value, dict) else None
    return None


def parse_reply(text: object, space: Space) -> tuple[dict[str, Value], str | None]:
    """The allocation (declared values) and reasoning of a reply; ValueError with one line saying why not."""
    if not isinstance(text, str):
        raise ValueError(f"the reply is not text ({type(text).__name__})")
    reply = first_json_object(text)
    if reply is None:
        raise ValueError("no JSON object found in the reply")
    if "allocation" in reply:
        allocation, reasoning = reply["allocation"], reply.get("reasoning")
    elif reply and all(k in space.names for k in reply):  # a bare allocation: the schema's inner object
        allocation, reasoning = reply, None
    else:
        raise ValueError('the JSON object has no "allocation" key')
    if not isinstance(allocation, Mapping):
        raise ValueError(f'"allocation" must be a JSON object of {", ".join(space.names)}')
    problem = space.check(allocation)
    if problem is not None:
        raise ValueError(problem)
    if reasoning is not None and not isinstance(reasoning, str):
        reasoning = json.dumps(reasoning, ensure_ascii=False)
    return space.canonical(allocation), reasoning


def history_table(space: Space, history: Sequence[Trial]) -> str:
    """The trials so far, one line each: number, allocation, accuracy [interval], cost; then the best."""
    if not history:
        return "Trials so far: none yet."
    head = " | ".join(["#", *space.names, "accuracy [95% CI]", "cost"])
    rows = [f"Trials so far ({len(history)}):", head]
    for trial in history:
        values = [json.dumps(trial.allocation.get(n)) for n in space.names]
        rows.append(" | ".join([str(trial.index + 1), *values,
                                f"{trial.accuracy:.3f} [{trial.ci_low:.3f}, {trial.ci_high:.3f}]", f"{trial.cost:g}"]))
    best = best_of(history)
    rows.append(f"Best so far: trial {best.index + 1} ({space.render(best.allocation)}): accuracy "
                f"{best.accuracy:.3f} [{best.ci_low:.3f}, {best.ci_high:.3f}], cost {best.cost:g}.")
    return "\n".join(rows)


def build_prompt(space: Space, history: Sequence[Trial], errors: Sequence[str] = ()) -> str:
    """The agent's prompt; each rejected reply of this proposal adds its reason at the end."""
    example = "{" + ", ".join(f"{json.dumps(d.name)}: <one of its values>" for d in space.dimensions) + "}"
    parts = [
        "You are allocating test-time compute for a task: choose one value for each dimension below. Each "
        "trial evaluates one allocation on the task and reports its accuracy (with a 95% confidence interval) "
        "and what it cost.",
        space.describe(),
        history_table(space, history),
        INSTRUCTION + example + "}",
    ]
    for number, error in enumerate(errors, start=1):
        parts.append(f"Reply {number} was rejected: {error}. Reply again with ONLY the JSON object.")
    return "\n\n".join(parts)


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SHOWN else line[: _SHOWN - 1] + "…"


@dataclass(frozen=True, kw_only=True)
class AgentProposer:
    """An LLM agent behind `generate`, with a seeded random fallback when its replies are all rejected."""

    generate: Generate = field(repr=False, compare=False)
    """The model: prompt in, reply out (an engine's chat call, or a scripted generator in tests)."""
    seed: int
    """Seeds the fallback point (by the seed and the number of trials); the replies are the model's."""
    retries: int = 3
    """Replies asked again after a rejected one: at most 1 + retries calls to `generate` per proposal."""
    name: str = "agent"
    """Its name in trials and logs (name the model: `agent:qwen3-8b`)."""

    def __post_init__(self) -> None:
        check_seed(self.seed)
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be an int ≥ 0, got {self.retries!r}")
        if not callable(self.generate):
            raise ValueError("generate must be an async callable: prompt -> reply")

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        seen = seen_keys(space, history)
        if len(seen) >= len(space.points()):
            raise SpaceExhausted(f"every one of the {len(space.points())} feasible allocations was tried")
        if len(seen) == len(space.points()) - 1:  # one allocation left: there is no choice to ask the model for
            (last,) = unseen(space, history)
            return Proposal(allocation=last, reasoning="the only allocation not yet tried")
        errors: list[str] = []
        for _ in range(1 + self.retries):
            try:
                reply = await self.generate(build_prompt(space, history, errors))
            except AgentBudgetSpent:
                errors.append("the agent's budget is spent")
                break
            try:
                allocation, reasoning = parse_reply(reply, space)
            except ValueError as exc:
                errors.append(_short(str(exc)))
                continue
            tried = seen.get(space.key(allocation))
            if tried is not None:
                errors.append(f"{space.render(allocation)} was already tried (trial {tried.index + 1}, accuracy "
                              f"{tried.accuracy:.3f}); propose an allocation not in the table")
                continue
            return Proposal(allocation=allocation, reasoning=reasoning, invalid=len(errors))
        point = random_unseen(space, history, seed=self.seed, salt="agent-fallback")
        return Proposal(allocation=point, invalid=len(errors), fallback=True,
                        reasoning=f"random fallback after {len(errors)} rejected replies (last: {errors[-1]})")


__all__ = ["AgentBudgetSpent", "AgentProposer", "Generate", "build_prompt", "first_json_object", "json_schema",
           "parse_reply", "reply_regex"]
