"""Behaviour the held-out one-line mutants (tools/mutation/heldout.toml, issue 45) found unchecked: each test
imports its module by its full name (the held-out check runs the tests that do) and checks hand examples with the
value a correct implementation must give."""

from __future__ import annotations

import math

import pytest

import ttscale.allocsearch.search as search_module
import ttscale.allocsearch.space as space_module
import ttscale.runstore.runformat as runformat
import ttscale.scaling.sleeptime as sleeptime
import ttscale.search.tree as tree_module
import ttscale.stats.proportions as proportions
from ttscale.allocsearch.trials import Trial


def test_a_step_that_is_a_prefix_of_a_sibling_shares_all_its_tokens() -> None:
    tree = tree_module.Tree([1])
    longer = tree.add(tree.root, [5, 6, 7], text="a")
    prefix = tree.add(tree.root, [5, 6], text="b")
    other = tree.add(tree.root, [5, 9], text="c")
    assert tree.unique_tokens([prefix]) == 3  # the prompt and 5, 6
    assert tree.unique_tokens([longer, prefix]) == 4  # 5, 6 once
    assert tree.unique_tokens([longer, prefix, other]) == 5  # and 9


def test_the_wilson_interval_of_half_of_ten() -> None:
    # The textbook 95% Wilson interval for 5 of 10: 0.5 ± 0.2634.
    low, high = proportions.wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    assert proportions.wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)


def test_an_old_sleep_time_record_that_spent_nothing_made_no_pass() -> None:
    spent = {"format": 2, "strategy": "sleep_time", "id": "a", "info": {"sleep_tokens": 0}}
    assert runformat.migrate_record(spent, where="x")["info"] == {"sleep_tokens": 0, "rethink_passes": 0}
    spent["info"] = {"sleep_tokens": 1}
    assert runformat.migrate_record(spent, where="x")["info"] == {"sleep_tokens": 1, "rethink_passes": 1}


def test_tokens_for_is_nan_when_the_first_point_is_exactly_as_accurate() -> None:
    # Points are (budget, accuracy, tokens). Reached at the smallest budget already: how few tokens would do is
    # not measured.
    assert math.isnan(sleeptime.tokens_for([(1, 0.5, 100.0), (2, 0.7, 200.0)], 0.5))


def test_tokens_for_interpolates_from_the_cheapest_point_of_equal_accuracy() -> None:
    # 0.5 at 100 and again at 200 tokens, 0.9 at 400: 0.7 lies halfway (in log tokens) from 100 to 400, at 200.
    curve = [(1, 0.5, 100.0), (2, 0.5, 200.0), (4, 0.9, 400.0)]
    assert sleeptime.tokens_for(curve, 0.7) == pytest.approx(200.0, rel=1e-12)


def _trial(index: int, accuracy: float, allocation: dict[str, int] | None = None) -> Trial:
    return Trial(index=index, allocation=allocation or {"n": index}, accuracy=accuracy, ci_low=accuracy,
                 ci_high=accuracy, cost=1.0, n=10, proposer="grid")


def test_the_best_curve_never_falls() -> None:
    result = search_module.SearchResult(space="s", proposer="grid", exhausted=False,
                                        trials=tuple(_trial(i, a) for i, a in enumerate([0.5, 0.3, 0.7, 0.6])))
    assert result.best_curve() == (0.5, 0.5, 0.7, 0.7)


def test_a_space_naming_a_dimension_twice_is_refused() -> None:
    dims = [space_module.Dimension(name="n", values=(1, 2)), space_module.Dimension(name="n", values=(3,))]
    with pytest.raises(ValueError, match=r"^space 's' names the dimension 'n' twice$"):
        space_module.Space(name="s", dimensions=dims, cost=lambda a: 1.0, total_budget=10.0)


def test_seen_keys_keeps_each_points_first_trial() -> None:
    import ttscale.allocsearch.proposers as proposers

    space = space_module.Space(name="s", dimensions=[space_module.Dimension(name="n", values=(1, 2))],
                               cost=lambda a: 1.0, total_budget=10.0)
    first, again = _trial(0, 0.5, {"n": 1}), _trial(1, 0.9, {"n": 1})
    assert proposers.seen_keys(space, [first, again]) == {(1,): first}
