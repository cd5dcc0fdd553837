"""The `genrm` strategy: the S/V split from the budget, and runs on the SIMULATED policy, whose judge
answers "Y"/"N" with a known accuracy (ttscale.testing.policy). The real engine: test_engine_search.py.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from ttscale.kit.context import Context
from ttscale.kit.params import parse_params
from ttscale.schema import Answer
from ttscale.strategies.genrm import GenRMParams, budget_split, genrm, plan_verifications
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context


def run(
    budget: str | int = "4k", *, index: int = 0, seed: int = 0, policy: dict[str, Any] | None = None, **params: Any
) -> tuple[Answer, Context, SimulatedArithmeticPolicy]:
    sim = SimulatedArithmeticPolicy(seed=seed, **(policy or {}))
    ctx = make_context(sim, budget, problem_index=index)
    p = parse_params(GenRMParams, {k: str(v) for k, v in params.items()})
    answer = asyncio.run(genrm(ctx.problem, ctx, p))
    return answer, ctx, sim


@pytest.mark.parametrize(("budget", "expected"), [(1000, (1, 1)), (2000, (3, 1)), (4000, (4, 2)), (8000, (7, 3))])
def test_budget_split_at_the_benchmark_budgets(budget: int, expected: tuple[int, int]) -> None:
    t_s = t_v = 256
    c = budget // t_s
    s, v = budget_split(c, lam=(t_v + 1) / t_s, solution_share=0.594)
    assert (s, v) == expected
    assert s * t_s + s * v * (t_v + 1) <= budget  # the plan never passes the budget, verdict tokens included


def test_budget_split_grows_solutions_faster_than_verifications() -> None:
    # Over a wide range the fitted log-slopes follow the paper's ordering a > b (0.57 vs 0.39).
    budgets = [2**k for k in range(4, 15)]
    splits = [budget_split(c, lam=1.0, solution_share=0.594) for c in budgets]
    logs = [math.log(c) for c in budgets]

    def slope(values: list[float]) -> float:
        mx, my = sum(logs) / len(logs), sum(values) / len(values)
        return sum((x - mx) * (y - my) for x, y in zip(logs, values, strict=True)) / sum((x - mx) ** 2 for x in logs)

    a = slope([math.log(s) for s, _ in splits])
    b = slope([math.log(v) for _, v in splits])
    assert a > b > 0.2
    assert 0.5 < a < 0.7
    for c, (s, v) in zip(budgets, splits, strict=True):
        assert s * (1 + v) <= c  # within the budget
        assert (s + 1) * (1 + v) > c  # and not leaving a whole solution's worth of it unused


def test_budget_split_keeps_what_is_given_and_fits_the_other() -> None:
    assert budget_split(30, lam=1.0, solution_share=0.594, s=5, v=9) == (5, 9)
    assert budget_split(30, lam=1.0, solution_share=0.594, s=5) == (5, 5)  # 5·(1 + 5) = 30
    assert budget_split(30, lam=1.0, solution_share=0.594, v=2) == (10, 2)
    assert budget_split(0, lam=1.0, solution_share=0.594) == (1, 1)  # never 0: the ledger caps instead
    with pytest.raises(ValueError, match="lam > 0"):
        budget_split(10, lam=0.0, solution_share=0.5)


def test_genrm_sends_s_solutions_then_v_chains_each_and_a_verdict_per_chain() -> None:
    answer, ctx, sim = run("4k", max_tokens=64, verify_tokens=48)
    s, v = answer.info["S"], answer.info["V"]
    assert s == budget_split(4000 // 64, lam=49 / 64, solution_share=0.594)[0]
    ledger = ctx.ledger.to_dict()
    solution_tokens = ledger["generated_tokens"] - ledger["verifier"]["generated_tokens"]
    assert v == (4000 - solution_tokens) // (s * 49)  # V from the budget the real solutions left, chains uncut
    assert answer.info["lambda_cap"] == 0.75 and answer.info["solutions"] == s == len(answer.samples)
    per_chain = ledger["verifier"]["generated_tokens"] / (s * v)
    assert answer.info["lambda_measured"] == pytest.approx(per_chain / (solution_tokens / s), abs=1e-6)
    first, *rest = sim.requests
    assert first["n"] == s and first["max_tokens"] == 64
    chains = [r for r in rest if r["max_tokens"] == 48]
    verdicts = [r for r in rest if r["max_tokens"] == 1]
    assert len(chains) == s and all(r["n"] == v for r in chains)
    assert len(verdicts) == s * v == answer.info["verdicts"]["appended"]  # the simulator's chains state no verdict
    assert ledger["verifier"]["calls"] == s + s * v
    assert ledger["generated_tokens"] == sim.generated_tokens <= 4000
    assert ledger["verifier"]["generated_tokens"] > s * v  # chains, not only verdict tokens


def test_genrm_picks_the_solution_of_highest_mean_verdict() -> None:
    # The judge is right 90% of the time (p_judge); the policy states the right value 40% of the time.
    correct = 0
    for i in range(12):
        answer, ctx, _ = run("4k", index=i, seed=i, policy={"p_correct": 0.4}, max_tokens=64, verify_tokens=32)
        best = max(answer.samples, key=lambda sample: sample.score or 0.0)
        assert answer.prediction == best.answer
        assert all(0.0 <= (sample.score or 0.0) <= 1.0 for sample in answer.samples)
        correct += ctx.task.grade(answer.prediction, ctx.problem)
    blind = 0
    for i in range(12):
        policy = {"p_correct": 0.4, "p_judge": 0.5}
        answer, ctx, _ = run("4k", index=i, seed=i, policy=policy, max_tokens=64, verify_tokens=32)
        blind += ctx.task.grade(answer.prediction, ctx.problem)
    assert correct >= 11
    assert correct >= blind + 3


def test_explicit_s_and_v_and_weighted_selection() -> None:
    answer, _, sim = run("8k", n=3, verifications=2, max_tokens=64, verify_tokens=16, select="weighted")
    assert (answer.info["S"], answer.info["V"]) == (3, 2)
    assert sim.requests[0]["n"] == 3
    assert sum(1 for r in sim.requests if r["max_tokens"] == 1) == 6
    assert answer.info["select"] == "weighted" and answer.info["votes"]
    assert answer.prediction == max(answer.info["votes"], key=answer.info["votes"].get)


def test_tiny_budgets_end_cleanly() -> None:
    for budget in (1, 30, 200):
        answer, ctx, sim = run(budget, max_tokens=64, verify_tokens=64)
        ledger = ctx.ledger.to_dict()
        assert ledger["spent"] <= budget and ledger["generated_tokens"] == sim.generated_tokens
        assert answer.info["S"] >= 1 and answer.info["V"] >= 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"verifications": "0"}, "verifications must be ≥ 1, got 0"),
        ({"verify_tokens": "0"}, "verify_tokens must be ≥ 1, got 0"),
        ({"solution_share": "0"}, r"solution_share must be in \(0, 1\], got 0.0"),
        ({"refill": "true"}, "refill does not apply to genrm"),
        ({"select": "majority"}, "parameter select must be"),
    ],
)
def test_params_are_validated(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_params(GenRMParams, raw)


# -- measured compute and verdicts read inside the chain: a scripted engine ---------------------------


class ScriptedGenRM(SimulatedArithmeticPolicy):
    """SIMULATED (not a model, not vLLM): the simulator's one-token-per-character tokenizer, with solutions
    handed out in order from `solutions`, and each solution's verification chains in order from
    `chains[solution]`: (text, P at the verdict token or None). A chain gets EOS; its last " Yes"/" No" gets
    the given top log-probs (character tokens: the verdict token is "Y" or "N"). The appended verdict
    question (one greedy token) is answered with P(Yes) = `judge`, or, with `judge` None, with a token that is
    neither Yes nor No (an unreadable verdict)."""

    def __init__(self, *, judge: float | None = 0.6) -> None:
        super().__init__(seed=0)
        self.judge = judge
        self.solutions: list[str] = []
        self.chains: dict[str, list[tuple[str, dict[str, float] | None]]] = {}
        self.served: dict[str, int] = {}

    async def generate(self, prompt: Any, params: Any, *, seed: int | None = None) -> Any:
        from ttscale.schema import Completion, Generation

        await asyncio.sleep(0)
        text = self.detokenize(prompt)
        if "Proposed solution" not in text:
            out = [self._complete(t, None, params.max_tokens) for t in self.solutions[: params.n]]
            self.solutions = self.solutions[params.n:]
        elif params.max_tokens == 1 and self.judge is None:
            top = {"Maybe": math.log(0.9)}
            out = [Completion(text="M", token_ids=(ord("M") + 3,), logprobs=(top["Maybe"],), top_logprobs=(top,))]
        elif params.max_tokens == 1:
            top = {"Yes": math.log(self.judge), "No": math.log(1 - self.judge)}
            out = [Completion(text="Yes", token_ids=(ord("Y") + 3,), logprobs=(top["Yes"],), top_logprobs=(top,))]
        else:
            judged = text.split("Proposed solution:\n", 1)[1]
            key = next(s for s in self.chains if judged.startswith(s))
            done = self.served.get(key, 0)
            self.served[key] = done + params.n
            out = [self._complete(t, top, params.max_tokens) for t, top in self.chains[key][done: done + params.n]]
        self.generated_tokens += sum(c.num_tokens for c in out)
        self.requests.append({"n": params.n, "max_tokens": params.max_tokens, "logprobs": params.logprobs})
        return Generation(completions=tuple(out), prompt_tokens=len(prompt))

    def _complete(self, text: str, verdict: dict[str, float] | None, max_tokens: int) -> Any:
        from ttscale.schema import Completion

        ids = [*self.tokenize(text), 2][:max_tokens]
        at = max(text.rfind(" Yes"), text.rfind(" No")) + 1
        top = tuple({k: math.log(p) for k, p in verdict.items()} if verdict and i == at else {"x": -0.01}
                    for i in range(len(ids)))
        return Completion(text=self.detokenize(ids).replace("<eos>", ""), token_ids=tuple(ids), top_logprobs=top,
                          logprobs=(-0.01,) * len(ids), finish_reason="stop" if ids[-1] == 2 else "length")


ASK = " Is the answer correct (Yes/No)?"


def scripted(budget: int, **params: Any) -> tuple[Answer, Context, ScriptedGenRM]:
    ctx = make_context(ScriptedGenRM(), budget)
    sim = fresh(ctx.problem.reference)
    ctx.engine = sim
    p = parse_params(GenRMParams, {k: str(v) for k, v in params.items()})
    return asyncio.run(genrm(ctx.problem, ctx, p)), ctx, sim


def test_verdicts_come_from_the_chain_and_lambda_is_measured_from_the_ledger() -> None:
    answer, ctx, _ = scripted(4000, n=2, verifications=2, max_tokens=64, verify_tokens=64)
    right, wrong = answer.samples
    # right: chain verdict P(Yes) = 0.7, then a chain with no verdict → appended question, P(Yes) = 0.6.
    # wrong: "... No" with P(No) = 0.8 → 0.2; "... Yes" with P(Yes) = 0.9 → 0.9. Means 0.65 and 0.55.
    assert right.score == pytest.approx(0.65) and wrong.score == pytest.approx(0.55)
    assert answer.prediction == ctx.problem.reference
    assert answer.info["verdicts"] == {"chain": 3, "appended": 1, "unreadable": 0}
    assert answer.info["no_readable_verdict"] == 0
    ref = ctx.problem.reference
    solution_tokens = len(f"The answer is {ref}.") + 1 + len(f"The answer is {int(ref) + 1}.") + 1  # + EOS each
    chain_tokens = sum(len(t) + 1 for t in ["Right." + ASK + " Yes", "I cannot tell.", "Wrong." + ASK + " No",
                                             "Fine." + ASK + " Yes"])
    ledger = ctx.ledger.to_dict()
    assert ledger["generated_tokens"] - ledger["verifier"]["generated_tokens"] == solution_tokens
    assert ledger["verifier"]["generated_tokens"] == chain_tokens + 1  # + the one appended verdict token
    # λ per verification: (verifier tokens / 4 chains) / (policy tokens / 2 solutions).
    assert answer.info["lambda_measured"] == round(((chain_tokens + 1) / 4) / (solution_tokens / 2), 6)
    assert answer.info["lambda_cap"] == 1.0
    assert answer.info["chains"][0] == [[0.7, len("Right." + ASK + " Yes") + 1, 0, "chain"],
                                        [0.6, len("I cannot tell.") + 1, 1, "appended"]]


def unreadable(reference: str) -> ScriptedGenRM:
    """Issue 27's hand examples as scripts: the right solution's verdicts [0.9, unreadable], the wrong one's
    [unreadable, unreadable] (chains with no verdict, and an appended question answered neither Yes nor No)."""
    sim = ScriptedGenRM(judge=None)
    right, wrong = f"The answer is {reference}.", f"The answer is {int(reference) + 1}."
    sim.solutions = [right, wrong]
    sim.chains = {right: [("Right." + ASK + " Yes", {"Y": 0.9, "N": 0.1}), ("I cannot tell.", None)],
                  wrong: [("Hmm.", None), ("No idea.", None)]}
    return sim


def test_unreadable_verdicts_are_left_out_of_the_mean_and_none_readable_scores_zero() -> None:
    """sc-genrm-scaling's `get_solution_score`: [0.9, unreadable] → 0.9 (not (0.9 + 0.5) / 2 = 0.7), and a
    solution with no readable verdict → 0 (not 0.5); the record counts the unreadable verdicts."""
    ctx = make_context(ScriptedGenRM(), 4000)
    ctx.engine = unreadable(ctx.problem.reference)
    p = parse_params(GenRMParams, {"n": "2", "verifications": "2", "max_tokens": "64", "verify_tokens": "64"})
    answer = asyncio.run(genrm(ctx.problem, ctx, p))
    right, wrong = answer.samples
    assert right.score == pytest.approx(0.9) and wrong.score == 0.0
    assert answer.info["verdicts"] == {"chain": 1, "appended": 0, "unreadable": 3}
    assert answer.info["no_readable_verdict"] == 1
    assert answer.info["chains"][1] == [[None, len("Hmm.") + 1, 1, "unreadable"],
                                        [None, len("No idea.") + 1, 1, "unreadable"]]
    assert answer.info["best_score"] == pytest.approx(0.9) and answer.prediction == ctx.problem.reference


def test_v_is_planned_from_the_budget_the_real_solutions_left() -> None:
    # B = 1000, T_S = 64, T_V = 48: C = 15 and the cap-based split gives S = 4, V' = 3 (15 / (1 + 3·49/64) = 4.5).
    assert budget_split(15, lam=49 / 64, solution_share=0.594) == (4, 3)
    answer, ctx, _ = scripted(1000, max_tokens=64, verify_tokens=48)
    # The 4 solutions ("The answer is 6." / "... 7.", 16 characters + EOS) take 68 tokens, not 4·64: the 932
    # left pay floor(932 / (4·49)) = 4 uncut chains each, one more than the cap-based plan.
    solution_tokens = ctx.ledger.usage["policy"].generated_tokens
    assert solution_tokens == 2 * len(f"The answer is {ctx.problem.reference}.") + 2 * len(
        f"The answer is {int(ctx.problem.reference) + 1}.") + 4
    assert (answer.info["S"], answer.info["V"]) == (4, (1000 - solution_tokens) // (4 * 49)) == (4, 4)
    assert ctx.ledger.to_dict()["capped_requests"] == 0 and ctx.ledger.spent <= 1000


def test_an_explicit_v_is_lowered_so_that_no_chain_is_cut() -> None:
    # n = 4 solutions (68 tokens) in B = 600 leave 532: floor(532 / (4·49)) = 2 uncut chains each, not the 5 asked.
    answer, ctx, sim = scripted(600, n=4, verifications=5, max_tokens=64, verify_tokens=48)
    assert answer.info["V"] == 2 and answer.info["V_requested"] == 5
    assert [r["n"] for r in sim.requests if r["max_tokens"] == 48] == [2, 2, 2, 2]
    assert ctx.ledger.to_dict()["capped_requests"] == 0


def test_plan_verifications_by_hand() -> None:
    assert plan_verifications(remaining=1000, solutions=4, chain_tokens=49, wanted=None) == 5  # 1000 // 196
    assert plan_verifications(remaining=1000, solutions=4, chain_tokens=49, wanted=3) == 3
    assert plan_verifications(remaining=1000, solutions=4, chain_tokens=49, wanted=8) == 5
    assert plan_verifications(remaining=100, solutions=4, chain_tokens=49, wanted=None) == 1  # left to the caps


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("script", ["fresh", "unreadable"])
def test_a_smaller_s_and_v_replayed_from_a_run_is_that_run(script: str, legacy: bool) -> None:
    """genrm (S, V) = (1, 1) and (2, 1) derived from a (2, 2) run's stored chains equal direct runs (exact tokens),
    unreadable verdicts included; `legacy`: the source stores them as before issue 27 (r = 0.5, source "default")
    and the replay still leaves them out of the mean."""
    from ttscale.budget import Budget
    from ttscale.running.runner import Meters, Prepared, RunSpec, solve
    from ttscale.sweeps.replay import derive_record

    def prepared(budget: int, **params: Any) -> Prepared:
        raw = {k: str(v) for k, v in {"max_tokens": 64, "verify_tokens": 64, **params}.items()}
        spec = RunSpec(strategy="genrm", budget=str(budget), task="arithmetic:1-3", params=raw)
        task = make_context(ScriptedGenRM(), budget).task
        return Prepared(spec, "genrm", genrm, parse_params(GenRMParams, raw), Budget.parse(budget), task,
                        task.problems()[:1], Meters(budget=None, costing=None))

    engine = {"fresh": fresh, "unreadable": unreadable}[script]
    big = prepared(4000, n=2, verifications=2)
    problem = big.problems[0]
    source = asyncio.run(solve(big, engine(problem.reference), problem)).to_json()
    if legacy:
        source["info"]["chains"] = [[[0.5, t, k, "default"] if src == "unreadable" else [r, t, k, src]
                                     for r, t, k, src in per] for per in source["info"]["chains"]]
        # As a run directory hands it over: the one migration of old run files reads "default" as unreadable.
        from ttscale.runstore.runformat import migrate_record

        source = migrate_record(source, where="legacy")
    for budget, n, v in [(4000, 1, 1), (4000, 2, 1), (400, 2, 1)]:
        low = prepared(budget, n=n, verifications=v)
        derived = derive_record(low, problem, source, source_id="src")
        run_direct = asyncio.run(solve(low, engine(problem.reference), problem)).to_json()
        assert not isinstance(derived, str), derived
        if script == "unreadable":  # right: [0.9, unreadable] → 0.9; wrong: [unreadable, ...] → 0
            assert [x["score"] for x in derived["samples"]] == pytest.approx([0.9, 0.0][:n])
        for key in ("prediction", "correct", "samples"):
            assert derived[key] == run_direct[key], key
        for key in ("spent", "generated_tokens"):
            assert derived["ledger"][key] == run_direct["ledger"][key], key
        assert derived["ledger"]["verifier"]["generated_tokens"] == run_direct["ledger"]["verifier"]["generated_tokens"]
        info = {k: x for k, x in derived["info"].items() if k not in ("derived_from", "replayed")}
        assert info == run_direct["info"]
    # (2, 2) in 150 tokens: the 34 solution tokens leave 116 < 2·65, so even V = 1 chains are cut: refused.
    tight = prepared(150, n=2, verifications=2)
    assert derive_record(tight, problem, source, source_id="src") == "the verifications would not fit uncapped"
    assert asyncio.run(solve(tight, engine(problem.reference), problem)).ledger["capped_requests"] > 0


def fresh(reference: str) -> ScriptedGenRM:
    """A ScriptedGenRM with the scripts of `scripted` for a problem whose answer is `reference`."""
    sim = ScriptedGenRM()
    right, wrong = f"The answer is {reference}.", f"The answer is {int(reference) + 1}."
    sim.solutions = [right, wrong, right, wrong]
    sim.chains = {
        right: [("Right." + ASK + " Yes", {"Y": 0.7, "N": 0.3}), ("I cannot tell.", None), ("Ok." + ASK + " Yes",
                {"Y": 0.5, "N": 0.5})],
        wrong: [("Wrong." + ASK + " No", {"N": 0.8, "Y": 0.2}), ("Fine." + ASK + " Yes", {"Y": 0.9, "N": 0.1}),
                ("Hm." + ASK + " No", {"N": 0.6, "Y": 0.4})],
    }
    return sim


def test_lambda_is_measured_on_genrms_own_requests_not_on_a_probe_before_it() -> None:
    from ttscale.schema import SamplingParams

    sim = SimulatedArithmeticPolicy(seed=0)
    ctx = make_context(sim, "6k")
    # What `adaptive` does first: a probe charged to the same ledger as policy tokens.
    asyncio.run(ctx.generate(ctx.prompt(), SamplingParams(n=4, max_tokens=64)))
    probed = asyncio.run(genrm(ctx.problem, ctx, parse_params(GenRMParams, {"max_tokens": "64", "verify_tokens": "48",
                                                                               "n": "2", "verifications": "2"})))
    solutions = [s.num_tokens for s in probed.samples]
    chains = [c[1] + c[2] for per in probed.info["chains"] for c in per]
    assert probed.info["solution_tokens_mean"] == pytest.approx(sum(solutions) / len(solutions), abs=1e-3)
    expected = (sum(chains) / len(chains)) / (sum(solutions) / len(solutions))
    assert probed.info["lambda_measured"] == pytest.approx(expected, abs=1e-5)
