"""Difficulty without leakage: a held-out pool for the probe and p̂₁, apart from every sample a candidate is scored on.

Snell et al., arXiv:2408.03314 (2024), §3.2 and §5 bin problems by pass@1 (oracle) or by a prediction of it
(a verifier's mean score); a policy chosen per bin is then scored on held-out problems. If the features
and p̂₁ come from the very samples the candidates are scored on (the first samples of a candidate pool),
a problem's bin already knows how its candidates fared, and the cross-validated accuracy is optimistic.

`ttscale sweep --holdout N` adds one cell that is no candidate: best_of_n with n = N at the sampling
settings of the grid's first sample-pool entry (the probe's), under the run seed HOLDOUT_SEED. Every request
is seeded by (run seed, problem, request, occurrence), so its samples are independent draws from every
candidate cell's, even where the request is the same. Of its N samples per problem the first `probe_n` are
the probe (features, probe-majority, probe tokens) and the other N − probe_n give p̂₁: the three sets of
samples are disjoint. A sweep without the cell can still be read the old way (`source="pools"`), marked leaky.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from ttscale.kit.capabilities import capabilities
from ttscale.kit.selection import majority_vote
from ttscale.routing.difficulty import ProbeSettings, offline_features
from ttscale.routing.policy import Difficulty, LearnOptions, learn_policy
from ttscale.running.runner import prepare
from ttscale.runstore.storage import CONFIG
from ttscale.schema import Sample
from ttscale.strategies import STRATEGIES
from ttscale.sweeps.grid import Cell, SweepSpec, cell_dir

Source = Literal["auto", "holdout", "pools"]
SOURCES: tuple[str, ...] = ("auto", "holdout", "pools")
#: The sampling settings a held-out pool copies from the probe source entry.
_SAMPLING = ("temperature", "top_p", "max_tokens")


def _difficulty_pool(strategy: str) -> bool:
    """Whether the strategy declared its records a pool of the problem's own samples (ttscale.kit.capabilities)."""
    return strategy in STRATEGIES and capabilities(STRATEGIES.get(strategy)).difficulty_pool


def holdout_cells(spec: SweepSpec) -> list[Cell]:
    """The held-out difficulty cell of a sweep ([] when `spec.holdout` is 0), run on the first seed's engine."""
    if not spec.holdout:
        return []
    entries = [e for e in spec.grid if _difficulty_pool(e.strategy)]
    if not entries:
        raise ValueError("holdout needs an entry whose strategy declares a difficulty pool (best_of_n, "
                         "self_consistency) in the grid: its sampling settings are the probe's")
    # The probe source as `difficulty` picks it among pools: best_of_n first, then one without a verifier.
    entry = min(entries, key=lambda e: (STRATEGIES.canonical(e.strategy) != "best_of_n", "verifier" in e.params))
    combo = entry.combos()[0]
    # The probe samples as the entry's cell at the largest budget does (task defaults included), so that
    # live probes, the pool's probes and the candidates share max_tokens; n is fixed, so the budget only has
    # to hold N samples of it.
    source = Cell(strategy=STRATEGIES.canonical(entry.strategy) or entry.strategy, params=combo,
                  budget=spec.budgets[-1], seed=spec.seeds[0])
    resolved = prepare(spec.run_spec(source), task_defaults=spec.task_defaults).params
    params = {"n": str(spec.holdout), **{k: str(getattr(resolved, k)) for k in _SAMPLING}}
    budget = str(spec.holdout * resolved.max_tokens)
    return [Cell(strategy="best_of_n", params=params, budget=budget, seed=spec.seeds[0], holdout=True)]


def difficulty(
    results: Any, *, probe_n: int = 4, probe_verifier: str | None = "arithmetic", source: Source = "auto",
) -> tuple[dict[str, Difficulty], ProbeSettings, dict[str, Any]]:
    """Each problem's p̂₁, probe features, probe-majority correctness and probe tokens, and where they came from.

    `results` is a `ttscale.sweeps.outcomes.SweepResults`. holdout: from the held-out pool (disjoint samples, see
    the module); pools: the first `probe_n` samples of a candidate pool and p̂₁ over every sample of the
    sample-pool cells at the largest budget (the samples the candidates are scored on: leaky); auto: holdout
    when the sweep has one, else pools.
    """
    if source not in SOURCES:
        raise ValueError(f"difficulty source must be one of {', '.join(SOURCES)}, got {source!r}")
    held = holdout_cells(results.spec)
    if source == "holdout" and not held:
        raise ValueError("this sweep has no held-out difficulty pool: run a sweep with --holdout N, or read it "
                         "with --difficulty-from pools (leaky)")
    if held and source != "pools":
        return _from_holdout(results, held[0], probe_n=probe_n, probe_verifier=probe_verifier)
    return _from_pools(results, probe_n=probe_n, probe_verifier=probe_verifier)


