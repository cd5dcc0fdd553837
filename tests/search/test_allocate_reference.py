"""REBASE's child allocation against hand computations of the reference code's rule.

The rule (thu-wyz/inference_scaling and SqueezeAILab/ETS, `rebase.py`, `select_softmax`): sort the
nodes by score, highest first (equal scores: the later node first, from an ascending sort then
`reverse()`); with w = exp(score / T) and W the width left, each node in turn gets
ceil(W · w_j / Σ w over the nodes not served yet), which is taken from W. ETS's outcome weights
(`select_softmax_costmodel`) use the same loop with equal scores served earlier-first.

Each example's comment is the hand computation (w to 4 digits). The rounding they replaced,
largest remainders of the softmax shares, gives another answer in every example but the last three
(no width, one node, and the float-noise guard); it is quoted as "was".
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import pytest

from ttscale.kit.context import Context
from ttscale.kit.params import params_class, parse_params
from ttscale.search import Node, Search, allocate
from ttscale.strategies import STRATEGIES
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context


def test_the_issue_example_gives_the_best_node_two_and_a_tied_node_none() -> None:
    # w = exp([.9, .8, .8] / .2) = [90.02, 54.60, 54.60], Σ = 199.2; serve 0, then 2 (tie: later first), then 1.
    # node 0: ceil(3 · 90.02 / 199.2) = ceil(1.356) = 2, W = 1, Σ = 109.2
    # node 2: ceil(1 · 54.60 / 109.2) = ceil(0.5) = 1, W = 0;  node 1: 0.   (was [1, 1, 1])
    assert allocate([0.9, 0.8, 0.8], 3, temperature=0.2) == [2, 0, 1]
    # ETS's outcome order serves node 1 before node 2: [2, 1, 0].
    assert allocate([0.9, 0.8, 0.8], 3, temperature=0.2, ties="earlier") == [2, 1, 0]


def test_equal_scores_fill_from_the_last_node() -> None:
    # Four equal scores, W = 6: every w = e^0.5 = 1.649 and Σ = 4 w; served 3, 2, 1, 0.
    # node 3: ceil(6 · 1/4) = ceil(1.5) = 2, W = 4;  node 2: ceil(4 · 1/3) = ceil(1.33) = 2, W = 2;
    # node 1: ceil(2 · 1/2) = 1, W = 1;  node 0: ceil(1 · 1/1) = 1.   (was [2, 2, 1, 1])
    assert allocate([0.5, 0.5, 0.5, 0.5], 6, temperature=1.0) == [1, 1, 2, 2]
    assert allocate([0.5, 0.5, 0.5, 0.5], 6, temperature=1.0, ties="earlier") == [2, 2, 1, 1]


def test_a_high_temperature_spreads_children_over_every_node() -> None:
    # T = 10: w = exp([.9, .1, .5, .3] / 10) = [1.094, 1.010, 1.051, 1.030], Σ = 4.186; served 0, 2, 3, 1.
    # node 0: ceil(10 · 1.094 / 4.186) = ceil(2.614) = 3, W = 7, Σ = 3.092
    # node 2: ceil(7 · 1.051 / 3.092) = ceil(2.380) = 3, W = 4, Σ = 2.041
    # node 3: ceil(4 · 1.030 / 2.041) = ceil(2.020) = 3, W = 1;  node 1: ceil(1 · 1) = 1.   (was [3, 2, 3, 2])
    assert allocate([0.9, 0.1, 0.5, 0.3], 10, temperature=10.0) == [3, 1, 3, 3]


def test_a_width_below_the_node_count_goes_to_the_head() -> None:
    # W = 2 over 4 nodes, T = .2: w = exp([.6, 1, .9, 0] / .2) = [20.09, 148.4, 90.02, 1], Σ = 259.5.
    # node 1 (best): ceil(2 · 148.4 / 259.5) = ceil(1.144) = 2, W = 0; the others get none.   (was [0, 1, 1, 0])
    assert allocate([0.6, 1.0, 0.9, 0.0], 2, temperature=0.2) == [0, 2, 0, 0]
    # T = .5, W = 8: w = exp([1, .5, 0] / .5) = [7.389, 2.718, 1], Σ = 11.11;
    # ceil(8 · 7.389 / 11.11) = ceil(5.32) = 6, W = 2;  ceil(2 · 2.718 / 3.718) = ceil(1.46) = 2, W = 0.
    # (was [5, 2, 1])
    assert allocate([1.0, 0.5, 0.0], 8, temperature=0.5) == [6, 2, 0]


def test_no_width_one_node_and_the_float_guard() -> None:
    assert allocate([0.3, 0.7], 0, temperature=1.0) == [0, 0]  # W = 0: ceil(0 · …) = 0 for every node
    assert allocate([0.42], 5, temperature=1.0) == [5]  # one node: ceil(5 · w / w) = 5
    # w = [3, 1, 1] (scores ln 3, 0, 0 at T = 1), W = 5: node 0's share is exactly 5 · 3/5 = 3, which floats
    # compute as 3.0000000000000004; ceil must still give 3, leaving node 2 ceil(2 · 1/2) = 1 and node 1 1.
    assert allocate([math.log(3), 0.0, 0.0], 5, temperature=1.0) == [3, 1, 1]
    # Scores far apart at a low T: exp(5000) would overflow, the shifted weights [1, e^-100] do not.
    assert allocate([50.0, 49.0], 4, temperature=0.01) == [4, 0]


# -- the strategies use it: one round on the simulated policy with scripted step scores ---------------------------

FIRST_STEP_SCORES = [0.9, 0.8, 0.8]


class ScriptedVerifier:
    """Scores the first frontier FIRST_STEP_SCORES in order; every later step 0.5."""

    def __init__(self) -> None:
        self.calls = 0

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 1:
            assert all(len(steps) == 1 for steps in candidates)
            return [[score] for score in FIRST_STEP_SCORES]
        return [[0.5] * len(steps) for steps in candidates]

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        return [0.5] * len(solutions)


@pytest.mark.parametrize(
    ("name", "params", "children", "kept"),
    [
        # REBASE: the issue example, [2, 0, 1]; the middle node is not expanded.
        ("rebase", {}, [2, 0, 1], 3),
        # ETS with nothing to gain by pruning keeps all three and allocates as REBASE.
        ("ets", {"lambda_c": 0, "lambda_s": 0}, [2, 0, 1], 3),
        # ETS: O = [2, 1, 0] / 3 (ties earlier-first), node costs 1/3 each: keeping {0, 1} scores
        # 1 − 0.9 · 2/3 = 0.4, above {0} (0.367) and all (0.1), so node 2 is pruned; the 3 children
        # then go over [.9, .8]: ceil(3 · 90.02 / 144.6) = ceil(1.87) = 2, then 1.
        # (Equal outcome weights of 1/3, as before, kept all three: each node added 1/3 − 0.3 > 0.)
        ("ets", {"lambda_c": 0.9, "lambda_s": 0, "kv_cost": "nodes"}, [2, 1, 0], 2),
    ],
)
def test_tree_strategies_give_each_node_the_reference_children(
    name: str, params: dict[str, Any], children: list[int], kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = ScriptedVerifier()
    monkeypatch.setattr("ttscale.blocks.verified.load_verifier", lambda spec: verifier)  # open_search loads it
    expansions: list[tuple[list[Node], Any]] = []
    expand = Search.expand

    async def recording(self: Search, parents: Sequence[Node], n: Any = 1, **kwargs: Any) -> list[list[Node]]:
        expansions.append((list(parents), n))
        return await expand(self, parents, n, **kwargs)

    monkeypatch.setattr(Search, "expand", recording)
    # p_intro = 1: every first step is "We need …", never an end; max_steps = 2 ends every second step.
    sim = SimulatedArithmeticPolicy(seed=0, p_intro=1.0)
    ctx = make_context(sim, "4k")
    fn = STRATEGIES.get(name)
    p = parse_params(params_class(fn), {"n": "3", "temperature_b": "0.2", "max_steps": "2",
                                        **{k: str(v) for k, v in params.items()}})
    answer = asyncio.run(fn(ctx.problem, ctx, p))

    (root_call, round_call) = expansions
    assert root_call[1] == 3
    first = root_call[0][0].children
    assert len(first) == 3 and not any(node.terminal for node in first)
    assert [len(node.children) for node in first] == children
    assert sum(children) == 3 and [r["n"] for r in sim.requests[1:]] == [c for c in children if c]
    assert len(round_call[0]) == kept and sum(round_call[1]) == 3  # the allocation was over the kept nodes
    if name == "ets":
        assert answer.info["rounds"][0]["kept"] == kept
