"""strategies/deepconf.py: behaviour the mutation run (tools/mutation) found unchecked, by hand-scripted traces
on the SIMULATOR (tests/strategies/test_deepconf.py's `_Scripted`) and hand examples."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.strategies.test_deepconf import _Scripted, _Trace
from ttscale.schema import Completion, Sample
from ttscale.strategies.deepconf import DeepConfParams, _check_confidences, _share, deepconf, replays, select_offline
from ttscale.testing.policy import make_context


def online(traces: list[_Trace], **params: Any) -> tuple[dict[str, Any], Any]:
    policy = _Scripted(traces)
    ctx = make_context(policy, "8k", problem_index=2)
    answer = asyncio.run(deepconf(ctx.problem, ctx, DeepConfParams(mode="online", max_tokens=64, **params)))
    return answer.info, answer


def test_online_threshold_votes_aborts_and_drops_on_hand_traces() -> None:
    # Window 8, η = 0.5. Warm-up C_least (lowest window of 8): 20 tokens at 3.0 falling to 1.0 from token 10 → 1.0
    # (twice, "7"); an unanswered 3.0; a "6" at 0.5. s = the median of [0.5, 1, 1, 3] = 1.0. The warm-up votes:
    # the two "7"s at 1.0 ≥ s (the unanswered one states nothing, the "6" is below s).
    warm: list[_Trace] = [("7", 20, 3.0, 10), ("7", 20, 3.0, 10), (None, 20, 3.0, None), ("6", 20, 0.5, None)]
    final: list[_Trace] = [
        ("8", 20, 3.0, 16),  # lowest window (tokens 12-19) (4·3 + 4·1) / 8 = 2.0 ≥ s: votes 2.0
        ("9", 20, 3.0, None),  # votes 3.0
        ("5", 20, 0.4, None),  # first full window 0.4 < s: aborted at 8 tokens
        ("5", 20, 0.4, None),  # the same: two aborted by the threshold
        ("4", 6, 0.5, None),  # shorter than the window: never aborted, dropped afterwards (mean 0.5 < s)
        (None, 20, 3.0, None),  # finished above s without an answer: no vote
    ]
    info, answer = online([*warm, *final], n=10, warmup=4, window=8, eta=0.5, parallel=1)
    assert info["mode"] == "online" and info["threshold"] == 1.0 and info["warmup"] == 4 and info["n"] == 10
    assert info["votes"] == {"7": 2.0, "8": 2.0, "9": 3.0} and answer.prediction == "9"
    assert info["voters"] == 4 and info["dropped"] == 1
    assert info["stopped"] == {"threshold": 2, "consensus": 0}
    assert [s.num_tokens for s in answer.samples if s.stopped] == [8, 8]
    assert all(s.confidences is not None for s in answer.samples)  # kept for a later look at each trace
    assert [s.score for s in answer.samples[:4]] == [1.0, 1.0, 3.0, 0.5]


def test_a_warm_up_trace_without_confidences_scores_0() -> None:
    # A trace whose engine returned no confidences scores 0 (it says nothing of its confidence): s is the
    # 10th percentile of [0, 3, 3, 3] = 0.9, and a final trace without confidences is dropped below it.
    warm: list[_Trace] = [("7", 0, 3.0, None), ("7", 20, 3.0, None), ("7", 20, 3.0, None), ("7", 20, 3.0, None)]
    info, _ = online([*warm, ("8", 0, 3.0, None), ("9", 20, 3.0, None)], n=6, warmup=4, window=8, eta=0.9,
                     parallel=1)
    assert info["threshold"] == pytest.approx(0.9)
    assert info["dropped"] == 1 and info["votes"] == {"7": 9.0, "9": 3.0}


def test_consensus_at_exactly_tau_ends_sampling() -> None:
    traces: list[_Trace] = [("7", 20, 3.0, None)] * 4 + [("7", 20, 3.5, None)] * 8
    info, _ = online(traces, n=12, warmup=4, window=8, eta=0.1, parallel=1, sampling="adaptive", consensus=1.0)
    assert info["consensus_stop"] is True and info["voters_at_stop"] == 5 and info["n"] == 5


def test_the_consensus_share_is_rounded_to_four_places() -> None:
    # Adaptive: V = four warm-up answers (3.0, 3.1, 3.2, 3.3) and six final ones at 3.5, all different: the
    # leading share is 3.5 / 33.6 = 0.104166...
    warm: list[_Trace] = [(str(k), 20, c, None) for k, c in enumerate((3.0, 3.1, 3.2, 3.3), start=1)]
    final: list[_Trace] = [(str(k), 20, 3.5, None) for k in range(5, 11)]
    info, _ = online([*warm, *final], n=10, warmup=4, window=8, eta=0.1, parallel=1, sampling="adaptive")
    assert info["consensus"] == 0.1042


def _voter(answer: str, score: float) -> Sample:
    return Sample(text=answer, answer=answer, num_tokens=1, score=score)


def test_the_share_of_the_leading_answer() -> None:
    assert asyncio.run(_share([])) == 0.0
    assert asyncio.run(_share([_voter("a", 0.5)])) == 1.0
    assert asyncio.run(_share([_voter("12", 2.0), _voter("7", 1.0)])) == pytest.approx(2 / 3)  # numbers: no merge


def test_an_engine_without_top_log_probs_is_named() -> None:
    with pytest.raises(ValueError, match=r"^the engine returned no top log-probs: deepconf needs them for its token "
                                         r"confidences$"):
        _check_confidences([Completion(text="x", token_ids=(1,), confidences=(1.0,)),
                            Completion(text="y", token_ids=(2,))])
    _check_confidences([Completion(text="x", token_ids=(1,), confidences=())])


def test_offline_info_counts_every_trace() -> None:
    samples = [Sample(text="a", answer="a", num_tokens=2, confidences=(1.0, 2.0)),
               Sample(text="?", answer=None, num_tokens=2, confidences=(5.0, 5.0))]
    _, scored, info = select_offline(samples, DeepConfParams(eta=1.0, score="mean"))
    assert (info["n"], info["answered"], info["kept"]) == (2, 1, 1) and [s.score for s in scored] == [1.5, 5.0]


@pytest.mark.parametrize(("entry", "budgets", "expected"), [
    ({}, 2, True), ({}, 1, False), ({"eta": [0.1, 0.9]}, 1, True), ({"score": ["mean", "tail"]}, 1, True),
    ({"eta": [0.1]}, 1, False), ({"mode": ["offline"], "eta": [0.1, 0.5]}, 1, True), ({"mode": ["online"]}, 2, False),
    ({"mode": ["online"], "eta": [0.1, 0.5]}, 1, False), ({"window": [8, 16]}, 1, False),
])
def test_which_sweeps_replay_from_one_pool(entry: dict[str, list[Any]], budgets: int, expected: bool) -> None:
    assert replays(entry, budgets) is expected


@pytest.mark.parametrize(("params", "message"), [
    ({"eta": 1.5}, r"^eta must be in \(0, 1\], got 1.5$"),
    ({"top_k": 0}, r"^top_k must be in \[1, 20\], got 0$"),
    ({"warmup": 0}, "^warmup must be ≥ 1, got 0$"),
    ({"consensus": 0.0}, r"^consensus must be in \(0, 1\], got 0.0$"),
    ({"parallel": 0}, "^parallel must be ≥ 1, got 0$"),
])
def test_params_name_what_is_wrong(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DeepConfParams(**params)


def test_the_least_allowed_params_are_accepted() -> None:
    p = DeepConfParams(mode="online", n=4, warmup=4, top_k=1, eta=1.0, consensus=1.0, parallel=1)
    assert (p.n, p.warmup, p.top_k) == (4, 4, 1)


class _Recording(_Scripted):
    def __init__(self, traces: list[_Trace]) -> None:
        super().__init__(traces)
        self.seen: list[tuple[float, float, int, int]] = []

    def _sample(self, expression: str, value: int, reply: str, params: Any) -> Completion:
        self.seen.append((params.temperature, params.top_p, params.max_tokens, params.n))
        return super()._sample(expression, value, reply, params)


def test_every_online_request_samples_with_the_runs_settings() -> None:
    policy = _Recording([("7", 20, 3.0, None)] * 6)
    ctx = make_context(policy, "8k", problem_index=2)
    p = DeepConfParams(mode="online", n=6, warmup=4, window=8, max_tokens=48, temperature=0.6, top_p=0.9, parallel=1)
    asyncio.run(deepconf(ctx.problem, ctx, p))
    assert policy.seen == [(0.6, 0.9, 48, 4)] * 4 + [(0.6, 0.9, 48, 1)] * 2  # the warm-up in one request of n = 4


def test_an_online_pool_is_not_derived_and_says_why() -> None:
    from ttscale.kit.capabilities import Stored
    from ttscale.strategies.deepconf import derive

    stored = Stored(params=DeepConfParams(mode="online"), ledger=None, budget=None, record={}, samples=[],  # type: ignore[arg-type]
                    prompt_tokens=0, max_model_len=0)
    assert derive(stored) == "online traces were stopped by their own run's threshold"
