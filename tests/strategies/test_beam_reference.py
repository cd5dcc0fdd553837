"""Beam search against huggingface/search-and-learn's rule (`src/sal/search/beam_search.py` `_beam_search`,
MATH recipes `recipes/*/beam_search.yaml`), on a SCRIPTED engine: each step text and its score are set by
the test, so every expected tree is computed by hand from the reference's rule (the comment of each test).

The reference, per iteration: the N active beams (the survivors repeated in list order until N) each sample
one step; a beam that ends (EOS, length, or at the last iteration, which runs to EOS) joins `completed_beams`
and leaves; the loop stops when no beam is active; with `filter_duplicates` the open beams whose text repeats
an earlier one's are dropped; the N/M of highest score survive. At the end `completed_beams` is sorted by
score (`sort_completed`) and cut to N.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from ttscale.kit.params import params_class, parse_params
from ttscale.schema import Answer, Completion, Generation, SamplingParams
from ttscale.strategies import STRATEGIES
from ttscale.testing.latency import ASSISTANT, EOS
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context

Script = dict[tuple[str, ...], list[str]]


class ScriptedSteps(SimulatedArithmeticPolicy):
    """SIMULATED (not a model, not vLLM): the simulator's one-token-per-character tokenizer, with the next steps
    after a path (the tuple of its step texts) handed out in turn from `script[path]` ("The answer is 0." off
    the script). A step that starts with "The answer is" ends the solution (EOS). A request without a stop
    string (the last iteration) chains steps to the end of the solution. Asked for log-probs, every token of a
    step has `logprob[step]` (-1 if absent), so a step's mean log-prob is exactly that number."""

    def __init__(self, script: Script, logprob: dict[str, float] | None = None) -> None:
        super().__init__(seed=0)
        self.script, self.logprob = script, logprob or {}
        self.served: Counter[tuple[str, ...]] = Counter()

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        await asyncio.sleep(0)
        ids = list(prompt)
        reply = self.detokenize(ids).partition(ASSISTANT)[2]
        path = tuple(step for step in reply.split("\n\n") if step)
        out = tuple(self._follow(path, params) for _ in range(params.n))
        self.generated_tokens += sum(c.num_tokens for c in out)
        self.requests.append({"path": path, "n": params.n, "stop": params.stop, "max_tokens": params.max_tokens,
                              "logprobs": params.logprobs})
        return Generation(completions=out, prompt_tokens=len(ids))

    def _follow(self, path: tuple[str, ...], params: SamplingParams) -> Completion:
        text, done, step = "", False, ""
        while not done and not (params.stop and text):
            options = self.script.get(path) or [end(0)]  # a path off the script (a step cut short) just ends
            step = options[self.served[path] % len(options)]
            self.served[path] += 1
            done = step.startswith("The answer is")
            text += step if done else step + "\n\n"
            path = (*path, step)
        tokens = [*self.tokenize(text), *([EOS] if done else [])]
        shown = text if done or not params.stop else text[: -len("\n\n")]  # a matched stop string leaves the text
        if len(tokens) > params.max_tokens:
            tokens = tokens[: params.max_tokens]
            return Completion(text=self.detokenize(tokens), token_ids=tuple(tokens), finish_reason="length")
        logprobs = (self.logprob.get(step, -1.0),) * len(tokens) if params.logprobs is not None else None
        return Completion(text=shown, token_ids=tuple(tokens), logprobs=logprobs, finish_reason="stop")


