"""The Search object on the SIMULATED policy (ttscale.testing.policy): batching, prefixes, budget, stats."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ttscale.schema import Answer
from ttscale.search import Search, SearchParams
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context
from ttscale.verifiers.loading import load_verifier


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def searching(ctx: Any, p: SearchParams) -> Search:
    """A search scored by the verifier `p` names, loaded as a strategy loads it (search never loads one)."""
    return Search(ctx, p, verifier=load_verifier(p.verifier))


def test_expansion_sends_every_parent_at_once_and_merges_duplicates() -> None:
    policy = SimulatedArithmeticPolicy(seed=1)
    ctx = make_context(policy, "5k")
    search = searching(ctx, SearchParams())

    async def go() -> list[list[Any]]:
        (first,) = await search.expand([search.root], 3)
        open_ = [node for node in first if not node.terminal]
        assert len(open_) == 3
        policy.requests.clear()
        policy.peak_in_flight = 0
        a, b, c = open_
        return await search.expand([a, b, a, c], [2, 1, 3, 1])

    groups = run(go())
    assert [len(g) for g in groups] == [2, 1, 3, 1]
    assert policy.peak_in_flight == 3  # three distinct parents, three requests in flight together
    assert sorted(r["n"] for r in policy.requests) == [1, 1, 5]  # `a` listed twice: one request, n = 2 + 3
    assert {id(child) for child in groups[0]}.isdisjoint({id(child) for child in groups[2]})
    a = groups[0][0].parent
    assert all(child.parent is a for child in groups[0] + groups[2])


def test_each_expansion_records_the_kv_of_children_expanded_parents_and_live_nodes() -> None:
    policy = SimulatedArithmeticPolicy(seed=6, p_intro=0.0, p_correct=0.3)
    ctx = make_context(policy, "5k")
    search = searching(ctx, SearchParams())
    tree = search.tree

    async def go() -> None:
        (first,) = await search.expand([search.root], 8)
        assert tree.kv_per_step == [tree.unique_tokens(first)]
        distinct = list({node.token_ids: node for node in first if not node.terminal}.values())
        a, b, c = distinct[:3]  # three different first steps ("E = v" with different v)
        (kids_a, kids_b) = await search.expand([a, b], [2, 0])  # b is pruned: its KV is not held
        assert kids_b == [] and tree.kv_per_step[-1] == tree.unique_tokens(kids_a)
        assert tree.kv_per_step[-1] < tree.unique_tokens([*kids_a, b])
        (kids_c,) = await search.expand([c], 1, live=[b])  # b kept for later (an open list)
        assert tree.kv_per_step[-1] == tree.unique_tokens([*kids_c, b])

    run(go())
    stats = ctx.ledger.to_dict()["tree"]
    assert stats["steps"] == 3 and stats["peak_unique_kv_tokens"] == max(tree.kv_per_step)


def test_child_prompts_are_exact_parent_prefixes_and_hit_the_cache() -> None:
    policy = SimulatedArithmeticPolicy(seed=2, p_intro=1.0)  # first step is always "We need …": never terminal
    ctx = make_context(policy, "5k")
    search = searching(ctx, SearchParams())

    async def go() -> None:
        (first,) = await search.expand([search.root], 2)
        await search.expand(first, 2)

    run(go())
    root_ids = ctx.prompt()
    for request in policy.requests[1:]:
        prompt = request["prompt"]
        assert prompt[: len(root_ids)] == root_ids
        parent = next(n for n in search.tree.nodes if search.tree.path_ids(n) == prompt)
        assert parent.depth == 1 and request["stop"] == ("\n\n",)
        assert request["cached"] > 0
    stats = ctx.ledger.to_dict()["tree"]
    assert stats["expansion_requests"] == 3
    assert stats["expansion_cached_prompt_tokens"] == sum(r["cached"] for r in policy.requests)
    assert stats["expansion_prompt_tokens"] == sum(len(r["prompt"]) for r in policy.requests)


def test_path_limits_end_nodes_and_caps_step_requests() -> None:
    policy = SimulatedArithmeticPolicy(seed=3, p_intro=1.0)
    ctx = make_context(policy, "5k")
    search = searching(ctx, SearchParams(max_tokens=40, step_tokens=12, max_steps=2))

    async def go() -> list[Any]:
        frontier = [search.root]
        while frontier:
            groups = await search.expand(frontier, 1)
            frontier = [c for g in groups for c in g if not c.terminal]
        return [n for n in search.tree.nodes if n.parent is not None]

    nodes = run(go())
    assert all(r["max_tokens"] <= 12 for r in policy.requests)
    assert all(node.generated <= 40 and node.depth <= 2 for node in nodes)
    leaves = [n for n in nodes if not n.children]
    assert leaves and all(leaf.terminal for leaf in leaves)
    assert any(leaf.finish == "length" for leaf in leaves)


def test_score_calls_the_verifier_once_per_batch_and_never_twice_per_node() -> None:
    policy = SimulatedArithmeticPolicy(seed=4)
    ctx = make_context(policy, "5k")
    search = searching(ctx, SearchParams(aggregate="min"))

    async def go() -> tuple[list[float], list[float]]:
        (first,) = await search.expand([search.root], 4)
        values = await search.score(first)
        again = await search.score([*first, *first])
        return values, again

    values, again = run(go())
    assert again == values + values
    stats = ctx.ledger.to_dict()["tree"]
    assert (stats["verifier_calls"], stats["verifier_candidates"]) == (1, 4)
    assert all(v in (0.0, 0.5, 1.0) for v in values)


class _OutOfRange:
    name = "broken"

    async def score_steps(self, ctx: Any, candidates: Any) -> list[list[float]]:
        return [[1.5] * len(c) for c in candidates]

    async def score_outcomes(self, ctx: Any, solutions: Any) -> list[float]:
        return [1.5 for _ in solutions]


def test_a_verifier_out_of_range_is_refused() -> None:
    ctx = make_context(SimulatedArithmeticPolicy(), "5k")
    search = Search(ctx, SearchParams(), verifier=_OutOfRange())

    async def go() -> None:
        (first,) = await search.expand([search.root], 1)
        await search.score(first)

    with pytest.raises(ValueError, match=r"scores in \[0, 1\]"):
        run(go())


def test_budget_caps_expansions_and_the_ledger_sees_every_token() -> None:
    policy = SimulatedArithmeticPolicy(seed=5, p_intro=1.0)
    ctx = make_context(policy, 50)
    search = searching(ctx, SearchParams(step_tokens=30))

    async def go() -> None:
        frontier = [search.root]
        while frontier and search.can_expand:
            groups = await search.expand(frontier, 2)
            frontier = [c for g in groups for c in g if not c.terminal][:2]

    run(go())
    ledger = ctx.ledger.to_dict()
    assert ledger["spent"] <= 50 and not search.can_expand
    assert ledger["generated_tokens"] == policy.generated_tokens
    assert ledger["capped_requests"] >= 1
    assert ledger["tree"]["nodes"] == sum(len(n.children) for n in search.tree.nodes)


def _answer(select: str, values: list[tuple[str, float]]) -> Answer:
    ctx = make_context(SimulatedArithmeticPolicy(), "5k")
    search = searching(ctx, SearchParams(select=select))  # type: ignore[arg-type]
    nodes = []
    for text, value in values:
        node = search.tree.add(search.root, search.ctx.engine.tokenize(text), text=text, finish="stop")
        node.step_scores, node.value = (value,), value
        nodes.append(node)
    return run(search.answer(nodes))


def test_answer_selection_modes() -> None:
    values = [("The answer is 7.", 0.9), ("The answer is 8.", 0.6), ("The answer is 8.", 0.5)]
    assert _answer("best", values).prediction == "7"
    assert _answer("majority", values).prediction == "8"
    assert _answer("weighted", values).prediction == "8"  # 1.1 > 0.9
    answer = _answer("weighted", values)
    assert answer.info["votes"] == {"7": 0.9, "8": 1.1}
    assert [s.score for s in answer.samples] == [0.9, 0.6, 0.5]
    assert all(s.finish_reason == "stop" and s.num_tokens == len(s.text) for s in answer.samples)


def test_answer_prefers_complete_solutions_and_falls_back_to_partial_ones() -> None:
    ctx = make_context(SimulatedArithmeticPolicy(), "5k")
    search = searching(ctx, SearchParams(select="best"))
    ids = search.ctx.engine.tokenize
    partial = search.tree.add(search.root, ids("3 + 4 = 7\n\n"), text="3 + 4 = 7", separator="\n\n")
    done = search.tree.add(search.root, ids("3 + 4 = 8"), text="3 + 4 = 8", finish="stop")
    both = run(search.answer([partial, done]))
    assert both.prediction == "8" and len(both.samples) == 1  # the complete one, though scored lower
    only_partial = run(search.answer([partial]))
    assert only_partial.prediction == "7" and only_partial.samples[0].finish_reason == "length"
    assert run(search.answer([])).prediction is None


def test_params_validate_with_readable_messages() -> None:
    assert SearchParams(delimiter="\\n").delimiter == "\n"
    with pytest.raises(ValueError, match="step_tokens must be ≥ 1, got 0"):
        SearchParams(step_tokens=0)
    with pytest.raises(ValueError, match=r"temperature must be in \(0, 10\]"):
        SearchParams(temperature=0)
    with pytest.raises(ValueError, match="verifier options must look like key=value, got 'noise'"):
        SearchParams(verifier="noisy_oracle:noise")  # the spec's form; its name is the strategy's to check
    with pytest.raises(ValueError, match="select must be one of"):
        SearchParams(select="first")  # type: ignore[arg-type]


class _Recording:
    """Scores the i-th step of every path 0.9, 0.2, 0.8, 0.9, ... and keeps the paths it was shown."""

    name = "recording"

    def __init__(self) -> None:
        self.paths: list[list[str]] = []

    async def score_steps(self, ctx: Any, candidates: Any) -> list[list[float]]:
        self.paths.extend(list(c) for c in candidates)
        return [[(0.9, 0.2, 0.8)[i % 3] for i in range(len(c))] for c in candidates]

    async def score_outcomes(self, ctx: Any, solutions: Any) -> list[float]:
        return [0.5 for _ in solutions]


@pytest.mark.parametrize(("rule", "expected"), [("last", None), ("min", 0.2), ("mean", None)])
def test_a_node_run_to_the_end_is_scored_step_by_step(rule: str, expected: float | None) -> None:
    from ttscale.search.score import aggregate
    from ttscale.search.steps import split_steps

    verifier = _Recording()
    ctx = make_context(SimulatedArithmeticPolicy(seed=2, p_intro=1.0, p_recheck=1.0), "5k")
    search = Search(ctx, SearchParams(aggregate=rule), verifier=verifier)

    async def go() -> list[Any]:
        (first,) = await search.expand([search.root], 1)  # one step ...
        (ends,) = await search.expand(first, 2, to_end=True)  # ... then each path to its end in one request
        await search.score(ends)
        return list(ends)

    ends = run(go())
    assert ends and all(node.depth == 2 for node in ends)
    for node, path in zip(ends, verifier.paths, strict=True):
        pieces = split_steps(node.text, delimiter="\n\n")
        assert len(pieces) >= 2 and path == [node.parent.text, *pieces]  # the last node is several steps
        assert node.step_scores == tuple((0.9, 0.2, 0.8)[i % 3] for i in range(len(path)))
        assert node.value == aggregate(node.step_scores, rule)
        if expected is not None:
            assert node.value == expected
