"""Space: feasibility, grid order, one-line reasons, canonical keys, the prompt's description."""

from __future__ import annotations

import pytest

from ttscale.allocsearch import Dimension, Space
from ttscale.testing.allocsearch import genrm_space


def small() -> Space:
    return Space(name="toy", dimensions=(Dimension(name="a", values=(1, 2, 3)), Dimension(name="m", values=("x", "y"))),
                 cost=lambda al: float(al["a"]) * (2 if al["m"] == "y" else 1), total_budget=4, cost_doc="a·(2 if y)")


def test_points_are_the_feasible_ones_in_grid_order() -> None:
    space = small()
    assert space.points() == ({"a": 1, "m": "x"}, {"a": 1, "m": "y"}, {"a": 2, "m": "x"}, {"a": 2, "m": "y"},
                              {"a": 3, "m": "x"})
    assert space.index({"a": 2, "m": "y"}) == 3
    assert len(genrm_space().points()) == 26


def test_check_gives_one_line_reasons() -> None:
    space = small()
    assert space.check({"a": 1, "m": "x"}) is None
    assert space.check({"a": 1, "m": "x", "b": 2}) == "unknown key 'b'; the keys are a, m"
    assert space.check({"a": 1}) == "missing key 'm'; an allocation gives every one of a, m"
    assert space.check({"a": 5, "m": "x"}) == "a=5 is not allowed; allowed: 1, 2, 3"
    assert space.check({"a": 1, "m": "z"}) == 'm="z" is not allowed; allowed: "x", "y"'
    assert space.check({"a": 3, "m": "y"}) == "a=3, m=\"y\" costs 6, over the total budget 4"
    assert space.check({"a": True, "m": "x"}) is not None  # a bool is not the number 1
    assert space.check([1, "x"]) is not None
    assert not space.feasible({"a": 3, "m": "y"})


def test_equal_numbers_and_quoted_numbers_are_the_same_point() -> None:
    space = small()
    assert space.key({"a": 2.0, "m": "x"}) == space.key({"m": "x", "a": "2"}) == (2, "x")
    assert space.canonical({"m": "x", "a": 2.0}) == {"a": 2, "m": "x"}
    with pytest.raises(ValueError, match="over the total budget"):
        space.canonical({"a": 3, "m": "y"})


def test_describe_names_values_cost_and_budget() -> None:
    text = genrm_space().describe()
    assert "S (solutions sampled per problem): one of 1, 2, 4, 8, 16, 32" in text
    assert "S·(1+V)·512 tokens" in text and "at most 32768" in text and "26 of 36" in text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dimensions": ()}, "needs at least one dimension"),
    ({"dimensions": (Dimension(name="a", values=(1,)), Dimension(name="a", values=(2,)))},
     "names the dimension 'a' twice"),
    ({"total_budget": 0}, "total_budget must be a finite number > 0, got 0"),
    ({"total_budget": 0.5}, "no allocation costs at most the total budget 0.5"),
])
def test_space_is_validated_at_construction(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"name": "s", "dimensions": (Dimension(name="a", values=(1, 2)),),
                               "cost": lambda al: float(al["a"]), "total_budget": 2}
    with pytest.raises(ValueError, match=message):
        Space(**{**base, **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize(("values", "message"), [
    ((), "needs at least one value"),
    ((1, 1.0), "lists the value 1.0 twice"),
    ((1, float("nan")), "finite numbers or strings, got nan"),
    ((True,), "finite numbers or strings, got True"),
    ("ab", "values must be a tuple"),
])
def test_dimension_is_validated_at_construction(values: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Dimension(name="d", values=values)  # type: ignore[arg-type]
