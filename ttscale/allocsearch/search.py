"""Running an allocation search, and comparing proposers by the trials they need.

AgentTTS (2025) measures a search by the trials it takes to reach a compute-optimal allocation: its agent gets
there in fewer trials than grid, random or Bayesian search. `search_allocation` runs one proposer for a number
of trials (resumable from a `TrialLog`; it stops early once every feasible point was tried);
`compare_proposers` runs each proposer over seeds against the grid's ground truth (every feasible point
evaluated) and tabulates the trials each needed to reach the grid's optimum.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ttscale.allocsearch.proposers import GridProposer, Proposer, seen_keys
from ttscale.allocsearch.space import Allocation, Space, Value
from ttscale.allocsearch.trials import Evaluation, Evaluator, Trial, TrialLog, best_of
from ttscale.kit.params import check_positive


@dataclass(frozen=True, kw_only=True)
class SearchResult:
    """The trials of one search, in order."""

    space: str
    """The space's name."""
    proposer: str
    """The proposer's name."""
    trials: tuple[Trial, ...]
    """Every trial, the resumed ones first."""
    exhausted: bool
    """Whether every feasible point was tried (the search stopped there if it had trials left)."""

    def best(self) -> Trial:
        """Highest accuracy; ties go to the lower cost, then to the earlier trial."""
        return best_of(self.trials)

    def best_curve(self) -> tuple[float, ...]:
        """The best accuracy found after k trials, for k = 1, 2, … (non-decreasing)."""
        out: list[float] = []
        for trial in self.trials:
            out.append(max(out[-1], trial.accuracy) if out else trial.accuracy)
        return tuple(out)

    def trials_to(self, optimum_accuracy: float, *, tol: float = 0.0) -> int | None:
        """The first k whose best accuracy is at least `optimum_accuracy − tol`; None if the search never got
        there."""
        return next((k for k, best in enumerate(self.best_curve(), start=1) if best >= optimum_accuracy - tol),
                    None)

    @property
    def invalid(self) -> int:
        """Proposals rejected over the whole search."""
        return sum(t.invalid_proposals for t in self.trials)

    @property
    def fallbacks(self) -> int:
        """Trials whose allocation was the proposer's random fallback."""
        return sum(t.fallback for t in self.trials)


async def search_allocation(*, space: Space, evaluate: Evaluator, proposer: Proposer, trials: int,
                            log: TrialLog | None = None) -> SearchResult:
    """Run `proposer` on `space` for up to `trials` trials, evaluating each proposal with `evaluate`.

    With `log`, the trials it holds are the search's first ones and are not evaluated again; each new trial
    is appended before the next is proposed. A log holding `trials` or more runs nothing more. The search
    stops early when every feasible point was tried. A proposal that is infeasible or already tried is a
    proposer's bug and raises ValueError.
    """
    check_positive("trials", trials)
    history: list[Trial] = []
    if log is not None:
        stored = log.open(space=space, proposer=proposer.name, seed=proposer.seed, trials=trials)
        for trial in stored:
            problem = space.check(trial.allocation)
            if problem is not None:
                raise ValueError(f"trial {trial.index} of {log.lines_path} is not in space {space.name!r}: {problem}")
        history = list(stored)
    total = len(space.points())
    seen = seen_keys(space, history)
    while len(history) < trials and len(seen) < total:
        started = time.perf_counter()
        proposal = await proposer.propose(space, tuple(history))
        problem = space.check(proposal.allocation)
        if problem is None and space.key(proposal.allocation) in seen:
            problem = f"{space.render(proposal.allocation)} was already tried"
        if problem is not None:
            raise ValueError(f"proposer {proposer.name!r} proposed an invalid allocation: {problem}")
        allocation = space.canonical(proposal.allocation)
        evaluation = await evaluate(dict(allocation))
        if not isinstance(evaluation, Evaluation):
            raise ValueError(f"evaluate must return an Evaluation, got {type(evaluation).__name__}")
        trial = Trial.of(index=len(history), allocation=allocation, evaluation=evaluation, proposer=proposer.name,
                         reasoning=proposal.reasoning, wall_seconds=time.perf_counter() - started,
                         invalid_proposals=proposal.invalid, fallback=proposal.fallback)
        if log is not None:
            log.append(trial)
        history.append(trial)
        seen[space.key(allocation)] = trial
    return SearchResult(space=space.name, proposer=proposer.name, trials=tuple(history), exhausted=len(seen) >= total)


@dataclass(frozen=True, kw_only=True)
class ProposerRow:
    """How one proposer did over its seeds."""

    label: str
    """The key it was given under in `compare_proposers`."""
    seeds: tuple[int | None, ...]
    """The seeds it ran with (one None for a proposer without randomness: grid)."""
    reached: tuple[int | None, ...]
    """Per run: trials to the grid's optimum, None when not within the cap."""
    best_at: dict[int, float]
    """Mean over runs of the best accuracy after k trials (a run that stopped early keeps its last best)."""
    invalid: int
    """Rejected proposals over all runs."""
    fallbacks: int
    """Fallback trials over all runs."""
    curve: tuple[float, ...] = ()
    """Mean over runs of the best accuracy after k trials, for k = 1 … the cap (what a report draws)."""

    @property
    def fraction_reached(self) -> float:
        return sum(r is not None for r in self.reached) / len(self.reached)

    def trials_to_optimum(self) -> tuple[float | None, int | None, int | None]:
        """(median, min, max) trials to the optimum over runs; a run that missed counts as beyond the cap, and a
        statistic beyond the cap is None."""
        counts = [math.inf if r is None else r for r in self.reached]
        median, low, high = statistics.median(counts), min(counts), max(counts)
        return (None if math.isinf(median) else float(median), None if math.isinf(low) else int(low),
                None if math.isinf(high) else int(high))

    def to_dict(self) -> dict[str, Any]:
        median, low, high = self.trials_to_optimum()
        return {"label": self.label, "seeds": list(self.seeds), "runs": len(self.reached),
                "reached": list(self.reached), "fraction_reached": self.fraction_reached,
                "trials_to_optimum": {"median": median, "min": low, "max": high},
                "best_at": {str(k): v for k, v in self.best_at.items()}, "invalid": self.invalid,
                "fallbacks": self.fallbacks, "curve": list(self.curve)}


