"""AgentTTS's search loop: a rule-based start, then per iteration the model's insights and a batch of candidates.

AgentTTS (2025; reference code FairyFali/AgentTTS_Code, `code_others/AgentTTS.py` and `agent/agent_class.py`):
1. a rule-based set of first candidates, each stage in turn given the most of the budget;
2. after each iteration the model writes *insights* from the trials (which choice to prefer, where more compute in
   a stage stops helping, how to balance the stages sharing the budget, and to explore when results differ
   little);
3. the model is then given the task, the cost formula and the total budget, the whole history and the first and
   last two insights, and asked for a batch of candidates (10 by default); those over the budget, malformed or
   already tried are dropped, and the rest are evaluated in order before the next iteration.

`AgentTTSProposer` runs that loop behind the one-proposal-per-call `Proposer` protocol. It keeps no state
between calls that a resume would lose: every call replays the loop over the history it is given (the start is
a function of the space; each iteration's prompts a function of the trials before it), and the model's replies
are kept by prompt, so within a search each prompt is asked once. A resumed search asks the model its earlier
prompts again: with a generator that answers a prompt the same way (the engine's agent is seeded by its
prompt), it proposes what the uninterrupted search would have; where the replay and the stored trials part,
the stored trials win and a new iteration starts there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ttscale.allocsearch.agent import AgentBudgetSpent, Generate, first_json_object, history_table
from ttscale.allocsearch.proposers import Proposal, SpaceExhausted, check_seed, random_unseen, seen_keys, unseen
from ttscale.allocsearch.space import Space, Value
from ttscale.allocsearch.trials import Trial

CANDIDATES = 10
"""Candidates asked per iteration (the reference's `--batch_size` default)."""
_SHOWN = 240
"""The most characters of an insight or a rejection quoted in a trial's reasoning or back to the model."""

SYSTEM = "You are an expert in tuning the parameters of test-time compute."
"""The system message of every agent call (the reference's: an expert in parameter optimisation)."""


def rule_based_start(space: Space) -> list[tuple[dict[str, Value], str]]:
    """The first candidates, with why each: every dimension (stage) in turn takes the most the budget leaves it
    while the others stay at the cheapest point's values; a dimension of names (a model) gives one candidate per
    name. The reference gives each stage the budget of its largest model at one sample (or what the other
    stages' cheapest choices leave) and fills it per model size; a space without model dimensions has no sizes to
    compare, so here the stage's compute itself is what is spread."""
    floor = min(space.points(), key=lambda p: (space.cost(p), space.index(p)))
    out: list[tuple[dict[str, Value], str]] = []
    for dim in space.dimensions:
        options = [{**floor, dim.name: v} for v in dim.values]
        feasible = [p for p in options if space.feasible(p)]
        if all(isinstance(v, str) for v in dim.values):
            chosen = [(p, f"{dim.name}={json.dumps(p[dim.name])} with every other dimension at its cheapest")
                      for p in feasible]
        else:
            top = max(feasible, key=lambda p: (space.cost(p), space.index(p)))
            chosen = [(top, f"{dim.name} at the most the budget leaves it, every other dimension at its cheapest")]
        for point, why in chosen:
            if all(space.key(point) != space.key(p) for p, _ in out):
                out.append((space.canonical(point), why))
    return out


def candidates_regex(space: Space, count: int) -> str:
    """A regular expression of the candidate replies: `{"candidates":[…]}` with 1 to `count` allocations, each
    an allowed value per dimension, written compactly. Budget and repeats are not in it: replies are checked."""
    one = r"\{" + ",".join(f'"{re.escape(d.name)}":(?:' + "|".join(re.escape(json.dumps(v)) for v in d.values)
                           + ")" for d in space.dimensions) + r"\}"
    return r'\{"candidates":\[' + one + "(?:," + one + "){0," + str(count - 1) + r"}\]\}"


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SHOWN else line[: _SHOWN - 1] + "…"


INTRO = ("I am tuning the test-time compute of a task that runs in stages: each dimension below sets what one stage "
         "gets, and an allocation's cost must stay within the total budget. More compute in a stage usually helps, "
         "up to a point where it levels off. The goal is the allocation of highest accuracy within the budget.")

FIRST_POINTS = (
    "1. Which dimension gains most from its compute, and which values to explore further (between two choices "
    "of a stage, prefer the costlier one only if it is clearly better; if it is about as good, the cheaper one).",
    "2. For each dimension, the direction in which to look for the value after which more compute stops "
    "improving accuracy.",
    "3. The budget is shared by all stages and they depend on each other: if every stage cannot have its best "
    "value, which to give priority, and how to balance the others against it.",
)
LATER_POINTS = (
    "1. For each dimension, the direction in which to look for the value after which more compute stops "
    "improving accuracy.",
    "2. The budget is shared by all stages and they depend on each other: which stage to give priority, and "
    "which combinations of the others to try to balance them.",
    "3. If accuracy differs little across the trials, say that the next candidates should explore (recombine, "
    "change one dimension, try values not tried yet) rather than follow the pattern so far.",
)


def insight_prompt(space: Space, history: Sequence[Trial], recent: int, *, first: bool) -> str:
    """The prompt asking for insights: the space, the trials (the last `recent` of them apart), three points."""
    older, newer = history[: len(history) - recent], history[len(history) - recent:]
    if first:
        trials = ["The first trials (a rule-based start: each stage in turn given the most of the budget):",
                  history_table(space, newer)]
    else:
        trials = ["Earlier trials:", history_table(space, older), "Trials of the last iteration:",
                  history_table(space, newer)]
    points = FIRST_POINTS if first else LATER_POINTS
    return "\n\n".join([INTRO, space.describe(), *trials,
                        "Summarise insights from these trials on three points, in the most concise words, point by "
                        "point:\n" + "\n".join(points)])


def shown_insights(insights: Sequence[str]) -> list[tuple[int, str]]:
    """The insights a candidates prompt shows, numbered from 1: the first and the last two (each once)."""
    keep = sorted({0, len(insights) - 2, len(insights) - 1} & set(range(len(insights))))
    return [(k + 1, insights[k]) for k in keep]


def candidates_prompt(space: Space, history: Sequence[Trial], insights: Sequence[str], count: int,
                      errors: Sequence[str] = ()) -> str:
    """The prompt asking for `count` candidates: the space (task, dimensions, cost formula, total budget), the
    whole history, the first and last two insights; each rejected reply of this iteration adds its reason."""
    example = "{" + ", ".join(f"{json.dumps(d.name)}: <one of its values>" for d in space.dimensions) + "}"
    notes = "\n".join(f"Insight {k}: {text}" for k, text in shown_insights(insights)) or "none yet"
    parts = [INTRO, space.describe(), history_table(space, history), "Insights from earlier iterations:\n" + notes,
             f"Propose {count} new allocations that follow the insights and stay within the total budget; do not "
             f"repeat an allocation from the trials. Reply with ONLY a JSON object, no other text: "
             f'{{"candidates": [{example}, ...]}} with exactly {count} allocations.']
    for number, error in enumerate(errors, start=1):
        parts.append(f"Reply {number} was rejected: {error}. Reply again with ONLY the JSON object.")
    return "\n\n".join(parts)


def parse_candidates(text: object, space: Space, tried: Mapping[tuple[Value, ...], Trial], count: int,
                     ) -> tuple[list[dict[str, Value]], list[str]]:
    """The usable candidates of a reply (feasible, untried, each once, at most `count`, in the reply's order)
    and one line per candidate dropped; ValueError with one line when the reply holds no candidate list."""
    if not isinstance(text, str):
        raise ValueError(f"the reply is not text ({type(text).__name__})")
    reply = first_json_object(text)
    if reply is None:
        raise ValueError("no JSON object found in the reply")
    listed = reply.get("candidates")
    if not isinstance(listed, list) or not listed:
        raise ValueError('the reply needs "candidates": a non-empty list of allocations')
    kept: list[dict[str, Value]] = []
    dropped: list[str] = []
    for number, candidate in enumerate(listed, start=1):
        problem = space.check(candidate)
        if problem is None:
            assert isinstance(candidate, Mapping)
            key = space.key(candidate)
            if key in tried:
                problem = f"{space.render(candidate)} was already tried (trial {tried[key].index + 1})"
            elif any(space.key(k) == key for k in kept):
                problem = f"{space.render(candidate)} is listed twice"
            elif len(kept) >= count:
                problem = f"more than the {count} candidates asked"
        if problem is None:
            kept.append(space.canonical(candidate))
        else:
            dropped.append(f"candidate {number}: {problem}")
    return kept, dropped


@dataclass
class _Batch:
    """One iteration's candidates, in the order they are evaluated."""

    points: list[dict[str, Value]]
    reasons: list[str]
    invalid: int = 0
    """Candidates dropped and replies rejected while making it (charged to its first trial)."""
    fallback: bool = False


@dataclass(frozen=True, kw_only=True)
class AgentTTSProposer:
    """AgentTTS's loop: a rule-based start, then per iteration an insight call and a batch of candidates."""

    generate: Generate = field(repr=False, compare=False)
    """The model asked for candidates (an engine's chat call constrained to `candidates_regex`, or a script)."""
    seed: int
    """Seeds the random start (without the rule) and the fallback points; the replies are the model's."""
    reflect: Generate | None = field(default=None, repr=False, compare=False)
    """The model asked for insights, in free text; None: `generate`."""
    candidates: int = CANDIDATES
    """Candidates asked per iteration (the reference's batch size, 10)."""
    rule_start: bool = True
    """Start from the rule-based set (`rule_based_start`); False: from one seeded random point (the
    reference's ablation without its first insight)."""
    retries: int = 2
    """Replies asked again when one yields no usable candidate: at most 1 + retries candidate calls per
    iteration, then a seeded random unseen point is the iteration's one candidate."""
    name: str = "agenttts"
    """Its name in trial logs (a log of the one-at-a-time agent is refused on resume, not mixed in)."""
    _replies: dict[tuple[str, str], str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_seed(self.seed)
        for key in ("candidates", "retries"):
            value, low = getattr(self, key), 1 if key == "candidates" else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{key} must be an int ≥ {low}, got {value!r}")
        if not isinstance(self.rule_start, bool):
            raise ValueError(f"rule_start must be a bool, got {self.rule_start!r}")
        if not callable(self.generate) or (self.reflect is not None and not callable(self.reflect)):
            raise ValueError("generate and reflect must be async callables: prompt -> reply")

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        if not unseen(space, history):
            raise SpaceExhausted(f"every one of the {len(space.points())} feasible allocations was tried")
        batch = self._start(space)
        insights: list[str] = []
        pos = begun = iteration = 0
        while True:
            # Walk this batch along the stored trials; the first one it does not match ends it.
            j = 0
            while j < len(batch.points) and pos < len(history) and \
                    space.key(history[pos].allocation) == space.key(batch.points[j]):
                pos, j = pos + 1, j + 1
            if pos == len(history) and j < len(batch.points):
                return Proposal(allocation=batch.points[j], reasoning=batch.reasons[j],
                                invalid=batch.invalid if j == 0 else 0, fallback=batch.fallback)
            if j == 0 and pos < len(history):  # a trial no batch planned (another generator's): taken as it is
                pos += 1
            iteration += 1
            insight = await self._insight(space, history[:pos], recent=pos - begun, first=iteration == 1)
            if insight is not None:
                insights.append(insight)
            begun = pos
            batch = await self._batch(space, history[:pos], insights, iteration)

    # -- internals --------------------------------------------------------------------------------------------

    def _start(self, space: Space) -> _Batch:
        if not self.rule_start:
            point = random_unseen(space, (), seed=self.seed, salt="agenttts-start")
            return _Batch(points=[point], reasons=["random start (no rule-based start)"])
        start = rule_based_start(space)
        return _Batch(points=[p for p, _ in start],
                      reasons=[f"rule-based start {k} of {len(start)}: {why}" for k, (_, why) in enumerate(start, 1)])

    async def _ask(self, kind: str, prompt: str) -> str | None:
        """The model's reply to `prompt`, asked once per search (a replay reads it back); None when the agent's
        budget has nothing left."""
        if (kind, prompt) not in self._replies:
            model = self.reflect if kind == "insight" and self.reflect is not None else self.generate
            try:
                reply = await model(prompt)
            except AgentBudgetSpent:
                return None
            self._replies[(kind, prompt)] = reply if isinstance(reply, str) else repr(reply)
        return self._replies[(kind, prompt)]

    async def _insight(self, space: Space, history: Sequence[Trial], *, recent: int, first: bool) -> str | None:
        reply = await self._ask("insight", insight_prompt(space, history, recent, first=first))
        return (reply.strip() or None) if reply is not None else None

    async def _batch(self, space: Space, history: Sequence[Trial], insights: Sequence[str], iteration: int) -> _Batch:
        left = unseen(space, history)
        if len(left) == 1:  # one allocation left: nothing to ask the model
            return _Batch(points=left, reasons=["the only allocation not yet tried"])
        tried = seen_keys(space, history)
        errors: list[str] = []
        dropped = 0
        for _ in range(1 + self.retries):
            reply = await self._ask("candidates", candidates_prompt(space, history, insights, self.candidates, errors))
            if reply is None:
                errors.append("the agent's budget is spent")
                break
            try:
                points, lost = parse_candidates(reply, space, tried, self.candidates)
            except ValueError as exc:
                errors.append(_short(str(exc)))
                dropped += 1
                continue
            dropped += len(lost)
            if points:
                note = f"; insight: {_short(insights[-1])}" if insights else ""
                return _Batch(points=points, invalid=dropped,
                              reasons=[f"iteration {iteration}, candidate {k} of {len(points)}{note}"
                                       for k in range(1, len(points) + 1)])
            errors.append(_short("no usable candidate (" + "; ".join(lost) + ")"))
        point = random_unseen(space, history, seed=self.seed, salt="agenttts-fallback")
        return _Batch(points=[point], invalid=dropped, fallback=True,
                      reasons=[f"iteration {iteration}: random fallback (last: {errors[-1]})"])


__all__ = ["CANDIDATES", "AgentBudgetSpent", "AgentTTSProposer", "candidates_prompt", "candidates_regex",
           "insight_prompt", "parse_candidates", "rule_based_start", "shown_insights"]
