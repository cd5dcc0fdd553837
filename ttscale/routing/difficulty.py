"""Difficulty of a problem *for a model*: oracle bins from its pass@1, predicted bins from a cheap probe.

Snell, Lee, Xu, Kumar, "Scaling LLM Test-Time Compute Optimally can be More Effective than Scaling
Model Parameters", arXiv:2408.03314 (2024), §3.2: difficulty is relative to the model, as the
quantile bin of the model's pass@1 on the problem (five bins; the *oracle* needs the ground truth),
or of a prediction of it that needs none (*predicted*). The token-entropy feature follows DiffAdapt's
observation that a model's per-token entropy tracks how hard it finds a problem.

Symbols: p̂₁ the fraction of a problem's stored samples that are correct (a held-out pool of its own,
ttscale.sweeps.holdout); B bins, bin 1 the easiest;
thresholds t_1 ≥ … ≥ t_{B−1} (quantiles of p̂₁), bin(x) = 1 + #{j : x ≤ t_j}, so ties fall into the
harder bin (every never-solved problem lands in bin B, the "hopeless" one): the layout of policies
learned before equal bins. Equal bins (`equal_cuts`, Snell's five quantile bins) break ties by a seeded
random permutation instead, so every bin holds the same number of training problems. A probe is `n` samples at
the sweep's sampling settings; its features are the answer agreement a (share of the modal answer),
the mean outcome-verifier score v̄, and the mean surprisal H = mean over samples of −(1/|y|) Σ log π(y_t)
(an unbiased estimate of the token entropy, E[−log p] = H). Predicted bins threshold a linear fit
ŝ = w·features of p̂₁ at the quantiles that give the training problems the oracle bins' proportions.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ttscale.kit.params import check_positive, check_range
from ttscale.kit.selection import majority_vote, normalize_answer
from ttscale.schema import Sample, SamplingParams

if TYPE_CHECKING:
    from ttscale.kit.context import Context
    from ttscale.schema import Problem

FEATURES: tuple[str, ...] = ("agreement", "verifier_mean", "entropy")


@dataclass(frozen=True, kw_only=True)
class ProbeSettings:
    """The cheap look at a problem that predicts its bin; must match the sweep samples the predictor learned from."""

    n: int = 4
    """Probe samples per problem."""
    temperature: float = 0.8
    """Sampling temperature (the sweep source's, so live features match the trained ones)."""
    top_p: float = 1.0
    """Nucleus mass (the sweep source's)."""
    max_tokens: int = 64
    """Tokens per probe sample at most (the sweep source's)."""
    verifier: str | None = "arithmetic"
    """Engine-free outcome verifier for the mean-score feature; None = no such feature. Engine-free because
    the same feature must be computed offline on the sweep's stored samples."""

    def __post_init__(self) -> None:
        check_positive("n", self.n)
        check_range("temperature", self.temperature, 0, 10, low_open=True)
        check_range("top_p", self.top_p, 0, 1, low_open=True)
        check_positive("max_tokens", self.max_tokens)
        if self.verifier is not None:
            from ttscale.verifiers.loading import check_verifier_spec

            check_verifier_spec(self.verifier)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "temperature": self.temperature, "top_p": self.top_p,
                "max_tokens": self.max_tokens, "verifier": self.verifier}


@dataclass(frozen=True, kw_only=True)
class Features:
    """What a probe says about a problem (None where the probe could not measure it)."""

    agreement: float
    """Share of probe samples stating the most common answer (0 when none states one)."""
    verifier_mean: float | None = None
    """Mean outcome-verifier score of the probe samples."""
    entropy: float | None = None
    """Mean per-token surprisal of the probe samples (needs their log-probabilities)."""

    def get(self, name: str) -> float | None:
        if name not in FEATURES:
            raise ValueError(f"unknown feature {name!r}; known: {', '.join(FEATURES)}")
        value: float | None = getattr(self, name)
        return value

    def to_dict(self) -> dict[str, float | None]:
        return {name: self.get(name) for name in FEATURES}


