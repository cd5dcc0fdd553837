"""strategies/sleep_time.py: behaviour the mutation run (tools/mutation) found unchecked, on hand examples: the
rethink prompt's text, why the rethinking ended, the key of a context without an id, the query's template, a
sweep's verbosity cells read from one pool, and the params' edges. The model is the SIMULATOR, scripted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import ttscale
from tests.strategies.test_sleep_time import _Scripted
from ttscale.evals import load_task
from ttscale.schema import Problem
from ttscale.strategies.sleep_time import (
    FINISH,
    NOTES_FIRST,
    VERBOSITY,
    SleepTimeParams,
    needs_contexts,
    rethink_prompt,
    stateful_parts,
)
from ttscale.testing.policy import SimulatedArithmeticPolicy

ONE_CONTEXT = {"task": "arithmetic_stateful:1", "task_options": {"queries": 2, "per_level": 1}}  # 1 context × 2


class Scripted(_Scripted):
    """tests/strategies/test_sleep_time.py's scripted simulator (rethink passes write `notes` in turn, then the
    finish marker; the sampling parameters of every request kept), which also keeps every request's chat messages."""

    def __init__(self, notes: list[str], **kwargs: Any) -> None:
        super().__init__(notes, **kwargs)
        self.messages: list[list[dict[str, str]]] = []

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        self.messages.append([dict(m) for m in messages])
        return super().chat_prompt(messages, add_generation_prompt=add_generation_prompt)


def _stage(run: ttscale.Run) -> dict[str, Any]:
    (line,) = (run.path / "stages.jsonl").read_text().splitlines()
    stage: dict[str, Any] = json.loads(line)
    return stage


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines()]


def _run(policy: Scripted, out: Path, **params: Any) -> ttscale.Run:
    return ttscale.run(strategy="sleep_time", budget="64", limit=2, engine=policy, out=out,
                       params={"max_tokens": 32, **params}, **ONE_CONTEXT)  # type: ignore[arg-type]


# -- the rethink prompt -----------------------------------------------------------------------------------------


def test_the_rethink_prompt_by_hand() -> None:
    p = SleepTimeParams(memory_chars=20)
    text = rethink_prompt("Ann has 3.", "", p)
    assert text.endswith("replace the old ones (at most 20 characters). When they need no more work, write only: "
                         f"{FINISH}\n\nSituation:\nAnn has 3.\n\nYour notes so far:\n[empty]")
    # The refusal of the last edit: its size and the limit; none unless an edit was refused.
    refused = rethink_prompt("Ann has 3.", "A=3", p, refused=27)
    assert refused.endswith("Your notes so far:\nA=3\n\nYour last notes were 27 characters, over the limit of 20: "
                            "they were not kept. Write shorter notes.")
    assert "Your last notes" not in rethink_prompt("Ann has 3.", "A=3", p)
    # No limit: nothing said about one.
    unbounded = rethink_prompt("Ann has 3.", "A=3", SleepTimeParams(memory_chars=None))
    assert "The notes you write replace the old ones. When they need" in unbounded and "at most" not in unbounded


# -- why the rethinking ended ---------------------------------------------------------------------------------------


