"""Stateful tasks (sleep-time compute): splitting a question, arithmetic_stateful, gsm8k_stateful, stateful jsonl."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ttscale.evals import TASKS, load_task
from ttscale.evals.datasets import DATA_DIR_ENV, gsm8k
from ttscale.evals.stateful import (
    MAX_QUERIES,
    StatefulArithmeticTask,
    context_key,
    sentences,
    split_context,
    stateful_problems,
)
from ttscale.schema import Problem

META = {"context", "query", "context_id", "queries_in_context"}


@pytest.fixture(autouse=True)
def _no_data_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- split_context ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "context", "query"),
    [
        ("Ann has 5 apples. Ben has 3. How many do they have?", "Ann has 5 apples. Ben has 3.",
         "How many do they have?"),
        ("She bought 3.5 apples. Each cost 2.25 dollars. What did she pay?",
         "She bought 3.5 apples. Each cost 2.25 dollars.", "What did she pay?"),
        ("A car costs $1,250.75. A bike costs $99.50. How much more is the car?",
         "A car costs $1,250.75. A bike costs $99.50.", "How much more is the car?"),
        ("How many legs do 3 spiders have?", "", "How many legs do 3 spiders have?"),
        ("  Find 2 + 2.  ", "", "Find 2 + 2."),
        ("Mr. Smith and Dr. Lee buy fruit, e.g. pears. Each buys 4. How many pears?",
         "Mr. Smith and Dr. Lee buy fruit, e.g. pears. Each buys 4.", "How many pears?"),
        ("He works until 5 p.m. and rests. He starts at 9 a.m. How long does he work?",
         "He works until 5 p.m. and rests. He starts at 9 a.m.", "How long does he work?"),
        # A trailing instruction after the question stays with it.
        ("Ann has 7 pens. She loses 2. How many are left? Explain.", "Ann has 7 pens. She loses 2.",
         "How many are left? Explain."),
        # No question mark: the last sentence is the query (as in the reference code).
        ("Tom has 4 boxes of 6 eggs. Calculate the number of eggs.", "Tom has 4 boxes of 6 eggs.",
         "Calculate the number of eggs."),
        ('She said "Stop!" He walked 3 miles. How far did he walk?', 'She said "Stop!" He walked 3 miles.',
         "How far did he walk?"),
        ("Prices:\n- pens $2\n- pads $3\nWhat do 2 pens cost?", "Prices:\n- pens $2\n- pads $3",
         "What do 2 pens cost?"),
        ("Wait... Ann has 1. Really?! How many?", "Wait... Ann has 1. Really?!", "How many?"),
    ],
)
def test_split_context_hand_examples(question: str, context: str, query: str) -> None:
    assert split_context(question) == (context, query)


def test_sentences_and_empty_question() -> None:
    assert sentences(" It is 3.5 m long. It costs $1,250.75! Why? ") == ["It is 3.5 m long.", "It costs $1,250.75!",
                                                                         "Why?"]
    with pytest.raises(ValueError, match="empty question"):
        split_context("  \n ")


# -- stateful_problems -----------------------------------------------------------------------------


def test_stateful_problems_groups_contexts_and_is_idempotent() -> None:
    problems = [
        Problem(id="a", question="Ann has 3 apples. How many does she have?", reference="3"),
        Problem(id="b", question="Ann has 3 apples.  How many would 2 Anns have?", reference="6"),
        Problem(id="c", question="What is 2 + 2?", reference="4"),
        Problem(id="d", question="What is 3 + 3?", reference="6"),
    ]
    out = stateful_problems(problems)
    assert all(set(p.meta) == META for p in out)
    assert [p.question for p in out] == [p.question for p in problems]  # the whole text stays the question
    assert out[0].meta["context_id"] == out[1].meta["context_id"] == context_key("Ann has 3 apples.")
    assert [p.meta["queries_in_context"] for p in out] == [2, 2, 1, 1]  # empty contexts are shared by none
    assert out[2].meta["context"] == "" and out[2].meta["context_id"] != out[3].meta["context_id"]
    assert stateful_problems(out) == out


# -- arithmetic_stateful ---------------------------------------------------------------------------

_STATED = re.compile(r"(\w+) has (\d+) \w+\.")
_RELATIVE = re.compile(r"(\w+) has (\d+) (more|fewer) \w+ than (\w+)\.")
_TIMES = re.compile(r"(\w+) has (\d+) times as many \w+ as (\w+)\.")
_ONE = re.compile(r"How many \w+ does (\w+) have\?")
_TWO = re.compile(r"How many \w+ do (\w+) and (\w+) have together\?")


def counts(context: str) -> tuple[dict[str, int], dict[str, str]]:
    """Each person's count, recomputed from the context's sentences, and whom each was stated from."""
    values: dict[str, int] = {}
    parents: dict[str, str] = {}
    for sentence in re.split(r"(?<=\.) ", context):
        if m := _RELATIVE.fullmatch(sentence):
            d = int(m[2])
            values[m[1]] = values[m[4]] + d if m[3] == "more" else values[m[4]] - d
            parents[m[1]] = m[4]
        elif m := _TIMES.fullmatch(sentence):
            values[m[1]] = int(m[2]) * values[m[3]]
            parents[m[1]] = m[3]
        else:
            m = _STATED.fullmatch(sentence)
            assert m and not values, sentence
            values[m[1]] = int(m[2])
    return values, parents


def answer(query: str, values: dict[str, int]) -> int:
    if m := _ONE.fullmatch(query):
        return values[m[1]]
    m = _TWO.fullmatch(query)
    assert m, query
    return values[m[1]] + values[m[2]]


def test_references_are_the_values_the_context_states() -> None:
    problems = StatefulArithmeticTask(per_level=30, queries=MAX_QUERIES).problems()
    assert len(problems) == 30 * 5 * MAX_QUERIES
    for p in problems:
        values, _ = counts(p.meta["context"])
        assert p.question == f"{p.meta['context']} {p.meta['query']}"
        assert int(p.reference) == answer(p.meta["query"], values)
        assert all(v >= 1 for v in values.values()) and len(values) == 5
        assert set(p.meta) == META and p.meta["queries_in_context"] == MAX_QUERIES
        single = _ONE.fullmatch(p.meta["query"])
        assert single is None or single[1] != next(iter(values))  # the given count is never asked alone


def test_levels_grow_from_one_digit_one_step_to_a_chain() -> None:
    for p in load_task("arithmetic_stateful:1", per_level=20).problems():
        values, parents = counts(p.meta["context"])
        first = next(iter(values))
        assert set(parents.values()) == {first} and max(values.values()) <= 18  # one digit, one step each
    for p in load_task("arithmetic_stateful:5", per_level=20).problems():
        names = list(counts(p.meta["context"])[0])
        assert counts(p.meta["context"])[1] == dict(zip(names[1:], names[:-1], strict=True))  # a chain
        assert _ONE.fullmatch(p.meta["query"])[1] == names[-1]  # type: ignore[index]  # its end is asked


def test_queries_share_a_context_and_contexts_do_not_depend_on_queries() -> None:
    task = StatefulArithmeticTask(per_level=4, queries=3, seed=7)
    problems = task.problems()
    assert problems == StatefulArithmeticTask(per_level=4, queries=3, seed=7).problems()  # deterministic
    assert problems != StatefulArithmeticTask(per_level=4, queries=3, seed=8).problems()
    assert len(problems) == 4 * 5 * 3 and len({p.id for p in problems}) == len(problems)
    groups: dict[str, list[Problem]] = {}
    for p in problems:
        groups.setdefault(p.meta["context_id"], []).append(p)
    assert len(groups) == 20
    for group in groups.values():
        assert [p.id.rsplit("-", 1)[1] for p in group] == ["q1", "q2", "q3"]
        assert len({p.id.rsplit("-", 1)[0] for p in group}) == 1 and len({p.meta["context"] for p in group}) == 1
        assert len({p.meta["query"] for p in group}) == 3 and len({p.reference for p in group}) == 3
        assert all(p.meta["queries_in_context"] == 3 for p in group)
    # Each context's queries are next to each other: a limit that is a multiple of `queries` keeps them whole.
    assert all(p.meta["context_id"] == problems[i - i % 3].meta["context_id"] for i, p in enumerate(problems))
    single = StatefulArithmeticTask(per_level=4, seed=7).problems()
    assert [p.id for p in single] == [p.id for p in problems if p.id.endswith("-q1")]
    assert [p.question for p in single] == [p.question for p in problems if p.id.endswith("-q1")]
    ten = StatefulArithmeticTask(per_level=4, seed=7, queries=10).problems()
    assert Counter(p.meta["context_id"] for p in ten) == dict.fromkeys(groups, 10)
    assert all(len({p.meta["query"] for p in ten if p.meta["context_id"] == key}) == 10 for key in groups)


def test_prompt_grading_config_and_registry() -> None:
    task = load_task("stateful-arithmetic", per_level=2, queries=2)
    assert isinstance(task, StatefulArithmeticTask) and TASKS.canonical("stateful_arithmetic") == task.name
    p = task.problems()[0]
    content = task.messages(p)[0]["content"]
    assert content.startswith(p.question) and content.endswith("Give the result as a number.")
    assert task.grade(task.extract(f"So the answer is {p.reference}."), p)
    assert not task.grade(str(int(p.reference) + 1), p) and not task.grade(None, p)
    assert task.config() == {"name": "arithmetic_stateful", "levels": [1, 2, 3, 4, 5], "per_level": 2, "seed": 0,
                             "queries": 2}
    assert [q.level for q in load_task("arithmetic_stateful:2-3", per_level=1).problems()] == [2, 3]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"queries": 0}, "queries must be within 1-10, got 0"),
        ({"queries": 11}, "queries must be within 1-10, got 11"),
        ({"queries": True}, "queries must be within 1-10, got True"),
        ({"levels": "0-2"}, "arithmetic_stateful levels must be within 1-5"),
        ({"levels": (6,)}, "arithmetic_stateful levels must be within 1-5"),
        ({"per_level": 0}, "per_level must be an integer ≥ 1, got 0"),
        ({"contexts": 3}, "task 'arithmetic_stateful': .*contexts"),
    ],
)
def test_bad_options_are_one_line_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        load_task("arithmetic_stateful", **options)
    assert "\n" not in str(info.value)


# -- gsm8k_stateful and jsonl ----------------------------------------------------------------------


def test_gsm8k_stateful_on_the_shared_copy(shared_data: Path) -> None:
    plain = gsm8k(data_dir=shared_data).problems()
    task = load_task(f"gsm8k_stateful:{shared_data}")
    problems = task.problems()
    assert [(p.id, p.question, p.reference) for p in problems] == [(p.id, p.question, p.reference) for p in plain]
    assert task.messages(problems[0]) == gsm8k(data_dir=shared_data).messages(plain[0])
    first = problems[0].meta  # "Janet’s ducks lay 16 eggs per day. ... How much in dollars does she make ...?"
    assert first["context"].startswith("Janet’s ducks lay 16 eggs per day.") and first["context"].endswith("egg.")
    assert first["query"] == "How much in dollars does she make every day at the farmers' market?"
    for p in problems:
        assert set(p.meta) >= META and p.meta["query"]
        assert p.question.split() == f"{p.meta['context']} {p.meta['query']}".split()  # cut, nothing lost
    assert sum(p.meta["query"].endswith("?") for p in problems) > 0.9 * len(problems)
    assert task.config()["name"] == "gsm8k_stateful" and task.config()["stateful"] is True
    assert task.param_defaults() == gsm8k(data_dir=shared_data).param_defaults()


def test_gsm8k_stateful_takes_the_gsm8k_options(tmp_path: Path) -> None:
    (tmp_path / "gsm8k").mkdir()
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [{"Q": "Ann has 2.5 kg. Ben has 1 kg more. How much has Ben?",
                                                      "answer": "#### 3.5"}])
    p = load_task("gsm8k_stateful", data_dir=tmp_path, question_field="Q").problems()[0]
    assert (p.id, p.reference, p.meta["context"], p.meta["query"]) == (
        "gsm8k-0000", "3.5", "Ann has 2.5 kg. Ben has 1 kg more.", "How much has Ben?")


def test_jsonl_rows_with_context_and_query(tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "s.jsonl", [
        {"context": "Ann has 3 apples.", "query": "How many has she?", "answer": "3"},
        {"context": "Ann has 3 apples.", "query": "How many have 2 Anns?", "answer": "6", "context_id": 7},
        {"context": "Ann has 3 apples.", "query": "Twice that?", "answer": "6", "context_id": 7},
        {"question": "Bo has 2. Cy has 1. How many together?", "answer": "3"},
    ])
    task = load_task(f"jsonl:{file}")
    problems = task.problems()
    assert [p.question for p in problems[:2]] == ["Ann has 3 apples. How many has she?",
                                                  "Ann has 3 apples. How many have 2 Anns?"]
    assert [p.meta["context_id"] for p in problems] == [context_key("Ann has 3 apples."), "7", "7",
                                                         context_key("Bo has 2. Cy has 1.")]
    assert [p.meta["queries_in_context"] for p in problems] == [1, 2, 2, 1]
    assert problems[3].meta["query"] == "How many together?" and task.config()["stateful"] is True
    assert task.grade("6", problems[1]) and "\\boxed{}" in task.messages(problems[0])[0]["content"]


def test_jsonl_stateful_option_and_backwards_compatibility(tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "p.jsonl", [{"problem": "It is 3.5 m. Double it?", "answer": "7", "id": 1}])
    plain = load_task(f"jsonl:{file}")
    assert plain.problems()[0].meta == {} and "stateful" not in plain.config()
    split = load_task(f"jsonl:{file}", stateful=True).problems()[0]
    assert (split.id, split.question, split.meta["context"], split.meta["query"]) == (
        "jsonl-1", "It is 3.5 m. Double it?", "It is 3.5 m.", "Double it?")
    with pytest.raises(ValueError, match="stateful must be true or false, got 'yes'"):
        load_task(f"jsonl:{file}", stateful="yes")


def test_rows_that_share_a_context_id_must_share_their_context(tmp_path: Path) -> None:
    """Issue 43, item 7: they were merged, and query b was answered from notes about context a."""
    rows = [
        {"context": "Ann has 3 apples.", "query": "How many has she?", "answer": "3", "context_id": "c1"},
        {"context": "Ann  has 3 apples.\n", "query": "Twice that?", "answer": "6", "context_id": "c1"},  # spacing only
        {"context": "Bo has 5 pears.", "query": "How many has he?", "answer": "5", "context_id": "c1"},
    ]
    file = write_jsonl(tmp_path / "s.jsonl", rows)
    with pytest.raises(ValueError) as info:
        load_task(f"jsonl:{file}").problems()
    assert str(info.value) == (f"{file}:3: context_id 'c1' is also the one of {file}:1, whose context differs "
                               "('Ann has 3 apples.'): give each context its own context_id")
    assert len(load_task(f"jsonl:{write_jsonl(tmp_path / 'ok.jsonl', rows[:2])}").problems()) == 2
    # A context split from the question, or given in Python, is held to the same rule.
    split = [{"question": "Ann has 3 apples. How many?", "answer": "3", "context_id": 9},
             {"question": "Bo has 5 pears. How many?", "answer": "5", "context_id": 9}]
    with pytest.raises(ValueError, match=r"^problems 'jsonl-0000' and 'jsonl-0001' share context_id '9' but not "
                                         r"their context \('Ann has 3 apples.' vs 'Bo has 5 pears.'\): give each"):
        load_task(f"jsonl:{write_jsonl(tmp_path / 'split.jsonl', split)}", stateful=True).problems()
    with pytest.raises(ValueError, match="problems 'a' and 'b' share context_id 'k' but not their context"):
        stateful_problems([Problem(id="a", question="A. Q?", reference="1", meta={"context_id": "k"}),
                           Problem(id="b", question="B. Q?", reference="1", meta={"context_id": "k"})])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Bo has 5 pears. How many has he?", "context": "Ann has 3 apples.", "query": "How many has she?",
          "answer": "3"}, r"s\.jsonl:2: field 'question' is not its context followed by its query"),
        ({"question": "Ann has 3 apples. How many has she?", "context": "Ann has 3 apples.", "query": "Twice that?",
          "answer": "6"}, r"s\.jsonl:2: field 'question' is not its context followed by its query"),
        ({"question": "Ann has 3 apples. How many has she?", "query": "Twice that?", "answer": "6"},
         r"s\.jsonl:2: field 'query' is not the end of field 'question'"),
        ({"question": ["Ann has 3 apples."], "context": "Ann has 3 apples.", "query": "How many?", "answer": "3"},
         r"s\.jsonl:2: field 'question' is not its context followed by its query"),
    ],
)
def test_a_question_that_disagrees_with_its_context_and_query_is_refused(
    tmp_path: Path, row: dict[str, Any], message: str
) -> None:
    """Issue 43, item 7: accepted, every other strategy answered the question and sleep-time another problem."""
    file = write_jsonl(tmp_path / "s.jsonl", [{"context": "c.", "query": "q?", "answer": "1"}, row])
    with pytest.raises(ValueError, match=message) as info:
        load_task(f"jsonl:{file}").problems()
    assert "\n" not in str(info.value)


def test_a_question_that_agrees_with_its_context_and_query_is_taken_as_stated(tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "s.jsonl", [
        {"question": "Ann has 3 apples.  How many has she?", "context": "Ann has 3 apples.",
         "query": "How many has she?", "answer": "3"},
        {"question": "Ann has 3 apples. Bo has 2. How many? Explain.", "query": "Explain.", "answer": "5"},
    ])
    first, second = load_task(f"jsonl:{file}").problems()
    assert (first.meta["context"], first.meta["query"]) == ("Ann has 3 apples.", "How many has she?")
    # The row's own query is kept (a sentence split would have made it "How many? Explain.").
    assert (second.meta["context"], second.meta["query"]) == ("Ann has 3 apples. Bo has 2. How many?", "Explain.")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"context": "c", "query": "", "answer": "1"}, r"s\.jsonl:2: fields 'context' and 'query' must both be"),
        ({"context": "c", "answer": "1"}, r"s\.jsonl:2: fields 'context' and 'query' must both be"),
        ({"context": 1, "query": "q", "answer": "1"}, r"s\.jsonl:2: fields 'context' and 'query' must both be"),
        ({"context": "c", "query": "q", "context_id": [1], "answer": "1"}, "'context_id' must be a string"),
    ],
)
def test_bad_stateful_rows_name_the_line(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    file = write_jsonl(tmp_path / "s.jsonl", [{"context": "c", "query": "q", "answer": "1"}, row])
    with pytest.raises(ValueError, match=message) as info:
        load_task(f"jsonl:{file}").problems()
    assert "\n" not in str(info.value)
