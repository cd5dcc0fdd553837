from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttscale.budget import Budget, BudgetError, Ledger, TokenMeter
from ttscale.schema import Completion, Generation, SamplingParams


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("8k", 8000),
        ("8000", 8000),
        ("1.5M", 1_500_000),
        ("2K", 2000),
        (" 500 ", 500),
        ("8ktokens", 8000),
        (".5k", 500),
        ("512Tokens", 512),  # T starts the unit in a budget, not a multiplier
        ("2kt", 2000),
        (300, 300),
    ],
)
def test_parse_token_budgets(text: str | int, limit: int) -> None:
    budget = Budget.parse(text)
    assert budget.limit == limit
    assert budget.unit == "tokens"


@pytest.mark.parametrize("text", ["8q", "-1", "0", "1e999", "", "k", "abc", "1.5", "nan", "8k8", "--5", "1T"])
def test_bad_budgets_are_refused_with_one_line(text: str) -> None:
    with pytest.raises(BudgetError) as info:
        Budget.parse(text)
    message = str(info.value)
    assert "\n" not in message and message


def fake_generation(params: SamplingParams, rng: random.Random, prompt_tokens: int = 10) -> Generation:
    """What an engine obeying max_tokens may return: n samples of 1..max_tokens tokens."""
    return Generation(
        completions=tuple(
            Completion(text="x", token_ids=tuple(range(rng.randint(1, params.max_tokens)))) for _ in range(params.n)
        ),
        prompt_tokens=prompt_tokens,
    )


@settings(max_examples=300, deadline=None)
@given(
    limit=st.integers(min_value=1, max_value=20_000),
    requests=st.lists(st.tuples(st.integers(1, 64), st.integers(1, 4096), st.booleans()), min_size=1, max_size=40),
    seed=st.integers(0, 2**16),
)
def test_ledger_never_exceeds_budget(limit: int, requests: list[tuple[int, int, bool]], seed: int) -> None:
    """Random requests, some held in flight together before they settle: the budget is never passed."""
    rng = random.Random(seed)
    ledger = Ledger(Budget(limit=limit))
    in_flight = []
    for n, max_tokens, settle_now in requests:
        reservation = ledger.reserve(SamplingParams(n=n, max_tokens=max_tokens), prompt_tokens=10)
        if reservation is None:
            assert ledger.remaining < 1
            continue
        assert reservation.params.n <= n and reservation.params.max_tokens <= max_tokens
        assert ledger.spent + ledger.reserved <= limit
        in_flight.append(reservation)
        if settle_now:
            for r in in_flight:
                ledger.settle(r, fake_generation(r.params, rng))
            in_flight.clear()
    for r in in_flight:
        ledger.settle(r, fake_generation(r.params, rng))
    assert ledger.reserved == 0
    assert ledger.spent <= limit
    assert ledger.to_dict()["generated_tokens"] == ledger.spent


def test_ledger_caps_to_what_is_left_then_is_exhausted() -> None:
    ledger = Ledger(Budget.parse("100"))
    r = ledger.reserve(SamplingParams(n=4, max_tokens=50), prompt_tokens=5)
    assert r is not None and r.params.n == 4 and r.params.max_tokens == 25
    ledger.settle(r, fake_generation(SamplingParams(n=4, max_tokens=25), random.Random(0)))
    while not ledger.exhausted:
        r = ledger.reserve(SamplingParams(n=1, max_tokens=1000), prompt_tokens=5)
        assert r is not None
        ledger.settle(
            r,
            Generation(completions=(Completion(text="", token_ids=(1,) * r.params.max_tokens),), prompt_tokens=5),
        )
    assert ledger.spent == 100
    assert ledger.reserve(SamplingParams(n=1, max_tokens=1), prompt_tokens=5) is None
    assert ledger.to_dict()["refused_requests"] == 1


def test_ledger_lowers_n_when_not_one_token_each_fits() -> None:
    ledger = Ledger(Budget(limit=3))
    r = ledger.reserve(SamplingParams(n=8, max_tokens=10), prompt_tokens=1)
    assert r is not None
    assert r.params.n * r.params.max_tokens <= 3 and r.params.n >= 1


def test_settle_refuses_an_engine_that_ignores_max_tokens() -> None:
    ledger = Ledger(Budget(limit=10))
    r = ledger.reserve(SamplingParams(n=1, max_tokens=5), prompt_tokens=1)
    assert r is not None
    too_long = Generation(completions=(Completion(text="", token_ids=(1,) * 6),), prompt_tokens=1)
    with pytest.raises(RuntimeError, match="more than was reserved"):
        ledger.settle(r, too_long)


def test_affordable_samples() -> None:
    ledger = Ledger(Budget.parse("8k"))
    assert ledger.affordable_samples(256) == 31
    assert ledger.affordable_samples(8001) == 0


class CountingCost:
    """A cost model stand-in for the ledger's pricing hook: one unit per prompt and per generated token."""

    def breakdown(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: list[int]) -> dict[str, float]:
        return {"flops": float(prompt_tokens - cached_prompt_tokens + sum(gen_lengths)), "eflops": 1.0}


def test_ledger_prices_every_request_for_the_record() -> None:
    ledger = Ledger(Budget.parse("1k"), costing=CountingCost())
    for _ in range(3):
        r = ledger.reserve(SamplingParams(n=2, max_tokens=10), prompt_tokens=7)
        assert r is not None
        ledger.settle(
            r,
            Generation(
                completions=(Completion(text="", token_ids=(1, 2)),) * 2, prompt_tokens=7, cached_prompt_tokens=3
            ),
        )
    record = ledger.to_dict()
    assert record["flops"] == 3 * (4 + 4) and record["eflops"] == 3.0
    assert record["generated_tokens"] == 12 == ledger.spent


