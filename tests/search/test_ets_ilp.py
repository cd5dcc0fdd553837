"""ETS's node-selection ILP (ttscale.search.ets_ilp) against brute-force enumeration: pure, no engine.

The brute force below evaluates the objective of the issue with its own code (not the module's
`objective`), over every non-empty subset of candidates of small random trees.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest

from ttscale.search.ets_ilp import TIE_TOLERANCE, objective, select_nodes


def random_tree(rng: random.Random) -> tuple[list[list[int]], dict[int, float]]:
    """Candidates of a random tree of ≤ 4 levels: paths (first step … candidate) and token costs.

    Candidates are any distinct nodes, so one may lie on another's path (a shared ancestor).
    """
    parent: dict[int, int | None] = {}
    costs: dict[int, float] = {}
    for node in range(rng.randint(2, 12)):
        parent[node] = rng.choice([None, *range(node)]) if node else None
        costs[node] = float(rng.randint(1, 40))
    candidates = rng.sample(sorted(parent), rng.randint(1, min(8, len(parent))))
    paths = []
    for node in candidates:
        path: list[int] = []
        current: int | None = node
        while current is not None:
            path.append(current)
            current = parent[current]
        paths.append(path[::-1])
    return paths, costs


def brute_force(
    paths: Sequence[Sequence[int]],
    costs: dict[int, float],
    outcome: Sequence[float],
    clusters: Sequence[int] | None,
    lambda_c: float,
    lambda_s: float,
) -> list[tuple[float, tuple[bool, ...]]]:
    """(objective, selection) of every non-empty subset, written from the issue's formula."""
    union = {node for path in paths for node in path}
    total = sum(costs[node] for node in union)
    k = len(set(clusters)) if clusters is not None else 0
    out = []
    for keep in itertools.product([False, True], repeat=len(paths)):
        if not any(keep):
            continue
        held = {node for path, kept in zip(paths, keep, strict=True) if kept for node in path}
        value = sum(o for o, kept in zip(outcome, keep, strict=True) if kept)
        value -= lambda_c * sum(costs[node] for node in held) / total
        if clusters is not None:
            value += lambda_s / k * len({c for c, kept in zip(clusters, keep, strict=True) if kept})
        out.append((value, keep))
    return out


def rebase_weights(rng: random.Random, n: int) -> list[float]:
    """O_i as ETS feeds them: integer allocations over a width, normalised (zeros included)."""
    width = rng.randint(1, 2 * n)
    counts = [0] * n
    for _ in range(width):
        counts[min(int(rng.expovariate(1.0) * n / 2), n - 1)] += 1
    rng.shuffle(counts)
    return [c / width for c in counts]


@pytest.mark.parametrize("seed", range(80))
def test_ilp_finds_the_brute_force_optimum_and_keeps_the_most_among_ties(seed: int) -> None:
    rng = random.Random(seed)
    paths, costs = random_tree(rng)
    outcome = rebase_weights(rng, len(paths))
    clusters = [rng.randrange(3) for _ in paths] if rng.random() < 0.7 else None
    lambda_c = rng.choice([0.0, 0.5, 1.0, 3.0, rng.uniform(0, 4)])
    lambda_s = rng.choice([0.0, 1.5, rng.uniform(0, 3)])

    selection = select_nodes(
        paths=paths, costs=costs, outcome=outcome, clusters=clusters, lambda_c=lambda_c, lambda_s=lambda_s
    )
    every = brute_force(paths, costs, outcome, clusters, lambda_c, lambda_s)
    best = max(value for value, _ in every)
    assert selection.objective == pytest.approx(best, abs=TIE_TOLERANCE)
    mine = dict((keep, value) for value, keep in every)[selection.keep]
    assert mine == pytest.approx(selection.objective, abs=1e-12)  # the reported value is the selection's own
    most = max(sum(keep) for value, keep in every if value >= best - TIE_TOLERANCE)
    assert sum(selection.keep) == most


