"""ttscale.budget: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from ttscale.budget import MAX_LIMIT, Budget, BudgetError, Ledger
from ttscale.schema import Completion, Generation, SamplingParams


def gen(*lengths: int, prompt: int = 0, cached: int = 0) -> Generation:
    return Generation(
        completions=tuple(Completion(text="x", token_ids=tuple(range(k))) for k in lengths),
        prompt_tokens=prompt,
        cached_prompt_tokens=cached,
    )


class PromptMeter:
    """Charges the prompt as well as the generated tokens (like a FLOP meter's prefill)."""

    unit = "tokens"

    def cost(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]) -> float:
        return float(prompt_tokens + sum(gen_lengths))


class ScaledMeter:
    """Returns the generated tokens times a factor, to land a settled cost just past the reservation."""

    unit = "tokens"

    def __init__(self) -> None:
        self.factor = 1.0

    def cost(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]) -> float:
        return float(sum(gen_lengths)) * self.factor


# -- Budget -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"limit": float("nan")}, "budget must be a finite number, got nan"),
        ({"limit": 0}, "budget must be > 0, got 0"),
        ({"limit": 2e30}, "budget must be ≤ 1e+30, got 2e+30"),
        ({"limit": 1.5}, "a token budget must be a whole number of tokens, got 1.5"),
        ({"limit": 5, "unit": "joules"}, "unknown budget unit 'joules'; allowed: tokens (default), eflop, flop"),
    ],
)
def test_budget_errors_say_what_is_wrong(kwargs: dict, words: str) -> None:
    with pytest.raises(BudgetError) as info:
        Budget(**kwargs)
    assert str(info.value) == words


def test_a_non_number_limit_is_a_budget_error() -> None:
    with pytest.raises(BudgetError, match="finite number"):
        Budget(limit="8000")  # type: ignore[arg-type]


def test_the_largest_limit_is_allowed_and_fractional_flop_budgets_too() -> None:
    assert Budget(limit=MAX_LIMIT, unit="flop").limit == MAX_LIMIT
    assert Budget(limit=1.5, unit="eflop").limit == 1.5
    assert Budget.parse("1.5eflop") == Budget(limit=1.5, unit="eflop")


def test_str() -> None:
    assert str(Budget(limit=8000)) == "8000 tokens"
    assert str(Budget(limit=10_000_000)) == "10000000 tokens"  # a whole number, never 1e+07
    assert str(Budget(limit=1.5e15, unit="eflop")) == "1.5e+15 eflop"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (True, "budget must be a number or a string like '8k', got True"),
        ("abc", "cannot read budget 'abc'; write a positive number with an optional k/M suffix and unit, "
                "e.g. 8k, 8000, 1.5M, 3e15eflop"),
        ("8q", "cannot read budget '8q': unknown unit 'q'; allowed: tokens (default), eflop, flop"),
        ("1.5", "a token budget must be a whole number of tokens, got '1.5'"),
    ],
)
def test_parse_errors_say_what_is_wrong(text: object, words: str) -> None:
    with pytest.raises(BudgetError) as info:
        Budget.parse(text)  # type: ignore[arg-type]
    assert str(info.value) == words


def test_lazy_meter_imports_module_attr_when_called() -> None:
    # METERS is built at import; the factory itself is what `budget.meter()` calls.
    from ttscale.budget import _lazy_meter

    factory = _lazy_meter("ttscale.cost.meter:eflop_meter")
    meter = factory(model_config="Qwen3-0.6B")
    assert meter.unit == "eflop"


def test_a_flop_budget_builds_its_meter_lazily() -> None:
    meter = Budget(limit=1e18, unit="flop").meter(model_config="Qwen3-0.6B")
    assert meter.unit == "flop"
    assert meter.cost(prompt_tokens=0, cached_prompt_tokens=0, gen_lengths=[10]) > 0


# -- Ledger: reservations ------------------------------------------------------------------------


