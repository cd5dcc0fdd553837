"""SIMULATED engines and synthetic sweep data for the adaptive tests: not a model, not vLLM.

- `PoolReplayEngine` serves a fixed list of pre-drawn completions in order, whatever the request, so a
  run at a small budget and a derivation from a big run's stored pool can be compared sample for sample.
- `SeededSimulator` is ttscale.testing.policy's scripted arithmetic policy, accepting the per-request
  seed the runner sends (it ignores it: its own RNG is seeded once).
- `synthetic_outcomes` builds a sweep table whose best candidate per bin is known by construction.

Tests that claim anything about vLLM use the `sync_engine` fixture, never these.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ttscale.budget import Budget
from ttscale.engine.base import EngineConfig
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.params import params_class, parse_params
from ttscale.routing.difficulty import Features, ProbeSettings
from ttscale.routing.policy import Difficulty, LearnOptions, Outcome, learn_policy
from ttscale.running.runner import Meters, Prepared, RunSpec
from ttscale.schema import Completion, FinishReason, Generation, Problem, SamplingParams
from ttscale.strategies import STRATEGIES
from ttscale.testing.policy import SimulatedArithmeticPolicy

REPO = Path(__file__).resolve().parents[2]


class PoolReplayEngine:
    """SIMULATED: hands out `pool` entries (num_tokens, text, mean log-prob) in order, n per request.

    A sample longer than the request's max_tokens comes back truncated with no text (finish "length"),
    as a real engine would cut it; once the pool is used up, requests get fewer samples.
    """

    def __init__(self, pool: Sequence[tuple[int, str, float]]) -> None:
        self.pool = list(pool)
        self.cursor = 0
        self.generated_tokens = 0
        self.requests: list[SamplingParams] = []

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        return self.tokenize("".join(m["content"] for m in messages))

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) % 30_000 + 3 for c in text]

    def detokenize(self, token_ids: Sequence[int]) -> str:
        return "".join(chr(t - 3) for t in token_ids)

    def describe(self) -> dict[str, Any]:
        return {"backend": "pool-replay simulator"}

    async def close(self) -> None:
        return None

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        await asyncio.sleep(0)
        self.requests.append(params)
        out = []
        for _ in range(params.n):
            if self.cursor >= len(self.pool):
                break
            length, text, logprob = self.pool[self.cursor]
            self.cursor += 1
            finish: FinishReason = "stop"
            if length > params.max_tokens:
                length, text, finish = params.max_tokens, "", "length"
            logprobs = (logprob,) * length if params.logprobs is not None else None
            out.append(Completion(text=text, token_ids=(7,) * length, logprobs=logprobs, finish_reason=finish))
        self.generated_tokens += sum(c.num_tokens for c in out)
        size = len(prompt) if not isinstance(prompt, str) else len(self.tokenize(prompt))
        return Generation(completions=tuple(out), prompt_tokens=size)


class GenRMReplayEngine(PoolReplayEngine):
    """SIMULATED: solutions from the pool (as `PoolReplayEngine`); a verification chain of `chain_tokens` tokens;
    a verdict token with P(Yes) = 0.9 when the judged solution says "answer is 7", else 0.2 (deterministic)."""

    def __init__(self, pool: Sequence[tuple[int, str, float]], *, chain_tokens: int = 8) -> None:
        super().__init__(pool)
        self.chain_tokens = chain_tokens
        self.verifier_requests: list[SamplingParams] = []

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        text = self.detokenize(prompt) if not isinstance(prompt, str) else prompt
        if "Proposed solution" not in text:
            return await super().generate(prompt, params, seed=seed)
        await asyncio.sleep(0)
        self.verifier_requests.append(params)
        if params.max_tokens == 1 and params.logprobs:
            p = 0.9 if "answer is 7" in text.split("Proposed solution", 1)[1] else 0.2
            top = {"Yes": math.log(p), "No": math.log(1 - p)}
            out: tuple[Completion, ...] = (
                Completion(text="Yes", token_ids=(9,), logprobs=(top["Yes"],), top_logprobs=(top,)),
            )
        else:
            length = min(self.chain_tokens, params.max_tokens)
            out = tuple(Completion(text="Checked.", token_ids=(8,) * length) for _ in range(params.n))
        self.generated_tokens += sum(c.num_tokens for c in out)
        return Generation(completions=out, prompt_tokens=len(prompt))


class SeededSimulator(SimulatedArithmeticPolicy):
    """SIMULATED: the scripted arithmetic policy, taking (and ignoring) the runner's per-request seed."""

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        return await super().generate(prompt, params)

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        return super().chat_prompt(messages)