class ScoreTable:
    """SIMULATED process verifier: a step's score is `table[step text]` (0.5 if absent)."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    async def score_steps(self, ctx: Any, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        return [[self.table.get(step, 0.5) for step in steps] for steps in candidates]


def run_beam(
    monkeypatch: pytest.MonkeyPatch, script: Script, scores: dict[str, float], budget: str | int = "8k", **params: Any
) -> tuple[Answer, dict[str, Any], ScriptedSteps]:
    monkeypatch.setattr("ttscale.blocks.verified.load_verifier", lambda spec: ScoreTable(scores))
    engine = ScriptedSteps(script)
    ctx = make_context(engine, budget)
    fn = STRATEGIES.get("beam")
    p = parse_params(params_class(fn), {k: str(v) for k, v in params.items()})
    answer = asyncio.run(fn(ctx.problem, ctx, p))
    return answer, ctx.ledger.to_dict(), engine


def end(k: int) -> str:
    return f"The answer is {k}."


# The example: first steps [A, A, B, C] scored [.9, .9, .8, .1], N = 4, M = 2.
EXAMPLE: Script = {(): ["A", "A", "B", "C"], ("A",): [end(1)], ("B",): [end(2)], ("C",): [end(3)]}
EXAMPLE_SCORES = {"A": 0.9, "B": 0.8, "C": 0.1}


def test_duplicates_are_dropped_before_the_n_over_m_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reference: open [A, A, B, C] → filter_duplicates → [A, B, C] → top N/M = 2 by score → {A (.9), B (.8)};
    # the 2 survivors are repeated to N = 4 beams: A, B, A, B → 2 children each. All 4 end at step 2.
    answer, ledger, engine = run_beam(monkeypatch, EXAMPLE, EXAMPLE_SCORES, n=4, width=2)
    second = [r for r in engine.requests if len(r["path"]) == 1]
    assert sorted((r["path"], r["n"]) for r in second) == [(("A",), 2), (("B",), 2)]
    assert ledger["tree"]["nodes_per_depth"] == [4, 4]
    assert Counter(s.answer for s in answer.samples) == {"1": 2, "2": 2}


def test_with_the_filter_off_the_duplicate_takes_a_beam(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reference with filter_duplicates false: top 2 of [A .9, A .9, B .8, C .1] = both A nodes; B is pruned.
    # Each A node is its own beam (2 children each): two requests from the same text, none from B.
    answer, _, engine = run_beam(monkeypatch, EXAMPLE, EXAMPLE_SCORES, n=4, width=2, filter_duplicates=False)
    second = [r for r in engine.requests if len(r["path"]) == 1]
    assert [(r["path"], r["n"]) for r in second] == [(("A",), 2), (("A",), 2)]
    assert Counter(s.answer for s in answer.samples) == {"1": 4}


def test_fewer_survivors_than_n_over_m_are_repeated_back_to_n(monkeypatch: pytest.MonkeyPatch) -> None:
    # N = 8, M = 2: N/M = 4 may survive. Open [A, A, A, B, B, C] and two ended → distinct [A, B, C], 3 < 4:
    # all 3 kept; the reference repeats them in list order to 8 beams, (A B C)·3 cut at 8 = A B C A B C A B:
    # A 3, B 3, C 2 children. (Without the filter the top 4 would be A, A, A, B at 2 children each.)
    script: Script = {
        (): ["A", "A", "A", "B", "B", "C", end(8), end(9)],
        ("A",): [end(1)], ("B",): [end(2)], ("C",): [end(3)],
    }
    answer, ledger, engine = run_beam(monkeypatch, script, EXAMPLE_SCORES, n=8, width=2)
    second = [(r["path"], r["n"]) for r in engine.requests if len(r["path"]) == 1]
    assert sorted(second) == [(("A",), 3), (("B",), 3), (("C",), 2)]
    assert ledger["tree"]["nodes_per_depth"] == [8, 8]
    assert len(answer.samples) == 8 and answer.info["completed"] == 10  # 2 + 8 completed, the top 8 kept


# Two solutions end at step 1 and three at step 2, so N = 4 solutions have ended after iteration 2; one beam
# (A2) is still open. Scores of the ended paths (the `last` step's score): 1: .3, 2: .95, 3: .2, 4: .6, 5: .1,
# 6: .7, 7: .7, 8: .5, 9: .4.
LONG: Script = {
    (): ["A", "B", end(1), end(2)],
    ("A",): ["A2", end(3)],
    ("B",): [end(4), end(5)],
    ("A", "A2"): ["A3"],
    ("A", "A2", "A3"): [end(6), end(7), end(8), end(9)],
}
LONG_SCORES = {"A": 0.9, "B": 0.8, "A2": 0.9, "A3": 0.9, end(1): 0.3, end(2): 0.95, end(3): 0.2, end(4): 0.6,
               end(5): 0.1, end(6): 0.7, end(7): 0.7, end(8): 0.5, end(9): 0.4}


def test_search_goes_on_after_n_solutions_ended_until_every_beam_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reference: after iteration 2, completed_beams holds 5 ≥ N = 4, but A2 is still active, so the loop goes on
    # (it stops only when no beam is active): A2 alone survives and is repeated to 4 beams. Iteration 3 writes
    # A3 four times (open again), iteration 4 (max_steps = 8: not the last) ends all four: no beam is active.
    answer, ledger, engine = run_beam(monkeypatch, LONG, LONG_SCORES, n=4, width=2)
    # A3 ×4 are one text: the filter leaves one beam, repeated to 4 again.
    assert [(r["path"], r["n"]) for r in engine.requests[-2:]] == [(("A", "A2"), 4), (("A", "A2", "A3"), 4)]
    assert ledger["tree"]["nodes_per_depth"] == [4, 4, 4, 4]
    assert answer.info["iterations"] == 4 and answer.info["completed"] == 9
    assert all(r["stop"] == ("\n\n",) for r in engine.requests)  # never the last iteration: max_steps is 8


def test_the_last_iteration_runs_every_open_beam_to_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # max_steps = 3: iteration 3 is the reference's last (i == num_iterations − 1): A2's 4 beams generate to EOS,
    # without the step stop, so each writes "A3\n\nThe answer is k." in one node and completes.
    answer, ledger, engine = run_beam(monkeypatch, LONG, LONG_SCORES, n=4, width=2, max_steps=3)
    assert [(r["path"], r["n"], r["stop"]) for r in engine.requests[-1:]] == [(("A", "A2"), 4, ())]
    assert ledger["tree"]["nodes_per_depth"] == [4, 4, 4]
    assert answer.info["iterations"] == 3 and answer.info["completed"] == 9
    assert all(s.finish_reason == "stop" for s in answer.samples)


def test_exactly_the_n_best_completed_solutions_are_the_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reference: completed_beams = 9 paths (1, 2 | 3, 4, 5 | 6, 7, 8, 9), sorted by score and cut to N = 4:
    # 2 (.95), 6 (.7), 7 (.7), 4 (.6). The answer is chosen among these 4 only (weighted vote: one each).
    answer, _, _ = run_beam(monkeypatch, LONG, LONG_SCORES, n=4, width=2, sort_completed=True)
    assert sorted(s.answer or "" for s in answer.samples) == ["2", "4", "6", "7"]
    assert answer.info["candidates"] == answer.info["final"] == 4
    assert answer.prediction == "2"  # the highest weight among four single votes
    # sort_completed false (the reference's default): the first N to complete, in order: 1, 2, then 3, 4.
    first, _, _ = run_beam(monkeypatch, LONG, LONG_SCORES, n=4, width=2)
    assert [s.answer for s in first.samples] == ["1", "2", "3", "4"]


@pytest.mark.parametrize("budget", [1, 20, 60, 120, 200, 300])
def test_the_budget_is_never_exceeded_and_a_short_final_set_says_why(
    monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    # The LONG search generates about 200 tokens: budgets below it end the search early. Then fewer than N
    # solutions may have completed; the final set is short only with the budget ended, and info says so.
    answer, ledger, engine = run_beam(monkeypatch, LONG, LONG_SCORES, budget, n=4, width=2)
    assert ledger["spent"] <= budget and ledger["generated_tokens"] == engine.generated_tokens
    if answer.info["n"]:
        assert answer.info["final"] == 4 or answer.info["budget_ended"]
        assert len(answer.samples) <= 4


def test_the_simulated_policy_search_stays_in_budget_with_duplicates_filtered() -> None:
    # The simulator writes from a handful of texts: duplicate steps are common, and the filter is on by default.
    for budget in (50, 400, 1500, 4000):
        fn = STRATEGIES.get("beam")
        ctx = make_context(SimulatedArithmeticPolicy(seed=budget, p_intro=1.0), budget)
        p = parse_params(params_class(fn), {"n": "8", "width": "2", "max_tokens": "64"})
        answer = asyncio.run(fn(ctx.problem, ctx, p))
        assert ctx.ledger.to_dict()["spent"] <= budget
        assert len(answer.samples) <= 8 and (answer.info["final"] == 8 or answer.info["budget_ended"])
