"""The verdict rules of benchmarks/findings.py and benchmarks/ets_regime.py, as pure functions of per-problem arrays
and intervals: tested without an engine (tests/test_verdicts.py); the benchmarks only collect records and call them.

Every interval is 95% and over problems: a difference of binary accuracy is Tango's score interval for paired
proportions (`ttscale.stats.paired.paired_proportions`: a problem's repeats counted through their design effect, so no
discordant pair still leaves an interval of several points); any other mean or ratio is a percentile bootstrap
over problems (each problem's repeats averaged first, so they are resampled together). A rule reads one or more
intervals and says one of:

- "reproduced": the interval is where the paper's claim puts it;
- "not reproduced": the interval is where the claim cannot be;
- "direction reproduced, magnitude not" (cost claims with a factor): a cut in the paper's direction whose whole
  interval lies below half the paper's factor;
- "direction reproduced, magnitude inconclusive": a cut in the paper's direction whose interval reaches both
  sides of half the paper's factor;
- "inconclusive": anything else.

The rules, exactly (m = MARGIN = 1 point unless a row says otherwise; "CI" = the 95% interval):

- `above(ci, t)`, a "≥"/"grows" claim: CI low > t → reproduced; CI high < t → not reproduced.
- `equivalent(ci, m)`, "equal accuracy" (F5, ets_regime): the whole CI inside [−m, +m] → reproduced (a TOST at
  2.5% each side); the whole CI above +m or below −m → not reproduced. A CI that merely covers 0 is not equality.
- `not_worse(ci, m)`, "reaches the accuracy of" (F6): CI low ≥ −m → reproduced; CI high < −m → not reproduced.
- `magnitude(ci, F)`, a cost cut by the paper's factor F (the measured ratio, > 1 in the paper's direction), with
  h = √F, half the paper's factor on the log scale (1.8x → 1.34x, 3x → 1.73x): CI low ≥ h → reproduced; CI high
  < h and CI low > 1 → direction reproduced, magnitude not; CI high < h otherwise → not reproduced (even half the
  paper's cut is excluded); CI low > 1 → direction reproduced, magnitude inconclusive. Half, not all of F: a
  135M model on other problems is not expected to match the paper's factor, but a cut that cannot reach half of
  it is not the paper's finding.
- F5 and F6 combine a cost rule and an accuracy rule with `weakest`: not reproduced if either is, inconclusive if
  either is, else the cost rule's word.
- F1 `coverage_law`: coverage(k) = exp(a·k^b) (`ttscale.scaling`'s fitter) and a saturating alternative,
  coverage(k) = s·(1 − (1 − p)^k), are each fitted on k ≤ K/4 (1, 2, 4, 8 of a 32-sample pool) and predict the
  held-out k = K/2, K; the statistic is the alternative's held-out RMSE minus the law's (coverage points),
  bootstrapped over problems with both refitted on every resample (`law_rule`): CI low > m → reproduced (the law
  predicts better); CI high < −m → not reproduced (the ceiling predicts better); else inconclusive, which includes
  the alternative fitting as well as the law (a CI inside ±m: the evidence is neither way). The alternative is the
  claim's opposite: coverage that levels off at a ceiling s within a few doublings (a share s of problems solved
  at a per-sample rate p, the rest never), as against the law's slow log-linear climb; it has the law's two
  parameters, so neither wins by flexibility. (A straight line in log k is no alternative: over a few doublings
  it is the law's own shape, and it would read inconclusive by construction.)
- F8 `saturation` (TTSPM: accuracy saturates inside the measured range): N* of coverage(N) = F_max·(1 − (1 − p)^N)
  (`ttscale.scaling.fit_ttspm`, bootstrapped over problems) and the last doubling's gain, coverage@K −
  coverage@K/2 (a percentile bootstrap over problems), by `saturation_rule`: N*'s CI low > K (the saturation
  point beyond the range) or the gain's CI low > m (accuracy still rising at the largest N) → not reproduced;
  N*'s CI high ≤ K with the gain's CI high ≤ m (flat at the end, as the fit says) → reproduced; else inconclusive.
  A fit's N* alone is no evidence: a curve still climbing 8 points a doubling gets an N* inside the range from a
  ceiling the data never reach.
- F2 `plateau`: maj@K − maj@K/4 with the vote grouped by equivalence (`vote_groups`). Its CI wholly outside
  [−m, +m] → not reproduced (still rising, or falling); the CI inside [−m, +m] while coverage@K − coverage@K/4 has
  CI low > m (there are answers left to find) and maj@K/4 has CI low > m (the vote does win: a flat line at 0 is
  a floor, not a plateau) → reproduced; otherwise inconclusive.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import evidence
import numpy as np
from evidence import Measured

from ttscale.kit.selection import SYMBOLIC, normalize_answer, symbolic_leaders
from ttscale.scaling import FitInputError, fit_coverage_from_samples
from ttscale.scaling.coverage import LAW, pass_at_k_array
from ttscale.scaling.result import fit_profile_curves
from ttscale.stats.bootstrap import resample_counts
from ttscale.stats.metrics import majority_at_k
from ttscale.stats.power import Claim
from ttscale.stats.proportions import paired_proportions

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
DIRECTION_ONLY = "direction reproduced, magnitude not"
DIRECTION_MAGNITUDE_OPEN = "direction reproduced, magnitude inconclusive"

BOOT = 2000
#: The one margin of every "equal", "not worse", "plateau", "still rising" and "fits better" claim: 1 point of
#: accuracy or coverage. Why 1 point: it is the ETS goal's own ("accuracy kept" within one point), and the equal-
#: accuracy claims (F5, F6, F9) are read against it so that all of them mean the same thing. At 30 × 2 no interval
#: is that narrow (Tango's is about ±11 points with no difference), so those rows read inconclusive with the size
#: that would decide them (`accuracy_evidence`).
MARGIN = 0.01
#: Hooper et al., "ETS: Efficient Tree Search for Inference-Time Scaling" (arXiv:2502.13575), abstract: a 1.8x
#: reduction in average KV cache size against REBASE at the same width, accuracy kept.
PAPER_KV_FACTOR = 1.8
#: Chatziveroglou, "A*-Decoding: Token-Efficient Inference Scaling" (arXiv:2505.13672), abstract: best-of-N's
#: (and particle filtering's) performance with up to 3x fewer tokens.
PAPER_TOKEN_FACTOR = 3.0
#: Fu et al., "Deep Think with Confidence" (arXiv:2508.15260), the reference repository's headline: DeepConf-low
#: online matches self-consistency with 52.9% fewer tokens at 256 traces (DeepSeek-8B, BRUMO25): 1 / 0.471.
PAPER_DEEPCONF_FACTOR = 1 / (1 - 0.529)

Interval = tuple[float, float, float]
"""(estimate, low, high)."""


class Verdict(NamedTuple):
    verdict: str
    measured: str


# -- intervals ------------------------------------------------------------------------------------------


def bootstrap_interval(values: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                       n_boot: int = BOOT, seed: int = 0) -> Interval:
    """(estimate, low, high) of `statistic(counts, values)` over a percentile bootstrap of the problems (rows).

    `statistic` takes count matrices C (resamples × problems; all ones for the estimate) and returns one value
    per row; resamples where it is NaN are left out.
    """
    ones = np.ones((1, values.shape[0]))
    draws = np.concatenate([statistic(c, values) for c in resample_counts(values.shape[0], n_boot,
                                                                          np.random.default_rng(seed))])
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return float(statistic(ones, values)[0]), float(low), float(high)


def mean_interval(values: np.ndarray, **kw: int) -> Interval:
    """Mean over problems of per-problem values (maj@k, coverage: expectations, not binary)."""
    return bootstrap_interval(np.asarray(values, dtype=float)[:, None],
                              lambda c, v: (c @ v)[:, 0] / v.shape[0], **kw)


def mean_difference(a: np.ndarray, b: np.ndarray, **kw: int) -> Interval:
    """Paired mean difference a − b over problems, of per-problem values that are not binary."""
    return mean_interval(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), **kw)


def ratio_of_means(a: np.ndarray, b: np.ndarray, **kw: int) -> Interval:
    """mean a / mean b over problems, the pairs resampled together."""
    both = np.column_stack([a, b]).astype(float)
    ci = bootstrap_interval(both, lambda c, v: (c @ v[:, 0]) / np.maximum(c @ v[:, 1], 1e-12), **kw)
    return Measured(ci, both[:, 0], both[:, 1])


def accuracy_difference(a: np.ndarray, b: np.ndarray, *, confidence: float = 0.95) -> Interval:
    """p_a − p_b of binary outcomes (problems × repeats, each repeat r of a paired with repeat r of b): Tango's
    score interval with the repeats' design effect (`ttscale.stats.paired.paired_proportions`), as `ttscale compare`."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.shape != xb.shape or xa.ndim != 2:
        raise ValueError(f"a and b must both be (problems × repeats), got {xa.shape} and {xb.shape}")
    found = paired_proportions([list(zip(ra, rb, strict=True)) for ra, rb in zip(xa.tolist(), xb.tolist(),
                                                                                 strict=True)],
                               confidence=confidence)
    return Measured((found.estimate, found.low, found.high), xa, xb)


