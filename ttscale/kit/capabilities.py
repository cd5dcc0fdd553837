"""What a strategy declares it can do beyond running, read by the orchestration layer (sweeps, held-out cells,
adaptive routing) instead of its name:

    @strategy(SelfConsistencyParams, replay=pool_replay(vote), difficulty_pool=True)
    async def self_consistency(problem, ctx, p): ...

- `replay`: a sweep derives this strategy's cells at smaller budgets (and other values of `Replay.varied`) from
  the stored records of one source cell instead of running them (ttscale.sweeps.replay). `derive` gets one
  problem's stored record (`Stored`) and a fresh ledger at the smaller budget, and returns what a run at that
  budget would have answered (`Derived`), or why it cannot tell (a string; the cell then runs live).
- `difficulty_pool`: its record is a pool of the problem's own samples, nothing shared between problems, so a
  held-out difficulty estimate may read it (ttscale.sweeps.holdout).
- `adaptive_candidate`: adaptive routing may choose it for a difficulty bin (False for the router itself).
- `check_problems`: what it needs of every problem of a task, checked by `prepare` before anything starts.

The replay of a pool of independent samples (`pool_replay`) and its request arithmetic (`replay_pool`,
`spend`) live here, below the strategies, so that a strategy file declares its replay with one line.
Under the i.i.d. assumption of a sweep (the samples of one prompt do not depend on n or on other requests),
the first k samples of a stored pool are distributed as a run's k.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttscale.budget import Budget, Ledger
from ttscale.schema import Completion, Generation, Problem, Sample, SamplingParams

EntryParams = Mapping[str, Sequence[str]]
"""A sweep grid entry's parameters: each name with the values the grid gives it (strings, as on the CLI)."""


@dataclass(frozen=True)
class Stored:
    """One problem's record in the source cell, and the smaller run's settings it is read for."""

    params: Any
    """The derived cell's parameters (its strategy's Params)."""
    ledger: Ledger
    """A fresh ledger at the derived cell's budget: the replay reserves and settles on it what the run would send."""
    budget: Budget
    """The derived cell's per-problem budget."""
    record: Mapping[str, Any]
    """The source's whole record (samples, info, ledger) as results.jsonl stores it."""
    samples: list[Sample]
    """The source record's samples, in the order drawn."""
    prompt_tokens: int
    """Prompt tokens of one policy request of the source."""
    max_model_len: int
    """The context limit the source's engine ran with: its samples obey it."""


@dataclass(frozen=True)
class Derived:
    """What a run at the smaller budget would have answered."""

    prediction: str | None
    samples: list[Sample]
    info: dict[str, Any]
    ledger: dict[str, Any] | None = None
    """The record's ledger when the replay did not spend on `Stored.ledger` (a source read as it is); None: that one."""


@dataclass(frozen=True)
class Replay:
    """How a sweep reads this strategy's cells from a larger source cell (see the module doc)."""

    derive: Callable[[Stored], Derived | str]
    """One problem's answer at the smaller budget, or why it cannot be read from the source."""
    varied: tuple[str, ...] = ()
    """Parameters a derived cell may take other values of than its source (the replay subsamples or cuts them);
    every other parameter must be the source's."""
    applies: Callable[[EntryParams, int], bool] = field(default=lambda entry, budgets: budgets > 1)
    """Whether a grid entry (its parameter values) swept over this many token budgets derives anything."""
    source: Callable[[EntryParams, dict[str, str]], dict[str, str]] = field(default=lambda entry, params: params)
    """The grid point a cell with `params` is derived from (default: the same point, at the largest budget)."""
    partial: bool = False
    """Problems that cannot be derived run on their own into the cell (else one refusal runs the whole cell)."""


@dataclass(frozen=True)
class Capabilities:
    """What a strategy declared with `@strategy(Params, ...)` (see the module doc)."""

    replay: Replay | None = None
    """How a sweep derives its cells from a larger one; None: every cell runs."""
    difficulty_pool: bool = False
    """Its record is a pool of the problem's own samples, which a held-out difficulty estimate may read."""
    adaptive_candidate: bool = True
    """Adaptive routing may choose it for a difficulty bin."""
    check_problems: Callable[[list[Problem]], None] | None = None
    """What the strategy needs of every problem, checked before anything starts (sleep-time: a context); raises
    ValueError in one line."""


def capabilities(fn: Any) -> Capabilities:
    """The capabilities a strategy declared with `@strategy(Params, ...)` (none for a bare function)."""
    found = getattr(fn, "capabilities", None)
    return found if isinstance(found, Capabilities) else Capabilities()