@pytest.mark.parametrize("seed", range(40))
def test_the_selection_satisfies_every_constraint(seed: int) -> None:
    rng = random.Random(1000 + seed)
    paths, costs = random_tree(rng)
    outcome = rebase_weights(rng, len(paths))
    clusters = [rng.randrange(4) for _ in paths]
    selection = select_nodes(paths=paths, costs=costs, outcome=outcome, clusters=clusters, lambda_c=2.0, lambda_s=1.5)
    assert sum(selection.keep) >= 1  # Σ x ≥ 1
    # y_j = 1 exactly on the union of the kept paths (y_j ≥ x_i and y_j ≤ Σ x_i under j):
    held = {node for path, kept in zip(paths, selection.keep, strict=True) if kept for node in path}
    union = {node for path in paths for node in path}
    assert selection.kv_share == pytest.approx(sum(costs[j] for j in held) / sum(costs[j] for j in union))
    # z_k = 1 exactly for the clusters with a kept member (z_k ≤ Σ x_i, and z_k pays λ_s/K > 0):
    assert selection.covered == len({c for c, kept in zip(clusters, selection.keep, strict=True) if kept})
    assert selection.clusters == len(set(clusters))


def test_without_a_kv_cost_everything_is_kept_and_with_a_tiny_one_exactly_the_positive_weights() -> None:
    rng = random.Random(7)
    for _ in range(30):
        paths, costs = random_tree(rng)
        outcome = rebase_weights(rng, len(paths))
        free = select_nodes(paths=paths, costs=costs, outcome=outcome, lambda_c=0.0, lambda_s=0.0)
        assert all(free.keep)  # λ_c = 0: nothing gained by pruning, so ETS is REBASE
        if not any(outcome):
            continue
        tiny = select_nodes(paths=paths, costs=costs, outcome=outcome, lambda_c=1e-3, lambda_s=0.0)
        # Positive weights are kept; a zero-weight candidate only when it costs nothing more
        # (it lies on a kept candidate's path, so its KV is held anyway).
        held = {node for path, o in zip(paths, outcome, strict=True) if o > 0 for node in path}
        assert list(tiny.keep) == [o > 0 or path[-1] in held for path, o in zip(paths, outcome, strict=True)]


def test_kv_cost_prefers_candidates_that_share_their_prefix() -> None:
    # a and b are children of p; c hangs alone under q. Equal weights, equal step costs.
    paths = [["p", "a"], ["p", "b"], ["q", "c"]]
    costs = dict.fromkeys(["p", "q", "a", "b", "c"], 10.0)
    outcome = [1 / 3, 1 / 3, 1 / 3]
    # Each costs 10/50 of its own; c also holds q alone (another 10/50). With λ_c = 1.5:
    # keeping c gains 1/3 − 1.5·0.4 < 0, keeping b beside a gains 1/3 − 1.5·0.2 > 0.
    selection = select_nodes(paths=paths, costs=costs, outcome=outcome, lambda_c=1.5, lambda_s=0.0)
    assert selection.keep == (True, True, False)
    assert selection.kv_share == pytest.approx(30 / 50)
    assert selection.objective == pytest.approx(2 / 3 - 1.5 * 0.6)
    # Token costs, not node counts: with a long step under p, the short unshared path wins.
    nodes = dict.fromkeys(costs, 1.0)
    assert select_nodes(paths=paths, costs=nodes, outcome=outcome, lambda_c=1.0, lambda_s=0.0).keep == (
        True,
        True,
        False,
    )
    tokens = {**costs, "a": 40.0}  # a holds 40 of 80 tokens: 1/3 − 50/80 alone, 1/3 − 40/80 beside b
    assert select_nodes(paths=paths, costs=tokens, outcome=outcome, lambda_c=1.0, lambda_s=0.0).keep == (
        False,
        True,
        True,
    )