def pts(ci: Interval) -> str:
    return f"{100 * ci[0]:+.1f} pts [{100 * ci[1]:+.1f}, {100 * ci[2]:+.1f}]"


def percent(ci: Interval) -> str:
    return f"{100 * ci[0]:.1f}% [{100 * ci[1]:.1f}, {100 * ci[2]:.1f}]"


def times(ci: Interval) -> str:
    return f"{ci[0]:.2f}x [{ci[1]:.2f}, {ci[2]:.2f}]"


# -- the rules on intervals -----------------------------------------------------------------------------


def above(ci: Interval, threshold: float) -> str:
    """A claim that the quantity exceeds `threshold`."""
    _, low, high = ci
    return REPRODUCED if low > threshold else NOT_REPRODUCED if high < threshold else INCONCLUSIVE


def equivalent(ci: Interval, margin: float = MARGIN) -> str:
    """"Equal": the whole interval inside ±margin; "not equal": the whole interval outside it, on one side."""
    _, low, high = ci
    if -margin <= low and high <= margin:
        return REPRODUCED
    return NOT_REPRODUCED if low > margin or high < -margin else INCONCLUSIVE


def not_worse(ci: Interval, margin: float = MARGIN) -> str:
    """"Reaches the other's accuracy": at most `margin` lower anywhere in the interval."""
    _, low, high = ci
    return REPRODUCED if low >= -margin else NOT_REPRODUCED if high < -margin else INCONCLUSIVE


