"""Grid, random and Bayesian proposers: ground truth, reproducibility per seed, never infeasible nor repeated."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from ttscale.allocsearch import (
    BayesianProposer,
    GridProposer,
    Proposer,
    RandomProposer,
    SearchResult,
    SpaceExhausted,
    search_allocation,
)
from ttscale.testing.allocsearch import SimulatedGenRM, genrm_accuracy


def run(proposer: Proposer, trials: int) -> tuple[SearchResult, SimulatedGenRM]:
    task = SimulatedGenRM()
    return asyncio.run(search_allocation(space=task.space, evaluate=task.evaluate, proposer=proposer,
                                         trials=trials)), task


def sequence(result: SearchResult) -> list[tuple[object, ...]]:
    return [tuple(t.allocation.values()) for t in result.trials]


def test_grid_tries_every_feasible_point_once_in_grid_order_and_finds_the_optimum() -> None:
    result, task = run(GridProposer(), trials=100)
    points = task.space.points()
    assert [t.allocation for t in result.trials] == list(points)  # every point once, then it stops
    assert result.exhausted and len(task.calls) == len(points) == 26
    assert result.best().allocation == task.optimum() == {"S": 8, "V": 4}
    assert result.best().index == task.space.index(task.optimum()) == 20
    assert result.trials_to(genrm_accuracy(task.optimum())) == 21
    assert result.best_curve() == tuple(sorted(result.best_curve()))


@pytest.mark.parametrize("make", [lambda s: RandomProposer(seed=s), lambda s: BayesianProposer(seed=s)],
                         ids=["random", "bayesian"])
def test_seeded_proposers_repeat_per_seed_and_differ_between_seeds(make: object) -> None:
    assert callable(make)
    first, _ = run(make(0), trials=8)
    again, _ = run(make(0), trials=8)
    other, _ = run(make(1), trials=8)
    assert sequence(first) == sequence(again)
    assert sequence(first) != sequence(other)


@pytest.mark.parametrize("proposer", [RandomProposer(seed=3), BayesianProposer(seed=3)], ids=["random", "bayesian"])
def test_seeded_proposers_never_propose_an_infeasible_point_or_a_repeat(proposer: Proposer) -> None:
    result, task = run(proposer, trials=26)  # to exhaustion: the last proposals have one point left to find
    keys = sequence(result)
    assert len(keys) == len(set(keys)) == 26
    assert all(task.space.feasible(t.allocation) for t in result.trials)
    with pytest.raises(SpaceExhausted):
        asyncio.run(proposer.propose(task.space, result.trials))


def test_bayesian_proposal_is_a_function_of_seed_and_history() -> None:
    result, task = run(RandomProposer(seed=5), trials=14)  # past TPE's 10 random start-up trials
    proposer = BayesianProposer(seed=2)
    proposals = [asyncio.run(proposer.propose(task.space, result.trials)) for _ in range(2)]
    assert proposals[0] == proposals[1]
    rebuilt = asyncio.run(BayesianProposer(seed=2).propose(task.space, list(result.trials)))
    assert rebuilt == proposals[0] and not rebuilt.fallback


def test_bayesian_falls_back_when_every_ask_is_rejected() -> None:
    result, task = run(GridProposer(), trials=25)  # one point left: TPE's one ask seldom names it
    proposals = [asyncio.run(BayesianProposer(seed=s, attempts=1).propose(task.space, result.trials))
                 for s in range(10)]
    assert all(p.allocation == task.space.points()[25] for p in proposals)
    fallbacks = [p for p in proposals if p.fallback]
    assert fallbacks and all(p.invalid == 1 and p.reasoning for p in fallbacks)
    assert all(p.invalid == 0 for p in proposals if not p.fallback)


def test_import_is_light_and_optuna_is_lazy(tmp_path: Path) -> None:
    code = "import sys, ttscale.allocsearch, ttscale.testing.allocsearch; print('optuna' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("make", "message"), [
    (lambda: RandomProposer(seed="0"), "seed must be an int, got '0'"),  # type: ignore[arg-type]
    (lambda: BayesianProposer(seed=0, attempts=0), "attempts must be ≥ 1, got 0"),
    (lambda: BayesianProposer(seed=0, startup_trials=-1), "startup_trials must be an int ≥ 0, got -1"),
])
def test_proposers_are_validated(make: object, message: str) -> None:
    assert callable(make)
    with pytest.raises(ValueError, match=message):
        make()