def test_the_coverage_bonus_keeps_a_lone_cluster_and_only_a_lone_one() -> None:
    paths = [["a"], ["b"], ["c"]]
    costs = {"a": 10.0, "b": 10.0, "c": 10.0}
    outcome = [0.8, 0.2, 0.0]
    # c has no allocation: without the bonus it is pruned (it costs 1/3 of the KV).
    plain = select_nodes(paths=paths, costs=costs, outcome=outcome, lambda_c=1.0, lambda_s=0.0)
    assert plain.keep == (True, False, False)
    # c alone in its cluster: λ_s/K = 1.5/2 outweighs its cost of 1/3, so it is kept for diversity;
    # b shares a's cluster: keeping it adds no coverage, and 0.2 < 1/3, so it stays pruned.
    diverse = select_nodes(paths=paths, costs=costs, outcome=outcome, clusters=[0, 0, 1], lambda_c=1.0, lambda_s=1.5)
    assert diverse.keep == (True, False, True)
    assert diverse.covered == 2 and diverse.clusters == 2
    assert diverse.objective == pytest.approx(0.8 - 2 / 3 + 1.5)
    # In one cluster with a, c brings nothing: pruned again.
    same = select_nodes(paths=paths, costs=costs, outcome=outcome, clusters=[0, 0, 0], lambda_c=1.0, lambda_s=1.5)
    assert same.keep == (True, False, False)


def test_never_prunes_everything() -> None:
    # Every candidate loses money, yet Σ x ≥ 1 keeps the least bad one.
    paths = [["a"], ["b"]]
    selection = select_nodes(paths=paths, costs={"a": 30.0, "b": 10.0}, outcome=[0.0, 0.0], lambda_c=5.0, lambda_s=0.0)
    assert selection.keep == (False, True)
    assert selection.objective == pytest.approx(-5.0 * 0.25)


def test_objective_matches_the_formula_on_a_hand_example() -> None:
    paths = [["p", "a"], ["p", "b"], ["c"]]
    costs = {"p": 20.0, "a": 10.0, "b": 5.0, "c": 5.0}
    value, share, covered = objective(
        (True, False, True),
        paths=paths,
        costs=costs,
        outcome=[0.5, 0.25, 0.25],
        clusters=[0, 1, 1],
        lambda_c=2.0,
        lambda_s=1.0,
    )
    assert share == pytest.approx(35 / 40)
    assert covered == 2
    assert value == pytest.approx(0.75 - 2.0 * 35 / 40 + 1.0)


def test_empty_and_single_frontiers() -> None:
    assert select_nodes(paths=[], costs={}, outcome=[], lambda_c=1.0, lambda_s=1.0).keep == ()
    one = select_nodes(paths=[["a"]], costs={"a": 3.0}, outcome=[0.0], lambda_c=9.0, lambda_s=0.0)
    assert one.keep == (True,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"outcome": [1.0, 0.0]}, r"outcome needs one weight per candidate \(1\), got 2"),
        ({"clusters": [0, 1]}, r"clusters needs one label per candidate \(1\), got 2"),
        ({"paths": [[]]}, "at least the candidate itself"),
        ({"costs": {}}, "costs has no entry"),
        ({"costs": {"a": -1.0}}, "costs must be finite and ≥ 0"),
        ({"outcome": [-0.5]}, "outcome weights must be finite and ≥ 0"),
        ({"lambda_c": -1.0}, "lambda_c must be ≥ 0, got -1.0"),
        ({"lambda_s": float("nan")}, "lambda_s must be ≥ 0, got nan"),
    ],
)
def test_bad_inputs_are_refused(kwargs: dict, message: str) -> None:
    args: dict = {"paths": [["a"]], "costs": {"a": 1.0}, "outcome": [1.0], "lambda_c": 1.0, "lambda_s": 0.0}
    with pytest.raises(ValueError, match=message):
        select_nodes(**{**args, **kwargs})