def features_of(
    *, answers: Sequence[str | None], verifier_scores: Sequence[float] | None, mean_logprobs: Sequence[float | None]
) -> Features:
    """Features of one probe from its samples' answers, verifier scores and mean token log-probs."""
    keys = [normalize_answer(a) for a in answers if a is not None and normalize_answer(a)]
    agreement = Counter(keys).most_common(1)[0][1] / len(answers) if keys else 0.0
    logprobs = [lp for lp in mean_logprobs if lp is not None]
    return Features(
        agreement=agreement,
        verifier_mean=float(np.mean(verifier_scores)) if verifier_scores else None,
        entropy=-float(np.mean(logprobs)) if logprobs else None,
    )


@dataclass(frozen=True)
class Probe:
    """A probe's outcome: its features, its samples, what it cost, and its own majority answer."""

    features: Features
    """What the probe measured."""
    samples: tuple[Sample, ...]
    """The probe's samples (with verifier scores when a probe verifier is set)."""
    spent: float
    """Budget spent by the probe (the ledger's unit)."""
    prediction: str | None
    """The probe's majority answer: the answer of a problem that gets no further compute."""


async def run_probe(ctx: Context, settings: ProbeSettings) -> Probe:
    """Spend the probe through the problem's metered door: its tokens are in the problem's ledger."""
    from ttscale.blocks.sampling import score_outcomes

    before = ctx.ledger.spent
    params = SamplingParams(n=settings.n, temperature=settings.temperature, top_p=settings.top_p,
                            max_tokens=settings.max_tokens, logprobs=0)
    completions = (await ctx.generate(ctx.prompt(), params)).completions
    scores: list[float] | None = None
    if settings.verifier is not None and completions:
        scores = await score_outcomes(ctx, [c.text for c in completions], verifier=settings.verifier)
    samples = tuple(
        ctx.sample(c, score=None if scores is None else s)
        for c, s in zip(completions, scores or [0.0] * len(completions), strict=True)
    )
    features = features_of(answers=[s.answer for s in samples], verifier_scores=scores,
                           mean_logprobs=[c.mean_logprob for c in completions])
    spent = ctx.ledger.spent - before
    # Recorded apart from the strategy's spend, so a record shows what the routing itself cost.
    ctx.ledger.extra["probe"] = {"spent": spent, "samples": len(samples), **features.to_dict()}
    prediction = (await asyncio.to_thread(majority_vote, samples))[0]  # a symbolic merge waits on the grader
    return Probe(features=features, samples=samples, spent=spent, prediction=prediction)


def offline_features(
    pools: Mapping[str, Sequence[Mapping[str, Any]]], *, problems: Mapping[str, Problem], task: Any,
    settings: ProbeSettings, logprob_scores: bool,
) -> dict[str, Features]:
    """Probe features of stored sweep samples: the first `settings.n` of each problem's pool.

    A pool's samples are i.i.d. draws at the probe's settings, so its first n samples are distributed
    exactly as a live probe. `logprob_scores`: the stored `score` is the mean token log-prob (best-of-N
    without a verifier), which gives the entropy feature.
    """
    heads = {pid: list(pool)[: settings.n] for pid, pool in pools.items()}
    scores = _offline_scores(heads, problems=problems, task=task, verifier=settings.verifier)
    return {
        pid: features_of(
            answers=[s.get("answer") for s in head],
            verifier_scores=scores.get(pid),
            mean_logprobs=[s.get("score") if logprob_scores else None for s in head],
        )
        for pid, head in heads.items()
    }


class _NoEngine:
    """Offline verifier scoring has no engine: a verifier that needs one is refused with a clear message."""

    def __init__(self, verifier: str) -> None:
        self.verifier = verifier

    def __getattr__(self, name: str) -> Any:
        raise ValueError(f"the probe verifier {self.verifier!r} needs the engine; the offline probe features "
                         "need an engine-free verifier (arithmetic), or none")


def _offline_scores(heads: Mapping[str, Sequence[Mapping[str, Any]]], *, problems: Mapping[str, Problem],
                    task: Any, verifier: str | None) -> dict[str, list[float]]:
    if verifier is None:
        return {}
    from ttscale.budget import Budget, Ledger
    from ttscale.kit.context import Context
    from ttscale.verifiers.loading import load_verifier

    scorer = load_verifier(verifier)

    async def score_all() -> dict[str, list[float]]:
        out = {}
        for pid, head in heads.items():
            if not head:
                continue
            ctx = Context(problem=problems[pid], task=task, engine=_NoEngine(verifier),
                          ledger=Ledger(Budget(limit=1)))
            out[pid] = list(await scorer.score_outcomes(ctx, [str(s.get("text", "")) for s in head]))
        return out

    return asyncio.run(score_all())