def prepared_for(strategy: str, budget: str | int, *, params: dict[str, Any] | None = None,
                 problems: list[Problem] | None = None, concurrency: int = 64) -> Prepared:
    """A `Prepared` without resolving a model (no conversion, no engine): meters count tokens."""
    task = ArithmeticTask(levels=(1, 2, 3), per_level=4)
    name = STRATEGIES.canonical(strategy)
    assert name is not None
    fn = STRATEGIES.get(name)
    spec = RunSpec(strategy=name, budget=str(budget), task="arithmetic:1-3", params=dict(params or {}),
                   concurrency=concurrency)
    return Prepared(spec, name, fn, parse_params(params_class(fn), dict(params or {})), Budget.parse(budget), task,
                    problems or task.problems()[:1], Meters(budget=None, costing=None))


def model_dir(tmp: Path) -> Path:
    """A model folder with only the embedded model's config.json: enough for `prepare`, no weights."""
    folder = tmp / "model"
    folder.mkdir(exist_ok=True)
    shutil.copy(REPO / "tests" / "data" / "smollm2_config.json", folder / "config.json")
    return folder


def engine_config(tmp: Path) -> EngineConfig:
    return EngineConfig(model=str(model_dir(tmp)))


# -- a sweep table with a known answer ------------------------------------------------------------

#: Oracle p̂₁ of each bin's problems (bin 1 easiest), 12 problems a bin.
BIN_PASS1 = {1: 0.9, 2: 0.6, 3: 0.35, 4: 0.1, 5: 0.0}
#: (budget, bin) → accuracy of candidates A, B, C; spend of A, B, C is 100, 200, 150 at every budget.
RATES = {
    256: {1: (11, 6, 4), 2: (10, 6, 3), 3: (2, 9, 4), 4: (1, 7, 3), 5: (0, 0, 0)},
    1024: {1: (12, 8, 5), 2: (11, 7, 6), 3: (3, 8, 11), 4: (2, 6, 9), 5: (0, 0, 0)},
}
#: The known best per (budget, bin): ties (bin 5) go to the cheapest, A.
BEST = {256: {1: "A", 2: "A", 3: "B", 4: "B", 5: "A"}, 1024: {1: "A", 2: "A", 3: "C", 4: "C", 5: "A"}}
CANDIDATES = {c: {"strategy": "self_consistency", "params": {"max_tokens": str(m)}} for c, m in
              (("A", 16), ("B", 32), ("C", 48))}
SPENT = {"A": 100.0, "B": 200.0, "C": 150.0}
PER_BIN = 12


def synthetic_problems() -> list[tuple[str, int]]:
    return [(f"p{k}-{i:02d}", k) for k in BIN_PASS1 for i in range(PER_BIN)]


def synthetic_outcomes() -> list[Outcome]:
    """Deterministic: in bin k at budget b, candidate c is right on the first RATES[b][k][c] problems."""
    rows = []
    for pid, k in synthetic_problems():
        i = int(pid.rsplit("-", 1)[1])
        for b, by_bin in RATES.items():
            for j, c in enumerate("ABC"):
                rows.append(Outcome(candidate=c, budget=float(b), problem=pid,
                                    correct=float(i < by_bin[k][j]), spent=SPENT[c]))
    return rows


def synthetic_difficulty(*, feature_noise: float = 0.0, seed: int = 0) -> dict[str, Difficulty]:
    """p̂₁ from BIN_PASS1 (a tiny spread inside a bin), and features that track it (plus noise)."""
    import random

    rng = random.Random(seed)
    out = {}
    for pid, k in synthetic_problems():
        i = int(pid.rsplit("-", 1)[1])
        pass1 = BIN_PASS1[k] + (0.001 * i if k != 5 else 0.0)
        agreement = min(1.0, max(0.0, pass1 + rng.gauss(0, feature_noise)))
        out[pid] = Difficulty(pass1=pass1, features=Features(agreement=agreement, entropy=1.0 - agreement),
                              probe_correct=float(k == 1 and i < 9))
    return out


def synthetic_policy(tmp: Path, *, bins: str = "predicted", probe: ProbeSettings | None = None,
                     candidates: dict[str, dict[str, Any]] | None = None) -> Path:
    """A policy JSON learned from the synthetic table, written to tmp."""
    policy = learn_policy(outcomes=synthetic_outcomes(), difficulty=synthetic_difficulty(),
                          options=LearnOptions(bins=bins), candidates=candidates or CANDIDATES,  # type: ignore[arg-type]
                          probe=probe or ProbeSettings(n=2, max_tokens=48), meta={"sweep": "synthetic"})
    path = tmp / f"policy-{bins}.json"
    path.write_text(json.dumps(policy, indent=2))
    return path
