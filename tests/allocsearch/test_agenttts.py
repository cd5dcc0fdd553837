"""AgentTTS's loop (ttscale/allocsearch/agenttts.py) on hand examples worked from the reference code
(FairyFali/AgentTTS_Code, `code_others/AgentTTS.py`): the rule-based start, candidates over the budget dropped,
insights (the first and the last two) and the whole history in the prompts, 10 candidates per iteration, a
malformed reply counted and retried, a resume that replays the loop. The model is a SCRIPTED generator; the task
the simulated GenRM surface (ttscale.testing.allocsearch)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.allocsearch import AgentTTSProposer, Dimension, Space, TrialLog, search_allocation
from ttscale.allocsearch.agenttts import candidates_regex, rule_based_start
from ttscale.allocsearch.proposers import random_unseen
from ttscale.allocsearch.run import AGENT_TOKENS
from ttscale.allocsearch.search import SearchResult
from ttscale.schema import Generation, SamplingParams
from ttscale.testing.allocsearch import ScriptedGenerator, SimulatedGenRM, genrm_space
from ttscale.testing.policy import SimulatedArithmeticPolicy

INSIGHT = "Which dimension gains most from its compute"  # the first insight prompt's first point
LATER = "If accuracy differs little across the trials"  # a later insight prompt's third point


def beam_space() -> Space:
    """README's beam space: N × T under N·T·32 ≤ 2048 tokens (8 feasible points)."""
    return Space(name="beam", total_budget=2048, cost=lambda a: float(a["N"]) * float(a["T"]) * 32,
                 dimensions=(Dimension(name="N", values=(4, 8, 16)), Dimension(name="T", values=(2, 4, 8))))


def candidates(*points: tuple[int, int]) -> str:
    return json.dumps({"candidates": [{"S": s, "V": v} for s, v in points]})


class Model:
    """A SCRIPTED model: insights numbered in the order asked, candidates from a function of the prompt."""

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "Summarise insights" in prompt:
            return f"INSIGHT-{sum('Summarise insights' in p for p in self.prompts)}"
        return self.answer(prompt)

    def kinds(self) -> list[str]:
        return ["insight" if "Summarise insights" in p else "candidates" for p in self.prompts]


def search(model: Callable[[str], object], trials: int, *, log: TrialLog | None = None, **options: object,
           ) -> SearchResult:
    task = SimulatedGenRM()
    proposer = AgentTTSProposer(generate=model, seed=3, **options)  # type: ignore[arg-type]
    return asyncio.run(search_allocation(space=task.space, evaluate=task.evaluate, proposer=proposer, trials=trials,
                                         log=log))


def pairs(result: SearchResult) -> list[tuple[object, object]]:
    return [(t.allocation["S"], t.allocation["V"]) for t in result.trials]


def test_rule_based_start_gives_each_stage_the_most_the_budget_leaves_it() -> None:
    # Beam: the cheapest point is N=4, T=2; N alone at the most it can take is 16 (16·2·32 = 1024), T alone 8.
    assert [p for p, _ in rule_based_start(beam_space())] == [{"N": 16, "T": 2}, {"N": 4, "T": 8}]
    # The simulated GenRM (S·(1+V) ≤ 64): S=32 with V=0, then V=16 with S=1.
    assert [p for p, _ in rule_based_start(genrm_space())] == [{"S": 32, "V": 0}, {"S": 1, "V": 16}]
    # A model dimension gives one candidate per model (the reference's loop over model sizes), the rest at their
    # cheapest; the samples stage then takes the most the budget leaves the cheapest model.
    sizes = {"small": 1, "large": 4}
    space = Space(name="models", total_budget=8, cost=lambda a: sizes[str(a["model"])] * float(a["samples"]),
                  dimensions=(Dimension(name="model", values=("small", "large")),
                              Dimension(name="samples", values=(1, 2, 4, 8))))
    assert [p for p, _ in rule_based_start(space)] == [{"model": "small", "samples": 1},
                                                       {"model": "large", "samples": 1},
                                                       {"model": "small", "samples": 8}]


def test_the_search_starts_with_the_rule_and_asks_the_model_nothing_for_it() -> None:
    model = ScriptedGenerator([])  # asked anything, it raises
    result = search(model, 2)
    assert pairs(result) == [(32, 0), (1, 16)] and model.prompts == []
    assert result.trials[0].reasoning is not None and result.trials[0].reasoning.startswith("rule-based start 1 of 2")
    # Without the rule (the reference's ablation): one seeded random point, then the model.
    alone = search(ScriptedGenerator([]), 1, rule_start=False)
    assert [alone.trials[0].allocation] == [random_unseen(genrm_space(), (), seed=3, salt="agenttts-start")]


