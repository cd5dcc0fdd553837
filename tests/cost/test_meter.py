"""FLOP and eFLOP budgets in the ledger: parsing, lazy registration, never overspending."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ttscale.budget import Budget, BudgetError, Ledger
from ttscale.cost import CostModel, ModelShape
from ttscale.cost.meter import GenerationMeter, eflop_meter
from ttscale.schema import Completion, Generation, SamplingParams

REPO = Path(__file__).parents[2]
CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}


def test_budget_strings_in_flop_units() -> None:
    assert Budget.parse("3e15eflop") == Budget(limit=3e15, unit="eflop")
    assert Budget.parse("2.5e14 FLOP") == Budget(limit=2.5e14, unit="flop")
    assert Budget.parse("8k").unit == "tokens"


def test_import_ttscale_stays_light_and_meters_load_on_use() -> None:
    code = (
        "import sys, ttscale; from ttscale.budget import Budget; b = Budget.parse('3e15eflop');"
        "assert 'ttscale.cost' not in sys.modules;"
        "m = b.meter(model_config='Qwen3-0.6B'); assert 'ttscale.cost.meter' in sys.modules;"
        "assert not {'vllm', 'torch', 'ray'} & set(sys.modules), 'heavy import'"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": ""},
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_meter_from_the_runners_arguments() -> None:
    meter = Budget.parse("1e15eflop").meter(model_config=CONFIG, hardware="B200")
    flops = Budget.parse("1e15flop").meter(model_config=CONFIG, hardware="B200")
    shape = ModelShape.from_config(CONFIG)
    cost = CostModel(shape=shape, prefill=True).request(prompt_tokens=200, gen_lengths=[100, 300])
    cold = meter.cost(prompt_tokens=200, cached_prompt_tokens=0, gen_lengths=[100, 300])
    warm = meter.cost(prompt_tokens=200, cached_prompt_tokens=200, gen_lengths=[100, 300])
    assert meter.unit == "eflop" and math.isclose(cold, cost.eflops)
    compute = flops.cost(prompt_tokens=200, cached_prompt_tokens=0, gen_lengths=[100, 300])
    assert flops.unit == "flop" and math.isclose(compute, cost.compute_flops)
    assert warm < cold  # a cached prompt's prefill is free


def test_meter_without_a_model_says_how_to_build_one() -> None:
    with pytest.raises(
        BudgetError, match=r"needs the served model's shape: build its meter with budget.meter\("
    ):
        Budget.parse("1e15eflop").meter()
    with pytest.raises(BudgetError, match="cannot meter the eflop budget: unknown hardware"):
        eflop_meter(model_config=CONFIG, hardware="TPU9")


def _generation(lengths: list[int], prompt: int, cached: int) -> Generation:
    completions = tuple(Completion(text="", token_ids=(0,) * n) for n in lengths)
    return Generation(completions=completions, prompt_tokens=prompt, cached_prompt_tokens=cached)


def test_ledger_never_exceeds_an_eflop_budget() -> None:
    rng = np.random.default_rng(3)
    budget = Budget.parse("2e15eflop")
    meter = budget.meter(model_config=CONFIG)
    assert isinstance(meter, GenerationMeter)
    for _ in range(20):
        ledger = Ledger(budget, meter=meter)
        while not ledger.exhausted:
            prompt = int(rng.integers(10, 3000))
            wanted = SamplingParams(n=int(rng.integers(1, 9)), max_tokens=int(rng.integers(64, 16000)))
            reservation = ledger.reserve(wanted, prompt_tokens=prompt)
            if reservation is None:
                break
            sent = reservation.params
            lengths = rng.integers(0, sent.max_tokens + 1, size=sent.n).tolist()
            ledger.settle(reservation, _generation(lengths, prompt, int(rng.integers(0, prompt + 1))))
        assert ledger.spent <= budget.limit * (1 + 1e-12)
        assert ledger.spent > 0.5 * budget.limit  # and the budget is actually used
