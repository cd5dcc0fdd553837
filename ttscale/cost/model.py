"""The cost of generating: compute FLOPs, memory bytes and Kinetics eFLOPs.

Kinetics (Sadhukhan et al., "Kinetics: Rethinking Test-Time Scaling Laws", arXiv 2506.05333) prices
a generation by its compute *and* its memory traffic, eFLOPs = compute + I · bytes. For n samples of
g tokens each after an L-token prompt (symbols: P, A, K as in `ttscale.cost.shapes`):

    compute = n · (2·P·g + 2·A·g·(2L + g))    linear layers, plus attention over a context from L to L+g
    bytes   = K · (L·g + n·g²/2)              KV reads; the prompt's KV read once per step for all n samples

Weight reads are not charged (they are amortised over a large batch), nor is the prompt's prefill:
this is the paper's model, and `CostModel.expected` reproduces its published tables exactly.
`prefill=True` adds the forward pass over the uncached prompt tokens (compute only: prefill is
compute-bound), which is what the ledger charges by default.

Sparse attention with a KV budget B replaces the attended context by at most B tokens (Kinetics'
top-k and block top-k); a search tree is charged by its unique KV tokens (`CostModel.tree`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ttscale.cost.hardware import Hardware, load_hardware
from ttscale.cost.shapes import ModelShape

Convention = Literal["kinetics", "exact"]


class CostInputError(ValueError):
    """Token counts that no request can have (negative lengths, more cached than prompt tokens, ...)."""


@dataclass(frozen=True, kw_only=True)
class SparseAttention:
    """Attention that reads at most `budget` KV tokens per generated token."""

    budget: int
    """B: KV tokens each generated token attends to (local window + top-k tokens, or + k·block_size)."""
    block_size: int | None = None
    """None: token top-k with free selection. Else block top-k: each step also reads one key per block."""
    convention: Convention = "kinetics"
    """`kinetics`: the published tables' formula, B·g + ½·max(0, B−L)² attended tokens per sample and a
    floored block count. `exact`: ∫₀^g min(B, L+t) dt = B·g − ½·(B−L)² once the context passes B,
    the dense cost before (the published formula adds the warm-up term that should be subtracted)."""

    def __post_init__(self) -> None:
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1:
            raise CostInputError(f"budget must be an integer ≥ 1, got {self.budget!r}")
        if self.block_size is not None and (
            isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 1
        ):
            raise CostInputError(f"block_size must be None or an integer ≥ 1, got {self.block_size!r}")
        if self.convention not in ("kinetics", "exact"):
            raise CostInputError(f"convention must be 'kinetics' or 'exact', got {self.convention!r}")

    @classmethod
    def topk(cls, *, k: int, local: int = 0, convention: Convention = "kinetics") -> SparseAttention:
        """Token-level top-k plus a local window: B = local + k."""
        return cls(budget=local + k, convention=convention)

    @classmethod
    def block_topk(
        cls, *, block_size: int, k: int, local: int = 0, convention: Convention = "kinetics"
    ) -> SparseAttention:
        """Top-k of blocks of `block_size` tokens plus a local window: B = local + k·block_size."""
        return cls(budget=local + k * block_size, block_size=block_size, convention=convention)


@dataclass(frozen=True, kw_only=True)
class Cost:
    """Compute and memory of some generation, and their price in eFLOPs."""

    compute_flops: float
    """FLOPs of the forward passes (2 per parameter per token, plus attention)."""
    memory_bytes: float
    """Bytes of KV cache read (and, for block top-k, block keys)."""
    intensity: float
    """I of the hardware: FLOPs per byte."""

    @property
    def memory_flops(self) -> float:
        """I · bytes: the memory traffic priced in FLOPs (Kinetics' `memory_cost`)."""
        return self.intensity * self.memory_bytes

    @property
    def eflops(self) -> float:
        """compute + I · bytes (Kinetics' `total_cost`)."""
        return self.compute_flops + self.memory_flops

    def __add__(self, other: Cost) -> Cost:
        if not math.isclose(self.intensity, other.intensity):
            raise ValueError(
                f"cannot add costs priced at different I ({self.intensity:g} vs {other.intensity:g})"
            )
        return Cost(
            compute_flops=self.compute_flops + other.compute_flops,
            memory_bytes=self.memory_bytes + other.memory_bytes,
            intensity=self.intensity,
        )

    def to_dict(self) -> dict[str, float]:
        return {
            "compute_flops": self.compute_flops,
            "memory_bytes": self.memory_bytes,
            "memory_eflops": self.memory_flops,
            "eflops": self.eflops,
            "intensity": self.intensity,
        }


@dataclass(frozen=True, kw_only=True)
class CostModel:
    """Prices generations of one model on one accelerator."""

    shape: ModelShape
    """The model (P, A, K come from it)."""
    hardware: Hardware = field(default_factory=load_hardware)
    """The accelerator; its I converts bytes into eFLOPs (default B200, I = 562.5)."""
    kv_bytes_per_element: float = 2.0
    """Bytes per cached key or value element: 2 for a bf16 cache, 1 for fp8."""
    sparse: SparseAttention | None = None
    """Sparse attention with a KV budget; None for dense attention."""
    prefill: bool = False
    """Also charge the forward pass over the uncached prompt tokens (not part of Kinetics' model)."""

    def __post_init__(self) -> None:
        value = self.kv_bytes_per_element
        if isinstance(value, bool) or not isinstance(value, int | float) or not (0 < value <= 8):
            raise CostInputError(f"kv_bytes_per_element must be in (0, 8], got {value!r}")

    # -- the three ways to price ------------------------------------------------------------
    def expected(
        self, *, prompt_tokens: int, gen_lengths: Sequence[int], samples: int, cached_prompt_tokens: int = 0
    ) -> Cost:
        """Kinetics' expected cost of `samples` samples: the mean over `gen_lengths` of the cost of
        `samples` samples all of that length (what the paper's tables and `ttscale cost` report)."""
        lengths = _lengths(gen_lengths)
        if lengths.size == 0:
            raise CostInputError("gen_lengths must hold at least one generated length")
        _check_prompt(prompt_tokens, cached_prompt_tokens)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise CostInputError(f"samples must be an integer ≥ 1, got {samples!r}")
        compute, memory = self._uniform(float(prompt_tokens), lengths, samples)
        return self._priced(
            float(np.mean(compute)), float(np.mean(memory)), prompt_tokens, cached_prompt_tokens
        )

    def request(
        self, *, prompt_tokens: int, gen_lengths: Sequence[int], cached_prompt_tokens: int = 0
    ) -> Cost:
        """One engine request: n = len(gen_lengths) samples of one prompt, the prompt's KV shared.

        This is Kinetics' formula evaluated on the request's own lengths: Σᵢ per-sample compute, and
        K·(L·mean(g) + Σᵢ gᵢ²/2) bytes. It grows with every gᵢ, as the ledger requires.
        """
        lengths = _lengths(gen_lengths)
        _check_prompt(prompt_tokens, cached_prompt_tokens)
        if lengths.size == 0:
            return self._priced(0.0, 0.0, prompt_tokens, cached_prompt_tokens)
        compute, memory = self._uniform(float(prompt_tokens), lengths, int(lengths.size))
        return self._priced(
            float(np.mean(compute)), float(np.mean(memory)), prompt_tokens, cached_prompt_tokens
        )

    def tree(
        self,
        *,
        prompt_tokens: int,
        generated_tokens: int,
        unique_kv_tokens: int,
        depth_tokens: int,
        cached_prompt_tokens: int = 0,
        kv_trace: Sequence[int] | None = None,
    ) -> Cost:
        """A search tree (beam search, MCTS) whose branches share prefixes, charged by unique KV tokens.

        `unique_kv_tokens` counts the distinct KV entries the tree holds, the prompt's included (the
        search ledger's `tree.unique_kv_tokens`); `depth_tokens` is the number of sequential decoding
        steps (the longest root-to-leaf path, in tokens). Each step reads the resident KV once; with
        the tree growing evenly, bytes = K·D·(L + U_gen/2). For n independent samples of g tokens
        (U_gen = n·g, D = g) this is exactly `expected`.

        `kv_trace`, the unique KV tokens after each expansion round (the ledger's
        `tree.unique_kv_tokens_per_step`; pruned branches leave it), replaces the even growth: the
        D steps are split evenly over the rounds, each reading the mean of its start and end KV.
        """
        if self.sparse is not None:
            raise CostInputError("the tree cost is defined for dense attention only")
        _check_prompt(prompt_tokens, cached_prompt_tokens)
        for name, value in (
            ("generated_tokens", generated_tokens),
            ("unique_kv_tokens", unique_kv_tokens),
            ("depth_tokens", depth_tokens),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CostInputError(f"{name} must be an integer ≥ 0, got {value!r}")
        unique_generated = unique_kv_tokens - prompt_tokens
        if not 0 <= unique_generated <= generated_tokens:
            raise CostInputError(
                f"unique_kv_tokens must be in [prompt_tokens, prompt_tokens + generated_tokens] = "
                f"[{prompt_tokens}, {prompt_tokens + generated_tokens}], got {unique_kv_tokens}"
            )
        if depth_tokens > unique_generated or (generated_tokens > 0 and depth_tokens == 0):
            raise CostInputError(
                f"depth_tokens must be in [1, unique generated tokens = {unique_generated}], "
                f"got {depth_tokens}"
            )
        p, a = self.shape.params, float(self.shape.attention_width)
        length, total, depth = float(prompt_tokens), float(generated_tokens), float(depth_tokens)
        # Tokens sit on average half-way down their path: mean context L + D/2.
        compute = 2.0 * p * total + 2.0 * a * total * (2.0 * length + depth)
        if kv_trace is None:
            memory = self._kv_bytes * depth * (length + unique_generated / 2.0)
        else:
            trace = np.asarray(kv_trace, dtype=float).reshape(-1)
            if trace.size == 0 or np.any(trace < prompt_tokens) or not np.all(np.isfinite(trace)):
                raise CostInputError(f"kv_trace must hold KV counts ≥ prompt_tokens = {prompt_tokens}")
            ends = np.r_[length, trace]
            resident = float(np.sum((ends[:-1] + ends[1:]) / 2.0))  # trapezoid over the rounds
            memory = self._kv_bytes * depth / trace.size * resident
        return self._priced(compute, memory, prompt_tokens, cached_prompt_tokens)

    # -- internals --------------------------------------------------------------------------
    @property
    def _kv_bytes(self) -> float:
        return self.shape.kv_bytes_per_token(bytes_per_element=self.kv_bytes_per_element)

    def _uniform(self, length: float, g: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Compute FLOPs and bytes of n samples all of length g (one value per entry of g)."""
        p, a, kv = self.shape.params, float(self.shape.attention_width), self._kv_bytes
        linear = 2.0 * p * g
        sparse = self.sparse
        if sparse is None:
            compute = n * (linear + 2.0 * a * g * (2.0 * length + g))
            memory = kv * (length * g + n * g * g / 2.0)
            return compute, memory
        attended = _attended(sparse, length, g)
        # No prompt sharing for the selected tokens: each sample picks its own top-k.
        compute = n * (linear + 4.0 * a * attended)
        memory = n * kv * attended
        if sparse.block_size is not None:
            # Block search: a query dotted with one key per block (context/bs of them) at every step,
            # the prompt's block keys read once for all n samples.
            compute = compute + n * a * g * _blocks(sparse, 2.0 * length + g)
            memory = memory + (kv / 4.0) * g * _blocks(sparse, 2.0 * length + n * g)
        return compute, memory

    def _priced(self, compute: float, memory: float, prompt_tokens: int, cached: int) -> Cost:
        if self.prefill and prompt_tokens > cached:
            new, old = float(prompt_tokens), float(cached)
            compute += 2.0 * self.shape.params * (new - old) + 2.0 * self.shape.attention_width * (
                new * new - old * old
            )
        return Cost(compute_flops=compute, memory_bytes=memory, intensity=self.hardware.intensity)

    def describe(self) -> dict[str, Any]:
        """The model's settings, for reports."""
        return {
            "model": self.shape.name,
            "params": self.shape.params,
            "hardware": self.hardware.name,
            "intensity": self.hardware.intensity,
            "kv_bytes_per_element": self.kv_bytes_per_element,
            "sparse": None if self.sparse is None else self.sparse.__dict__,
            "prefill": self.prefill,
        }


def _attended(sparse: SparseAttention, length: float, g: np.ndarray) -> np.ndarray:
    """Σ over generated tokens of the KV tokens each attends to, under a budget B."""
    b = float(sparse.budget)
    if sparse.convention == "kinetics":
        return b * g + 0.5 * max(0.0, b - length) ** 2
    ramp = max(0.0, b - length)  # steps before the context reaches B: attend all of it
    warm = np.minimum(g, ramp)
    return length * warm + warm * warm / 2.0 + b * (g - warm)


def _blocks(sparse: SparseAttention, twice_context: np.ndarray) -> np.ndarray:
    """2 × the mean number of blocks over the steps; floored as in the published tables."""
    assert sparse.block_size is not None
    ratio = twice_context / sparse.block_size
    return np.floor(ratio) if sparse.convention == "kinetics" else ratio


def _lengths(gen_lengths: Sequence[int]) -> np.ndarray:
    lengths = np.asarray(gen_lengths, dtype=float).reshape(-1)
    if lengths.size and (not np.all(np.isfinite(lengths)) or lengths.min() < 0):
        raise CostInputError(f"generated lengths must be ≥ 0, got {list(gen_lengths)[:8]}")
    return lengths


def _check_prompt(prompt_tokens: int, cached_prompt_tokens: int) -> None:
    if (
        isinstance(prompt_tokens, bool)
        or not isinstance(prompt_tokens, int | np.integer)
        or prompt_tokens < 0
    ):
        raise CostInputError(f"prompt_tokens must be an integer ≥ 0, got {prompt_tokens!r}")
    if not 0 <= cached_prompt_tokens <= prompt_tokens:
        raise CostInputError(
            f"cached_prompt_tokens must be in [0, prompt_tokens = {prompt_tokens}], "
            f"got {cached_prompt_tokens!r}"
        )
