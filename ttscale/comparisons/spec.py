"""The sweep that runs a comparison of strategies (`ttscale compare --strategy A --strategy B`): one grid entry per
arm, one budget, seeds 0..repeats−1; arms that would run the same are refused before anything runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ttscale.engine.base import EngineConfig
from ttscale.routing.policy import candidate_key
from ttscale.sweeps import GridEntry, SweepSpec


def compare_spec(
    *, strategies: Sequence[str], repeats: int, budget: str, task: str = "arithmetic",
    task_options: Mapping[str, Any] | None = None, limit: int | None = None,
    engine_config: EngineConfig | None = None, concurrency: int = 64,
) -> SweepSpec:
    """The sweep that runs a comparison: one grid entry per strategy, one budget, seeds 0..repeats−1."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number ≥ 1, got {repeats}")
    entries = []
    for text in strategies:
        if not text.split():
            raise ValueError("a strategy is empty: give 'NAME key=value ...'")
        entry = GridEntry.parse(text)
        grid = [f"{k}={'|'.join(v)}" for k, v in entry.params.items() if len(v) > 1]
        if grid:
            raise ValueError(f"compare takes one value per parameter, got {', '.join(grid)} in {text!r} "
                             "(a grid is a `ttscale sweep`)")
        entries.append(entry)
    if len(entries) < 2:
        raise ValueError(f"compare needs at least two strategies to run, got {len(entries)}")
    spec = SweepSpec(grid=tuple(entries), budgets=(budget,), seeds=tuple(range(repeats)), task=task,
                     task_options=dict(task_options or {}), limit=limit, engine=engine_config or EngineConfig(),
                     concurrency=concurrency)
    _refuse_arms_that_run_the_same(spec, strategies)
    return spec


def _refuse_arms_that_run_the_same(spec: SweepSpec, texts: Sequence[str]) -> None:
    """Two arms whose runs are the same once prepared (`sc n=2` beside `self_consistency n=2`; `sc n=8` beside `sc`,
    8 its default or the task's suggestion) would run each seed twice, and their difference would be the engine's."""
    from ttscale.running.runner import prepare

    first: dict[str, str] = {}
    for text, cell in zip(texts, [c for c in spec.cells() if c.seed == spec.seeds[0]], strict=True):
        prepared = prepare(spec.run_spec(cell), task_defaults=spec.task_defaults)
        key = candidate_key(prepared.strategy_name, asdict(prepared.params))
        if key in first:
            raise ValueError(f"strategies {first[key]!r} and {text!r} run the same ({key}): each arm must differ")
        first[key] = text


__all__ = ["compare_spec"]