@dataclass(frozen=True, kw_only=True)
class ProposerTable:
    """Proposers compared on one space by the trials they need to reach the grid's optimum."""

    space: str
    """The space's name."""
    points: int
    """Its feasible points (what the grid's ground truth evaluated)."""
    cap: int
    """Trials each run was allowed."""
    optimum: Trial
    """The grid's best trial over every feasible point (its index is the grid index)."""
    rows: tuple[ProposerRow, ...]
    """One per proposer, in the order given."""

    @property
    def ks(self) -> tuple[int, ...]:
        return tuple(sorted({k for k in (1, 2, 5, 10, self.cap) if k <= self.cap}))

    def to_dict(self) -> dict[str, Any]:
        return {"space": self.space, "points": self.points, "cap": self.cap, "optimum": self.optimum.to_dict(),
                "rows": [r.to_dict() for r in self.rows]}

    def to_text(self) -> str:
        """A plain table: one line per proposer."""
        best = self.optimum
        alloc = ", ".join(f"{k}={v}" for k, v in best.allocation.items())
        lines = [f"space {self.space}: {self.points} feasible points; grid optimum {alloc} (grid index "
                 f"{best.index}), accuracy {best.accuracy:.3f}; cap {self.cap} trials"]
        head = ["proposer", "runs", "trials to optimum: median [min, max]", "reached",
                *(f"best@{k}" for k in self.ks), "invalid", "fallbacks"]

        def show(count: float | None) -> str:
            return f"> {self.cap}" if count is None else f"{count:g}"

        body = []
        for row in self.rows:
            median, low, high = row.trials_to_optimum()
            body.append([row.label, str(len(row.reached)), f"{show(median)} [{show(low)}, {show(high)}]",
                         f"{sum(r is not None for r in row.reached)}/{len(row.reached)}",
                         *(f"{row.best_at[k]:.3f}" for k in self.ks), str(row.invalid), str(row.fallbacks)])
        widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
        for line in [head, *body]:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
        return "\n".join(lines)


async def compare_proposers(*, space: Space, evaluate: Evaluator, proposers: Mapping[str, Callable[[int], Proposer]],
                            seeds: Sequence[int], trials: int, log_dir: Path | None = None) -> ProposerTable:
    """Run each proposer once per seed (a proposer whose `seed` is None, grid, once) for up to `trials` trials,
    against the grid's ground truth.

    Every allocation is evaluated once and its evaluation reused for every proposer and seed: proposers are
    compared on the same numbers (a noisy evaluator would otherwise give each run its own optimum), and the
    comparison costs at most one evaluation per feasible point, all of which the ground truth needs anyway.
    `log_dir`: every search's trials are logged under it (`truth`, `<label>-s<seed>`), so a comparison that was
    stopped resumes where it was.
    """
    check_positive("trials", trials)
    if not seeds:
        raise ValueError("compare_proposers needs at least one seed")
    cache: dict[tuple[Value, ...], Evaluation] = {}

    async def once(allocation: Allocation) -> Evaluation:
        key = space.key(allocation)
        if key not in cache:
            cache[key] = await evaluate(allocation)
        return cache[key]

    def log(name: str) -> TrialLog | None:
        return TrialLog(log_dir / name) if log_dir is not None else None

    truth = await search_allocation(space=space, evaluate=once, proposer=GridProposer(), trials=len(space.points()),
                                    log=log("truth"))
    optimum = truth.best()
    rows = []
    for label, make in proposers.items():
        runs: list[tuple[int | None, SearchResult]] = []
        for seed in seeds:
            proposer = make(seed)
            name = label if proposer.seed is None else f"{label}-s{proposer.seed}"
            runs.append((proposer.seed, await search_allocation(space=space, evaluate=once, proposer=proposer,
                                                                trials=trials, log=log(name))))
            if proposer.seed is None:
                break  # no randomness: another seed would run the same search
        ks = {k for k in (1, 2, 5, 10, trials) if k <= trials}
        curves = [result.best_curve() for _, result in runs]
        rows.append(ProposerRow(
            label=label, seeds=tuple(seed for seed, _ in runs),
            reached=tuple(result.trials_to(optimum.accuracy) for _, result in runs),
            best_at={k: statistics.fmean(c[min(k, len(c)) - 1] for c in curves) for k in sorted(ks)},
            curve=tuple(statistics.fmean(c[min(k, len(c)) - 1] for c in curves) for k in range(1, trials + 1)),
            invalid=sum(result.invalid for _, result in runs), fallbacks=sum(result.fallbacks for _, result in runs)))
    return ProposerTable(space=space.name, points=len(space.points()), cap=trials, optimum=optimum, rows=tuple(rows))


__all__ = ["ProposerRow", "ProposerTable", "SearchResult", "compare_proposers", "search_allocation"]