def test_the_stage_records_why_the_rethinking_ended(tmp_path: Path) -> None:
    endless = _run(Scripted([f"note {i}" for i in range(9)], seed=2), tmp_path / "a", rethinks=3)
    assert _stage(endless)["value"] == {"notes": "note 2", "tokens": 18, "passes": 3, "refused_edits": 0,
                                        "ended": "rethinks"}
    # Rewritten unchanged at temperature 0: stopped there, the notes kept, the second pass counted.
    same = _run(Scripted(["x = 1.", "x = 1.", "never asked"], seed=2), tmp_path / "b")
    assert _stage(same)["value"] == {"notes": "x = 1.", "tokens": 12, "passes": 2, "refused_edits": 0,
                                     "ended": "unchanged"}
    # Issue 61: unchanged right after a refused edit is no stop (that pass's prompt said the edit was refused, the
    # next one will not): the reference goes on. Pass 2 is refused, pass 3 unchanged, pass 4 unchanged again: stop.
    after = _run(Scripted(["x = 1.", "x = 1. " * 4, "x = 1.", "x = 1.", "never asked"], seed=2), tmp_path / "d",
                 memory_chars=20)
    assert _stage(after)["value"] == {"notes": "x = 1.", "tokens": 6 + 28 + 6 + 6, "passes": 4, "refused_edits": 1,
                                      "ended": "unchanged"}
    # The stage's budget spent: the fourth pass gets nothing (10 + 10 + 5 = 25 tokens).
    short = _run(Scripted([f"{i}123456789" for i in range(5)], seed=2), tmp_path / "c", sleep_tokens=25,
                 rethink_tokens=10)
    assert _stage(short)["value"] == {"notes": "21234", "tokens": 25, "passes": 3, "refused_edits": 0,
                                      "ended": "budget"}


def test_notes_before_the_finish_marker_are_kept_and_end_the_rethinking(tmp_path: Path) -> None:
    policy = Scripted([f"A=3, B=5. {FINISH}", "never asked"], seed=3)
    run = _run(policy, tmp_path / "run")
    assert _stage(run)["value"] == {"notes": "A=3, B=5.", "tokens": 34, "passes": 1, "refused_edits": 0,
                                    "ended": "finished"}
    # A pass that writes nothing ends it too, keeping the notes so far.
    blank = _run(Scripted(["A=3.", "   ", "never asked"], seed=3), tmp_path / "blank")
    assert _stage(blank)["value"] == {"notes": "A=3.", "tokens": 7, "passes": 2, "refused_edits": 0,
                                      "ended": "finished"}


def test_notes_of_exactly_the_limit_are_kept(tmp_path: Path) -> None:
    exact = "A=3 B=5 C=7 A+B=8 ok"  # 20 characters: at the limit, not over it
    run = _run(Scripted([exact, FINISH], seed=4), tmp_path / "run", memory_chars=20)
    assert _stage(run)["value"]["notes"] == exact and _stage(run)["value"]["refused_edits"] == 0
    over = _run(Scripted([exact + "!", FINISH], seed=4), tmp_path / "over", memory_chars=20)
    assert _stage(over)["value"]["notes"] == "" and _stage(over)["value"]["refused_edits"] == 1


def test_a_rethink_pass_is_one_greedy_user_turn(tmp_path: Path) -> None:
    policy = Scripted(["A=3.", FINISH], seed=5)
    _run(policy, tmp_path / "run")
    passes = [m for m in policy.messages if "Your notes so far:" in m[0]["content"]]
    assert len(passes) == 2 and all(len(m) == 1 and m[0]["role"] == "user" for m in passes)
    assert passes[0][0]["content"].startswith("You prepare for questions about a situation")


# -- the query -------------------------------------------------------------------------------------------------------


def test_the_query_asks_the_context_the_notes_and_the_query_under_its_verbosity_prompt(tmp_path: Path) -> None:
    policy = Scripted(["A=3.", FINISH], seed=6)
    run = _run(policy, tmp_path / "run", verbosity=2)
    problem = load_task("arithmetic_stateful:1", queries=2, per_level=1).problems()[0]
    context, query = problem.meta["context"], problem.meta["query"]
    asked = [m for m in policy.messages if "Your notes so far:" not in m[0]["content"]]
    expected = (f"{VERBOSITY[2]} {NOTES_FIRST}\n\n{context}\n\nNotes worked out from this earlier:\nA=3.\n\n{query} "
                "Answer the question. Give the result as a number.")
    assert asked[0] == [{"role": "user", "content": expected}]
    assert len(_records(run.path)) == 2
    # Without notes (no sleep-time compute) the question is the task's own, led by the verbosity prompt alone.
    plain = Scripted([], seed=6)
    _run(plain, tmp_path / "plain", verbosity=2, sleep_tokens=0)
    assert plain.messages[0] == [{"role": "user", "content": f"{VERBOSITY[2]}\n\n{problem.question} Answer the "
                                                             "question. Give the result as a number."}]