def largest(*names: str) -> Callable[[EntryParams, dict[str, str]], dict[str, str]]:
    """A `Replay.source`: each named parameter at the largest value the entry sweeps (when all are whole numbers)."""
    def source(entry: EntryParams, params: dict[str, str]) -> dict[str, str]:
        top = dict(params)
        for name in names:
            values = entry.get(name, ())
            if len(values) > 1 and all(v.isdigit() for v in values):
                top[name] = max(values, key=int)
        return top

    return source


def first(*names: str) -> Callable[[EntryParams, dict[str, str]], dict[str, str]]:
    """A `Replay.source`: each named parameter at the first value the entry gives (one pool serves every value)."""
    def source(entry: EntryParams, params: dict[str, str]) -> dict[str, str]:
        return {**params, **{name: entry[name][0] for name in names if entry.get(name)}}

    return source


def varies(entry: EntryParams, *names: str) -> bool:
    """Whether the entry sweeps more than one value of any of `names`."""
    return any(len(entry.get(name, ())) > 1 for name in names)


# -- pools of independent samples ----------------------------------------------------------------

Select = Callable[[list[Sample], Any], tuple[str | None, dict[str, Any]]]
"""(samples kept, params) → (prediction, info): a pool strategy's selection, as its run makes it."""


def pool_replay(select: Select, **options: Any) -> Replay:
    """The replay of a strategy whose record is a pool of independent samples selected by `select`."""
    return Replay(derive=lambda stored: derive_pool(stored, select), **options)


def derive_pool(stored: Stored, select: Select) -> Derived | str:
    """The first samples of the pool a run at the smaller budget draws (`replay_pool`), selected as it selects."""
    if ((stored.record.get("ledger") or {}).get("verifier") or {}).get("calls"):
        return "its scorer spent compute"
    taken = replay_pool(stored.ledger, stored.params, [s.num_tokens for s in stored.samples],
                        prompt_tokens=stored.prompt_tokens, max_model_len=stored.max_model_len)
    if isinstance(taken, str):
        return taken
    kept = stored.samples[:taken]
    if getattr(stored.params, "verifier", None) is not None:  # as `sampling.score_outcomes` counts them in a run
        stored.ledger.tally("reward_evaluations", len(kept))
    prediction, info = select(kept, stored.params)
    return Derived(prediction=prediction, samples=kept, info=info)


def replay_pool(ledger: Ledger, p: Any, lengths: list[int], *, prompt_tokens: int, max_model_len: int) -> int | str:
    """How many pool samples `sampling.sample_pool` takes under `ledger`, settling their true lengths; or why it
    cannot tell (the ledger would cut a request below the pool's max_tokens, or the pool is too small)."""
    taken = 0
    while True:
        n = p.n if p.n is not None else ledger.affordable_samples(p.max_tokens)
        if n < 1:
            return taken
        # What Context.generate sends: max_tokens lowered to the model's room after the prompt, then to the budget.
        asked = SamplingParams(n=n, temperature=p.temperature, top_p=p.top_p,
                               max_tokens=min(p.max_tokens, max_model_len - prompt_tokens))
        reservation = ledger.reserve(asked, prompt_tokens=prompt_tokens)
        if reservation is None:
            return taken
        sent = reservation.params
        assert sent is not None
        if (sent.n, sent.max_tokens) != (asked.n, asked.max_tokens):
            ledger.settle(reservation, None)
            return "the ledger would truncate its samples below the pool's max_tokens"
        if taken + n > len(lengths):
            ledger.settle(reservation, None)
            return f"it needs {taken + n} samples and the pool has {len(lengths)}"
        batch = tuple(Completion(text="", token_ids=(0,) * k) for k in lengths[taken: taken + n])
        ledger.settle(reservation, Generation(completions=batch, prompt_tokens=prompt_tokens))
        taken += n
        if not p.refill:
            return taken


def spend(ledger: Ledger, asked: SamplingParams, lengths: Sequence[int], *, prompt: int, role: Any) -> bool:
    """Reserve `asked` and settle `lengths`; False (nothing spent) when the ledger would cap or refuse it."""
    reservation = ledger.reserve(asked, prompt_tokens=prompt, role=role)
    if reservation is None:
        return False
    if reservation.params != asked or len(lengths) != asked.n:
        ledger.settle(reservation, None)
        return False
    batch = tuple(Completion(text="", token_ids=(0,) * k) for k in lengths)
    ledger.settle(reservation, Generation(completions=batch, prompt_tokens=prompt))
    return True


__all__ = ["Capabilities", "Derived", "Replay", "Stored", "capabilities", "derive_pool", "first", "largest",
           "pool_replay", "replay_pool", "spend", "varies"]
