"""Budget truthfulness of EVERY registered strategy, on the SIMULATED policy (ttscale.testing.policy).

For random budgets and path lengths: the ledger never passes the budget, and it reports exactly
the tokens the policy produced (search-and-learn's beam search reports 0 and its DVTS −1; a
strategy here can report neither, because the only door to the engine is the metered one).
The simulator makes each example take milliseconds; the same properties on vLLM are checked,
for fewer cases, in test_engine_search.py.
"""

from __future__ import annotations

import asyncio
import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ttscale.evals.stateful import StatefulArithmeticTask
from ttscale.kit.params import params_class, parse_params
from ttscale.strategies import STRATEGIES
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context

#: Strategies that need a code task (the simulator here writes arithmetic): their budget property is tested on the
#: simulated code policy beside them (tests/strategies/test_generated_tests.py).
CODE_ONLY = {"generated_tests"}
NAMES = [name for name in STRATEGIES.names() if name not in CODE_ONLY]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    budget=st.integers(1, 4000),
    max_tokens=st.integers(1, 300),
    step_tokens=st.integers(1, 64),
    seed=st.integers(0, 10_000),
    index=st.integers(0, 59),
)
def test_no_strategy_ever_exceeds_its_budget_or_misreports_tokens(
    name: str, budget: int, max_tokens: int, step_tokens: int, seed: int, index: int
) -> None:
    fn = STRATEGIES.get(name)
    cls = params_class(fn)
    fields = {f.name for f in dataclasses.fields(cls)}
    raw = {"max_tokens": str(max_tokens)} if "max_tokens" in fields else {}
    if "step_tokens" in fields:
        raw["step_tokens"] = str(step_tokens)
    if "sleep_tokens" in fields:  # several rethink passes, and each way of answering (sleep-time compute)
        raw.update(sleep_tokens=str(4 * step_tokens), rethink_tokens=str(step_tokens),
                   test_time=("verbosity", "pass_at_k", "vote")[seed % 3])
    sim = SimulatedArithmeticPolicy(seed=seed)
    # Sleep-time compute needs a context per problem: the stateful arithmetic task gives one.
    task = StatefulArithmeticTask(levels=(1, 2), per_level=10, queries=3) if name == "sleep_time" else None
    ctx = make_context(sim, budget, problem_index=index, task=task)
    answer = asyncio.run(fn(ctx.problem, ctx, parse_params(cls, raw)))
    ledger = ctx.ledger.to_dict()
    assert ledger["spent"] <= budget
    # A shared stage (sleep-time notes) is metered on a ledger of its own, within its own budget.
    staged = sum(int(r.ledger["generated_tokens"]) for r in ctx.stages.results())
    assert all(r.ledger["generated_tokens"] <= r.ledger["budget"] for r in ctx.stages.results())
    assert ledger["generated_tokens"] + staged == sim.generated_tokens
    assert ctx.ledger.reserved == 0  # nothing left in flight
    if name in ("budget_forcing", "no_thinking", "revision"):  # sequential: every token metered by its phase
        assert ledger.get("thinking_tokens", 0) + ledger.get("answer_tokens", 0) == ledger["generated_tokens"]
    if name == "sleep_time":  # the query's ledger: test-time tokens only
        assert ledger.get("test_tokens", 0) == ledger["generated_tokens"]
    assert all(0 < s.num_tokens <= max(max_tokens, 1) for s in answer.samples if "max_tokens" in fields)
    if "tree" in ledger:
        tree = ledger["tree"]
        assert tree["peak_unique_kv_tokens"] >= max(tree["unique_kv_tokens_per_step"], default=0)
        assert tree["nodes"] == sum(tree["nodes_per_depth"])
        assert tree["expansion_requests"] == ledger["calls"] - ledger["verifier"]["calls"]


def test_every_registered_strategy_is_covered() -> None:
    assert {
        "best_of_n",
        "self_consistency",
        "beam",
        "dvts",
        "rebase",
        "ets",
        "astar",
        "particle_filter",
        "genrm",
    } <= set(NAMES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    strategy=st.sampled_from(["best_of_n", "beam"]),
    budget=st.integers(1, 4000),
    samples=st.integers(1, 4),
    verify_tokens=st.integers(1, 200),
    meta=st.booleans(),
    seed=st.integers(0, 10_000),
    index=st.integers(0, 59),
)
def test_the_grm_verifier_keeps_the_budget_and_reports_every_token(
    strategy: str, budget: int, samples: int, verify_tokens: int, meta: bool, seed: int, index: int
) -> None:
    """DeepSeek-GRM (issue 61) as the verifier of best-of-N and beam: its samples, and its meta RM's judgements, are
    verifier work on the same ledger, within the same budget."""
    fn = STRATEGIES.get(strategy)
    spec = f"grm:samples={samples},max_tokens={verify_tokens}" + (",meta=llm_judge" if meta else "")
    raw = {"verifier": spec, "max_tokens": "48"}
    if strategy == "beam":
        raw.update(step_tokens="16", n="2", width="2")
    sim = SimulatedArithmeticPolicy(seed=seed)
    ctx = make_context(sim, budget, problem_index=index)
    asyncio.run(fn(ctx.problem, ctx, parse_params(params_class(fn), raw)))
    ledger = ctx.ledger.to_dict()
    assert ledger["spent"] <= budget and ledger["generated_tokens"] == sim.generated_tokens
    assert ctx.ledger.reserved == 0
