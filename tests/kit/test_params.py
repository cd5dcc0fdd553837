from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ttscale.blocks.sampling import PoolParams
from ttscale.kit.params import describe_params, parse_assignments, parse_params, task_defaults


def test_strings_become_typed_values() -> None:
    p = parse_params(PoolParams, {"n": "8", "temperature": "0.5", "refill": "false", "max_tokens": "64"})
    assert (p.n, p.temperature, p.refill, p.max_tokens) == (8, 0.5, False, 64)
    assert parse_params(PoolParams, {"n": "none"}).n is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"width": "3"}, "unknown parameter 'width'; allowed: max_tokens, n, refill, temperature, top_p"),
        ({"n": "0"}, "n must be ≥ 1, got 0"),
        ({"n": "two"}, "parameter n must be int or NoneType, got 'two'"),
        ({"top_p": "1.5"}, "top_p must be in (0, 1], got 1.5"),
        ({"temperature": "inf"}, "parameter temperature must be float"),
        ({"n": "4", "refill": "true"}, "refill applies only when n is derived from the budget"),
    ],
)
def test_bad_params_are_refused_clearly(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_params(PoolParams, raw)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("strategy", "name", "allowed"),
    [
        ("deepconf", "mode", "'offline', 'online'"),
        ("mcts", "final", "'most_visited', 'vote', 'best_reward'"),
        ("generated_tests", "select", "'codemonkeys', 'tests_passed', 'codet', 'codet_paper'"),
        ("mcts", "selection", "'openr', 'openr_simulate', 'llm_reasoners', 'uct', 'puct'"),
    ],
)
def test_a_value_a_literal_parameter_does_not_take_is_refused_with_the_values_it_does(
    strategy: str, name: str, allowed: str
) -> None:
    """Issue 43, item 15: "parameter mode must be Literal, got 'sideways'" named none of them."""
    from ttscale.kit.params import params_class
    from ttscale.strategies import STRATEGIES

    with pytest.raises(ValueError) as info:
        parse_params(params_class(STRATEGIES.get(strategy)), {name: "sideways"})
    assert str(info.value) == f"parameter {name} must be one of {allowed}, got 'sideways'"


def test_parse_assignments() -> None:
    assert parse_assignments(["n=8", " temperature = 0.7 "]) == {"n": "8", "temperature": "0.7"}
    with pytest.raises(ValueError, match="key=value"):
        parse_assignments(["n8"])


def _math_task(tmp_path: Path) -> Any:
    from ttscale.evals import load_task

    path = tmp_path / "math.jsonl"
    path.write_text('{"question": "What is $1/2 + 1/2$?", "answer": "1"}\n', encoding="utf-8")
    return load_task(f"jsonl:{path}")


def test_task_defaults_fill_what_the_strategy_has_capped_by_a_token_budget(tmp_path: Path) -> None:
    from ttscale.budget import Budget
    from ttscale.evals import load_task
    from ttscale.search.search import SearchParams

    math = _math_task(tmp_path)
    # search-and-learn's MATH settings: 2048-token solutions, each step capped at the same 2048, 40 iterations.
    assert task_defaults(SearchParams, task=math, budget=Budget.parse("8k")) == {
        "max_tokens": 2048, "step_tokens": 2048, "max_steps": 40}
    # A budget below one solution's cap pays for one shorter solution, not for none (and a step is part of it).
    capped = task_defaults(SearchParams, task=math, budget=Budget.parse("1000"))
    assert (capped["max_tokens"], capped["step_tokens"]) == (1000, 1000)
    assert task_defaults(PoolParams, task=math, budget=Budget.parse("8k")) == {"max_tokens": 2048}  # no max_steps
    assert task_defaults(SearchParams, task=load_task("arithmetic"), budget=Budget.parse("8k")) == {}