def test_a_new_ledger_starts_from_zero() -> None:
    ledger = Ledger(Budget(limit=100))
    assert (ledger.capped_requests, ledger.refused_requests, ledger.spent, ledger.reserved) == (0, 0, 0.0, 0.0)
    assert ledger.shared == {}
    ledger.shared["k"] = 1  # a plain dict the problems share


def test_affordable_samples_edges() -> None:
    ledger = Ledger(Budget(limit=10))
    assert ledger.affordable_samples(1) == 10
    assert ledger.affordable_samples(3) == 3
    assert ledger.affordable_samples(0) == 0  # a zero-cost sample: none, not a division by zero


def test_affordable_samples_counts_the_prompt_only_when_asked() -> None:
    ledger = Ledger(Budget(limit=100), meter=PromptMeter())
    assert ledger.affordable_samples(10) == 10
    assert ledger.affordable_samples(10, prompt_tokens=15) == 4  # 100 // 25


def test_a_request_that_fits_exactly_is_not_capped() -> None:
    ledger = Ledger(Budget(limit=30))
    params = SamplingParams(n=3, max_tokens=10)
    res = ledger.reserve(params, prompt_tokens=0)
    assert res is not None and res.params == params and res.amount == 30
    assert ledger.capped_requests == 0
    assert ledger.remaining == 0


def test_too_many_samples_are_halved_until_one_token_each_fits() -> None:
    ledger = Ledger(Budget(limit=3))
    res = ledger.reserve(SamplingParams(n=4, max_tokens=10), prompt_tokens=0)
    assert res is not None and res.params is not None
    assert (res.params.n, res.params.max_tokens) == (2, 1)  # 4 → 2 samples; 2 × 1 ≤ 3 (2 × 2 > 3)
    assert ledger.capped_requests == 1


def test_capped_and_refused_requests_are_counted_each_time() -> None:
    ledger = Ledger(Budget(limit=10))
    for _ in range(2):
        res = ledger.reserve(SamplingParams(n=1, max_tokens=8), prompt_tokens=0)
        assert res is not None
    assert ledger.capped_requests == 1  # 8 fit, then 2 of 8
    for _ in range(2):
        assert ledger.reserve(SamplingParams(n=1, max_tokens=8), prompt_tokens=0) is None
    assert ledger.refused_requests == 2
    assert ledger.to_dict()["capped_requests"] == 1
    assert ledger.to_dict()["refused_requests"] == 2


def test_capped_twice() -> None:
    ledger = Ledger(Budget(limit=10))
    assert ledger.reserve(SamplingParams(n=1, max_tokens=8), prompt_tokens=0) is not None
    for _ in range(2):
        res = ledger.reserve(SamplingParams(n=1, max_tokens=8), prompt_tokens=0)
        assert res is not None
        ledger.settle(res, None)
    assert ledger.capped_requests == 2


def test_scoring_requests_default_to_the_verifier_role() -> None:
    ledger = Ledger(Budget(limit=100), meter=PromptMeter())
    res = ledger.reserve_prompt(prompt_tokens=20)
    assert res is not None and res.role == "verifier" and res.amount == 20
    ledger.settle(res, gen(prompt=20))
    assert ledger.usage["verifier"].calls == 1
    assert ledger.usage["verifier"].prompt_tokens == 20
    assert ledger.usage["policy"].calls == 0
    assert ledger.spent == 20


def test_scoring_requests_that_do_not_fit_are_refused_each_time() -> None:
    ledger = Ledger(Budget(limit=10), meter=PromptMeter())
    assert ledger.reserve_prompt(prompt_tokens=20) is None
    assert ledger.reserve_prompt(prompt_tokens=30) is None
    assert ledger.refused_requests == 2


# -- Ledger: settling ---------------------------------------------------------------------------


