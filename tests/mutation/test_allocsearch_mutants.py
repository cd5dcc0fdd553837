"""ttscale.allocsearch (space.py, search.py): behaviour the mutation run (tools/mutation) found unchecked, on
hand-made spaces whose feasible points, costs and descriptions are worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

import ttscale.allocsearch.space as space_module
from ttscale.allocsearch import Dimension, Space
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