def test_a_context_without_an_id_is_keyed_by_its_text() -> None:
    def problem(context: str, **meta: Any) -> Problem:
        return Problem(id="p", question=f"{context} How many?", reference="1",
                       meta={"context": context, "query": "How many?", **meta})

    context, query, key = stateful_parts(problem("Ann has 3."))
    assert (context, query) == ("Ann has 3.", "How many?")
    # The key stored stages are found by on resume: 8 bytes of blake2b, 16 hex digits, the same for the same text.
    assert len(key) == 16 and int(key, 16) >= 0 and key == stateful_parts(problem("Ann has 3."))[2]
    assert key != stateful_parts(problem("Ann has 4."))[2]
    assert stateful_parts(problem("Ann has 3.", context_id=7))[2] == "7"
    message = ("sleep_time needs a stateful task (a context and a query per problem): arithmetic_stateful, "
               "gsm8k_stateful, or jsonl rows with context and query fields")
    for meta in ({"context": "Ann has 3."}, {"query": "How many?"}, {}):
        with pytest.raises(ValueError, match=rf"^{re.escape(message)}$"):
            needs_contexts([problem("Ann has 3."), Problem(id="q", question="How many?", reference="1", meta=meta)])


# -- a sweep's verbosity cells --------------------------------------------------------------------------------------


def test_every_smaller_budget_of_a_verbosity_sweep_reads_the_one_answer(tmp_path: Path) -> None:
    # One greedy answer of at most 32 tokens: every budget that pays for it reads that answer from the largest
    # budget's pool (not N = budget / 32 samples, which the pool of one does not have).
    result = ttscale.sweep(strategies=["sleep_time sleep_tokens=40 max_tokens=32 test_time=verbosity"],
                           budgets=[32, 64, 128], limit=3, engine=SimulatedArithmeticPolicy(seed=4),
                           out=tmp_path / "sweep", **ONE_CONTEXT)  # type: ignore[arg-type]
    assert len(result.cells) == 3
    cells = sorted((tmp_path / "sweep" / "cells").iterdir())
    pool = next(d for d in cells if "derived_from" not in json.loads((d / "summary.json").read_text()))
    derived = [d for d in cells if d != pool]
    assert pool.name.endswith("-b128-s0") and len(derived) == 2
    source = {r["id"]: r for r in _records(pool)}
    for d in derived:
        for r in _records(d):
            assert r["samples"] == source[r["id"]]["samples"] and len(r["samples"]) == 1
            assert r["ledger"]["test_tokens"] == r["samples"][0]["num_tokens"] == r["ledger"]["generated_tokens"]
            assert r["ledger"]["sleep_tokens_amortised"] == source[r["id"]]["ledger"]["sleep_tokens_amortised"] > 0


# -- params ----------------------------------------------------------------------------------------------------------


def test_params_edges() -> None:
    # The least settings allowed are allowed; a bool is not a count.
    p = SleepTimeParams(rethinks=1, rethink_tokens=1, memory_chars=1, sleep_temperature=10)
    assert (p.rethinks, p.rethink_tokens, p.memory_chars, p.sleep_temperature) == (1, 1, 1, 10)
    for params, message in (({"verbosity": True}, "verbosity must be within 0-4, got True"),
                            ({"rethinks": True}, "rethinks must be ≥ 1, got True"),
                            ({"rethink_tokens": 2.0}, "rethink_tokens must be ≥ 1, got 2.0"),
                            ({"memory_chars": True}, "memory_chars must be ≥ 1 or None, got True"),
                            ({"sleep_temperature": 10.5}, r"sleep_temperature must be in \[0, 10\], got 10.5"),
                            ({"sleep_temperature": -0.1}, r"sleep_temperature must be in \[0, 10\], got -0.1")):
        with pytest.raises(ValueError, match=rf"^{message}$"):
            SleepTimeParams(**params)  # type: ignore[arg-type]
