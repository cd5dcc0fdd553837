"""Ledger meters for FLOP budgets: `--budget 3e14flop` and `--budget 3e15eflop`.

The runner builds a problem's meter with `budget.meter(model_config=..., hardware=...)`, where
`model_config` is the served model's `config.json` as a dict; `ttscale.budget.METERS` reaches the
factories below lazily, so `import ttscale` does not import numpy for them.

Each engine request of n samples is priced as one Kinetics group (`CostModel.request`): the prompt's
KV read once per step for all n samples, and, unlike the paper's tables, the forward pass over the
prompt's uncached tokens (`prefill=True`), so that strategies that send many long prompts (verifiers,
step-wise search) pay for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ttscale.budget import BudgetError
from ttscale.cost.hardware import Hardware, HardwareError, load_hardware
from ttscale.cost.model import Cost, CostModel
from ttscale.cost.shapes import ModelShape, ModelShapeError, load_shape

Unit = Literal["flop", "eflop"]

ModelConfig = Mapping[str, Any] | str | Path
HardwareSpec = str | Hardware | Mapping[str, Any] | None


class GenerationMeter:
    """A `ttscale.budget.CostMeter` in FLOPs (compute only) or eFLOPs (compute + I · bytes)."""

    def __init__(self, *, model: CostModel, unit: Unit) -> None:
        if unit not in ("flop", "eflop"):
            raise BudgetError(f"unit must be 'flop' or 'eflop', got {unit!r}")
        self.model = model
        self.unit: str = unit

    def cost(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]) -> float:
        """The request's price in this meter's unit; monotone in every generated length."""
        priced = self.price(
            prompt_tokens=prompt_tokens, cached_prompt_tokens=cached_prompt_tokens, gen_lengths=gen_lengths
        )
        return priced.eflops if self.unit == "eflop" else priced.compute_flops

    def price(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]) -> Cost:
        """The full breakdown (FLOPs, bytes, eFLOPs) of one request."""
        return self.model.request(
            prompt_tokens=prompt_tokens, cached_prompt_tokens=cached_prompt_tokens, gen_lengths=gen_lengths
        )

    def breakdown(
        self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]
    ) -> dict[str, float]:
        """`{"flops", "memory_bytes", "eflops"}` of one request, for ledger summaries."""
        priced = self.price(
            prompt_tokens=prompt_tokens, cached_prompt_tokens=cached_prompt_tokens, gen_lengths=gen_lengths
        )
        return {"flops": priced.compute_flops, "memory_bytes": priced.memory_bytes, "eflops": priced.eflops}

    def __repr__(self) -> str:
        model, hardware = self.model.shape.name, self.model.hardware.name
        return f"GenerationMeter(unit={self.unit!r}, model={model!r}, hardware={hardware!r})"


def flop_meter(
    *,
    model_config: ModelConfig | None = None,
    hardware: HardwareSpec = None,
    params: float | None = None,
    prefill: bool = True,
    kv_bytes_per_element: float = 2.0,
) -> GenerationMeter:
    """Meter in compute FLOPs. See `eflop_meter` for the arguments."""
    return _meter("flop", model_config, hardware, params, prefill, kv_bytes_per_element)


def eflop_meter(
    *,
    model_config: ModelConfig | None = None,
    hardware: HardwareSpec = None,
    params: float | None = None,
    prefill: bool = True,
    kv_bytes_per_element: float = 2.0,
) -> GenerationMeter:
    """Meter in Kinetics eFLOPs.

    model_config: the served model's `config.json` (dict, file or folder) or a preset name.
    hardware: preset name (A100, H100, H200, B200), 'FLOPS/BANDWIDTH', a mapping or a `Hardware`;
        None is B200 (I = 562.5, the paper's value).
    params: P for 2·P FLOPs per token, instead of the count derived from the config.
    prefill: charge the forward pass over uncached prompt tokens (False: exactly the paper's model).
    kv_bytes_per_element: 2 for a bf16 KV cache, 1 for fp8.
    """
    return _meter("eflop", model_config, hardware, params, prefill, kv_bytes_per_element)


def _meter(
    unit: Unit,
    model_config: ModelConfig | None,
    hardware: HardwareSpec,
    params: float | None,
    prefill: bool,
    kv_bytes_per_element: float,
) -> GenerationMeter:
    if model_config is None:
        raise BudgetError(
            f"a budget in {unit} needs the served model's shape: build its meter with "
            f"budget.meter(model_config=<config.json dict>, hardware='B200')"
        )
    try:
        shape: ModelShape = load_shape(model_config, params=params)
        model = CostModel(
            shape=shape,
            hardware=load_hardware(hardware),
            prefill=prefill,
            kv_bytes_per_element=kv_bytes_per_element,
        )
    except (ModelShapeError, HardwareError) as exc:
        raise BudgetError(f"cannot meter the {unit} budget: {exc}") from None
    return GenerationMeter(model=model, unit=unit)