def magnitude(ci: Interval, paper: float) -> str:
    """A ratio claimed to be `paper` (> 1) against half the paper's factor on the log scale, √paper."""
    _, low, high = ci
    half = math.sqrt(paper)
    if low >= half:
        return REPRODUCED
    if high < half:
        return DIRECTION_ONLY if low > 1 else NOT_REPRODUCED
    return DIRECTION_MAGNITUDE_OPEN if low > 1 else INCONCLUSIVE


def law_rule(ci: Interval, margin: float = MARGIN) -> str:
    """F1 on the ceiling's held-out RMSE minus the law's: the law must predict better by more than `margin`; the
    ceiling predicting better by more than `margin` refutes it; anything between (as well as each other) is open."""
    _, low, high = ci
    return REPRODUCED if low > margin else NOT_REPRODUCED if high < -margin else INCONCLUSIVE


def weakest(cost: str, accuracy: str) -> str:
    """A cost claim that holds "at equal accuracy": the weaker of the two words."""
    if NOT_REPRODUCED in (cost, accuracy):
        return NOT_REPRODUCED
    if INCONCLUSIVE in (cost, accuracy):
        return INCONCLUSIVE
    return cost


# -- what a row's size could detect, and what would decide it (ttscale.stats.power, the planner's) ------------


def accuracy_evidence(ci: Interval, claim: Claim, *, paper: float | None = None) -> str:
    """`evidence.accuracy_evidence` with the claim's own rule deciding whether to plan (`ci`: accuracy_difference's)."""
    word = {"better": above, "equal": equivalent, "not_worse": not_worse}[claim.kind](ci, claim.value)
    return evidence.accuracy_evidence(ci, claim, paper=paper, undecided=word == INCONCLUSIVE)


