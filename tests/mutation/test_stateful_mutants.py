"""evals/stateful.py: behaviour the mutation run (tools/mutation) found unchecked, on hand examples: where a sentence
ends, the query of a short question, a context's id as stored runs know it, the generated contexts' shapes and
queries, the stateful file tasks' names, fields and refusals."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.evals.test_stateful import _no_data_dir_env, write_jsonl  # noqa: F401  (an autouse fixture: used by being here)
from ttscale.evals import load_task
from ttscale.evals.datasets import SPECS
from ttscale.evals.stateful import (
    NAMES,
    StatefulArithmeticTask,
    StatefulDatasetTask,
    context_key,
    gsm8k_stateful,
    sentences,
    split_context,
    stateful_problems,
)
from ttscale.schema import Problem

_RELATIVE = re.compile(r"(\w+) has (\d+) (more|fewer) (\w+) than (\w+)\.")
_STATED = re.compile(r"(\w+) has (\d+) (\w+)\.")
_TIMES = re.compile(r"(\w+) has (\d+) times as many \w+ as (\w+)\.")
_ONE = re.compile(r"How many \w+ does (\w+) have\?")
_TWO = re.compile(r"How many \w+ do (\w+) and (\w+) have together\?")




# -- sentences ------------------------------------------------------------------------------------------------------


def test_where_sentences_end_by_hand() -> None:
    # Titles and e.g. never end one, whatever follows; "p.m." ends one unless a lower-case word follows.
    assert sentences("Mr. Smith and Dr. Lee buy pears, e.g. ten. Each buys 4. How many?") == [
        "Mr. Smith and Dr. Lee buy pears, e.g. ten.", "Each buys 4.", "How many?"]
    assert sentences("Mrs. Ho, Ms. Li, Prof. Ng, St. Ann vs. Sr. Jo and Jr. Al i.e. cf. Bo. Why?") == [
        "Mrs. Ho, Ms. Li, Prof. Ng, St. Ann vs. Sr. Jo and Jr. Al i.e. cf. Bo.", "Why?"]
    assert sentences("He left at 5 p.m. and rested. Then what?") == ["He left at 5 p.m. and rested.", "Then what?"]
    assert sentences("He left at 5 p.m. Then he rested.") == ["He left at 5 p.m.", "Then he rested."]
    assert sentences("He sold it at 5 p.m. eBay paid him. Why?") == ["He sold it at 5 p.m. eBay paid him.", "Why?"]
    # A title at a line break does not end a sentence either; the line break after a full stop does.
    assert sentences("I met Dr.\nLee. Lee has 3.") == ["I met Dr.\nLee.", "Lee has 3."]


def test_the_query_of_a_short_question() -> None:
    # Two sentences, a question then an instruction: the query holds both (the context is empty).
    assert split_context("How many are left? Explain.") == ("", "How many are left? Explain.")
    # Three: the question and its instruction are the query.
    assert split_context("Ann has 3. How many? Explain.") == ("Ann has 3.", "How many? Explain.")
    # A last sentence that asks is the query alone.
    assert split_context("Ann has 3. Why? How many?") == ("Ann has 3. Why?", "How many?")
    with pytest.raises(ValueError, match=r"^cannot split an empty question into a context and a query$"):
        split_context(" ")


# -- stateful_problems ----------------------------------------------------------------------------------------------


def test_a_context_id_as_a_stored_run_knows_it() -> None:
    # tests/fixtures/runs_v1/sleep_time stored its sleep-time stage under this problem's context id: the id must
    # not change, or a stored run would think about its contexts again on resume.
    first = StatefulArithmeticTask("1", queries=2).problems()[0]
    stages = Path(__file__).parents[1] / "fixtures" / "runs_v1" / "sleep_time" / "stages.jsonl"
    stored = json.loads(stages.read_text().splitlines()[0])["key"].split("\x00")[1]
    assert first.id == "sarith-L1-0000-q1" and first.meta["context_id"] == stored == "2fc774d76c03"
    assert context_key(first.meta["context"]) == stored


def test_half_stated_meta_is_split_and_an_empty_id_is_no_id() -> None:
    problems = [Problem(id="a", question="Ann has 3. How many?", reference="3", meta={"context": "Ann has 3."}),
                Problem(id="b", question="Bo has 2. How many?", reference="2", meta={"query": "How many?",
                                                                                    "context_id": ""}),
                Problem(id="c", question="Cy has 1. How many?", reference="1", meta={"context_id": ""})]
    out = stateful_problems(problems)
    assert [(p.meta["context"], p.meta["query"]) for p in out] == [
        ("Ann has 3.", "How many?"), ("Bo has 2.", "How many?"), ("Cy has 1.", "How many?")]
    # An empty context_id is none: each is keyed by its own text (not all by "", which would merge them).
    assert [p.meta["context_id"] for p in out] == [context_key("Ann has 3."), context_key("Bo has 2."),
                                                    context_key("Cy has 1.")]


def test_a_refusal_clips_a_long_context_to_40_characters() -> None:
    forty = "Ann has 3 apples and Bo has 4 pears now."  # exactly 40 characters: shown whole
    longer = "Cy has 3 apples and Di has 4 pears today."  # 41: 37 characters and "..."
    assert (len(forty), len(longer)) == (40, 41)
    problems = [Problem(id="a", question=f"{forty} How many?", reference="1", meta={"context_id": "k"}),
                Problem(id="b", question=f"{longer} How many?", reference="1", meta={"context_id": "k"})]
    with pytest.raises(ValueError) as info:
        stateful_problems(problems)
    assert str(info.value) == (f"problems 'a' and 'b' share context_id 'k' but not their context ({forty!r} vs "
                               f"{longer[:37] + '...'!r}): give each context its own context_id")


# -- arithmetic_stateful --------------------------------------------------------------------------------------------


def _parsed(level: int, per_level: int = 150, queries: int = 1) -> list[tuple[Problem, list[str]]]:
    """Each problem with its context's sentences."""
    task = StatefulArithmeticTask((level,), per_level=per_level, queries=queries)
    return [(p, re.split(r"(?<=\.) ", p.meta["context"])) for p in task.problems()]