# -- oracle bins ----------------------------------------------------------------------------------


def quantile_thresholds(values: Sequence[float], *, bins: int = 5) -> list[float]:
    """t_1 ≥ … ≥ t_{B−1}: the (1 − j/B) quantiles of `values` (lower interpolation: thresholds are observed values)."""
    check_positive("bins", bins)
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("quantile_thresholds needs at least one value")
    return [float(np.quantile(data, 1 - j / bins, method="lower")) for j in range(1, bins)]


def assign_bins(values: Sequence[float], thresholds: Sequence[float]) -> list[int]:
    """bin(x) = 1 + #{j : x ≤ t_j}: 1 is the easiest; ties go to the harder bin."""
    t = np.asarray(thresholds, dtype=float)
    return [1 + int((x <= t).sum()) for x in np.asarray(values, dtype=float)]


def tie_breaker(problem_id: str, *, seed: int) -> float:
    """u ∈ [0, 1): a problem's place among equal values, a hash of (seed, id) so a live problem gets one too."""
    digest = hashlib.blake2b(f"{seed}\x00{problem_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def equal_cuts(values: Sequence[float], ties: Sequence[float], *, bins: int) -> list[tuple[float, float]]:
    """Cuts (t_j, u_j), j = 1 … B−1, that split the problems into B bins of equal size (±1), bin 1 the highest values.

    Problems are ranked by value, highest first, equal values in the order of their tie-breakers u (a
    seeded random permutation): a mass of equal values (say, never-solved problems) is shared between
    neighbouring bins instead of all falling into one. Cut j lies between the last problem of bin j and
    the first of bin j+1: the midpoint of their values, or, where the values are equal, that value and the
    midpoint of their tie-breakers, so an unseen problem goes to the bin whose edge it is nearer.
    """
    check_positive("bins", bins)
    if not values or len(values) != len(ties):
        raise ValueError(f"equal_cuts needs at least one value and one tie-breaker each, got {len(values)} "
                         f"values and {len(ties)} tie-breakers")
    ranked = sorted(zip(map(float, values), map(float, ties), strict=True), key=lambda xu: (-xu[0], xu[1]))
    ends = np.cumsum([len(part) for part in np.array_split(np.arange(len(ranked)), bins)])[:-1]
    cuts = []
    for e in ends:  # fewer problems than bins: the bins past the last problem stay empty
        if e == 0 or e == len(ranked):
            cuts.append((ranked[0][0] + 1.0, 0.0) if e == 0 else (ranked[-1][0] - 1.0, 1.0))
            continue
        (x0, u0), (x1, u1) = ranked[e - 1], ranked[e]
        cuts.append((x0, (u0 + u1) / 2) if x0 == x1 else ((x0 + x1) / 2, 0.5))
    return cuts


def assign_equal(values: Sequence[float], ties: Sequence[float], cuts: Sequence[Sequence[float]]) -> list[int]:
    """bin(x, u) = 1 + #{j : x < t_j, or x = t_j and u > u_j}: the cuts of `equal_cuts`, applied to any problem."""
    return [1 + sum(1 for t, v in cuts if x < t or (x == t and u > v))
            for x, u in zip(map(float, values), map(float, ties), strict=True)]


def matched_thresholds(scores: Sequence[float], oracle_bins: Sequence[int], *, bins: int) -> list[float]:
    """Thresholds on predicted scores that give the problems the oracle bins' proportions.

    u_j is the (1 − c_j) quantile of the scores, c_j the share of problems in oracle bins ≤ j, moved halfway
    to the next higher score (same training bins): an empty oracle bin gives u_j = u_{j−1}, an empty predicted bin.
    """
    s = np.asarray(scores, dtype=float)
    o = np.asarray(oracle_bins)
    out = []
    for j in range(1, bins):
        share = float((o <= j).mean())
        if share >= 1:
            out.append(float(s.min()) - 1.0)
            continue
        u = float(np.quantile(s, 1 - share, method="lower"))
        above = s[s > u]
        # Halfway to the next score: an unseen problem goes to the side whose training edge it is nearer.
        out.append((u + float(above.min())) / 2 if above.size else u)
    return out


# -- predicted bins -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Predictor:
    """ŝ = intercept + Σ coef·(feature − mean)/scale, an estimate of p̂₁; binned by `thresholds`."""

    features: tuple[str, ...]
    """The features used (those every training problem had)."""
    mean: tuple[float, ...]
    """Training means (also what a missing live feature is taken to be)."""
    scale: tuple[float, ...]
    """Training standard deviations (1 where constant)."""
    coef: tuple[float, ...]
    """Weights of the standardized features."""
    intercept: float
    """ŝ of a problem with every feature at its training mean."""
    thresholds: tuple[float, ...]
    """u_1 ≥ … ≥ u_{B−1} on ŝ (see `matched_thresholds`)."""

    @classmethod
    def fit(cls, features: Sequence[Features], pass1: Sequence[float], oracle_bins: Sequence[int], *,
            bins: int, ridge: float = 1e-3) -> Predictor:
        """Least squares of p̂₁ on the standardized features every problem has (ridge keeps it stable)."""
        if not features:
            raise ValueError("Predictor.fit needs at least one problem")
        names = tuple(n for n in FEATURES if all(f.get(n) is not None for f in features))
        x = np.asarray([[float(f.get(n) or 0.0) for n in names] for f in features], dtype=float).reshape(
            len(features), len(names))
        y = np.asarray(pass1, dtype=float)
        mean = x.mean(axis=0) if names else np.zeros(0)
        scale = x.std(axis=0) if names else np.zeros(0)
        scale = np.where(scale > 1e-12, scale, 1.0)
        z = (x - mean) / scale
        coef = np.linalg.solve(z.T @ z + ridge * len(y) * np.eye(len(names)), z.T @ (y - y.mean())) if names \
            else np.zeros(0)
        provisional = cls(features=names, mean=tuple(map(float, mean)), scale=tuple(map(float, scale)),
                          coef=tuple(map(float, coef)), intercept=float(y.mean()), thresholds=())
        scores = [provisional.score(f) for f in features]
        return replace(provisional, thresholds=tuple(matched_thresholds(scores, oracle_bins, bins=bins)))

    def score(self, features: Features) -> float:
        total = self.intercept
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            value = features.get(name)
            total += w * ((m if value is None else value) - m) / s
        return float(total)

    def bin(self, features: Features) -> int:
        return assign_bins([self.score(features)], self.thresholds)[0]

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": list(self.mean), "scale": list(self.scale),
                "coef": list(self.coef), "intercept": self.intercept, "thresholds": list(self.thresholds)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Predictor:
        return cls(features=tuple(data["features"]), mean=tuple(data["mean"]), scale=tuple(data["scale"]),
                   coef=tuple(data["coef"]), intercept=float(data["intercept"]),
                   thresholds=tuple(data["thresholds"]))


def agreement_report(predicted: Sequence[int], oracle: Sequence[int], *, bins: int,
                     scores: Sequence[float] | None = None, pass1: Sequence[float] | None = None) -> dict[str, Any]:
    """How well predicted bins match oracle bins: exact and within-one rates, confusion, rank correlation."""
    p, o = np.asarray(predicted), np.asarray(oracle)
    if p.size == 0 or p.size != o.size:
        raise ValueError(f"need equally many predicted and oracle bins, got {p.size} and {o.size}")
    confusion = [[int(((o == i) & (p == j)).sum()) for j in range(1, bins + 1)] for i in range(1, bins + 1)]
    report: dict[str, Any] = {
        "problems": int(p.size),
        "exact": float((p == o).mean()),
        "within_one": float((np.abs(p - o) <= 1).mean()),
        "confusion_oracle_rows_predicted_columns": confusion,
    }
    if scores is not None and pass1 is not None and len(set(scores)) > 1 and len(set(pass1)) > 1:
        from scipy.stats import spearmanr

        report["spearman_score_vs_pass1"] = float(spearmanr(scores, pass1).statistic)
    return report
