"""DeepConf (strategies/deepconf.py): the offline vote on hand examples, online stopping on the SIMULATOR."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adaptive.sim import PoolReplayEngine, prepared_for
from ttscale.running.runner import solve
from ttscale.schema import Completion, Generation, Sample, SamplingParams
from ttscale.strategies.deepconf import DeepConfParams, deepconf, select_offline
from ttscale.sweeps import GridEntry, SweepSpec
from ttscale.sweeps.replay import derive_record
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context


def _sample(answer: str, confidences: list[float]) -> Sample:
    return Sample(text=f"The answer is {answer}.", answer=answer, num_tokens=len(confidences),
                  confidences=tuple(confidences))


def test_confidence_weights_flip_the_plurality() -> None:
    # Three unsure traces say 5 (C = 1 each), two sure ones say 7 (C = 4 each): 7 wins by weight 8 to 3,
    # where a plain majority (self-consistency) says 5.
    samples = [_sample("5", [1.0] * 4)] * 3 + [_sample("7", [4.0] * 4)] * 2
    prediction, scored, info = select_offline(samples, DeepConfParams(eta=1.0, score="mean"))
    assert prediction == "7" and info["kept"] == 5
    assert info["votes"] == {"5": 3.0, "7": 8.0}
    assert [s.score for s in scored] == [1.0, 1.0, 1.0, 4.0, 4.0]


def test_filtering_keeps_the_top_eta_by_the_chosen_score() -> None:
    # Ten traces with mean confidences 1..10; answers "a" for the six least confident, "b" for the rest.
    samples = [_sample("a" if c <= 6 else "b", [float(c)] * 3) for c in range(1, 11)]
    low = select_offline(samples, DeepConfParams(eta=0.1, score="mean"))  # DeepConf-low: the top 10%
    # The recorded threshold is the reference's: the (1 - η) percentile of the scores (1 + 9 × 0.9 = 9.1 at η = 0.1,
    # 1 + 9 × 0.1 = 1.9 at η = 0.9), not the lowest kept score (10 and 2).
    assert low[0] == "b" and low[2]["kept"] == 1 and low[2]["threshold"] == pytest.approx(9.1)
    high = select_offline(samples, DeepConfParams(eta=0.9, score="mean"))  # DeepConf-high: all but the worst
    assert high[2]["kept"] == 9 and high[2]["threshold"] == pytest.approx(1.9)
    assert high[0] == "b"  # "b" 7+8+9+10 = 34 against "a" 2+3+4+5+6 = 20
    # The lowest-group score sees a dip the mean hides: a trace with one bad window drops out.
    dipped = [_sample("x", [9.0, 9.0, 0.0, 9.0, 9.0]), _sample("y", [6.0] * 5)]
    by_mean = select_offline(dipped, DeepConfParams(eta=0.5, score="mean"))
    by_least = select_offline(dipped, DeepConfParams(eta=0.5, score="lowest_group", window=2))
    assert by_mean[0] == "x" and by_least[0] == "y"


def test_offline_takes_the_percentile_over_the_traces_that_state_an_answer() -> None:
    # issue 44's hand example: ten traces, the most confident of them states no answer. Each trace is [a, a, b, b]
    # with window 2, so its lowest group is min(a, b) and its tail (the last 2 tokens) b.
    def trace(answer: str | None, a: float, b: float) -> Sample:
        return Sample(text=f"The answer is {answer}." if answer else "No idea.", answer=answer, num_tokens=4,
                      confidences=(a, a, b, b))

    samples = [trace(None, 9, 9), trace("5", 1, 8), trace("7", 8, 7), trace("7", 6, 6),
               *(trace("5", c, c) for c in (0.5, 1, 2, 3, 4, 5))]
    # η = 0.1, lowest group: over all ten only the unanswered trace clears the 90th percentile (a vote of
    # nothing: None); over the nine answered ones, the "7" whose lowest group is 7.
    low = select_offline(samples, DeepConfParams(eta=0.1, score="lowest_group", window=2))
    assert low[0] == "7" and low[2]["kept"] == 1 and low[2]["answered"] == 9
    # The threshold recorded: the 90th percentile of the nine answered scores [0.5, 1, 1, 2, 3, 4, 5, 6, 7], 6.2 (as
    # the reference's np.percentile), not the kept trace's 7.
    assert low[2]["threshold"] == pytest.approx(6.2)
    # η = 0.3, tail: over all ten the top three are None, "5" (8) and "7" (7) → "5"; over the nine answered ones
    # "5" (8), "7" (7) and "7" (6) → "7" by 13 to 8.
    tail = select_offline(samples, DeepConfParams(eta=0.3, score="tail", window=2))
    assert tail[0] == "7" and tail[2]["votes"] == {"5": 8.0, "7": 13.0} and tail[2]["kept"] == 3
    assert [s.score for s in tail[1]][:3] == [9, 8, 7]  # every trace keeps its score, the unanswered one too


def test_offline_on_the_simulator_keeps_confidences_for_replay() -> None:
    policy = SimulatedArithmeticPolicy(seed=3, p_correct=0.4)
    ctx = make_context(policy, "2k", problem_index=4)
    answer = asyncio.run(deepconf(ctx.problem, ctx, DeepConfParams(max_tokens=64, eta=0.5, window=8)))
    assert all(s.confidences and len(s.confidences) == s.num_tokens for s in answer.samples)
    assert all(request["n"] >= 1 for request in policy.requests)
    assert answer.info["kept"] >= len(answer.samples) // 2 and ctx.ledger.spent <= 2048
    # Wrong traces are scripted as less confident: the kept half is more often right than the whole pool.
    right = ctx.problem.reference
    kept = [s for s in answer.samples if s.score is not None and s.score >= answer.info["threshold"]]
    assert sum(s.answer == right for s in kept) / len(kept) > sum(s.answer == right for s in answer.samples) / len(
        answer.samples)


def _scripted(drops: dict[int, int]) -> Any:
    """Token confidences 3.0 everywhere, except the k-th sample drawn (0-based), which falls to 1.0 from token
    drops[k] on."""
    calls: Iterator[int] = iter(range(1 << 30))

    def script(text: str, length: int) -> list[float]:
        k = next(calls)
        at = drops.get(k, length)
        return [3.0] * at + [1.0] * (length - at)

    return script


def test_online_aborts_a_trace_at_its_first_window_below_the_threshold_and_meters_it_exactly() -> None:
    # Warm-up: 4 traces at C = 3.0 → threshold s = 3.0. The 5th trace drawn falls to 1.0 at token 10: the window
    # of 4 ending there has C_G = (3 + 3 + 3 + 1) / 4 = 2.5 < s, so it stops with 11 tokens.
    policy = SimulatedArithmeticPolicy(seed=0, p_correct=0.3, confidence_script=_scripted({4: 10}))
    ctx = make_context(policy, "4k", problem_index=7)
    p = DeepConfParams(mode="online", n=6, warmup=4, window=4, eta=0.5, max_tokens=64, parallel=1)
    answer = asyncio.run(deepconf(ctx.problem, ctx, p))
    assert answer.info["threshold"] == 3.0 and answer.info["warmup"] == 4
    stopped = [s for s in answer.samples if s.stopped]
    assert len(stopped) == 1 and stopped[0].num_tokens == 11 and stopped[0].finish_reason == "abort"
    assert answer.info["stopped"] == {"threshold": 1, "consensus": 0} and policy.aborted == 1
    assert answer.info["n"] == 6 and answer.info["voters"] == 5  # the stopped trace does not vote
    # Every token generated is paid, the stopped trace's 11 included; nothing past the stop.
    assert ctx.ledger.spent == policy.generated_tokens == sum(s.num_tokens for s in answer.samples)
    assert ctx.ledger.spent <= 4096


_Trace = tuple[str | None, int, float, int | None]


class _Scripted(SimulatedArithmeticPolicy):
    """SIMULATED: the k-th trace drawn (0-based, warm-up first) is traces[k] = (answer or None, tokens, token
    confidence, the token from which the confidence falls to 1.0 or None): answers and confidences by hand."""

    def __init__(self, traces: Sequence[_Trace]) -> None:
        super().__init__(seed=0)
        self.traces = traces
        self.drawn = 0

    def _sample(self, expression: str, value: int, reply: str, params: SamplingParams) -> Completion:
        answer, length, confidence, drop = self.traces[self.drawn]
        self.drawn += 1
        # The answer closes the trace: a trace aborted before its end states none.
        text = (f"The answer is {answer}." if answer is not None else "No idea.").rjust(length)
        tokens = tuple(self.tokenize(text))
        at = length if drop is None else drop
        return Completion(text=text, token_ids=tokens, logprobs=tuple(-0.1 for _ in tokens),
                          confidences=tuple([confidence] * at + [1.0] * (length - at)))


def _online(traces: Sequence[_Trace], **params: Any) -> tuple[Any, _Scripted]:
    policy = _Scripted(traces)
    ctx = make_context(policy, "8k", problem_index=2)
    p = DeepConfParams(mode="online", max_tokens=64, parallel=1, **params)
    return asyncio.run(deepconf(ctx.problem, ctx, p)), policy


def test_online_reference_drops_a_finished_trace_below_the_threshold_from_the_vote() -> None:
    # issue 44: warm-up of 4 at C = 3.0 → s = 3.0. Two final traces shorter than the 32-token window at C = 1.0 are
    # never aborted (no full window) but the reference drops them afterwards (C_least = their mean < s); a long one
    # falls to 1.0 at token 20 and is aborted at its first full window (tokens 0-31: (20·3 + 12) / 32 < 3).
    # Voters: the 4 warm-up traces, not 6.
    warm = [("7", 40, 3.0, None)] * 4
    answer, policy = _online([*warm, ("9", 18, 1.0, None), ("9", 18, 1.0, None), ("9", 40, 3.0, 20)],
                             n=7, warmup=4, window=32)
    info = answer.info
    assert info["threshold"] == 3.0 and info["sampling"] == "reference"
    assert info["voters"] == 4 and info["dropped"] == 2 and info["votes"] == {"7": 12.0}
    assert info["stopped"] == {"threshold": 1, "consensus": 0} and policy.aborted == 1
    assert info["n"] == 7 and answer.prediction == "7"
    assert [s.num_tokens for s in answer.samples if s.stopped] == [32]


def test_online_reference_draws_every_trace_even_when_all_agree() -> None:
    # The reference code has no consensus stop: N = 12 traces, all "7", all drawn.
    answer, policy = _online([("7", 20, 3.0, None)] * 12, n=12, warmup=4, window=8)
    assert answer.info["n"] == 12 == policy.drawn and len(policy.requests) == 1 + 8
    assert answer.info["consensus_stop"] is False and answer.info["voters_at_stop"] is None
    assert answer.info["voters"] == 12 and answer.info["stopped"] == {"threshold": 0, "consensus": 0}


_WARM = [3.0, 3.1, 3.2, 3.3]
"""Warm-up confidences: at η = 0.1, s = their 90th percentile = 3.27, which only the most confident clears."""


def test_adaptive_sampling_does_not_stop_when_the_warm_up_answers_all_differ() -> None:
    # issue 48: the warm-up's own percentile left one voter (β = 1) and sampling ended after the warm-up. The
    # paper's V holds all four warm-up traces (β = 1/4 and less): every one of N = 10 traces is drawn.
    warm = [(str(k), 20, c, None) for k, c in enumerate(_WARM, start=1)]
    final = [(str(k), 20, 3.5, None) for k in range(5, 11)]
    answer, policy = _online([*warm, *final], n=10, warmup=4, window=8, eta=0.1, sampling="adaptive")
    info = answer.info
    assert info["threshold"] == pytest.approx(3.27)
    assert info["n"] == 10 == policy.drawn and info["voters"] == 10
    assert info["consensus_stop"] is False and info["voters_at_stop"] is None
    assert info["stopped"] == {"threshold": 0, "consensus": 0} and info["dropped"] == 0
    assert answer.prediction == "5"  # the heaviest single vote: a final trace at 3.5


@pytest.mark.parametrize(("min_voters", "drawn"), [(4, 5), (7, 7)])
def test_adaptive_sampling_stops_at_consensus_after_a_final_trace_with_enough_voters(
    min_voters: int, drawn: int
) -> None:
    # Every trace says "7". Algorithm 2 checks β after each final trace: after the first, V holds the 4 warm-up
    # traces and it (β = 1 ≥ τ): sampling ends with 5 of N = 16 drawn. With min_voters = 7 it ends at 7 voters.
    traces = [("7", 20, c, None) for c in _WARM] + [("7", 20, 3.5, None)] * 12
    answer, policy = _online(traces, n=16, warmup=4, window=8, eta=0.1, sampling="adaptive", min_voters=min_voters)
    info = answer.info
    assert info["consensus_stop"] is True and info["voters_at_stop"] == drawn == info["voters"]
    assert info["n"] == drawn == policy.drawn and info["consensus"] == 1.0
    assert info["stopped"] == {"threshold": 0, "consensus": 0} and answer.prediction == "7"


def test_adaptive_sampling_counts_aborted_and_dropped_traces_apart_from_voters() -> None:
    # Warm-up "1".."4" (β ≤ 1/4); then an aborted trace, a short one dropped below s, and "7"s until the vote
    # turns: V = four warm-up votes (3.0-3.3) + "7"s at 3.5; β ≥ 0.95 needs 7's weight ≥ 19 × 12.6 ≈ 239: never
    # within N = 12, so all are drawn and the counts are exact.
    warm = [(str(k), 20, c, None) for k, c in enumerate(_WARM, start=1)]
    final = [("9", 20, 3.5, 10), ("9", 6, 1.0, None), *[("7", 20, 3.5, None)] * 6]
    answer, _ = _online([*warm, *final], n=12, warmup=4, window=8, eta=0.1, sampling="adaptive")
    info = answer.info
    assert info["n"] == 12 and info["stopped"] == {"threshold": 1, "consensus": 0} and info["dropped"] == 1
    assert info["voters"] == 10 and info["consensus_stop"] is False and answer.prediction == "7"
    assert info["votes"]["7"] == pytest.approx(6 * 3.5)


@pytest.mark.parametrize("sampling", ["reference", "adaptive"])
@pytest.mark.parametrize("parallel", [1, 4])
@pytest.mark.parametrize("n", [None, 12])
def test_online_never_exceeds_the_budget_or_n(parallel: int, n: int | None, sampling: str) -> None:
    policy = SimulatedArithmeticPolicy(seed=5, p_correct=0.4, confidence_drop=1.5)
    ctx = make_context(policy, "1500", problem_index=9)
    p = DeepConfParams(mode="online", warmup=4, window=6, eta=0.9, max_tokens=64, parallel=parallel, n=n,
                       sampling=sampling)
    answer = asyncio.run(deepconf(ctx.problem, ctx, p))
    assert ctx.ledger.spent <= 1500 and ctx.ledger.spent == policy.generated_tokens
    assert answer.info["n"] == len(answer.samples) == (12 if n else answer.info["n"])
    if n is None:  # drawn until another trace of 64 tokens no longer fits
        assert 1500 - ctx.ledger.spent < 64 * parallel
    # η = 90% (DeepConf-high): the wrong traces, scripted less confident, fall below the warm-up's 10th percentile.
    assert answer.info["stopped"]["threshold"] >= 1


def test_a_watched_request_on_an_engine_that_cannot_stream_is_refused_in_one_line() -> None:
    class NoStream(SimulatedArithmeticPolicy):
        generate_watched = None  # type: ignore[assignment]

    ctx = make_context(NoStream(), "1k")
    params = SamplingParams(n=1, max_tokens=8, logprobs=5)
    with pytest.raises(TypeError, match="cannot stop a request mid-stream"):
        asyncio.run(ctx.generate(ctx.prompt(), params, watch=lambda c: False))


@pytest.mark.parametrize(("params", "message"), [
    ({"eta": 0.0}, "eta must be in"),
    ({"window": 0}, "window must be ≥ 1, got 0"),
    ({"score": "median"}, "score must be one of mean, lowest_group, bottom_10, tail, got 'median'"),
    ({"mode": "live"}, "mode must be offline or online, got 'live'"),
    ({"top_k": 21}, "top_k must be in"),
    ({"mode": "online", "n": 8, "warmup": 16}, "n must be ≥ warmup"),
    ({"consensus": 1.5}, "consensus must be in"),
    ({"sampling": "eager"}, "sampling must be reference or adaptive, got 'eager'"),
    ({"min_voters": 0}, "min_voters must be ≥ 1, got 0"),
])
def test_params_are_checked_at_construction(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DeepConfParams(**params)


# -- replay: a sweep's other η, scores and smaller budgets from one stored pool ---------------------------------
class _ConfidentPool(PoolReplayEngine):
    """SIMULATED: PoolReplayEngine whose samples carry token confidences (−mean log-prob, the same per token)."""

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        generation = await super().generate(prompt, params, seed=seed)
        if not params.logprobs:
            return generation
        completions = tuple(replace(c, confidences=tuple(-lp for lp in c.logprobs or ())) for c in
                            generation.completions)
        return replace(generation, completions=completions)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small=st.integers(1, 300), extra=st.integers(1, 400), eta=st.sampled_from(["0.1", "0.5", "0.9"]),
       score=st.sampled_from(["mean", "lowest_group", "tail"]), n=st.one_of(st.none(), st.integers(1, 8)),
       pool=st.lists(st.tuples(st.integers(1, 30), st.sampled_from(["7", "8", "9"]), st.floats(-3, -0.01)),
                     min_size=1, max_size=40))
def test_a_derived_eta_score_or_budget_is_what_a_run_with_them_sees(
    small: int, extra: int, eta: str, score: str, n: int | None, pool: list[tuple[int, str, float]]
) -> None:
    base = {"max_tokens": "30", **({"n": str(n)} if n else {})}
    samples = [(length, f"The answer is {a}.", lp) for length, a, lp in pool]
    source_run = prepared_for("deepconf", small + extra, params={**base, "eta": "0.1", "score": "mean"})
    cell = prepared_for("deepconf", small, params={**base, "eta": eta, "score": score})
    problem = source_run.problems[0]
    source = asyncio.run(solve(source_run, _ConfidentPool(samples), problem)).to_json()
    assert all("confidences" in s for s in source["samples"])  # stored with the run: the pool can be re-scored
    derived = derive_record(cell, problem, source, source_id="source-cell")
    engine = _ConfidentPool(samples)
    direct = asyncio.run(solve(cell, engine, problem)).to_json()
    if isinstance(derived, str):  # only when the run asks for more of the pool than the source drew, or cut short
        truncated = any(r.max_tokens < 30 for r in engine.requests)
        assert truncated or sum(r.n for r in engine.requests) > len(source["samples"]), derived
        return
    assert derived["info"].pop("derived_from") == "source-cell"
    for key in ("prediction", "correct", "samples", "info"):
        assert derived[key] == direct[key], key
    for key in ("spent", "generated_tokens", "samples", "calls"):
        assert derived["ledger"][key] == direct["ledger"][key], key


def test_a_sweep_over_eta_draws_one_pool_per_budget_source() -> None:
    entry = GridEntry.parse("deepconf max_tokens=40 eta=0.1|0.5|0.9 score=mean|lowest_group")
    cells = SweepSpec(grid=(entry,), budgets=("1k", "2k")).cells()
    sources = [c for c in cells if c.source is None]
    assert len(cells) == 12 and len(sources) == 1  # 3 η × 2 scores × 2 budgets from one pool
    assert sources[0].budget == "2000" and sources[0].params["eta"] == "0.1"
    online = GridEntry.parse("deepconf mode=online max_tokens=40 eta=0.1|0.9")
    assert all(c.source is None for c in SweepSpec(grid=(online,), budgets=("1k", "2k")).cells())  # run live


def test_online_on_a_served_model_is_refused_before_anything_starts() -> None:
    from ttscale.engine.openai import OpenAIConfig
    from ttscale.running.runner import RunSpec, prepare

    server = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m", tokenizer="embedded")
    with pytest.raises(ValueError, match="stops requests mid-stream, which the openai backend does not yet"):
        prepare(RunSpec(strategy="deepconf", params={"mode": "online"}, backend="openai", server=server))
    offline = prepare(RunSpec(strategy="deepconf", params={"mode": "offline"}, backend="openai", server=server,
                              limit=1))
    assert offline.params.streams is False  # offline needs only top log-probs, which a server returns
