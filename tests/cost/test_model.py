"""Properties of the cost formulas: first-principles sums, prompt sharing, prefill, sparse, tree."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttscale.cost import Cost, CostInputError, CostModel, ModelShape, SparseAttention, load_hardware

SHAPE = ModelShape.preset("Qwen3-4B")
MODEL = CostModel(shape=SHAPE, hardware=load_hardware("B200"))

# Published rows of the Kinetics repository (Infini-AI-Lab/Kinetics @ e7765597, cost_model/aime24/):
# Qwen3-4B, query 0 (prompt 155 tokens), 32 sampled lengths; columns compute_cost, memory_cost (1e12).
TOPK256_LENGTHS = [
    29128,
    22600,
    26808,
    25755,
    11365,
    19891,
    10049,
    30767,
    16094,
    11774,
    30767,
    25706,
    12287,
    7856,
    9591,
    6470,
    9010,
    8448,
    14464,
    14349,
    21851,
    23600,
    26954,
    24216,
    13477,
    27329,
    23500,
    29868,
    11786,
    24914,
    27510,
    25498,
]
TOPK256_ROWS = {1: (159.64601179305598, 414.268494336), 32: (5108.672377377791, 13256.591818752)}
BLOCK32X16_LENGTHS = [
    14039,
    14312,
    18317,
    13843,
    14284,
    14389,
    11554,
    12607,
    30767,
    13397,
    10194,
    30767,
    15380,
    15366,
    28871,
    13152,
    30767,
    10551,
    16642,
    21566,
    22466,
    9228,
    11371,
    13214,
    9564,
    13199,
    13247,
    9931,
    11543,
    15038,
    12372,
    12501,
]
BLOCK32X16_ROWS = {1: (132.88333651511996, 863.8646857199999), 32: (4252.266768483839, 27549.790766784)}


def _brute_force(shape: ModelShape, length: int, g: int, n: int) -> tuple[float, float]:
    """Token by token: step t attends L+t positions (4·A FLOPs and K bytes each), the prompt read once."""
    a, kv = shape.attention_width, shape.kv_bytes_per_token()
    steps = np.arange(g, dtype=float) + 0.5  # midpoint rule: the continuous model integrates over t
    compute = n * (2 * shape.params * g + np.sum(4 * a * (length + steps)))
    memory = kv * np.sum(length + n * steps)
    return compute, memory


@pytest.mark.parametrize(("length", "g", "n"), [(155, 1000, 1), (0, 512, 4), (4096, 300, 16)])
def test_dense_matches_a_token_by_token_sum(length: int, g: int, n: int) -> None:
    cost = MODEL.expected(prompt_tokens=length, gen_lengths=[g], samples=n)
    compute, memory = _brute_force(SHAPE, length, g, n)
    assert math.isclose(cost.compute_flops, compute, rel_tol=1e-12)
    assert math.isclose(cost.memory_bytes, memory, rel_tol=1e-12)
    assert math.isclose(cost.eflops, compute + 562.5 * memory, rel_tol=1e-12)


def test_prompt_kv_is_read_once_for_all_samples() -> None:
    one = MODEL.request(prompt_tokens=2000, gen_lengths=[800])
    eight = MODEL.request(prompt_tokens=2000, gen_lengths=[800] * 8)
    assert math.isclose(eight.compute_flops, 8 * one.compute_flops)
    kv = SHAPE.kv_bytes_per_token()
    # Eight separate requests would read the prompt 8 times: sharing saves 7 prompt reads per step.
    assert math.isclose(8 * one.memory_bytes - eight.memory_bytes, 7 * kv * 2000 * 800)


def test_request_is_kinetics_expectation_over_its_own_lengths() -> None:
    lengths = [100, 900, 2500, 4000]
    request = MODEL.request(prompt_tokens=300, gen_lengths=lengths)
    by_hand = [MODEL.expected(prompt_tokens=300, gen_lengths=[g], samples=4) for g in lengths]
    assert math.isclose(request.eflops, sum(c.eflops for c in by_hand) / 4)


@settings(max_examples=60, deadline=None)
@given(
    prompt=st.integers(0, 5000),
    lengths=st.lists(st.integers(0, 20000), min_size=1, max_size=8),
    which=st.integers(0, 7),
    extra=st.integers(1, 5000),
)
def test_request_cost_is_monotone_in_every_length(
    prompt: int, lengths: list[int], which: int, extra: int
) -> None:
    for model in (MODEL, CostModel(shape=SHAPE, sparse=SparseAttention.block_topk(block_size=16, k=8))):
        before = model.request(prompt_tokens=prompt, gen_lengths=lengths)
        longer = list(lengths)
        longer[which % len(longer)] += extra
        after = model.request(prompt_tokens=prompt, gen_lengths=longer)
        assert after.compute_flops > before.compute_flops
        assert after.eflops > before.eflops


def test_prefill_charges_only_uncached_prompt_tokens() -> None:
    with_prefill = CostModel(shape=SHAPE, prefill=True)
    base = MODEL.request(prompt_tokens=1000, gen_lengths=[10])
    cold = with_prefill.request(prompt_tokens=1000, gen_lengths=[10])
    warm = with_prefill.request(prompt_tokens=1000, gen_lengths=[10], cached_prompt_tokens=1000)
    half = with_prefill.request(prompt_tokens=1000, gen_lengths=[10], cached_prompt_tokens=600)
    assert warm.compute_flops == base.compute_flops
    assert base.compute_flops < half.compute_flops < cold.compute_flops
    a = SHAPE.attention_width
    assert math.isclose(cold.compute_flops - base.compute_flops, 2 * SHAPE.params * 1000 + 2 * a * 1000**2)
    assert cold.memory_bytes == base.memory_bytes  # prefill is compute-bound: no bytes charged


def test_fp8_cache_halves_memory_and_intensity_scales_eflops() -> None:
    fp8 = CostModel(shape=SHAPE, kv_bytes_per_element=1)
    dense, half = (m.expected(prompt_tokens=100, gen_lengths=[5000], samples=4) for m in (MODEL, fp8))
    assert math.isclose(half.memory_bytes, dense.memory_bytes / 2)
    h100 = CostModel(shape=SHAPE, hardware=load_hardware("H100")).expected(
        prompt_tokens=100, gen_lengths=[5000], samples=4
    )
    assert math.isclose(h100.memory_flops / dense.memory_flops, load_hardware("H100").intensity / 562.5)


@pytest.mark.parametrize(
    ("sparse", "lengths", "rows"),
    [
        (SparseAttention.topk(k=256), TOPK256_LENGTHS, TOPK256_ROWS),
        (SparseAttention.block_topk(block_size=32, k=16), BLOCK32X16_LENGTHS, BLOCK32X16_ROWS),
    ],
)
def test_sparse_reproduces_published_kinetics_rows(
    sparse: SparseAttention, lengths: list[int], rows: dict
) -> None:
    model = CostModel(shape=ModelShape.preset("Qwen3-4B", params=4.02e9), sparse=sparse)
    for n, (compute, memory) in rows.items():
        cost = model.expected(prompt_tokens=155, gen_lengths=lengths, samples=n)
        assert math.isclose(cost.compute_flops * 1e-12, compute, rel_tol=1e-9)
        assert math.isclose(cost.memory_flops * 1e-12, memory, rel_tol=1e-9)


@pytest.mark.parametrize("block", [None, 32])
def test_exact_sparse_never_exceeds_dense_and_equals_it_below_the_budget(block: int | None) -> None:
    exact = CostModel(shape=SHAPE, sparse=SparseAttention(budget=1024, block_size=block, convention="exact"))
    published = CostModel(shape=SHAPE, sparse=SparseAttention(budget=1024, block_size=block))
    for g in (10, 500, 869, 5000, 30000):
        sparse_cost = exact.expected(prompt_tokens=155, gen_lengths=[g], samples=1)
        dense_cost = MODEL.expected(prompt_tokens=155, gen_lengths=[g], samples=1)
        assert (
            sparse_cost.memory_bytes
            <= published.expected(prompt_tokens=155, gen_lengths=[g], samples=1).memory_bytes
        )
        if block is None:
            assert sparse_cost.memory_bytes <= dense_cost.memory_bytes * (1 + 1e-12)
            if 155 + g <= 1024:  # the context never reaches the budget: attention is dense
                assert math.isclose(sparse_cost.memory_bytes, dense_cost.memory_bytes)


def test_tree_of_independent_samples_equals_the_group_cost() -> None:
    tree = MODEL.tree(
        prompt_tokens=300, generated_tokens=8 * 1000, unique_kv_tokens=300 + 8 * 1000, depth_tokens=1000
    )
    group = MODEL.expected(prompt_tokens=300, gen_lengths=[1000], samples=8)
    assert math.isclose(tree.compute_flops, group.compute_flops)
    assert math.isclose(tree.memory_bytes, group.memory_bytes)
    # A tree sharing prefixes holds fewer unique tokens than it generated: less memory.
    shared = MODEL.tree(
        prompt_tokens=300, generated_tokens=8000, unique_kv_tokens=300 + 3000, depth_tokens=1000
    )
    assert shared.memory_bytes < tree.memory_bytes
    assert shared.compute_flops == tree.compute_flops
    # A trace of one round is the even-growth model; pruning (a falling trace) reads less.
    traced = MODEL.tree(
        prompt_tokens=300, generated_tokens=8000, unique_kv_tokens=8300, depth_tokens=1000, kv_trace=[8300]
    )
    assert math.isclose(traced.memory_bytes, tree.memory_bytes)
    growing = [300 + 2000 * r for r in range(1, 5)]
    pruned = [2300, 3300, 3300, 3300]
    kv = SHAPE.kv_bytes_per_token()
    for trace in (growing, pruned):
        cost = MODEL.tree(
            prompt_tokens=300,
            generated_tokens=8000,
            unique_kv_tokens=trace[-1],
            depth_tokens=1000,
            kv_trace=trace,
        )
        ends = [300, *trace]
        expected = kv * 250 * sum((ends[r] + ends[r + 1]) / 2 for r in range(4))
        assert math.isclose(cost.memory_bytes, expected)
    with pytest.raises(CostInputError, match="kv_trace must hold KV counts ≥ prompt_tokens = 300"):
        MODEL.tree(
            prompt_tokens=300, generated_tokens=10, unique_kv_tokens=310, depth_tokens=5, kv_trace=[200]
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"unique_kv_tokens": 100}, "unique_kv_tokens must be in"),
        ({"unique_kv_tokens": 300 + 9000}, "unique_kv_tokens must be in"),
        ({"depth_tokens": 0}, "depth_tokens must be in"),
        ({"depth_tokens": 5000}, "depth_tokens must be in"),
    ],
)
def test_tree_rejects_impossible_counts(kwargs: dict, message: str) -> None:
    args = {
        "prompt_tokens": 300,
        "generated_tokens": 8000,
        "unique_kv_tokens": 4300,
        "depth_tokens": 1000,
        **kwargs,
    }
    with pytest.raises(CostInputError, match=message):
        MODEL.tree(**args)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: MODEL.request(prompt_tokens=-1, gen_lengths=[1]),
            "prompt_tokens must be an integer ≥ 0, got -1",
        ),
        (
            lambda: MODEL.request(prompt_tokens=5, gen_lengths=[1], cached_prompt_tokens=6),
            "cached_prompt_tokens must be",
        ),
        (lambda: MODEL.request(prompt_tokens=5, gen_lengths=[-3]), "generated lengths must be ≥ 0"),
        (
            lambda: MODEL.expected(prompt_tokens=5, gen_lengths=[3], samples=0),
            "samples must be an integer ≥ 1, got 0",
        ),
        (lambda: MODEL.expected(prompt_tokens=5, gen_lengths=[], samples=1), "at least one"),
        (lambda: SparseAttention(budget=0), "budget must be an integer ≥ 1, got 0"),
        (lambda: SparseAttention(budget=8, block_size=0), "block_size must be None or an integer ≥ 1, got 0"),
        (
            lambda: CostModel(shape=SHAPE, kv_bytes_per_element=0),
            r"kv_bytes_per_element must be in \(0, 8\], got 0",
        ),
    ],
)
def test_bad_inputs_say_what_is_allowed(call, message: str) -> None:
    with pytest.raises(CostInputError, match=message):
        call()


def test_costs_add_only_at_the_same_intensity() -> None:
    a = Cost(compute_flops=1.0, memory_bytes=2.0, intensity=10.0)
    b = Cost(compute_flops=3.0, memory_bytes=4.0, intensity=10.0)
    assert (a + b).eflops == 4.0 + 60.0
    with pytest.raises(ValueError, match="different I"):
        _ = a + Cost(compute_flops=1.0, memory_bytes=1.0, intensity=5.0)
