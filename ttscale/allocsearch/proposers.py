"""Proposers: what chooses the next allocation to evaluate, from the trials so far.

AgentTTS (2025) compares an LLM agent that proposes allocations from the feedback of earlier trials with grid,
random and Bayesian search, by how many trials each needs to find a compute-optimal allocation. Here the
baselines: `GridProposer` (the next unseen point in grid order: run to exhaustion, the ground truth) and
`RandomProposer` (uniform over the unseen feasible points); the Bayesian one is in
`ttscale.allocsearch.bayesian`, the agent in `ttscale.allocsearch.agent`.

Every proposer is a function of its seed and the history it is given: the randomness of proposal k is drawn
from a generator seeded by (seed, k), never from state kept between calls. So a proposer rebuilt on a stored
history (a resumed search) proposes exactly what the uninterrupted one would have.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ttscale.allocsearch.space import Space, Value
from ttscale.allocsearch.trials import Trial


class SpaceExhausted(LookupError):
    """Every feasible allocation of the space was already tried: there is nothing left to propose."""


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """What a proposer chose, and how it got there."""

    allocation: dict[str, Value]
    """A feasible allocation not in the history, with the space's declared values."""
    reasoning: str | None = None
    """The proposer's reason in words (an agent's), or None."""
    invalid: int = 0
    """Malformed, invalid or duplicate proposals made (and rejected) before this one."""
    fallback: bool = False
    """Whether this is the seeded random fallback after the proposer's own proposals were all rejected."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "allocation", dict(self.allocation))
        if isinstance(self.invalid, bool) or not isinstance(self.invalid, int) or self.invalid < 0:
            raise ValueError(f"invalid must be an int ≥ 0, got {self.invalid!r}")


@runtime_checkable
class Proposer(Protocol):
    """Chooses the next allocation from the space and the trials so far."""

    @property
    def name(self) -> str:
        """Stored with each trial and in a trial log, whose resume refuses another proposer."""
        ...

    @property
    def seed(self) -> int | None:
        """The seed every proposal's randomness derives from; None for a proposer with none (grid)."""
        ...

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        """A feasible allocation not in `history`; `SpaceExhausted` when none is left."""
        ...


def derived_seed(seed: int | None, salt: str, step: int) -> int:
    """A 32-bit seed for proposal `step` of a proposer (`salt` names it): the same on every machine and Python
    (sha256, not `hash`, which is salted per process)."""
    digest = hashlib.sha256(f"ttscale.allocsearch:{salt}:{seed}:{step}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def seen_keys(space: Space, history: Sequence[Trial]) -> dict[tuple[Value, ...], Trial]:
    """The tried points of `history` by `space.key`, each with its first trial."""
    out: dict[tuple[Value, ...], Trial] = {}
    for trial in history:
        out.setdefault(space.key(trial.allocation), trial)
    return out


def unseen(space: Space, history: Sequence[Trial]) -> list[dict[str, Value]]:
    """The feasible points not in `history`, in grid order."""
    seen = seen_keys(space, history)
    return [p for p in space.points() if tuple(p.values()) not in seen]


def random_unseen(space: Space, history: Sequence[Trial], *, seed: int | None, salt: str) -> dict[str, Value]:
    """A point drawn uniformly among the unseen ones, by a generator seeded by (seed, salt, len(history))."""
    left = unseen(space, history)
    if not left:
        raise SpaceExhausted(f"every one of the {len(space.points())} feasible allocations was tried")
    return random.Random(derived_seed(seed, salt, len(history))).choice(left)


def check_seed(seed: object) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")


@dataclass(frozen=True, kw_only=True)
class GridProposer:
    """The next unseen point in grid order: run to exhaustion it evaluates every point, the ground truth."""

    name: str = "grid"
    """Its name in trials and logs."""
    seed: int | None = field(default=None, init=False)
    """None: a grid has no randomness (a comparison runs it once, not once per seed)."""

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        left = unseen(space, history)
        if not left:
            raise SpaceExhausted(f"every one of the {len(space.points())} feasible allocations was tried")
        return Proposal(allocation=left[0])


@dataclass(frozen=True, kw_only=True)
class RandomProposer:
    """Uniform over the unseen feasible points (random search without replacement)."""

    seed: int
    """Proposal k is drawn by a generator seeded by (seed, k): the same seed gives the same sequence."""
    name: str = "random"
    """Its name in trials and logs."""

    def __post_init__(self) -> None:
        check_seed(self.seed)

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        return Proposal(allocation=random_unseen(space, history, seed=self.seed, salt="random"))


__all__ = [
    "GridProposer",
    "Proposal",
    "Proposer",
    "RandomProposer",
    "SpaceExhausted",
    "derived_seed",
    "random_unseen",
    "seen_keys",
    "unseen",
]