def test_flop_budgets_parse_and_meter_in_their_unit() -> None:
    import json
    from pathlib import Path

    budget = Budget.parse("3e12eflop")
    assert (budget.unit, budget.limit) == ("eflop", 3e12)
    config = json.loads((Path(__file__).parent / "data" / "smollm2_config.json").read_text())
    ledger = Ledger(budget, meter=budget.meter(model_config=config, hardware="B200"))
    rng = random.Random(0)
    while True:
        r = ledger.reserve(SamplingParams(n=4, max_tokens=512), prompt_tokens=60)
        if r is None:
            break
        ledger.settle(r, fake_generation(r.params, rng, prompt_tokens=60))
    assert 0 < ledger.spent <= 3e12
    assert ledger.exhausted or ledger.remaining < ledger.meter.cost(
        prompt_tokens=60, cached_prompt_tokens=0, gen_lengths=[1]
    )


@settings(max_examples=100, deadline=None)
@given(
    total=st.integers(min_value=1, max_value=5_000),
    per_problem=st.integers(min_value=1, max_value=3_000),
    requests=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 16), st.integers(1, 512)), min_size=1, max_size=60),
    seed=st.integers(0, 2**16),
)
def test_a_pool_caps_the_sum_over_problems(
    total: int, per_problem: int, requests: list[tuple[int, int, int]], seed: int
) -> None:
    """A total budget shared by problems (each with its own cap) is never passed, nor any problem's cap."""
    rng = random.Random(seed)
    pool = Ledger(Budget(limit=total))
    problems = [Ledger(Budget(limit=per_problem), pool=pool) for _ in range(6)]
    for which, n, max_tokens in requests:
        ledger = problems[which]
        r = ledger.reserve(SamplingParams(n=n, max_tokens=max_tokens), prompt_tokens=3)
        if r is not None:
            assert r.params is not None
            ledger.settle(r, fake_generation(r.params, rng))
        assert all(p.spent <= per_problem for p in problems)
        assert pool.spent == sum(p.spent for p in problems) <= total
    assert pool.reserved == 0


def test_pool_units_must_match() -> None:
    with pytest.raises(BudgetError, match="cannot fund"):
        Ledger(Budget(limit=10), pool=Ledger(Budget.parse("3e12eflop"), meter=TokenMeter()))


def test_a_view_is_computed_when_the_record_is_written() -> None:
    ledger = Ledger(Budget(limit=10))
    state = {"rounds": 0}
    ledger.views["tree"] = lambda: dict(state)
    ledger.tally("verifier_calls")
    state["rounds"] = 3  # the view reads the state of the moment the record is written, not of registration
    record = ledger.to_dict()
    assert record["tree"] == {"rounds": 3} and record["verifier_calls"] == 1
    state["rounds"] = 4
    assert ledger.to_dict()["tree"] == {"rounds": 4}


def _spend(ledger: Ledger, tokens: int) -> None:
    r = ledger.reserve(SamplingParams(n=1, max_tokens=tokens), prompt_tokens=1)
    assert r is not None and r.params.max_tokens == tokens
    ledger.settle(r, Generation(completions=(Completion(text="", token_ids=(1,) * tokens),), prompt_tokens=1))


def test_one_token_left_is_not_exhausted_and_buys_exactly_one_token() -> None:
    """The edge `exhausted` is about: with one token left a request still fits (`>` vs `>=`)."""
    ledger = Ledger(Budget(limit=10))
    _spend(ledger, 9)
    assert ledger.remaining == 1 and not ledger.exhausted
    r = ledger.reserve(SamplingParams(n=3, max_tokens=50), prompt_tokens=1)
    assert r is not None and (r.params.n, r.params.max_tokens) == (1, 1)
    ledger.settle(r, Generation(completions=(Completion(text="", token_ids=(1,)),), prompt_tokens=1))
    assert ledger.exhausted and ledger.spent == 10


class PrefillMeter:
    """A meter that charges one unit per prompt token and per generated token (a FLOP unit's shape)."""

    unit = "units"

    def cost(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: list[int]) -> float:
        return float(prompt_tokens - cached_prompt_tokens + sum(gen_lengths))


def test_a_scoring_request_that_costs_exactly_what_is_left_fits() -> None:
    """`reserve_prompt`'s bound: a prompt whose prefill is the whole remainder is reserved, one more is refused."""
    ledger = Ledger(Budget(limit=10), meter=PrefillMeter())
    assert ledger.reserve_prompt(prompt_tokens=11) is None and ledger.refused_requests == 1
    r = ledger.reserve_prompt(prompt_tokens=10)
    assert r is not None and r.amount == 10 and ledger.remaining == 0


def test_scoring_is_free_under_a_token_budget_even_when_it_is_spent() -> None:
    ledger = Ledger(Budget(limit=5))
    _spend(ledger, 5)
    assert ledger.exhausted
    r = ledger.reserve_prompt(prompt_tokens=400)
    assert r is not None and r.amount == 0


def test_a_runs_budget_and_total_are_read_together_in_one_unit() -> None:
    assert Budget.parse_with_total("8k", None) == (Budget(limit=8000.0), None)
    assert Budget.parse_with_total("1k", "200k") == (Budget(limit=1000.0), Budget(limit=200000.0))
    with pytest.raises(BudgetError, match=r"the total budget must be in the unit of the budget \(tokens\), got flop"):
        Budget.parse_with_total("8k", "1e15flop")
    with pytest.raises(BudgetError, match="cannot read budget 'lots'"):
        Budget.parse_with_total("8k", "lots")