def test_nouns_agree_with_their_numbers() -> None:
    ones = 0
    for _, said in _parsed(1):
        for sentence in said:
            if m := _STATED.fullmatch(sentence):
                count, noun = int(m[2]), m[3]
            elif m := _RELATIVE.fullmatch(sentence):
                count, noun = int(m[2]), m[4]
            else:
                continue
            ones += count == 1
            assert noun.endswith("s") == (count != 1), sentence  # "1 apple", "2 apples"
    assert ones > 20


def test_steps_go_both_ways_and_counts_stay_positive_down_to_1() -> None:
    def walk(level: int) -> tuple[Counter[str], list[int]]:
        ways: Counter[str] = Counter()
        lowest = []
        for _, said in _parsed(level):
            values: dict[str, int] = {}
            for sentence in said:
                if m := _STATED.fullmatch(sentence):
                    values[m[1]] = int(m[2])
                elif m := _RELATIVE.fullmatch(sentence):
                    ways[m[3]] += 1
                    values[m[1]] = values[m[5]] + (int(m[2]) if m[3] == "more" else -int(m[2]))
            lowest.append(min(values.values()))
        return ways, lowest

    # Two digits less one-digit steps: "fewer" is always possible, a coin flip against "more".
    ways, lowest = walk(2)
    assert 0.4 < ways["fewer"] / sum(ways.values()) < 0.6 and min(lowest) >= 1
    # One digit: "fewer" only where the count stays ≥ 1, and a count of exactly 1 is reached.
    ways, lowest = walk(1)
    assert ways["fewer"] > 50 and min(lowest) == 1 and Counter(lowest)[1] > 5


def test_times_steps_take_every_factor_from_2_to_12_and_the_rest_derive_from_the_product() -> None:
    factors = set()
    for _, said in _parsed(4):
        first = _STATED.fullmatch(said[0])
        times = _TIMES.fullmatch(said[1])
        assert first and times and times[3] == first[1]
        factors.add(int(times[2]))
        for sentence in said[2:]:
            m = _RELATIVE.fullmatch(sentence)
            assert m and m[5] != first[1], sentence  # from the multiplied count or later, never the stated one
    assert factors == set(range(2, 13))


