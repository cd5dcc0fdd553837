"""SYNTHETIC run directories for the report tests: no engine, but every number goes through the real code.

The problems are the real arithmetic task's; each sample is right with a per-level probability
(`skill`), and the samples' token counts are settled in the real `Ledger` (priced by the real cost
model on the embedded model's shape), so results.jsonl, summary.json and config.json have exactly the
layout and accounting of a run written by `ttscale run`.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from ttscale.budget import Budget, Ledger
from ttscale.cost.meter import eflop_meter
from ttscale.engine.base import EngineConfig
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.runstore.summary import summarize
from ttscale.schema import Completion, Generation, RunRecord, SamplingParams
from ttscale.verifiers import cross_check

MODEL_CONFIG = json.loads((Path(__file__).parents[1] / "data" / "smollm2_config.json").read_text())
PROMPT_TOKENS = 47
#: Per-sample accuracy of levels 1-5, near the embedded model's (ENGINE_NOTES.md).
SKILL = (0.55, 0.2, 0.08, 0.02, 0.0)


def make_run(
    root: Path,
    name: str,
    *,
    strategy: str = "self_consistency",
    budget: str = "1k",
    max_tokens: int = 64,
    problems: int = 10,
    levels: str = "1-5",
    skill: tuple[float, ...] = SKILL,
    seed: int = 0,
    hardware: str = "B200",
    model: str = "embedded",
    priced: bool = True,
    error_ids: tuple[str, ...] = (),
) -> Path:
    """Write a run directory `root/name` and return its path."""
    rng = random.Random(f"{name}-{seed}")
    parsed = Budget.parse(budget)
    costing = eflop_meter(model_config=MODEL_CONFIG, hardware=hardware) if priced else None
    meter = parsed.meter(model_config=MODEL_CONFIG, hardware=hardware) if parsed.unit != "tokens" else None
    task = ArithmeticTask(levels)
    records = []
    for problem in task.problems()[:problems]:
        ledger = Ledger(parsed, meter=meter, costing=costing)
        p_right = skill[(problem.level or 1) - 1]
        samples = []
        while not ledger.exhausted:
            n = ledger.affordable_samples(max_tokens, prompt_tokens=PROMPT_TOKENS) or 1
            reservation = ledger.reserve(SamplingParams(n=n, max_tokens=max_tokens), prompt_tokens=PROMPT_TOKENS)
            if reservation is None or reservation.params is None:
                break
            sent = reservation.params
            completions = []
            for _ in range(sent.n):
                right = rng.random() < p_right
                answer = problem.reference if right else str(int(problem.reference) + rng.choice((-10, -1, 1, 2)))
                length = rng.randint(max(1, sent.max_tokens // 4), sent.max_tokens)
                completions.append(Completion(text=f"The answer is {answer}.", token_ids=tuple(range(length))))
                samples.append(
                    {
                        "text": f"The answer is {answer}.",
                        "answer": answer,
                        "num_tokens": length,
                        "score": round(rng.random() * 0.5 + (0.4 if right else 0.2), 4),
                        "finish_reason": "stop",
                    }
                )
            ledger.settle(
                reservation,
                Generation(completions=tuple(completions), prompt_tokens=PROMPT_TOKENS, cached_prompt_tokens=32),
            )
            if strategy != "self_consistency":
                break  # best-of-N draws one pool; voting keeps sampling while the budget lasts
        ledger.extra["wall_seconds"] = round(0.05 * len(samples) + rng.random(), 4)
        prediction = _choose(strategy, samples)
        error = "RuntimeError: synthetic failure" if problem.id in error_ids else None
        records.append(
            RunRecord(
                id=problem.id,
                strategy=strategy,
                prediction=None if error else prediction,
                reference=problem.reference,
                correct=bool(not error and task.grade(prediction, problem)),
                ledger=ledger.to_dict(),
                samples=samples,
                level=problem.level,
                info={"n": len(samples)},
                error=error,
            ).to_json()
        )
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "results.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    summary = summarize(records, budget=parsed, wall_seconds=sum(r["ledger"]["wall_seconds"] for r in records) / 3,
                        cross_check=cross_check)
    summary.update(strategy=strategy, task=f"arithmetic:{levels}", budget=str(parsed), resumed=False)
    _write(folder / "summary.json", summary)
    _write(folder / "config.json", _config(strategy, parsed, task, levels, problems, seed, hardware, model, max_tokens))
    return folder


def _choose(strategy: str, samples: list[dict[str, Any]]) -> str | None:
    if not samples:
        return None
    if strategy == "self_consistency":
        return Counter(s["answer"] for s in samples).most_common(1)[0][0]
    return str(max(samples, key=lambda s: s["score"])["answer"])


def _config(
    strategy: str,
    budget: Budget,
    task: ArithmeticTask,
    levels: str,
    limit: int,
    seed: int,
    hardware: str,
    model: str,
    max_tokens: int,
) -> dict[str, Any]:
    engine = EngineConfig(model=model, seed=seed).to_dict()
    params = {"n": None, "temperature": 0.8, "top_p": 1.0, "max_tokens": max_tokens, "refill": False, "verifier": None}
    return {
        "identity": {
            "strategy": strategy,
            "params": params,
            "budget": {"limit": budget.limit, "unit": budget.unit},
            "task": {"spec": f"arithmetic:{levels}", "options": {}, **task.config()},
            "limit": limit,
            "seed": seed,
            "hardware": hardware,
            "engine": engine,
        },
        "spec": {"strategy": strategy, "budget": str(budget), "task": f"arithmetic:{levels}", "limit": limit},
        "environment": {
            "ttscale_version": "0.1.0",
            "python": "3.11.7",
            "platform": "synthetic",
            "engine": {
                "backend": "synthetic",
                "model": model,
                "model_path": f"/cache/models/{model}",
                "device": "cpu",
                "vllm_version": "0.32.0",
                "torch_version": "2.13.0+cpu",
            },
        },
        "command": ["synthetic"],
        "created": "2026-01-01T00:00:00+0000",
    }


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
