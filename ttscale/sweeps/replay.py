"""A sweep cell written from the stored records of its source cell (a larger budget, or the largest values of the
parameters its strategy's replay varies), by that strategy's declared replay (ttscale.kit.capabilities).

`derive_cell` checks that the source ran with the cell's parameters (those the replay varies aside) and engine
context limit, derives each problem's record (`derive_record`: a fresh ledger at the cell's budget, the source's
samples, the strategy's `Replay.derive`, graded again by the task) and writes the cell's run directory as a run
would, through the run pipeline's `write_cell` (the run store's one writer: config.json, results.jsonl, summary.json).
A refusal runs the cell live; a partial replay (budget forcing) writes what it could and the sweep runs the rest
into the same directory, as a resume does.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ttscale.engine.base import context_length
from ttscale.kit.capabilities import Stored, capabilities
from ttscale.pipeline import write_cell
from ttscale.running.runner import Prepared
from ttscale.runstore.storage import RunDir
from ttscale.schema import Problem, RunRecord, Sample
from ttscale.strategies import STRATEGIES
from ttscale.sweeps.grid import Cell


def derive_cell(prepared: Prepared, run_dir: RunDir, cell: Cell, source_dir: RunDir) -> str | None:
    """Write the cell from its source's pool; the reason it cannot be derived, or None when it was."""
    # Every parameter but those the replay subsamples (GenRM's S and V) must be the source's: a max_tokens
    # capped at this smaller budget (task defaults), or a sweep resumed across versions, draws other samples.
    replay = capabilities(STRATEGIES.get(prepared.strategy_name)).replay
    if replay is None:
        return f"{prepared.strategy_name} declares no replay"
    varied = replay.varied
    source_config = source_dir.read_config()
    stored = (source_config.get("identity") or {}).get("params")
    stored = {k: v for k, v in stored.items() if k not in varied} if isinstance(stored, dict) else {}
    current = {k: v for k, v in json.loads(json.dumps(asdict(prepared.params), default=str)).items()
               if k not in varied}
    if stored != current:
        return f"the source ran with other parameters ({_differing(stored, current)})"
    sources = {str(r["id"]): r for r in source_dir.records()}
    # The context limit the source's engine ran with (the model's own when none was set): its samples obey it.
    # An engine that records none (a simulator) had none that mattered.
    source_engine = source_config.get("environment", {}).get("engine")
    ran = source_engine or {}
    # A configured -1 (fit to memory) or None is no number: the recorded limit in force is.
    limit = context_length(prepared.spec.engine.max_model_len, ran.get("max_model_len"),
                         (ran.get("config") or {}).get("max_model_len"))
    records = []
    rest: dict[str, str] = {}  # a partial replay (budget forcing): problems it cannot read run afresh
    for problem in prepared.problems:
        source = sources.get(problem.id)
        if source is None:
            return f"the source has no record of {problem.id}"
        record = derive_record(prepared, problem, source, source_id=str(cell.source), max_model_len=limit)
        if isinstance(record, str) and replay.partial:
            rest[problem.id] = record
        elif isinstance(record, str):
            return f"{problem.id}: {record}"
        else:
            records.append(record)
    engine = {"derived_from": str(cell.source), "source_engine": source_engine}
    write_cell(prepared, run_dir, records, engine=engine, argv=["derived", str(cell.source)], done=not rest,
               derived_from=cell.source)
    if rest:  # the sweep runs the others into this directory, as a resume does
        return f"{len(rest)} of {len(prepared.problems)} problems need their own run ({next(iter(rest.values()))})"
    return None


def _differing(stored: dict[str, Any], current: dict[str, Any]) -> str:
    keys = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
    return ", ".join(f"{k}: {stored.get(k)!r} vs {current.get(k)!r}" for k in keys) or "unknown"


def derive_record(
    prepared: Prepared, problem: Problem, source: dict[str, Any], *, source_id: str, max_model_len: int | None = None
) -> dict[str, Any] | str:
    """The record a run at `prepared.budget` would write, from the source's record; or why there is none."""
    if source.get("error"):
        return "the source record is an error"
    replay = capabilities(STRATEGIES.get(prepared.strategy_name)).replay
    if replay is None:
        return f"{prepared.strategy_name} declares no replay"
    src_ledger = source.get("ledger") or {}
    verifier = src_ledger.get("verifier") or {}
    policy_calls = max(1, int(src_ledger.get("calls", 0)) - int(verifier.get("calls", 0)))
    ledger = prepared.ledger()
    stored = Stored(
        params=prepared.params, ledger=ledger, budget=prepared.budget, record=source,
        samples=[Sample(**s) for s in source.get("samples", [])],
        prompt_tokens=(int(src_ledger.get("prompt_tokens", 0)) - int(verifier.get("prompt_tokens", 0))) // policy_calls,
        max_model_len=context_length(max_model_len, prepared.spec.engine.max_model_len) or 1 << 30,
    )
    derived = replay.derive(stored)
    if isinstance(derived, str):
        return derived
    return RunRecord(id=problem.id, strategy=prepared.strategy_name, prediction=derived.prediction,
                     reference=problem.reference, correct=bool(prepared.task.grade(derived.prediction, problem)),
                     ledger=derived.ledger if derived.ledger is not None else ledger.to_dict(),
                     samples=[s.to_dict() for s in derived.samples], level=problem.level,
                     info={**derived.info, "derived_from": source_id}).to_json()


__all__ = ["derive_cell", "derive_record"]
