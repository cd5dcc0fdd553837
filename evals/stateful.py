"""Stateful tasks for sleep-time compute: each problem is a context and a query about it.

Lin et al. 2025, "Sleep-time Compute: Beyond Inference Scaling at Test-time" (arXiv:2504.13171; code:
letta-ai/sleep-time-compute) make GSM-Symbolic stateful by splitting each question into a context (all
sentences but the last) and a query (the last sentence); a model may think about the context before the
query arrives, and with several queries per context ("Multi-Query GSM-Symbolic") that thought is amortised.

A stateful problem is an ordinary `Problem`: its `question` stays the whole text (context, then query), so
every other strategy answers it as a baseline; its `meta` adds `context`, `query`, `context_id` (the same
for every problem sharing a context) and `queries_in_context` (how many problems of the task share it).

Tasks: `arithmetic_stateful` (generated from a seed, `queries` per context), `gsm8k_stateful` (the `gsm8k`
task's problems split by `split_context`), and `jsonl` rows with `context` and `query` fields (or
`stateful=True`, see `ttscale.evals.jsonl.jsonl_task`).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ttscale.evals.arithmetic import LEVELS, ArithmeticTask, parse_levels
from ttscale.evals.base import GeneratedProblems, Message
from ttscale.evals.datasets import DatasetTask, gsm8k
from ttscale.evals.loading import DatasetSpec
from ttscale.schema import Problem

# -- splitting a question -------------------------------------------------------------------------

# A sentence ends at a run of . ! ? (then any closing quotes or brackets) followed by whitespace, or at a line
# break. Whitespace must follow, so the point inside "3.5 apples" or "$1,250.75" never ends one.
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[ \t]*\n\s*")
# Titles and "e.g."/"i.e." (almost) never end a sentence; "p.m." and "etc." often do, so they end one unless a
# lower-case word follows ("at 5 p.m. and then").
_NEVER_END = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs)|\b[eE]\.g|\b[iI]\.e|\bcf)\.$")
_END_UNLESS_LOWER = re.compile(r"\b(?:[ap]\.m|etc|Inc|Ltd|Co)\.$")
_QUESTION_END = re.compile(r"\?[\"'”’)\]]*$")


def sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, in order (see `split_context` for what ends one)."""
    text = text.strip()
    return [text[start:end] for start, end in _spans(text)]


def _spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a stripped `text`, without surrounding whitespace."""
    out, start = [], 0
    for match in [*_END.finditer(text), None]:
        end = match.end() if match else len(text)
        if match:
            head = text[:end].rstrip()
            rest = text[end:].lstrip()
            if head.endswith(".") and not head.endswith("..") and (
                _NEVER_END.search(head) or (_END_UNLESS_LOWER.search(head) and rest[:1].islower())
            ):
                continue
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + len(piece.rstrip())))
        start = end
    return out


def split_context(question: str) -> tuple[str, str]:
    """(context, query) of a question: the query is its last sentence, the context all before it.

    A sentence ends at `.`, `!` or `?` followed by whitespace, or at a line break; not inside a number
    ("3.5 apples", "$1,250.75"), nor after a title ("Mr.", "Dr.") or "e.g."/"i.e."; "p.m." and "etc." end a
    sentence only when no lower-case word follows. When the last sentence is not a question but the one before
    it is ("How many are left? Explain."), the query is both, so it holds the question asked. A question of
    one sentence has the context "". Both parts are cut from the stripped text (keeping its spacing inside
    them). Raises ValueError on an empty question.
    """
    text = question.strip()
    spans = _spans(text)
    if not spans:
        raise ValueError("cannot split an empty question into a context and a query")
    asks = [bool(_QUESTION_END.search(text[start:end])) for start, end in spans]
    last = len(spans) - 2 if len(spans) > 1 and asks[-2] and not asks[-1] else len(spans) - 1
    at = spans[last][0]
    return text[:at].strip(), text[at:]


# -- turning problems stateful -------------------------------------------------------------------


def context_key(context: str) -> str:
    """A short stable id of a context's text (12 hex digits of its SHA-256)."""
    return hashlib.sha256(context.encode()).hexdigest()[:12]


