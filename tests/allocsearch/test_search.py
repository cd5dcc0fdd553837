"""Searches: resume from a log as if never stopped, best and curves, and proposers compared on a known optimum."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ttscale.allocsearch import (
    AgentProposer,
    BayesianProposer,
    Evaluation,
    GridProposer,
    Proposal,
    Proposer,
    RandomProposer,
    SearchResult,
    Space,
    Trial,
    TrialLog,
    compare_proposers,
    search_allocation,
)
from ttscale.testing.allocsearch import ScriptedGenerator, SimulatedGenRM, genrm_accuracy


def search(proposer: Proposer, trials: int, log: TrialLog | None = None,
           task: SimulatedGenRM | None = None) -> SearchResult:
    task = task or SimulatedGenRM()
    return asyncio.run(search_allocation(space=task.space, evaluate=task.evaluate, proposer=proposer, trials=trials,
                                         log=log))


def essence(trials: Sequence[Trial]) -> list[tuple[object, ...]]:
    return [(t.index, tuple(t.allocation.items()), t.accuracy, t.reasoning, t.invalid_proposals, t.fallback)
            for t in trials]


def climbing_agent(seed: int) -> AgentProposer:
    """A deterministic 'model' whose reply depends on the prompt: the first untried point in its table order."""
    def reply(prompt: str) -> str:
        tried = set(re.findall(r"^\d+ \| (\d+) \| (\d+) \|", prompt, flags=re.M))
        for s in (32, 16, 8, 4, 2, 1):
            for v in (16, 8, 4, 2, 1, 0):
                if (str(s), str(v)) not in tried and s * (1 + v) <= 64:
                    return json.dumps({"reasoning": f"untried {s},{v}", "allocation": {"S": s, "V": v}})
        return "done"
    return AgentProposer(generate=ScriptedGenerator(reply), seed=seed)


@pytest.mark.parametrize("make", [lambda: GridProposer(), lambda: RandomProposer(seed=4),
                                  lambda: BayesianProposer(seed=4, startup_trials=2), lambda: climbing_agent(4)],
                         ids=["grid", "random", "bayesian", "agent"])
def test_resumed_search_gives_the_trials_of_an_uninterrupted_one(tmp_path: Path, make: Callable[[], Proposer]) -> None:
    whole = search(make(), 6)
    first = search(make(), 3, TrialLog(tmp_path))
    assert essence(first.trials) == essence(whole.trials[:3])
    with open(tmp_path / "trials.jsonl", "a") as handle:
        handle.write('{"index": 3, "allocation": {"S"')  # killed while writing the fourth trial
    task = SimulatedGenRM()
    resumed = search(make(), 6, TrialLog(tmp_path), task)
    assert essence(resumed.trials) == essence(whole.trials)
    assert len(task.calls) == 3  # the three logged trials are not evaluated again
    assert essence(TrialLog(tmp_path).read()) == essence(whole.trials)


def test_resuming_with_another_proposer_or_seed_is_refused(tmp_path: Path) -> None:
    search(RandomProposer(seed=1), 2, TrialLog(tmp_path))
    with pytest.raises(ValueError, match="the log differs in seed: stored 1 vs now 2"):
        search(RandomProposer(seed=2), 4, TrialLog(tmp_path))
    with pytest.raises(ValueError, match='the log differs in proposer: stored "random" vs now "grid"'):
        search(GridProposer(), 4, TrialLog(tmp_path))


def test_best_breaks_ties_by_cost_then_order() -> None:
    def trial(index: int, accuracy: float, cost: float) -> Trial:
        return Trial.of(index=index, allocation={"S": 1, "V": 0}, proposer="x",
                        evaluation=Evaluation(accuracy=accuracy, ci_low=0, ci_high=1, cost=cost, n=1))
    trials = (trial(0, 0.5, 9), trial(1, 0.7, 9), trial(2, 0.7, 3), trial(3, 0.7, 3), trial(4, 0.6, 1))
    result = SearchResult(space="s", proposer="x", exhausted=False, trials=trials)
    assert result.best().index == 2
    assert result.best_curve() == (0.5, 0.7, 0.7, 0.7, 0.7)
    assert result.trials_to(0.7) == 2 and result.trials_to(0.8) is None and result.trials_to(0.8, tol=0.15) == 2


class Repeater:
    name, seed = "repeater", 0

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        return Proposal(allocation={"S": 1, "V": 0})


def test_a_proposer_that_repeats_itself_is_a_bug_said_in_one_line() -> None:
    message = "proposer 'repeater' proposed an invalid allocation: S=1, V=0 was already tried"
    with pytest.raises(ValueError, match=message):
        search(Repeater(), 3)


def test_compare_proposers_against_the_grid_optimum() -> None:
    task = SimulatedGenRM()
    table = asyncio.run(compare_proposers(
        space=task.space, evaluate=task.evaluate, seeds=(0, 1, 2), trials=22,
        proposers={"grid": lambda s: GridProposer(), "random": lambda s: RandomProposer(seed=s),
                   "bayesian": lambda s: BayesianProposer(seed=s), "agent": climbing_agent}))
    assert len(task.calls) == 26  # every point evaluated once, shared by every run
    assert table.optimum.allocation == task.optimum() and table.optimum.index == 20
    grid, random, bayesian, agent = table.rows
    assert grid.seeds == (None,) and grid.reached == (21,) and grid.trials_to_optimum() == (21.0, 21, 21)
    assert random.seeds == bayesian.seeds == (0, 1, 2)
    # Each seed's row entries are what that seed's search finds on its own: the trials it needs to the optimum,
    # and the best accuracy after k trials averaged over the three seeds.
    for row, make in ((random, lambda s: RandomProposer(seed=s)), (bayesian, lambda s: BayesianProposer(seed=s))):
        alone = [search(make(s), 22) for s in (0, 1, 2)]
        assert row.reached == tuple(r.trials_to(table.optimum.accuracy) for r in alone)
        for k in (1, 2, 5, 10, 22):
            assert row.best_at[k] == pytest.approx(sum(r.best_curve()[k - 1] for r in alone) / 3)
    assert grid.best_at[22] == pytest.approx(genrm_accuracy(task.optimum()))
    assert set(grid.best_at) == {1, 2, 5, 10, 22}
    assert agent.reached == (6, 6, 6) and agent.fallbacks == 0  # (32, 1), (32, 0), (16, 2), (16, 1), (16, 0), (8, 4)
    text = table.to_text()
    assert "grid optimum S=8, V=4 (grid index 20)" in text
    lines = text.splitlines()
    assert lines[1].split()[:2] == ["proposer", "runs"] and lines[2].startswith("grid ")
    assert "21 [21, 21]" in lines[2] and "1/1" in lines[2]
    data = json.loads(json.dumps(table.to_dict()))
    assert data["rows"][0]["trials_to_optimum"] == {"median": 21.0, "min": 21, "max": 21}


def test_a_run_that_misses_the_optimum_reads_beyond_the_cap() -> None:
    task = SimulatedGenRM()
    table = asyncio.run(compare_proposers(space=task.space, evaluate=task.evaluate, seeds=(0,), trials=5,
                                          proposers={"grid": lambda s: GridProposer()}))
    (grid,) = table.rows
    assert grid.reached == (None,) and grid.fraction_reached == 0 and grid.trials_to_optimum() == (None, None, None)
    assert "> 5 [> 5, > 5]" in table.to_text() and "0/1" in table.to_text()