def test_ten_candidates_per_iteration_each_after_an_insight() -> None:
    listed = [(1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (1, 1), (2, 1), (4, 1), (8, 1), (16, 1), (1, 2), (2, 2)]
    model = Model(lambda prompt: candidates(*listed) if "Insight 2" not in prompt else candidates((4, 4)))
    result = search(model, 13)
    # The start (2), then iteration 1: one insight, one call for candidates, its first 10 evaluated in order (the
    # 11th and 12th are beyond the 10 asked); then iteration 2 asks again.
    assert pairs(result) == [(32, 0), (1, 16), *listed[:10], (4, 4)]
    assert model.kinds() == ["insight", "candidates", "insight", "candidates"]
    assert "Propose 10 new allocations" in model.prompts[1] and "exactly 10 allocations" in model.prompts[1]
    first = result.trials[2]
    assert first.invalid_proposals == 2 and all(t.invalid_proposals == 0 for t in result.trials[3:12])
    assert first.reasoning == "iteration 1, candidate 1 of 10; insight: INSIGHT-1"
    # The engine's constraint admits 1 to 10 candidates of allowed values, nothing else.
    shape = re.compile(candidates_regex(genrm_space(), 10))
    assert shape.fullmatch(candidates(*listed[:10]).replace(" ", ""))
    assert not shape.fullmatch(candidates(*listed[:11]).replace(" ", ""))
    assert not shape.fullmatch(candidates((3, 0)).replace(" ", ""))


def test_candidates_over_the_budget_or_not_allowed_or_tried_are_dropped() -> None:
    reply = candidates((32, 4), (8, 4), (3, 1), (32, 0), (8, 4), (16, 2))  # 32·5 = 160 > 64: over the budget
    model = Model(lambda prompt: reply if "Reply 1" not in prompt else candidates((2, 2)))
    result = search(model, 4)
    assert pairs(result) == [(32, 0), (1, 16), (8, 4), (16, 2)]  # only the feasible, untried, first-listed ones
    assert result.trials[2].invalid_proposals == 4 and model.kinds() == ["insight", "candidates"]
    assert all(t.cost <= genrm_space().total_budget for t in result.trials)


def test_a_malformed_reply_is_counted_and_asked_again_with_its_reason() -> None:
    replies = iter(["I would try S=8 and V=4.", '{"candidates": []}', candidates((32, 4)), candidates((8, 4))])
    model = Model(lambda prompt: next(replies))
    result = search(model, 3, retries=3)
    assert pairs(result)[2] == (8, 4) and result.trials[2].invalid_proposals == 3 and not result.trials[2].fallback
    asked = [p for p in model.prompts if "Summarise insights" not in p]
    assert "Reply 1 was rejected: no JSON object found in the reply." in asked[1]
    assert 'Reply 2 was rejected: the reply needs "candidates": a non-empty list of allocations.' in asked[2]
    assert "Reply 3 was rejected: no usable candidate (candidate 1: S=32, V=4 costs 81920, over the total budget" \
           in asked[3]
    # Every reply malformed: after 1 + retries calls the iteration's one candidate is a seeded random point.
    broken = Model(lambda prompt: "nothing here")
    fallen = search(broken, 3, retries=1)
    assert fallen.trials[2].fallback and fallen.trials[2].invalid_proposals == 2
    assert fallen.trials[2].allocation == random_unseen(genrm_space(), fallen.trials[:2], seed=3,
                                                        salt="agenttts-fallback")
    assert broken.kinds() == ["insight", "candidates", "candidates"]


def test_the_prompts_hold_the_whole_history_and_the_first_and_last_two_insights() -> None:
    order = iter([(1, 0), (2, 0), (4, 0), (8, 0), (1, 1)])
    model = Model(lambda prompt: candidates(next(order)))
    result = search(model, 7, candidates=1)  # one candidate per iteration: an insight before each trial
    asked = [p for p in model.prompts if "Summarise insights" not in p]
    reflections = [p for p in model.prompts if "Summarise insights" in p]
    last = asked[-1]  # iteration 5, after 6 trials and 5 insights
    assert "Insight 1: INSIGHT-1" in last and "Insight 4: INSIGHT-4" in last and "Insight 5: INSIGHT-5" in last
    assert "INSIGHT-2" not in last and "INSIGHT-3" not in last
    assert "Insight 1: INSIGHT-1" in asked[0] and asked[0].count("INSIGHT-1") == 1  # the first shown once
    for trial in result.trials[:6]:  # every trial so far, in the candidates prompt and the insight prompt
        row = f"{trial.index + 1} | {trial.allocation['S']} | {trial.allocation['V']} | {trial.accuracy:.3f}"
        assert row in last and row in reflections[-1]
    # The first insight is asked about the rule's trials on its three points; later ones add exploration.
    assert INSIGHT in reflections[0] and LATER not in reflections[0] and "The first trials" in reflections[0]
    assert LATER in reflections[1] and "Earlier trials:" in reflections[1] and "Trials of the last iteration:" \
        in reflections[1]
    assert "S·(1+V)·512 tokens" in last and "at most 32768" in last  # the cost formula and the total budget


def test_a_resumed_search_replays_the_loop_and_proposes_what_the_whole_one_did(tmp_path: Path) -> None:
    def answer(prompt: str) -> str:  # a model that answers a prompt the same way every time
        seen = prompt.count("\n") % 5
        return candidates(*[(s, v) for s, v in [(1, 0), (2, 1), (4, 1), (8, 1), (2, 4), (4, 4)]][seen:seen + 3])

    whole = search(Model(answer), 9)
    search(Model(answer), 4, log=TrialLog(tmp_path / "log"))  # stopped inside the first iteration
    again = Model(answer)
    resumed = search(again, 9, log=TrialLog(tmp_path / "log"))
    assert pairs(resumed) == pairs(whole) and [t.reasoning for t in resumed.trials] == \
        [t.reasoning for t in whole.trials]
    # Each prompt is asked once per search, whatever the number of proposals replayed over it.
    assert len(again.prompts) == len(set(again.prompts))


def test_bad_settings_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="candidates must be an int ≥ 1, got 0"):
        AgentTTSProposer(generate=ScriptedGenerator([]), seed=0, candidates=0)
    with pytest.raises(ValueError, match="retries must be an int ≥ 0, got -1"):
        AgentTTSProposer(generate=ScriptedGenerator([]), seed=0, retries=-1)
    with pytest.raises(ValueError, match="agent_budget must be a whole number ≥ 1, got 0"):
        ttscale.allocate(space="genrm", engine=SimulatedArithmeticPolicy(), out=tmp_path / "x", agent_budget=0)
    assert not (tmp_path / "x").exists()
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", "allocate", "--space", "genrm", "--candidates", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "candidates must be a whole number ≥ 1, got 0" in done.stderr