def cost_evidence(ci: Interval, paper: float) -> str:
    """`evidence.cost_evidence`, planning when the magnitude rule is open (`ci`: ratio_of_means')."""
    return evidence.cost_evidence(ci, paper, undecided=magnitude(ci, paper) in (INCONCLUSIVE,
                                                                                DIRECTION_MAGNITUDE_OPEN))


def _with_evidence(text: str, *evidence: str) -> str:
    shown = [e for e in evidence if e]
    return f"{text} [{' | '.join(shown)}]" if shown else text


def magnitude_rule(paper: float) -> str:
    return f"paper {paper:.3g}x; reproduced needs CI ≥ {math.sqrt(paper):.2f}x"


def kv_at_equal_accuracy(kv: Interval, accuracy: Interval, *, paper: float = PAPER_KV_FACTOR,
                         margin: float = MARGIN) -> Verdict:
    """F5: REBASE/ETS reference KV by the magnitude rule, ETS − REBASE accuracy by `equivalent`."""
    cost, acc = magnitude(kv, paper), equivalent(accuracy, margin)
    return Verdict(weakest(cost, acc), _with_evidence(
        f"REBASE/ETS reference KV {times(kv)} ({magnitude_rule(paper)}: {cost}); ETS − REBASE accuracy "
        f"{pts(accuracy)} (equal within ±{100 * margin:g} pt: {acc})",
        cost_evidence(kv, paper), accuracy_evidence(accuracy, Claim(kind="equal", value=margin), paper=0.0)))


def fewer_tokens_at_matching_accuracy(tokens: Interval, accuracy: Interval, *, paper: float = PAPER_TOKEN_FACTOR,
                                      margin: float = MARGIN, names: tuple[str, str] = ("best-of-N", "A*")) -> Verdict:
    """F6 (and F9): baseline/method generated tokens by the magnitude rule, method − baseline accuracy by
    `not_worse`; `names` = (baseline, method)."""
    base, method = names
    cost, acc = magnitude(tokens, paper), not_worse(accuracy, margin)
    return Verdict(weakest(cost, acc), _with_evidence(
        f"{base}/{method} tokens {times(tokens)} ({magnitude_rule(paper)}: {cost}); {method} − {base} "
        f"accuracy {pts(accuracy)} (at most {100 * margin:g} pt lower: {acc})",
        cost_evidence(tokens, paper), accuracy_evidence(accuracy, Claim(kind="not_worse", value=margin), paper=0.0)))


# -- F1: the coverage law against a ceiling, on held-out k ------------------------------------------------