def stateful_problems(problems: Iterable[Problem]) -> list[Problem]:
    """The problems with `meta` keys `context`, `query`, `context_id` and `queries_in_context` added.

    A problem whose meta already has a string `context` and `query` (a file that states them) keeps them and
    any `context_id` it carries; the others are split by `split_context`. `context_id` defaults to
    `context_key(context)`; an empty context is nothing to think about ahead, so it is shared with no other
    problem (its id is keyed on the problem's id). `queries_in_context` counts the problems given here
    (a run's `--limit` may keep fewer). Applying it twice changes nothing.
    """
    parts: list[tuple[Problem, str, str, str]] = []
    first: dict[str, tuple[str, str]] = {}  # context id -> (its context, the problem that stated it first)
    for problem in problems:
        context, query = problem.meta.get("context"), problem.meta.get("query")
        if isinstance(context, str) and isinstance(query, str):
            context, query = context.strip(), query.strip()
        else:
            context, query = split_context(problem.question)
        given = problem.meta.get("context_id")
        key = str(given) if given not in (None, "") else context_key(context or f"\0{problem.id}")
        # One id, one context: merged, a query would be answered from notes made about another context.
        seen, by = first.setdefault(key, (context, problem.id))
        if not _same_text(seen, context):
            raise ValueError(f"problems {by!r} and {problem.id!r} share context_id {key!r} but not their context "
                             f"({_clip(seen)} vs {_clip(context)}): give each context its own context_id")
        parts.append((problem, context, query, key))
    counts = Counter(key for *_, key in parts)
    return [
        replace(p, meta={**p.meta, "context": c, "query": q, "context_id": k, "queries_in_context": counts[k]})
        for p, c, q, k in parts
    ]


def _same_text(a: str, b: str) -> bool:
    """Whether two texts are the same up to whitespace (a file's line breaks and double spaces are no difference)."""
    return a.split() == b.split()