def test_every_agent_call_is_charged_to_the_search_budget_and_never_passes_it(tmp_path: Path) -> None:
    settings = {"solutions": (1, 2, 4, 8), "verifications": (1, 2), "max_tokens": 32, "verify_tokens": 16}
    result = ttscale.allocate(space="genrm", proposers=("agent",), seeds=(0, 1), trials=6, limit=3,
                              engine=SimulatedArithmeticPolicy(seed=0), out=tmp_path / "a", settings=settings,
                              total_budget=400, agent_tokens=40, agent_budget=100)
    assert 0 < result.agent_tokens <= 2 * 100  # two searches, each within its own 100 tokens
    assert result.agent_tokens_by == {"agent": result.agent_tokens, "agent_single": 0}
    trials = [json.loads(line) for line in (tmp_path / "a" / "searches" / "agent-s0" / "trials.jsonl").read_text()
              .splitlines()]
    # The simulator writes arithmetic, not JSON: the iterations fall back; once the budget is spent, no call is made.
    assert len(trials) == 6 and all(t["fallback"] for t in trials[2:])
    assert "the agent's budget is spent" in trials[-1]["reasoning"]


class SeedRecording(SimulatedArithmeticPolicy):
    """The SIMULATED policy, keeping the prompt and seed of every agent call (those of the agent's token cap)."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.agent_calls: list[tuple[tuple[int, ...], int | None]] = []

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        if params.max_tokens == AGENT_TOKENS:
            self.agent_calls.append((tuple(prompt), seed))
        return await super().generate(prompt, params, seed=seed)


def test_each_search_seed_samples_the_agent_anew(tmp_path: Path) -> None:
    # Both searches ask the same first insight prompt (the same rule-based start on the same cells); the sample is
    # seeded by the search's seed and the prompt, so the seeds are two searches, not one run counted twice.
    engine = SeedRecording()
    settings = {"solutions": (1, 2, 4, 8), "verifications": (1, 2), "max_tokens": 32, "verify_tokens": 16}
    ttscale.allocate(space="genrm", proposers=("agent",), seeds=(0, 1), trials=3, limit=2, engine=engine,
                     out=tmp_path / "a", settings=settings, total_budget=400)
    calls = len(engine.agent_calls) // 2  # each search: an insight, then 1 + retries calls for candidates
    (first, seed0), (again, seed1) = engine.agent_calls[0], engine.agent_calls[calls]
    assert calls == 4 and first == again and seed0 != seed1