def test_settle_tolerates_float_rounding_but_not_more() -> None:
    meter = ScaledMeter()
    ledger = Ledger(Budget(limit=1000), meter=meter)
    res = ledger.reserve(SamplingParams(n=1, max_tokens=1000), prompt_tokens=0)
    assert res is not None
    meter.factor = 1 + 1e-10  # relative error 1e-10: rounding, accepted
    ledger.settle(res, gen(1000))
    assert ledger.spent == pytest.approx(1000)

    small = Ledger(Budget(limit=1), meter=meter)
    meter.factor = 1.0
    res = small.reserve(SamplingParams(n=1, max_tokens=1), prompt_tokens=0)
    assert res is not None and res.amount == 1
    meter.factor = 1 + 1.5e-9  # past 1e-9 absolute on a reservation of 1: refused
    with pytest.raises(RuntimeError, match=r"engine returned more than was reserved \(1 > 1 tokens\)"):
        small.settle(res, gen(1))


def test_settle_accumulates_usage_per_role() -> None:
    ledger = Ledger(Budget(limit=1000))
    t0 = time.perf_counter()
    for lengths, prompt, cached in (((3, 4), 10, 2), ((5,), 7, 1)):
        res = ledger.reserve(SamplingParams(n=len(lengths), max_tokens=10), prompt_tokens=prompt)
        assert res is not None
        res.started -= 10.0  # as if the request had taken 10 s
        ledger.settle(res, gen(*lengths, prompt=prompt, cached=cached))
    elapsed = time.perf_counter() - t0
    usage = ledger.usage["policy"]
    assert (usage.calls, usage.samples, usage.prompt_tokens, usage.cached_prompt_tokens, usage.generated_tokens) == (
        2, 3, 17, 3, 12,
    )
    assert 20.0 <= usage.engine_seconds <= 20.0 + elapsed
    assert ledger.spent == 12


def test_a_failed_request_still_counts_its_time_but_no_call() -> None:
    ledger = Ledger(Budget(limit=100))
    res = ledger.reserve(SamplingParams(n=1, max_tokens=10), prompt_tokens=0)
    assert res is not None
    res.started -= 5.0
    ledger.settle(res, None)
    assert ledger.usage["policy"].calls == 0
    assert 5.0 <= ledger.usage["policy"].engine_seconds < 6.0
    assert ledger.reserved == 0 and ledger.spent == 0


def test_tally_adds_up() -> None:
    ledger = Ledger(Budget(limit=10))
    ledger.tally("verifier_calls")
    ledger.tally("verifier_calls", 4)
    assert ledger.extra == {"verifier_calls": 5}


# -- Ledger: the record --------------------------------------------------------------------------


def test_to_dict_adds_policy_and_verifier() -> None:
    ledger = Ledger(Budget(limit=1000))
    for role, lengths, prompt, cached in (("policy", (3, 4), 10, 2), ("verifier", (5,), 7, 1)):
        res = ledger.reserve(SamplingParams(n=len(lengths), max_tokens=10), prompt_tokens=prompt, role=role)
        assert res is not None
        ledger.settle(res, gen(*lengths, prompt=prompt, cached=cached))
    ledger.usage["policy"].engine_seconds = 1.000004
    ledger.usage["verifier"].engine_seconds = 0.2345671
    ledger.tally("tree_nodes", 3)
    ledger.views["tree_depth"] = lambda: 2
    assert ledger.to_dict() == {
        "budget": 1000,
        "unit": "tokens",
        "spent": 12.0,
        "generated_tokens": 12,
        "prompt_tokens": 17,
        "cached_prompt_tokens": 3,
        "calls": 2,
        "samples": 3,
        "engine_seconds": 1.2346,
        "verifier": {"calls": 1, "prompt_tokens": 7, "cached_prompt_tokens": 1, "generated_tokens": 5, "samples": 1},
        "capped_requests": 0,
        "refused_requests": 0,
        "reward_evaluations": 0,
        "tree_nodes": 3,
        "tree_depth": 2,
    }