def _clip(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


class StatefulDatasetTask(DatasetTask):
    """A benchmark (a local JSON-lines file or the hub) whose problems are stateful (see `stateful_problems`).

    A row with `context` and `query` fields and no question field is asked as `context + " " + query`;
    its `context_id` field, if any, groups it. Ids, prompts, grading and suggested parameters are the
    plain task's, so a stateful run pairs problem by problem with a plain one.
    """

    def __init__(self, spec: DatasetSpec, *, name: str, path: Path | None = None, timeout: float = 5.0) -> None:
        fields = tuple(f for f in ("context", "query", "context_id") if f not in spec.meta_fields)
        super().__init__(replace(spec, meta_fields=(*spec.meta_fields, *fields)), path=path, timeout=timeout)
        self.name = name
        self._stateful: list[Problem] | None = None

    def problems(self) -> list[Problem]:
        if self._stateful is None:
            self._stateful = stateful_problems(super().problems())
        return list(self._stateful)

    def config(self) -> dict[str, Any]:
        return {**super().config(), "stateful": True}

    def _local_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        stated: dict[str, tuple[str, str]] = {}  # context id -> (the context a row states for it, that row)
        for at, row in super()._local_rows():
            at, row = _with_question(row, self.spec.question_field, at)
            key = row.get("context_id")
            if "context" in row and key not in (None, ""):
                context, where = stated.setdefault(str(key), (row["context"], at))
                if not _same_text(context, row["context"]):
                    raise ValueError(f"{at}: context_id {str(key)!r} is also the one of {where}, whose context "
                                     f"differs ({_clip(context.strip())}): give each context its own context_id")
            yield at, row


def _with_question(row: dict[str, Any], field: str, at: str) -> tuple[str, dict[str, Any]]:
    """`(at, row)`, checked where the row states a context or a query (a lone `query` may be a file's question
    field), with the question field set to context + query where it has none. A row that states a question too
    must agree with it: the question is what every other strategy answers, the context and query what sleep-time
    compute does, and a run that paired them would compare answers to two different problems."""
    lone_query = "context" not in row and "query" in row and field != "query" and field in row
    if lone_query:  # the query is the question's end; what comes before it is the context
        question, query = row[field], row["query"]
        if not isinstance(question, str) or not isinstance(query, str) or not query.strip():
            raise ValueError(f"{at}: fields {field!r} and 'query' must both be strings, the query not empty")
        words, asked = question.split(), query.split()
        if words[len(words) - len(asked):] != asked:
            raise ValueError(f"{at}: field 'query' is not the end of field {field!r}: give the question alone, or "
                             "a context and a query that together are the question")
        row = {**row, "context": " ".join(words[: len(words) - len(asked)])}
    if "context" not in row:
        return at, row
    context, query, key = row.get("context"), row.get("query"), row.get("context_id", "")
    if not isinstance(context, str) or not isinstance(query, str) or not query.strip():
        raise ValueError(f"{at}: fields 'context' and 'query' must both be strings, the query not empty")
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise ValueError(f"{at}: field 'context_id' must be a string or an integer, got {type(key).__name__}")
    if field not in row:
        row = {**row, field: f"{context.strip()} {query.strip()}".strip()}
    elif not isinstance(row[field], str) or not _same_text(row[field], f"{context} {query}"):
        raise ValueError(f"{at}: field {field!r} is not its context followed by its query: give the question alone, "
                         "or a context and a query, or make them agree")
    return at, row


def gsm8k_stateful(
    source: str | None = None,
    /,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    question_field: str | None = None,
    answer_field: str | None = None,
) -> StatefulDatasetTask:
    """GSM8K test split (the `gsm8k` task's files and options), each question split into a context and a query."""
    plain = gsm8k(source, data_dir=data_dir, question_field=question_field, answer_field=answer_field)
    return StatefulDatasetTask(plain.spec, name="gsm8k_stateful", path=plain.path, timeout=plain.timeout)


# -- the embedded stateful task ------------------------------------------------------------------

MAX_QUERIES = 10
PEOPLE = 5
"""People per context: one stated quantity and four derived ones; 4 single and 10 pair-sum queries ≥ 10."""
NAMES = ("Ann", "Ben", "Cara", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivy", "Jon", "Kim", "Leo", "Mia", "Ned", "Olga")
ITEMS = (("apple", "apples"), ("marble", "marbles"), ("sticker", "stickers"), ("book", "books"),
         ("coin", "coins"), ("card", "cards"), ("pencil", "pencils"), ("shell", "shells"))
INSTRUCTION = "Answer the question. Give the result as a number."


@dataclass(frozen=True)
class Shape:
    """How a level's context is built: number ranges and which earlier person each quantity is stated from."""

    description: str
    first: tuple[int, int]
    step: tuple[int, int]
    parent: Literal["first", "any", "previous"]
    """`first`: from the stated person (every single query is one step); `any`: from a random earlier one;
    `previous`: from the one just before (a chain)."""
    times: bool = False
    """The second person has m times the first's (m in 2-12), and the rest derive from the second or later."""


# Mirrors `arithmetic`'s levels: one digit, one step → two digits, several steps.
SHAPES: dict[int, Shape] = {
    1: Shape("one digit, each quantity one step from the stated one", (1, 9), (1, 9), "first"),
    2: Shape("a two-digit quantity, one-digit steps from it", (10, 99), (1, 9), "first"),
    3: Shape("two digits, each quantity one step from an earlier one", (10, 99), (10, 99), "any"),
    4: Shape("m times as many, then two-digit steps", (2, 12), (10, 99), "any", times=True),
    5: Shape("two digits, a chain of steps", (10, 99), (10, 99), "previous"),
}


def _noun(n: int, item: tuple[str, str]) -> str:
    return item[0] if n == 1 else item[1]


def _context(rng: random.Random, shape: Shape) -> tuple[str, list[str], list[int], tuple[str, str], int]:
    """(context, names, values, item, the deepest derived person) for one context."""
    names, item = rng.sample(NAMES, PEOPLE), rng.choice(ITEMS)
    values, depth = [rng.randint(*shape.first)], [0]
    out = [f"{names[0]} has {values[0]} {_noun(values[0], item)}."]
    for i in range(1, PEOPLE):
        if shape.times and i == 1:
            m, parent = rng.randint(2, 12), 0
            value, sentence = m * values[0], f"{names[i]} has {m} times as many {item[1]} as {names[0]}."
        else:
            if shape.parent == "first":
                parent = 0
            elif shape.parent == "previous":
                parent = i - 1
            else:  # with a times step, from the multiplied count or later, so each asks the product
                parent = rng.randrange(1 if shape.times else 0, i)
            d, fewer = rng.randint(*shape.step), rng.random() < 0.5
            fewer = fewer and values[parent] - d >= 1  # counts stay positive
            value = values[parent] - d if fewer else values[parent] + d
            how = "fewer" if fewer else "more"
            sentence = f"{names[i]} has {d} {how} {_noun(d, item)} than {names[parent]}."
        values.append(value)
        depth.append(depth[parent] + 1)
        out.append(sentence)
    deepest = max(range(1, PEOPLE), key=lambda i: (depth[i], i))
    return " ".join(out), names, values, item, deepest


def _queries(rng: random.Random, names: list[str], values: list[int], item: tuple[str, str], deepest: int,
             k: int) -> list[tuple[str, int]]:
    """k distinct (query, answer) pairs, distinct answers where possible; the deepest person's count first, so
    the first j queries are the same for every k ≥ j."""
    singles = [i for i in range(1, PEOPLE) if i != deepest]
    pairs = [(i, j) for i in range(PEOPLE) for j in range(i + 1, PEOPLE)]
    rng.shuffle(singles)
    rng.shuffle(pairs)
    pool = [(f"How many {item[1]} does {names[i]} have?", values[i]) for i in (deepest, *singles)]
    pool += [(f"How many {item[1]} do {names[i]} and {names[j]} have together?", values[i] + values[j])
             for i, j in pairs]
    chosen: list[tuple[str, int]] = []
    for query, answer in pool:  # first the distinct answers, in pool order; then repeats, if k needs them
        if answer not in {a for _, a in chosen}:
            chosen.append((query, answer))
    chosen += [q for q in pool if q not in chosen]
    return chosen[:k]


class StatefulArithmeticTask(ArithmeticTask):
    """`arithmetic_stateful` or `arithmetic_stateful:1-3`: a context of counts, queries on it (sleep-time compute).

    Word problems whose context states five people's counts (one given, four derived from others) and whose
    queries ask a computed count or the sum of two; levels 1-5 interleaved; graded as `arithmetic` is.

    Options: `per_level` contexts per level (default 100), `seed`, `queries` per context (1-10, default 1:
    the multi-query variant amortises a context's thought over its queries). The task has
    `per_level × levels × queries` problems, each context's queries next to each other (ids
    `sarith-L<level>-<context>-q<j>`), so a run's `--limit` counts problems and keeps every context whole
    when it is a multiple of `queries`. Contexts depend only on the seed, not on `queries`: the first j
    queries of a context are the same for every `queries` ≥ j.
    """

    name = "arithmetic_stateful"

    def __init__(
        self, levels: str | tuple[int, ...] = (1, 2, 3, 4, 5), *, per_level: int = 100, seed: int = 0,
        queries: int = 1,
    ) -> None:
        if not isinstance(levels, str) and not (levels and set(levels) <= set(LEVELS)):
            raise ValueError(f"{self.name} levels must be within 1-5, like '1-3' or '1,4', got {levels!r}")
        parsed = parse_levels(levels, task=self.name) if isinstance(levels, str) else tuple(levels)
        if isinstance(queries, bool) or not isinstance(queries, int) or not 1 <= queries <= MAX_QUERIES:
            raise ValueError(f"queries must be within 1-{MAX_QUERIES}, got {queries!r}")
        super().__init__(parsed, per_level=per_level, seed=seed)
        self.queries = queries
        self._stateful_problems: GeneratedProblems | None = None

    def problems(self) -> GeneratedProblems:
        """Made on demand (see `GeneratedProblems`): a run's `--limit` makes only the problems it asks."""
        if self._stateful_problems is None:
            self._stateful_problems = GeneratedProblems(self.per_level * len(self.levels) * self.queries,
                                                        self._generate_stateful)
        return self._stateful_problems

    def _generate_stateful(self) -> Iterator[Problem]:
        # Like `arithmetic`: one generator per level, levels interleaved, so `--limit` spreads over them.
        rngs = {level: random.Random(f"{self.name}-{self.seed}-{level}") for level in self.levels}
        for i in range(self.per_level):
            for level in self.levels:
                context, names, values, item, deepest = _context(rngs[level], SHAPES[level])
                # Queries draw from their own generator: contexts are the same whatever `queries` is.
                asked = random.Random(f"{self.name}-{self.seed}-{level}-{i}-queries")
                # One context's queries at a time: a context's five names and counts are never drawn twice
                # (none in 10,000 contexts), so its queries are all the problems that share it.
                yield from stateful_problems(
                    Problem(id=f"sarith-L{level}-{i:04d}-q{j}", question=f"{context} {query}", reference=str(answer),
                            level=level, meta={"context": context, "query": query})
                    for j, (query, answer) in enumerate(_queries(asked, names, values, item, deepest, self.queries), 1)
                )

    def messages(self, problem: Problem) -> list[Message]:
        return [{"role": "user", "content": f"{problem.question} {INSTRUCTION}"}]

    def config(self) -> dict[str, Any]:
        return {**super().config(), "queries": self.queries}
