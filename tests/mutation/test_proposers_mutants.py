"""ttscale.allocsearch proposers.py and bayesian.py: behaviour the mutation run (tools/mutation) found unchecked: a
seed's sequence fixed across machines (stored logs resume on it), the first trial of each tried point, the words
of an exhausted space, a proposal's own copy of its allocation and its checks."""

from __future__ import annotations

import asyncio

import pytest

from ttscale.allocsearch import Evaluation, GridProposer, Proposal, RandomProposer, SpaceExhausted, Trial
from ttscale.allocsearch import search_allocation as search
from ttscale.allocsearch.proposers import derived_seed, random_unseen, seen_keys
from ttscale.testing.allocsearch import SimulatedGenRM, genrm_space


def test_a_seeds_sequence_is_the_same_on_every_machine() -> None:
    # sha256 of "ttscale.allocsearch:random:0:0", its first four bytes big-endian: no per-process hash salt.
    assert derived_seed(0, "random", 0) == 706409303 and derived_seed(None, "x", 3) == 2132198018
    task = SimulatedGenRM()
    result = asyncio.run(search(space=task.space, evaluate=task.evaluate, proposer=RandomProposer(seed=0), trials=5))
    assert [(t.allocation["S"], t.allocation["V"]) for t in result.trials] == [(32, 1), (2, 1), (2, 0), (2, 16),
                                                                               (4, 4)]
    # Another salt or step draws from another stream (the fallbacks of different proposers do not coincide).
    space = genrm_space()
    draws = {tuple(random_unseen(space, (), seed=0, salt=salt).values()) for salt in ("a", "b", "c", "d", "e")}
    assert len(draws) > 1


def _trial(index: int, s: int, v: int) -> Trial:
    return Trial.of(index=index, allocation={"S": s, "V": v}, proposer="x",
                    evaluation=Evaluation(accuracy=0.5, ci_low=0, ci_high=1, cost=1, n=1))


def test_seen_keys_keeps_the_first_trial_of_each_point() -> None:
    space = genrm_space()
    first, again, other = _trial(0, 1, 0), _trial(1, 1, 0), _trial(2, 2, 1)
    assert seen_keys(space, [first, again, other]) == {(1, 0): first, (2, 1): other}


def test_an_exhausted_space_says_how_many_points_were_tried() -> None:
    task = SimulatedGenRM()
    done = asyncio.run(search(space=task.space, evaluate=task.evaluate, proposer=GridProposer(), trials=26)).trials
    message = "^every one of the 26 feasible allocations was tried$"
    with pytest.raises(SpaceExhausted, match=message):
        asyncio.run(GridProposer().propose(task.space, done))
    with pytest.raises(SpaceExhausted, match=message):
        asyncio.run(RandomProposer(seed=1).propose(task.space, done))


def test_a_proposal_keeps_its_own_copy_and_checks_its_count() -> None:
    chosen = {"S": 8, "V": 2}
    proposal = Proposal(allocation=chosen)
    chosen["S"] = 16
    assert proposal.allocation == {"S": 8, "V": 2}
    assert Proposal(allocation={"S": 1}, invalid=3).invalid == 3
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match=rf"^invalid must be an int ≥ 0, got {bad!r}$"):
            Proposal(allocation={"S": 1}, invalid=bad)  # type: ignore[arg-type]


# -- bayesian.py ----------------------------------------------------------------------------------------------------


def test_bayesian_search_on_a_seed_is_fixed_for_an_optuna_version() -> None:
    # The module's promise: a proposal is a function of the seed and the history, on one optuna version (TPE's
    # draws are optuna's to change between versions). Two seeded start-up trials, then multivariate TPE maximising
    # accuracy; the asks it rejected (over budget or tried) are counted on the trial.
    import optuna

    if optuna.__version__ != "5.0.0":
        pytest.skip(f"the sequence was recorded with optuna 5.0.0, not {optuna.__version__}")
    from ttscale.allocsearch import BayesianProposer

    task = SimulatedGenRM()
    result = asyncio.run(search(space=task.space, evaluate=task.evaluate,
                                proposer=BayesianProposer(seed=0, startup_trials=2), trials=8))
    assert [(t.allocation["S"], t.allocation["V"], t.invalid_proposals) for t in result.trials] == [
        (2, 8, 1), (1, 1, 0), (4, 8, 1), (8, 0, 2), (4, 2, 0), (4, 1, 3), (1, 8, 4), (16, 2, 4)]


def test_bayesian_fallback_is_the_seeded_random_unseen_point() -> None:
    from ttscale.allocsearch import BayesianProposer

    task = SimulatedGenRM()
    tried = asyncio.run(search(space=task.space, evaluate=task.evaluate, proposer=GridProposer(), trials=22)).trials
    points = set()
    for seed in range(6):
        proposal = asyncio.run(BayesianProposer(seed=seed, attempts=2).propose(task.space, tried))
        assert proposal.fallback and proposal.invalid == 2
        assert proposal.allocation == random_unseen(task.space, tried, seed=seed, salt="bayesian-fallback")
        points.add(tuple(proposal.allocation.values()))
    assert len(points) > 1  # the seed chooses it
    with pytest.raises(SpaceExhausted, match=r"^every one of the 26 feasible allocations was tried$"):
        asyncio.run(BayesianProposer(seed=0).propose(task.space,
                                                     asyncio.run(search(space=task.space, evaluate=task.evaluate,
                                                                        proposer=GridProposer(), trials=26)).trials))


def test_bayesian_settings_edges_and_a_missing_optuna(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from ttscale.allocsearch import BayesianProposer

    assert BayesianProposer(seed=0, startup_trials=0).startup_trials == 0  # TPE from the first trial
    with pytest.raises(ValueError, match=r"^startup_trials must be an int ≥ 0, got True$"):
        BayesianProposer(seed=0, startup_trials=True)
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed
    task = SimulatedGenRM()
    with pytest.raises(ImportError) as info:
        asyncio.run(BayesianProposer(seed=0).propose(task.space, ()))
    assert str(info.value) == "the Bayesian proposer needs optuna: pip install 'ttscale[allocate]'"