def test_params_are_described_with_their_docstrings() -> None:
    docs = {d.name: d for d in describe_params(PoolParams)}
    assert docs["max_tokens"].type == "int" and docs["max_tokens"].default == 256
    assert docs["n"].type == "int | None" and docs["n"].doc.startswith("Samples per problem")
    from ttscale.strategies.beam import BeamParams

    beam = {d.name: d for d in describe_params(BeamParams)}
    assert beam["width"].doc.startswith("M: children per kept prefix")  # the subclass's own field
    assert beam["max_steps"].doc == "Steps per solution path at most (search depth)."  # inherited from SearchParams


@pytest.mark.parametrize(("name", "public"), [("prm", "model"), ("llm_judge", "default")])
def test_private_fields_are_neither_described_nor_settable(name: str, public: str) -> None:
    from ttscale.verifiers import VERIFIERS

    cls = VERIFIERS.get(name)
    private = [f.name for f in dataclasses.fields(cls) if f.name.startswith("_")]
    assert private  # the verifier keeps state in underscore fields (an engine handle, a cache)
    names = [d.name for d in describe_params(cls)]
    assert not [n for n in names if n.startswith("_")]
    assert public in names
    with pytest.raises(ValueError, match=rf"unknown parameter '{private[0]}'; allowed: (?!.*\b_)"):
        parse_params(cls, {private[0]: "x"})


def test_prm_describes_its_public_fields_with_docstrings() -> None:
    from ttscale.verifiers import VERIFIERS

    docs = {d.name: d for d in describe_params(VERIFIERS.get("prm"))}
    assert docs["step_tag"].doc == "The token placed after every step; must be ONE token of the PRM's tokenizer."
    assert {"model", "max_model_len", "aggregate", "delimiter"} <= set(docs)
    assert not {"_engine", "_cache", "_step_tag_id", "_starting"} & set(docs)


@pytest.mark.parametrize("strategy", ["rebase", "ets"])
def test_width_is_the_tree_searches_n_as_the_ets_paper_names_it(strategy: str) -> None:
    from ttscale.kit.params import DeprecatedParameter, params_class
    from ttscale.strategies import STRATEGIES

    cls = params_class(STRATEGIES.get(strategy))
    # Issue 49: `width` was N here and M in beam; the old spelling still reads, with a note naming `n`.
    with pytest.warns(DeprecatedParameter, match=r"parameter 'width' is deprecated here: give n=16 instead \(.*"
                      r"width is beam's and DVTS's M, children per kept prefix\)"):
        old = parse_params(cls, {"width": "16"})
    assert old == parse_params(cls, {"n": "16"}) and old.n == 16
    for both in ({"width": "16", "n": "8"}, {"n": "8", "width": "16"}):
        with pytest.raises(ValueError, match="parameter 'n' given twice"), pytest.warns(DeprecatedParameter):
            parse_params(cls, both)


def test_n_and_beams_width_read_without_a_deprecation_note(recwarn: pytest.WarningsRecorder) -> None:
    from ttscale.kit.params import params_class
    from ttscale.strategies import STRATEGIES

    assert parse_params(params_class(STRATEGIES.get("rebase")), {"n": "16"}).n == 16
    assert parse_params(params_class(STRATEGIES.get("beam")), {"n": "8", "width": "2"}).width == 2
    assert not recwarn.list


def test_a_sweep_or_compare_cell_names_an_aliased_field_by_its_own_name() -> None:
    from ttscale.kit.params import DeprecatedParameter
    from ttscale.sweeps import GridEntry

    with pytest.warns(DeprecatedParameter, match=r"give n=16\|64 instead"):
        old = GridEntry.parse("rebase width=16|64").params
    assert old == GridEntry.parse("rebase n=16|64").params == {"n": ["16", "64"]}
    with pytest.raises(ValueError, match="given twice"), pytest.warns(DeprecatedParameter):
        GridEntry.parse("rebase width=16 n=16")
    with pytest.raises(ValueError, match="given twice"):
        GridEntry.parse("best_of_n n=2 n=4")
