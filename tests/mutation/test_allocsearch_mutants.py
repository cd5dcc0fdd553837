"""ttscale.allocsearch (space.py, search.py): behaviour the mutation run (tools/mutation) found unchecked, on
hand-made spaces whose feasible points, costs and descriptions are worked out by hand."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import ttscale.allocsearch.space as space_module
from ttscale.allocsearch import (
    Dimension,
    Evaluation,
    GridProposer,
    Proposal,
    ProposerRow,
    SearchResult,
    Space,
    Trial,
    TrialLog,
    compare_proposers,
    search_allocation,
)
from ttscale.allocsearch.space import MAX_COMBINATIONS


def toy(**kwargs: Any) -> Space:
    base: dict[str, Any] = {"name": "toy", "dimensions": (Dimension(name="a", values=(1, 2)),
                                                          Dimension(name="m", values=("x", "y"))),
                            "cost": lambda al: float(al["a"]), "total_budget": 2}
    return Space(**{**base, **kwargs})


@pytest.mark.parametrize("name", ["", "  ", 3])
def test_names_must_be_non_empty_strings(name: Any) -> None:
    with pytest.raises(ValueError, match=rf"^a dimension's name must be a non-empty string, got {name!r}$"):
        Dimension(name=name, values=(1,))
    with pytest.raises(ValueError, match=rf"^a space's name must be a non-empty string, got {name!r}$"):
        toy(name=name)


def test_values_become_plain_numbers_and_strings() -> None:
    import numpy as np

    dim = Dimension(name="a", values=(np.int64(2), np.float64(0.5), "m", 3))
    assert dim.values == (2, 0.5, "m", 3)
    assert [type(v) for v in dim.values] == [int, float, str, int]


def test_a_string_that_is_not_a_number_does_not_end_the_search_for_a_match() -> None:
    # "8" matches 8 after "x" (a string among the values) and 2 (not equal) are passed.
    dim = Dimension(name="a", values=(2, 8))
    assert dim.match("8") == 8 and dim.match(" 8.0 ") == 8 and dim.match("eight") is None
    mixed = Dimension(name="a", values=("x", 2, 8))
    assert mixed.match("8") == 8 and mixed.match("x") == "x" and mixed.match("y") is None
    # A string that is no number skips the numbers and still finds a string value after them.
    assert Dimension(name="a", values=(2, "x")).match("x") == "x"


@pytest.mark.parametrize(("budget", "shown"), [(float("inf"), "inf"), (float("nan"), "nan"), (True, "True"),
                                               ("2", "'2'"), (-1, "-1")])
def test_the_total_budget_must_be_a_finite_positive_number(budget: Any, shown: str) -> None:
    with pytest.raises(ValueError, match=rf"^total_budget must be a finite number > 0, got {shown}$"):
        toy(total_budget=budget)


def test_exactly_the_most_combinations_are_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_COMBINATIONS == 1_000_000
    monkeypatch.setattr(space_module, "MAX_COMBINATIONS", 6)  # the same rule on a space small enough to price
    dims = (Dimension(name="a", values=(1, 2, 3)), Dimension(name="b", values=(0, 1)))
    assert len(Space(name="six", dimensions=dims, cost=lambda al: 0.0, total_budget=1).points()) == 6
    with pytest.raises(ValueError, match=r"^space 'eight' has 8 combinations; at most 6 are enumerated$"):
        Space(name="eight", dimensions=(Dimension(name="a", values=(1, 2, 3, 4)), dims[1]), cost=lambda al: 0.0,
              total_budget=1)


def test_a_cost_that_is_not_a_finite_non_negative_number_is_named() -> None:
    def cost(al: Any) -> float:
        return {1: 0.0, 2: -0.5}[al["a"]] if al["m"] == "x" else (math.inf if al["a"] == 1 else 0.5)

    space = toy(cost=cost)
    assert space.check({"a": 1, "m": "x"}) is None  # a cost of 0 is allowed
    assert space.check({"a": 2, "m": "y"}) is None
    assert space.check({"a": 2, "m": "x"}) == 'the cost of a=2, m="x" is -0.5, not a finite number ≥ 0'
    assert space.check({"a": 1, "m": "y"}) == 'the cost of a=1, m="y" is inf, not a finite number ≥ 0'
    assert space.check([("a", 1)]) == "an allocation must be a JSON object of a, m, got list"
    assert space.feasible({"a": 1, "m": "x"}) and not space.feasible({"a": 2, "m": "x"})
    assert space.render({"a": 1.5, "m": "y"}) == 'a=1.5, m="y"'


def test_the_description_without_docs() -> None:
    space = Space(name="bare", dimensions=(Dimension(name="n", values=(1, 2)),), cost=lambda al: float(al["n"]),
                  total_budget=1)
    assert space.describe() == ("Task: bare\nDimensions (choose one allowed value for each):\n- n: one of 1, 2\n"
                                "Cost of an allocation: computed from the allocation.\n"
                                "Total budget: an allocation's cost must be at most 1.\n"
                                "Feasible allocations: 1 of 2 combinations.")
    documented = Space(name="doc", doc="Pick n.", dimensions=(Dimension(name="n", values=("p",), doc="a model"),),
                       cost=lambda al: 1.0, total_budget=1.5, cost_doc="one call")
    assert documented.describe() == ('Task: doc. Pick n.\nDimensions (choose one allowed value for each):\n'
                                     '- n (a model): one of "p"\nCost of an allocation: one call.\n'
                                     "Total budget: an allocation's cost must be at most 1.5.\n"
                                     "Feasible allocations: 1 of 1 combinations.")


def test_a_value_not_allowed_is_shown_as_python_writes_it() -> None:
    space = toy()
    assert space.check({"a": True, "m": "x"}) == "a=True is not allowed; allowed: 1, 2"
    assert space.check({"a": None, "m": "x"}) == "a=None is not allowed; allowed: 1, 2"
    assert space.check({"a": 1, "m": 7}) == 'm=7 is not allowed; allowed: "x", "y"'


def test_dimensions_given_as_a_list_are_kept_as_a_tuple() -> None:
    space = toy(dimensions=[Dimension(name="a", values=(1, 2))])
    assert space.dimensions == (Dimension(name="a", values=(1, 2)),) and isinstance(space.dimensions, tuple)


# -- search.py: a scripted proposer on a four-point space whose accuracies are given by hand -----------------

ACCURACY = {1: 0.2, 2: 0.6, 3: 0.9, 4: 0.4}


def four() -> Space:
    return Space(name="four", dimensions=(Dimension(name="n", values=(1, 2, 3, 4)),), cost=lambda al: float(al["n"]),
                 total_budget=4)


async def evaluate(allocation: Any) -> Evaluation:
    n = allocation["n"]
    return Evaluation(accuracy=ACCURACY[n], ci_low=0.0, ci_high=1.0, cost=float(n), n=10)


class Scripted:
    """Proposes the given points in order, with a reasoning, an invalid count and a fallback flag of its own."""

    name, seed = "scripted", None

    def __init__(self, order: Sequence[int], *, invalid: int = 0, fallback: bool = False) -> None:
        self.order, self.invalid, self.fallback = list(order), invalid, fallback

    async def propose(self, space: Space, history: Sequence[Trial]) -> Proposal:
        return Proposal(allocation={"n": self.order[len(history)]}, reasoning=f"try {len(history)}",
                        invalid=self.invalid, fallback=self.fallback)


def run(order: Sequence[int], trials: int, **kwargs: Any) -> SearchResult:
    return asyncio.run(search_allocation(space=four(), evaluate=evaluate, proposer=Scripted(order, **kwargs),
                                         trials=trials))


def test_a_search_records_each_trial_and_its_best_so_far() -> None:
    result = run([4, 1, 3, 2], 3, invalid=2, fallback=True)
    assert [(t.index, t.allocation, t.accuracy, t.reasoning) for t in result.trials] == [
        (0, {"n": 4}, 0.4, "try 0"), (1, {"n": 1}, 0.2, "try 1"), (2, {"n": 3}, 0.9, "try 2")]
    assert result.best_curve() == (0.4, 0.4, 0.9) and result.exhausted is False
    assert result.invalid == 6 and result.fallbacks == 3 and (result.space, result.proposer) == ("four", "scripted")
    assert all(t.wall_seconds >= 0 for t in result.trials)
    assert result.trials_to(0.9) == 3 and result.trials_to(0.95, tol=0.05) == 3 and result.trials_to(0.41) == 3
    assert result.trials_to(0.45, tol=0.05) == 1


def test_a_search_stops_when_every_point_was_tried() -> None:
    result = run([2, 1, 4, 3], 10)
    assert len(result.trials) == 4 and result.exhausted is True and result.best().allocation == {"n": 3}


def test_an_evaluator_that_returns_no_evaluation_is_named() -> None:
    async def bad(allocation: Any) -> Any:
        return {"accuracy": 1.0}

    with pytest.raises(ValueError, match=r"^evaluate must return an Evaluation, got dict$"):
        asyncio.run(search_allocation(space=four(), evaluate=bad, proposer=Scripted([1]), trials=1))
    with pytest.raises(ValueError, match=r"^trials must be ≥ 1, got 0$"):
        run([1], 0)


def test_a_logged_trial_outside_the_space_is_refused(tmp_path: Path) -> None:
    asyncio.run(search_allocation(space=four(), evaluate=evaluate, proposer=Scripted([4, 1]), trials=2,
                                  log=TrialLog(tmp_path)))
    # The same space, but its cost doubled (a cost function is code: the log cannot tell it changed).
    smaller = Space(name="four", dimensions=(Dimension(name="n", values=(1, 2, 3, 4)),),
                    cost=lambda al: 2.0 * al["n"], total_budget=4)
    with pytest.raises(ValueError, match=rf"^trial 0 of {re.escape(str(tmp_path / 'trials.jsonl'))} is not in space "
                                         r"'four': n=4 costs 8, over the total budget 4$"):
        asyncio.run(search_allocation(space=smaller, evaluate=evaluate, proposer=Scripted([1, 2, 3]), trials=3,
                                      log=TrialLog(tmp_path)))


def test_a_rows_statistics_over_its_runs() -> None:
    row = ProposerRow(label="r", seeds=(0, 1, 2, 3), reached=(3, None, 1, 8), best_at={1: 0.5}, invalid=2,
                      fallbacks=1, curve=(0.5,))
    assert row.fraction_reached == 0.75
    assert row.trials_to_optimum() == (5.5, 1, None)  # median of 1, 3, 8, ∞ = (3 + 8) / 2; the largest missed
    assert row.to_dict() == {"label": "r", "seeds": [0, 1, 2, 3], "runs": 4, "reached": [3, None, 1, 8],
                             "fraction_reached": 0.75, "trials_to_optimum": {"median": 5.5, "min": 1, "max": None},
                             "best_at": {"1": 0.5}, "invalid": 2, "fallbacks": 1, "curve": [0.5]}
    missed = ProposerRow(label="m", seeds=(0, 1), reached=(None, None), best_at={}, invalid=0, fallbacks=0)
    assert missed.trials_to_optimum() == (None, None, None) and missed.fraction_reached == 0.0


def test_a_comparison_table_on_the_four_points(tmp_path: Path) -> None:
    calls: list[int] = []

    async def counted(allocation: Any) -> Evaluation:
        calls.append(allocation["n"])
        return await evaluate(allocation)

    table = asyncio.run(compare_proposers(space=four(), evaluate=counted, seeds=(0, 1), trials=2,
                                          proposers={"grid": lambda s: GridProposer(),
                                                     "down": lambda s: Scripted([4, 3, 2, 1])},
                                          log_dir=tmp_path))
    assert sorted(calls) == [1, 2, 3, 4]  # each point once, shared
    assert (table.space, table.points, table.cap, table.ks) == ("four", 4, 2, (1, 2))
    assert table.optimum.allocation == {"n": 3} and table.optimum.index == 2
    grid, down = table.rows
    assert grid.seeds == (None,) and grid.reached == (None,) and grid.best_at == {1: 0.2, 2: 0.6}
    assert down.seeds == (None,) and down.reached == (2,) and down.best_at == {1: 0.4, 2: 0.9}
    assert down.curve == (0.4, 0.9)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["down", "grid", "truth"]
    text = table.to_text().splitlines()
    assert text[0] == "space four: 4 feasible points; grid optimum n=3 (grid index 2), accuracy 0.900; cap 2 trials"
    assert text[1].split() == ["proposer", "runs", "trials", "to", "optimum:", "median", "[min,", "max]", "reached",
                               "best@1", "best@2", "invalid", "fallbacks"]
    assert text[2].split() == ["grid", "1", ">", "2", "[>", "2,", ">", "2]", "0/1", "0.200",
                               "0.600", "0", "0"]
    assert text[3].split() == ["down", "1", "2", "[2,", "2]", "1/1", "0.400", "0.900", "0", "0"]
    assert table.to_dict()["cap"] == 2 and table.to_dict()["optimum"]["allocation"] == {"n": 3}
    with pytest.raises(ValueError, match=r"^compare_proposers needs at least one seed$"):
        asyncio.run(compare_proposers(space=four(), evaluate=evaluate, seeds=(), trials=2,
                                      proposers={"grid": lambda s: GridProposer()}))


def test_a_run_that_stops_early_keeps_its_last_best() -> None:
    table = asyncio.run(compare_proposers(space=four(), evaluate=evaluate, seeds=(0,), trials=10,
                                          proposers={"grid": lambda s: GridProposer()}))
    (grid,) = table.rows
    assert table.ks == (1, 2, 5, 10) and grid.best_at == {1: 0.2, 2: 0.6, 5: 0.9, 10: 0.9}
    assert grid.curve == (0.2, 0.6, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9) and grid.reached == (3,)