def saturating_fit(curves: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, p) per row of `curves` (rows × len(k)) for coverage(k) = s·(1 − (1 − p)^k), s ≤ 1, fitted as the law
    is: least squares on log coverage, points with coverage 0 left out. For a given p, log s is the mean
    residual (clipped at 0), so p is profiled over a log grid from 1e-4 to 1 (0.5% steps)."""
    grid = np.logspace(-4, 0, 1801)
    log_g = np.log(-np.expm1(k[None, :] * np.log1p(-np.minimum(grid, 1 - 1e-12))[:, None]))  # (G, X)
    with np.errstate(divide="ignore"):
        log_c = np.log(curves)
    used = np.isfinite(log_c)
    log_c = np.where(used, log_c, 0.0)
    points = np.maximum(used.sum(axis=1), 1)[:, None]
    log_s = np.minimum(((log_c[:, None, :] - log_g[None]) * used[:, None, :]).sum(axis=2) / points, 0.0)
    sse = (((log_c[:, None, :] - log_g[None] - log_s[:, :, None]) ** 2) * used[:, None, :]).sum(axis=2)
    best = sse.argmin(axis=1)
    s = np.exp(log_s[np.arange(best.size), best])
    return np.where(used.any(axis=1), s, np.nan), grid[best]


def coverage_law(n: np.ndarray, correct: np.ndarray, pool: int, *, margin: float = MARGIN, n_boot: int = BOOT,
                 seed: int = 0) -> Verdict:
    """F1 from each problem's samples (`n`, `correct` of them right; repeats pooled): see the module's rule."""
    ns, cs = np.asarray(n, dtype=float), np.asarray(correct, dtype=float)
    ks = np.array([2.0**i for i in range(int(math.log2(pool)) + 1)])
    fit_k, held_k = ks[ks <= pool / 4], ks[ks > pool / 4]
    if fit_k.size < 3 or held_k.size < 1 or ns.size < 2:
        return Verdict(INCONCLUSIVE, f"needs a pool of ≥ 16 samples and ≥ 2 problems (pool {pool}, {ns.size} problems)")
    per_problem = pass_at_k_array(n=ns, correct=cs, k=ks)  # (problems, len(ks)), unbiased from each problem's samples
    counts = np.vstack([np.ones((1, ns.size)), *resample_counts(ns.size, n_boot, np.random.default_rng(seed))])
    curves = counts @ per_problem / ns.size  # row 0: the data; then the resamples
    fitted, held = curves[:, : fit_k.size], curves[:, fit_k.size:]
    try:
        law = fit_coverage_from_samples(n=ns, correct=cs, k=fit_k, n_boot=0)
    except FitInputError:  # no fitted k with coverage above 0: the fitter refuses (the law's log needs it)
        return Verdict(INCONCLUSIVE, "coverage is 0 at every fitted k: neither curve can be fitted")
    # The resamples are refitted in one vectorised call of the same fitter (fit_coverage_from_samples runs it,
    # with draws of its own, which the alternative's refits could not share).
    boot = fit_profile_curves(LAW, x=fit_k, y=fitted[0], batches=[(fit_k, fitted[1:], None)], level=0.95,
                              n_obs=ns.size * fit_k.size, n_units=ns.size, resampled="problems").boot
    law_pred = LAW.curve(held_k, np.vstack([law.estimate[None, :], boot]))
    s, p = saturating_fit(fitted, fit_k)
    alt_pred = s[:, None] * -np.expm1(held_k[None, :] * np.log1p(-np.minimum(p, 1 - 1e-12))[:, None])
    law_rmse = np.sqrt(np.mean((law_pred - held) ** 2, axis=1))
    alt_rmse = np.sqrt(np.mean((alt_pred - held) ** 2, axis=1))
    gap = alt_rmse - law_rmse
    failed = int(np.count_nonzero(~np.isfinite(gap[1:])))
    if failed == n_boot or not np.isfinite(gap[0]):
        return Verdict(INCONCLUSIVE, "coverage is 0 at every fitted k: neither curve can be fitted")
    low, high = np.nanpercentile(gap[1:], [2.5, 97.5])
    ci = (float(gap[0]), float(low), float(high))
    fit_text, held_text = ",".join(f"{k:g}" for k in fit_k), ",".join(f"{k:g}" for k in held_k)
    return Verdict(law_rule(ci, margin),
                   f"fitted on k={fit_text}, held-out k={held_text}: RMSE exp(a·k^b) {100 * law_rmse[0]:.1f} pts "
                   f"(a={law.params['a']:.3f}, b={law.params['b']:.3f}), ceiling s·(1−(1−p)^k) "
                   f"{100 * alt_rmse[0]:.1f} pts (s={s[0]:.2f}, p={p[0]:.3f}); ceiling − law {pts(ci)}, "
                   f"reproduced needs CI > +{100 * margin:g}, not reproduced CI < −{100 * margin:g}"
                   + (f" ({failed} resamples unfitted)" if failed else ""))


# -- F8: the saturation point, and whether accuracy still rises at the largest N ------------------------------


def saturation_rule(n_star: Interval, last_gain: Interval, largest: float, margin: float = MARGIN) -> str:
    """F8 on N*'s interval and the last doubling's gain (see the module)."""
    if n_star[1] > largest or last_gain[1] > margin:
        return NOT_REPRODUCED
    if n_star[2] <= largest and last_gain[2] <= margin:
        return REPRODUCED
    return INCONCLUSIVE


def saturation(coverage: np.ndarray, ks: Sequence[int], *, margin: float = MARGIN, n_boot: int = 200) -> Verdict:
    """F8 from per-problem coverage@k (problems × len(ks), each a mean over the problem's repeats)."""
    from ttscale.scaling import fit_ttspm

    fit = fit_ttspm(budget=list(ks), accuracy=coverage, n_boot=n_boot)
    star, low, high = fit.derived["N_star"]
    n_star = (float(star), float(low), float(high))
    gain = mean_difference(coverage[:, -1], coverage[:, -2], n_boot=max(n_boot, 400))
    return Verdict(saturation_rule(n_star, gain, ks[-1], margin),
                   f"N* = {star:.1f} [{low:.1f}, {high:.1f}] samples (measured up to {ks[-1]}), "
                   f"F_max {fit.params['F_max']:.3f}; coverage@{ks[-1]} − coverage@{ks[-2]} {pts(gain)} (still "
                   f"rising: CI > +{100 * margin:g})")


# -- F2: the vote, grouped by equivalence, and its plateau ----------------------------------------------


def vote_groups(answers: Sequence[str | None]) -> list[str | None]:
    """Each answer's vote group as `ttscale.kit.selection.majority_vote` counts it (None: abstains).

    The key is `normalize_answer` (the grader's canonical form, exact values for numbers: 12, 12.0 and 12.00 are
    one vote), and groups math-verify calls equal are folded by the vote's own rule
    (`ttscale.kit.selection.symbolic_leaders`, over the `SYMBOLIC.groups` most-voted groups).
    """
    from ttscale.answers.canonical import exact_number

    keys = [normalize_answer(a) if a is not None else "" for a in answers]
    votes = Counter(k for k in keys if k)
    first = {k: keys.index(k) for k in votes}
    ranked = sorted(votes, key=lambda k: (-votes[k], first[k]))[: SYMBOLIC.groups]
    literal = {k for k in ranked if exact_number(k) is not None}
    leader_of = {k: k for k in votes}
    leader_of.update(symbolic_leaders(ranked, {k: answers[first[k]] or "" for k in ranked}, literal))
    return [leader_of[k] if k else None for k in keys]


def grouped_majority(answers: Sequence[str | None], grade: Callable[[str], bool], ks: Sequence[int]) -> list[float]:
    """maj@k for each k of one pool, the votes grouped by `vote_groups` and each group right or wrong as the
    grader grades its first answer (the answer `majority_vote` would return for it)."""
    groups = vote_groups(answers)
    # A group is named by its leader's key; the leader's first answer is the one a vote for the group returns.
    shown: dict[str, str] = {}
    for answer in answers:
        if answer is not None:
            shown.setdefault(normalize_answer(answer), answer)
    right = {g: bool(grade(shown[g])) for g in set(groups) if g is not None}
    flags = [g is not None and right[g] for g in groups]
    return [majority_at_k(answers=groups, correct=flags, k=k) for k in ks]


def plateau_rule(majority_gain: Interval, coverage_gain: Interval, majority_level: Interval,
                 margin: float = MARGIN) -> str:
    """F2's rule on its three intervals (see the module)."""
    gain = equivalent(majority_gain, margin)
    if gain == NOT_REPRODUCED:
        return NOT_REPRODUCED
    if gain == REPRODUCED and coverage_gain[1] > margin and majority_level[1] > margin:
        return REPRODUCED
    return INCONCLUSIVE


def plateau(majority: np.ndarray, coverage: np.ndarray, ks: Sequence[int], *, margin: float = MARGIN,
            n_boot: int = BOOT) -> Verdict:
    """F2 from per-problem maj@k and coverage@k (problems × len(ks), each a mean over the problem's repeats)."""
    top, quarter = len(ks) - 1, list(ks).index(max(1, ks[-1] // 4))
    maj_gain = mean_difference(majority[:, top], majority[:, quarter], n_boot=n_boot)
    cov_gain = mean_difference(coverage[:, top], coverage[:, quarter], n_boot=n_boot)
    level = mean_interval(majority[:, quarter], n_boot=n_boot)
    return Verdict(plateau_rule(maj_gain, cov_gain, level, margin),
                   f"maj@{ks[top]} − maj@{ks[quarter]} {pts(maj_gain)} (plateau: CI within ±{100 * margin:g} pt), "
                   f"maj@{ks[quarter]} {percent(level)}, coverage@{ks[top]} − coverage@{ks[quarter]} "
                   f"{pts(cov_gain)}; votes grouped by equivalence")


if __name__ == "__main__":
    # Not a benchmark: the rules the benchmarks apply. Run as a script it prints them (and tests/test_benchmarks.py
    # checks that every file here imports and answers --help).
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print(__doc__)
