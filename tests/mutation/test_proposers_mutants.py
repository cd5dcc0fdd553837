"""ttscale.allocsearch proposers.py and bayesian.py: behaviour the mutation run (tools/mutation) found unchecked: a
seed's sequence fixed across machines (stored logs resume on it), the first trial of each tried point, the words
of an exhausted space, a proposal's own copy of its allocation and its checks."""

from __future__ import annotations

import asyncio

import pytest

from ttscale.allocsearch import Evaluation, GridProposer, Proposal, RandomProposer, SpaceExhausted, Trial
from ttscale.allocsearch import search_allocation as search
from ttscale.allocsearch.proposers import derived_seed, random_unseen, seen_keys
from ttscale.testing.allocation import SimulatedGenRM, genrm_space


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
        with pytest.raises(ValueError, match=f"^invalid must be an int ≥ 0, got {bad!r}$"):
            Proposal(allocation={"S": 1}, invalid=bad)  # type: ignore[arg-type]