def _depths(said: list[str]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for sentence in said:
        if m := _RELATIVE.fullmatch(sentence):
            depth[m[1]] = depth[m[5]] + 1
        elif m := _TIMES.fullmatch(sentence):
            depth[m[1]] = depth[m[3]] + 1
        elif m := _STATED.fullmatch(sentence):
            depth[m[1]] = 0
    return depth


def test_the_first_query_asks_the_deepest_count_the_latest_of_ties() -> None:
    deeper = 0
    for p, said in _parsed(3, per_level=60):
        depth = _depths(said)
        people = list(depth)
        asked = _ONE.fullmatch(p.meta["query"])
        assert asked, p.meta["query"]
        deepest = max(range(1, 5), key=lambda i: (depth[people[i]], i))
        assert asked[1] == people[deepest]
        deeper += deepest != 4
    assert deeper > 5  # often not simply the last person


def test_queries_cover_every_single_and_every_pair_once() -> None:
    adjacent = first_second_alone = 0
    task = StatefulArithmeticTask((1,), per_level=40, queries=10)
    problems = task.problems()
    for start in range(0, len(problems), 10):
        group = problems[start: start + 10]
        names = [s.split()[0] for s in re.split(r"(?<=\.) ", group[0].meta["context"])]
        pairs = [(m[1], m[2]) for m in (_TWO.fullmatch(p.meta["query"]) for p in group) if m]
        alone = [m[1] for m in (_ONE.fullmatch(p.meta["query"]) for p in group) if m]
        assert all(a != b and names.index(a) < names.index(b) for a, b in pairs)  # two people, in their order
        assert len(set(pairs)) == len(pairs) and len(set(alone)) == len(alone)
        adjacent += any(names.index(b) - names.index(a) == 1 for a, b in pairs)
        first_second_alone += names[1] in alone
    assert adjacent == 40  # every context asks some pair of neighbours
    assert first_second_alone > 30  # and the second person's count alone, as often as its answer is new


def test_defaults_and_the_prompt_by_hand() -> None:
    task = StatefulArithmeticTask()
    assert len(task.problems()) == 100 * 5  # 100 contexts per level, one query each
    p = task.problems()[0]
    assert task.messages(p) == [{"role": "user", "content": f"{p.question} Answer the question. Give the result "
                                                            "as a number."}]
    assert p.meta["context"].split()[0] in NAMES


# -- stateful files -------------------------------------------------------------------------------------------------


def test_file_tasks_keep_their_names_fields_and_timeout(tmp_path: Path) -> None:
    (tmp_path / "gsm8k").mkdir()
    rows = [{"Q": "Ann has 2.5 kg. Ben has 1 kg more. How much has Ben?", "A": "#### 3.5"}]
    file = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", rows)
    task = gsm8k_stateful(str(file), question_field="Q", answer_field="A")
    assert task.name == "gsm8k_stateful" and task.config()["name"] == "gsm8k_stateful"
    p = task.problems()[0]
    assert (p.reference, p.meta["context"], p.meta["query"]) == ("3.5", "Ann has 2.5 kg. Ben has 1 kg more.",
                                                                 "How much has Ben?")
    plain = write_jsonl(tmp_path / "p.jsonl", [{"question": "It is 3.5 m. Double it?", "answer": "7"}])
    stateful = load_task(f"jsonl:{plain}", stateful=True)
    assert stateful.name == "jsonl" and stateful.timeout == load_task(f"jsonl:{plain}").timeout == 5.0
    slow = StatefulDatasetTask(SPECS["gsm8k"], name="slow", path=file, timeout=7.0)
    assert slow.timeout == 7.0 and slow.name == "slow"


def test_a_file_whose_question_field_is_query_splits_it(tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "q.jsonl", [{"query": "Ann has 3. How many?", "answer": "3"}])
    (p,) = load_task(f"jsonl:{file}", question_field="query", stateful=True).problems()
    assert (p.meta["context"], p.meta["query"]) == ("Ann has 3.", "How many?")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Ann has 3. How many?", "query": "  ", "answer": "3"},
         "fields 'question' and 'query' must both be strings, the query not empty"),
        ({"question": ["Ann has 3."], "query": "How many?", "answer": "3"},
         "fields 'question' and 'query' must both be strings, the query not empty"),
        ({"question": "Ann has 3. How many?", "query": "Why?", "answer": "3"},
         "field 'query' is not the end of field 'question': give the question alone, or a context and a query "
         "that together are the question"),
        ({"question": "Bo has 2. Why?", "context": "Ann has 3.", "query": "How many?", "answer": "3"},
         "field 'question' is not its context followed by its query: give the question alone, or a context and a "
         "query, or make them agree"),
        ({"context": "Ann has 3.", "query": "How many?", "context_id": [1], "answer": "3"},
         "field 'context_id' must be a string or an integer, got list"),
    ],
)
def test_bad_rows_are_refused_with_the_whole_reason(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    file = write_jsonl(tmp_path / "s.jsonl", [{"question": "Cy has 1. How many?", "answer": "1"}, row])
    with pytest.raises(ValueError) as info:
        load_task(f"jsonl:{file}", stateful=True).problems()
    assert str(info.value) == f"{file}:2: {message}"


def test_rows_with_different_ids_or_an_empty_id_may_differ_in_context(tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "s.jsonl", [
        {"context": "Ann has 3.", "query": "How many?", "answer": "3", "context_id": "a"},
        {"context": "Bo has 2.", "query": "How many?", "answer": "2", "context_id": "b"},
        {"context": "Cy has 1.", "query": "How many?", "answer": "1", "context_id": ""},
        {"context": "Di has 4.", "query": "How many?", "answer": "4", "context_id": ""},
    ])
    problems = load_task(f"jsonl:{file}").problems()
    assert [p.meta["context_id"] for p in problems] == ["a", "b", context_key("Cy has 1."), context_key("Di has 4.")]
