"""What a benchmark suggests for a strategy's parameters (`ttscale.kit.params.task_defaults`): the references' values.

search-and-learn (src/sal/config.py, src/sal/search/beam_search.py) caps a MATH solution at 2048 tokens and each
step's request at the same 2048; a sequential strategy's answer is a whole solution (NoThinking's is the solution
after the prefilled thought; s1 caps its answer only by the context). No data file is read: a task's suggestions
come from its spec, not from its problems.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ttscale.budget import Budget
from ttscale.cli import main
from ttscale.evals import load_task
from ttscale.kit.params import params_class, task_defaults
from ttscale.strategies import STRATEGIES

SEARCHES = ("beam", "dvts", "rebase", "ets", "astar", "particle_filter")
SEQUENTIAL = ("budget_forcing", "no_thinking")


@pytest.fixture(autouse=True)
def _hub_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TTSCALE_DATA_DIR", raising=False)  # the named tasks' own specs, whatever the shell has


def _suggested(strategy: str, task: str, budget: str = "8k") -> dict[str, object]:
    return task_defaults(params_class(STRATEGIES.get(strategy)), task=load_task(task), budget=Budget.parse(budget))


def _fields(strategy: str) -> set[str]:
    return {f.name for f in dataclasses.fields(params_class(STRATEGIES.get(strategy)))}


@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_a_math_task_suggests_step_and_answer_caps_only_where_the_strategy_has_them(strategy: str) -> None:
    suggested, fields = _suggested(strategy, "math500"), _fields(strategy)
    assert ("step_tokens" in suggested) == ("step_tokens" in fields)
    assert ("answer_tokens" in suggested) == ("answer_tokens" in fields)
    if "step_tokens" in fields:  # search-and-learn: a step's request is capped at the solution's max_tokens
        assert suggested["step_tokens"] == suggested["max_tokens"] == 2048
    if "answer_tokens" in fields:  # a whole solution, not the arithmetic 256
        assert suggested["answer_tokens"] == 2048


def test_every_search_and_sequential_strategy_is_covered() -> None:
    assert {s for s in STRATEGIES.names() if "step_tokens" in _fields(s)} >= set(SEARCHES)
    assert {s for s in STRATEGIES.names() if "answer_tokens" in _fields(s)} == set(SEQUENTIAL)


def test_each_benchmark_suggests_what_fits_it(tmp_path: Path) -> None:
    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "What is $1/2 + 1/2$?", "answer": "1"}\n', encoding="utf-8")
    for task, solution, answer in (("gsm8k", 1024, 1024), ("math500", 2048, 2048), (f"jsonl:{data}", 2048, 2048),
                                   ("aime24", 2048, 4096), ("aime25", 2048, 4096)):
        assert _suggested("beam", task) == {"max_tokens": solution, "step_tokens": solution, "max_steps": 40}, task
        assert _suggested("no_thinking", task) == {"answer_tokens": answer}, task
        assert _suggested("budget_forcing", task) == {"answer_tokens": answer}, task
    assert _suggested("beam", "arithmetic") == _suggested("no_thinking", "arithmetic") == {}


def test_a_token_budget_caps_the_solution_the_step_and_the_answer() -> None:
    # A budget below the suggestion pays for one shorter solution or answer, not for none; a step is part of one.
    assert _suggested("beam", "math500", "1000") == {"max_tokens": 1000, "step_tokens": 1000, "max_steps": 40}
    assert _suggested("no_thinking", "aime24", "3000") == {"answer_tokens": 3000}
    assert _suggested("budget_forcing", "gsm8k", "512") == {"answer_tokens": 512}
    assert _suggested("no_thinking", "aime24", "8k") == {"answer_tokens": 4096}  # under the budget: as suggested
    # Another unit says nothing about tokens: the suggestions stand.
    assert _suggested("beam", "math500", "1e15flop") == {"max_tokens": 2048, "step_tokens": 2048, "max_steps": 40}


def test_ttscale_list_shows_the_step_and_answer_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--params", "beam", "--task", "math500"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  step_tokens (int) = 96; math500 at 8k: 2048" in lines
    assert "  max_tokens (int) = 256; math500 at 8k: 2048" in lines
    assert not any(line.startswith("  answer_tokens") for line in lines)  # beam has none
    assert main(["list", "--params", "no_thinking", "--task", "aime24", "--budget", "3000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  answer_tokens (int) = 256; aime24 at 3000: 3000" in lines
    assert not any(line.startswith("  step_tokens") for line in lines)
