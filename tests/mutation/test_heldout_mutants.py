"""Behaviour the held-out one-line mutants (tools/mutation/heldout.toml, issue 45) found unchecked: each test
imports its module by its full name (the held-out check runs the tests that do) and checks hand examples with the
value a correct implementation must give."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

import ttscale.allocsearch.search as search_module
import ttscale.allocsearch.space as space_module
import ttscale.runstore.runformat as runformat
import ttscale.scaling.sleeptime as sleeptime
import ttscale.search.tree as tree_module
import ttscale.stats.proportions as proportions
from ttscale.allocsearch.trials import Trial
from ttscale.runstore.runs import ForeignRecordsWarning, read_run
from ttscale.schema import Problem


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


class _NumberedTask:
    """A task whose problems are numbered "1", "2", "3" (as a dataset's integer ids become problem ids)."""

    def problems(self) -> list[Problem]:
        return [Problem(id=str(i), question=f"{i} + 1?", reference=str(i + 1)) for i in (1, 2, 3)]

    def config(self) -> dict[str, Any]:
        return {}


def _load_numbered(spec: str, **options: Any) -> _NumberedTask:
    return _NumberedTask()


def test_records_with_integer_ids_belong_to_the_problems_of_those_numbers(tmp_path: Path) -> None:
    # results.jsonl may hold an id as a JSON number (the record check accepts a whole number): 1 is problem "1" of
    # the run's task, and only 9, which the task does not have, is left out.
    run = Path(shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "real_runs" / "sc-n4", tmp_path / "run"))
    lines = (run / "results.jsonl").read_text().splitlines()[:4]
    records = [dict(json.loads(line), id=number) for line, number in zip(lines, (1, 2, 3, 9), strict=True)]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    config = json.loads((run / "config.json").read_text())
    config["identity"] = {**config["identity"], "task": {"spec": "numbered", "options": {}}, "limit": None}
    (run / "config.json").write_text(json.dumps(config))
    with pytest.warns(ForeignRecordsWarning, match=r": 1 record of problems not in the run's task left out"):
        data = read_run(run, tasks=_load_numbered)
    assert [r["id"] for r in data.records] == [1, 2, 3] and data.foreign == 1