def _from_holdout(results: Any, cell: Cell, *, probe_n: int, probe_verifier: str | None,
                  ) -> tuple[dict[str, Difficulty], ProbeSettings, dict[str, Any]]:
    run_dir = cell_dir(results.root, cell)
    records = {str(r["id"]): r for r in run_dir.records()} if run_dir.path.is_dir() else {}
    missing = [q.id for q in results.problems if q.id not in records]
    if missing:
        raise ValueError(f"the held-out pool {cell.id} lacks {len(missing)} problems (first {missing[0]!r}): "
                         "finish the sweep with --resume")
    settings = _probe_settings("best_of_n", _stored_params(results, cell), probe_n=probe_n,
                               probe_verifier=probe_verifier)
    pools = {q.id: list(records[q.id].get("samples") or []) for q in results.problems}
    short = min(len(s) for s in pools.values())
    if short <= probe_n:
        raise ValueError(f"the held-out pool has {short} samples for some problem; the probe takes probe_n = "
                         f"{probe_n} and p̂₁ needs at least one more: lower --probe-n or sweep with a larger --holdout")
    probes = {pid: s[:probe_n] for pid, s in pools.items()}
    rest = {pid: s[probe_n:] for pid, s in pools.items()}
    out = _difficulties(results, probes, rest, settings, logprob_scores=True)
    meta = {"difficulty_source": "holdout", "holdout_cell": cell.id, "probe_samples": probe_n,
            "pass1_samples_min": short - probe_n,
            "note": "probe and p̂₁ from disjoint samples of a held-out pool no candidate is scored on"}
    return out, settings, meta


def _from_pools(results: Any, *, probe_n: int, probe_verifier: str | None,
                ) -> tuple[dict[str, Difficulty], ProbeSettings, dict[str, Any]]:
    top = results.spec.budgets[-1]
    pools = [c for c in results.cells if _difficulty_pool(c.strategy) and c.budget == top and c.id in results.records]
    if not pools:
        raise ValueError("difficulty needs a finished sample-pool cell (best_of_n or self_consistency) in the sweep")
    # Best-of-N without a verifier stores each sample's mean log-prob: its pool also gives the entropy feature.
    source = min(pools, key=lambda c: (c.strategy != "best_of_n", "verifier" in c.params, c.seed, c.id))
    settings = _probe_settings(source.strategy, _stored_params(results, source), probe_n=probe_n,
                               probe_verifier=probe_verifier)
    ids = [q.id for q in results.problems]
    probes = {pid: list(results.records[source.id][pid].get("samples") or [])[:probe_n] for pid in ids}
    every = {pid: [s for c in pools for s in results.records[c.id][pid].get("samples") or []] for pid in ids}
    logprobs = source.strategy == "best_of_n" and "verifier" not in source.params
    out = _difficulties(results, probes, every, settings, logprob_scores=logprobs)
    meta = {"difficulty_source": "pools", "probe_source_cell": source.id, "pass1_from_cells": [c.id for c in pools],
            "leakage": "the probe and p̂₁ use the samples the candidates are scored on: held-out accuracy is "
                       "optimistic (sweep with --holdout N)"}
    return out, settings, meta


def _stored_params(results: Any, cell: Cell) -> dict[str, Any]:
    """The parameters the cell ran with (its config.json: task defaults included), else its grid parameters."""
    run_dir = cell_dir(results.root, cell)
    if not (run_dir.path / CONFIG).is_file():
        return dict(cell.params)
    stored = (run_dir.read_config().get("spec") or {}).get("params")
    return dict(stored) if isinstance(stored, dict) else dict(cell.params)


def _probe_settings(strategy: str, params: dict[str, Any], *, probe_n: int, probe_verifier: str | None,
                    ) -> ProbeSettings:
    from ttscale.kit.params import params_class, parse_params

    p = parse_params(params_class(STRATEGIES.get(strategy)), {k: v for k, v in params.items() if k in _SAMPLING})
    return ProbeSettings(n=probe_n, temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens,
                         verifier=probe_verifier)


def _difficulties(results: Any, probes: dict[str, list[dict[str, Any]]], pass1_pools: dict[str, list[dict[str, Any]]],
                  settings: ProbeSettings, *, logprob_scores: bool) -> dict[str, Difficulty]:
    by_id = {q.id: q for q in results.problems}
    graded: dict[tuple[str, str | None], bool] = {}

    def right(pid: str, answer: str | None) -> bool:
        if (pid, answer) not in graded:
            graded[pid, answer] = bool(results.task.grade(answer, by_id[pid]))
        return graded[pid, answer]

    features = offline_features(probes, problems=by_id, task=results.task, settings=settings,
                                logprob_scores=logprob_scores)
    out = {}
    for pid, pool in pass1_pools.items():
        if not pool:
            continue
        head = [Sample(**s) for s in probes[pid]]
        out[pid] = Difficulty(
            pass1=sum(right(pid, s.get("answer")) for s in pool) / len(pool),
            features=features[pid],
            probe_correct=float(right(pid, majority_vote(head)[0])),
            probe_spent=float(sum(int(s.get("num_tokens") or 0) for s in probes[pid])),
        )
    return out


def learn_from_sweep(
    root: str | Path, *, options: LearnOptions, probe_n: int = 4, probe_verifier: str | None = "arithmetic",
    source: Source = "auto",
) -> dict[str, Any]:
    """The policy JSON (see `ttscale.routing.policy.learn_policy`) learned from a sweep directory."""
    from ttscale.sweeps.outcomes import load_results, outcomes

    results = load_results(root)
    rows, candidates = outcomes(results)
    diff, settings, meta = difficulty(results, probe_n=probe_n, probe_verifier=probe_verifier, source=source)
    return learn_policy(outcomes=rows, difficulty=diff, options=options, candidates=candidates, probe=settings,
                        meta={"sweep": str(root), "task": results.spec.task, "problems": len(diff),
                              # whether the cells ran with the task's suggested parameters: adaptive routes alike
                              "task_defaults": results.spec.task_defaults, **meta})


__all__ = ["SOURCES", "difficulty", "holdout_cells", "learn_from_sweep"]
