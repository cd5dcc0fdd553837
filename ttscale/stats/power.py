"""Power and sample size of the claims a comparison's verdict can make, for the intervals the verdict uses.

Four claims (`Claim`), each read off one 95% interval exactly as benchmarks/verdicts.py reads it:

- `better` by more than t: the accuracy difference Δ = p_A − p_B has CI low > t;
- `equal` within ±m: the whole CI inside [−m, +m] (two one-sided tests at 2.5% each);
- `not_worse` by more than m: CI low ≥ −m;
- `ratio` of at least h: a cost ratio ρ = mean A / mean B has CI low ≥ h (h > 1), or CI high ≤ h (h < 1).

Accuracy (binary outcomes, paired by problem and repeat): the interval is Tango's score interval on the counts
divided by the repeats' design effect (`ttscale.stats.proportions.paired_proportions`). No closed form gives the
power of that interval with an estimated design effect, so it is simulated, and cheaply: T(δ), the score
statistic, decreases in δ and the limits are where it crosses ∓z, so "CI low > t" is "T(t) > z" and no root is
needed; and the statistic and the design-effect estimate depend on the data only through b, c and Σ s_p² (s_p a
problem's sum of x_A − x_B over its repeats), which are linear in how many problems fall in each of a few types
(how many of its R pairs are A-only and B-only). One simulated experiment is then one multinomial draw of the n
problems into those types, whatever n is.

The repeats are modelled as copies with probability ρ_c: a problem's R pairs are one draw repeated (probability
ρ_c) or R independent draws, so pairs of one problem correlate by ρ_c and the design effect is 1 + (R − 1)·ρ_c.
Each pair is A-only with probability (q + Δ)/2 and B-only with (q − Δ)/2, q the discordance (the share of pairs
where the arms disagree): only Δ, q, R and the design effect matter to the interval, not the accuracies.

Cost ratios: the interval is a percentile cluster bootstrap of a ratio of means over problems
(`ttscale.stats.paired`), which for a smooth statistic is the normal interval of log ρ̂ with standard error
σ/√n (the delta method: σ the standard deviation over problems of a_p/ā − b_p/b̄, a_p and b_p a problem's mean
cost on each side). That is a one-sample z-test, whose power statsmodels computes (`NormalIndPower`, ratio=0);
`simulate_ratio_power` checks it against the bootstrap itself (tests/stats/test_power.py, benchmarks/power.py).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Literal

import numpy as np

ClaimKind = Literal["better", "equal", "not_worse", "ratio"]
CLAIMS: tuple[str, ...] = ("better", "equal", "not_worse", "ratio")
#: The two-sided level of every verdict's interval (95%): each one-sided bound is a test at 2.5%.
ALPHA = 0.05
#: Problems the search goes up to; a claim no size below it decides is reported as needing more.
MAX_PROBLEMS = 10_000_000


@dataclass(frozen=True, kw_only=True)
class Claim:
    """What a verdict would say "reproduced" to."""

    kind: ClaimKind
    """better (by more than `value`), equal (within ±`value`), not_worse (by at most `value`), ratio (at least
    `value`)."""
    value: float
    """t or m as a proportion (0.01 = 1 point) for accuracy claims; h for a ratio (h > 0, h ≠ 1)."""

    def __post_init__(self) -> None:
        if self.kind not in CLAIMS:
            raise ValueError(f"claim must be one of {', '.join(CLAIMS)}, got {self.kind!r}")
        v = self.value
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"{self.kind}'s value must be a number, got {v!r}")
        if self.kind == "better" and not -1 < v < 1:
            raise ValueError(f"better's threshold must be in (-1, 1) (a proportion: 0.05 = 5 points), got {v}")
        if self.kind in ("equal", "not_worse") and not 0 < v < 1:
            raise ValueError(f"{self.kind}'s margin must be in (0, 1) (a proportion: 0.01 = 1 point), got {v}")
        if self.kind == "ratio" and (v <= 0 or v == 1):
            raise ValueError(f"ratio's h must be > 0 and ≠ 1 (1.34 = at least 1.34x), got {v}")

    def text(self) -> str:
        if self.kind == "ratio":
            return f"ratio {'≥' if self.value > 1 else '≤'} {self.value:g}x"
        word = {"better": "better by more than", "equal": "equal within ±", "not_worse": "not worse by more than"}
        gap = "" if self.kind == "equal" else " "
        return f"{word[self.kind]}{gap}{100 * self.value:g} pts"


@dataclass(frozen=True, kw_only=True)
class Accuracy:
    """What the power of an accuracy claim depends on."""

    difference: float
    """Δ = p_A − p_B, the true difference assumed."""
    discordance: float
    """q: the share of pairs where one arm is right and the other wrong (|Δ| ≤ q ≤ 1)."""
    repeats: int = 1
    """R: pairs per problem (repeats with run seeds 0..R−1)."""
    design_effect: float = 1.0
    """D in [1, R]: how much the repeats' correlation inflates the variance (1: independent; R: copies)."""

    def __post_init__(self) -> None:
        if not -1 <= self.difference <= 1:
            raise ValueError(f"difference must be in [-1, 1] (a proportion), got {self.difference}")
        if not abs(self.difference) <= self.discordance <= 1:
            raise ValueError(f"discordance must be in [|difference|, 1] = [{abs(self.difference):g}, 1], "
                             f"got {self.discordance}")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise ValueError(f"repeats must be a whole number ≥ 1, got {self.repeats!r}")
        if not 1 <= self.design_effect <= self.repeats:
            raise ValueError(f"design_effect must be in [1, repeats] = [1, {self.repeats}], got {self.design_effect}")


@dataclass(frozen=True, kw_only=True)
class Ratio:
    """What the power of a cost-ratio claim depends on."""

    ratio: float
    """ρ = mean A / mean B, the true ratio assumed."""
    spread: float
    """σ: the standard deviation over problems of a_p/ā − b_p/b̄ (the delta method's; 0.3 = 30%)."""

    def __post_init__(self) -> None:
        if not self.ratio > 0 or not math.isfinite(self.ratio):
            raise ValueError(f"ratio must be > 0, got {self.ratio}")
        if not self.spread > 0 or not math.isfinite(self.spread):
            raise ValueError(f"spread must be > 0, got {self.spread}")


def z_value(alpha: float = ALPHA) -> float:
    return statistics.NormalDist().inv_cdf(1 - alpha / 2)


# -- accuracy: the score statistic on simulated counts ---------------------------------------------------


def tango_score(b: np.ndarray, c: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """Tango's T(δ) on arrays of (possibly design-effect divided) counts, as `tango_interval` computes it."""
    b, c, n = (np.asarray(x, dtype=float) for x in (b, c, n))
    linear = -(b + c) + (2 * n - b + c) * delta
    q = (np.sqrt(np.maximum(linear * linear + 8 * n * c * delta * (1 - delta), 0.0)) - linear) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    numerator = b - c - n * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = numerator / np.sqrt(variance)
    return np.where(numerator == 0, 0.0, np.where(variance > 0, t, np.copysign(np.inf, numerator)))


def decided(claim: Claim, b: np.ndarray, c: np.ndarray, pairs: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Whether Tango's interval on (b, c, pairs) (already divided by the design effect) makes `claim` reproduced."""
    z = z_value(alpha)
    if claim.kind == "better":
        return np.asarray(tango_score(b, c, pairs, claim.value) > z)
    low_ok = tango_score(b, c, pairs, -claim.value) >= z
    if claim.kind == "not_worse":
        return np.asarray(low_ok)
    if claim.kind == "equal":
        return np.asarray(low_ok & (tango_score(b, c, pairs, claim.value) <= -z))
    raise ValueError("a ratio claim is not an accuracy claim")


def problem_types(acc: Accuracy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The problem types (A-only pairs, B-only pairs) of R pairs and their probabilities (see the module)."""
    r = acc.repeats
    p_a, p_b = (acc.discordance + acc.difference) / 2, (acc.discordance - acc.difference) / 2
    p_0 = max(0.0, 1 - p_a - p_b)
    copy = 0.0 if r == 1 else (acc.design_effect - 1) / (r - 1)
    probs: dict[tuple[int, int], float] = {}
    for i in range(r + 1):
        for j in range(r + 1 - i):
            ways = math.comb(r, i) * math.comb(r - i, j)
            probs[(i, j)] = (1 - copy) * ways * p_a**i * p_b**j * p_0 ** (r - i - j)
    for key, p in (((r, 0), p_a), ((0, r), p_b), ((0, 0), p_0)):
        probs[key] = probs.get(key, 0.0) + copy * p
    keys = list(probs)
    weights = np.array([probs[k] for k in keys])
    return (np.array([k[0] for k in keys], dtype=float), np.array([k[1] for k in keys], dtype=float),
            weights / weights.sum())


def simulate_counts(acc: Accuracy, problems: int, *, sims: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """(b, c, pairs) of `sims` simulated experiments of `problems` problems, divided by each one's estimated
    design effect (exactly as `paired_proportions` estimates it from the per-problem sums)."""
    weights = problem_types(acc)[2]
    counts = np.random.default_rng(seed).multinomial(problems, weights, size=sims).astype(float)
    return tables(acc, counts)


def tables(acc: Accuracy, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """(b, c, pairs) divided by each experiment's estimated design effect, from how many of its problems fell in
    each of `problem_types(acc)` (rows of `counts`)."""
    only_a, only_b, _ = problem_types(acc)
    problems = round(float(counts[0].sum()))
    sims = counts.shape[0]
    r, k = acc.repeats, problems * acc.repeats
    b, c = counts @ only_a, counts @ only_b
    design = np.ones(sims)
    if r > 1:
        mean = (b - c) / k
        squares = counts @ (only_a - only_b) ** 2  # Σ s_p²
        within = (b + c) - k * mean**2
        clustered = problems / max(problems - 1, 1) * (squares - k * r * mean**2)  # Σ (s_p − mean·R)²
        independent = within * k / (k - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            design = np.where((within > 1e-12) & (problems > 1), np.clip(clustered / independent, 1.0, r), float(r))
    return b / design, c / design, k / design


def accuracy_power(claim: Claim, acc: Accuracy, problems: int, *, sims: int = 4000, seed: int = 0) -> float:
    """The share of `sims` simulated experiments of `problems` problems whose verdict reads "reproduced"."""
    b, c, pairs = simulate_counts(acc, problems, sims=sims, seed=seed)
    return float(decided(claim, b, c, pairs).mean())


# -- ratios: the delta method's z-test, through statsmodels ------------------------------------------------


def _ratio_effect(claim: Claim, ratio: Ratio) -> float:
    """Cohen's d of the one-sample test: (log ρ − log h)/σ in the claim's direction."""
    sign = 1.0 if claim.value > 1 else -1.0
    return sign * (math.log(ratio.ratio) - math.log(claim.value)) / ratio.spread


def ratio_power(claim: Claim, ratio: Ratio, problems: int) -> float:
    from statsmodels.stats.power import NormalIndPower  # statsmodels only where a ratio is planned

    d = _ratio_effect(claim, ratio)
    return float(NormalIndPower().power(effect_size=d, nobs1=problems, alpha=ALPHA / 2, ratio=0,
                                        alternative="larger"))


def ratio_problems(claim: Claim, ratio: Ratio, power: float) -> int | None:
    """The fewest problems for `power`; None when the assumed ratio is not beyond h (no size reaches it)."""
    from statsmodels.stats.power import NormalIndPower

    d = _ratio_effect(claim, ratio)
    if d <= 0:
        return None
    if ratio_power(claim, ratio, 2) >= power:  # the solver's bracket starts above 2 problems
        return 2
    n = NormalIndPower().solve_power(effect_size=d, power=power, alpha=ALPHA / 2, ratio=0, alternative="larger")
    return max(2, math.ceil(float(np.asarray(n).item())))


def ratio_detectable(claim: Claim, spread: float, problems: int, power: float = 0.8) -> float:
    """The true ratio that `problems` problems show to be beyond h with `power` (h times e^(±d·σ))."""
    from statsmodels.stats.power import NormalIndPower

    d = NormalIndPower().solve_power(nobs1=problems, power=power, alpha=ALPHA / 2, ratio=0, alternative="larger")
    step = float(np.asarray(d).item()) * spread
    return claim.value * math.exp(step if claim.value > 1 else -step)


def simulate_ratio_power(claim: Claim, a: np.ndarray, b: np.ndarray, *, resamples: int = 1000,
                         seed: int = 0) -> float:
    """The share of experiments (rows of per-problem mean costs `a`, `b`: experiments × problems) whose
    percentile cluster-bootstrap interval of Σa/Σb makes `claim` reproduced: the verdict's own interval."""
    rng = np.random.default_rng(seed)
    hits = 0
    n = a.shape[1]
    for row_a, row_b in zip(a, b, strict=True):
        draws = rng.multinomial(n, np.full(n, 1 / n), size=resamples).astype(float)
        ratios = (draws @ row_a) / (draws @ row_b)
        low, high = np.percentile(ratios, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
        hits += bool(low >= claim.value) if claim.value > 1 else bool(high <= claim.value)
    return hits / a.shape[0]


# -- sizes and detectable effects --------------------------------------------------------------------------


def accuracy_reachable(claim: Claim, acc: Accuracy) -> bool:
    """Whether any size reaches power 1 in the limit: the assumed Δ is strictly on the claim's side."""
    d = acc.difference
    if claim.kind == "better":
        return d > claim.value
    if claim.kind == "equal":
        return abs(d) < claim.value
    return d > -claim.value


def accuracy_problems(claim: Claim, acc: Accuracy, power: float, *, sims: int = 4000, seed: int = 0) -> int | None:
    """The fewest problems whose simulated power reaches `power` (None: no size below MAX_PROBLEMS does).

    Doubling from a normal approximation's guess, then bisection; every size is simulated with the same seed,
    so neighbouring sizes see the same random draws as far as a multinomial allows and the search is stable."""
    if not accuracy_reachable(claim, acc):
        return None
    z = z_value() + statistics.NormalDist().inv_cdf(power)
    d = acc.difference
    gap = (min(claim.value - abs(d), claim.value + abs(d)) if claim.kind == "equal"
           else d - claim.value if claim.kind == "better" else d + claim.value)
    variance = max(acc.discordance - d * d, 1e-6) * acc.design_effect / acc.repeats
    guess = max(2, int(variance * (z / gap) ** 2))

    def enough(n: int) -> bool:
        return accuracy_power(claim, acc, n, sims=sims, seed=seed) >= power

    low, high = 1, guess
    while not enough(high):
        low, high = high, high * 2
        if high > MAX_PROBLEMS:
            return None
    if high == guess:  # the guess was enough: look below it
        low = 1
        while low < high // 2 and enough(high // 2):
            high //= 2
        low = max(1, high // 2)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return max(high, 2)


def accuracy_detectable(claim: Claim, acc: Accuracy, problems: int, power: float = 0.8, *, sims: int = 2000,
                        seed: int = 0) -> float | None:
    """The smallest effect `problems` problems detect with `power`: for `better`, the true Δ, holding the share of
    pairs only B gets right (a larger Δ is more pairs only A gets right: q = Δ + 2·P(only B)); for `equal` and
    `not_worse`, the tightest margin at the assumed Δ. None: none within range."""
    only_b = (acc.discordance - acc.difference) / 2

    def power_at(x: float) -> float:
        if claim.kind == "better":
            shifted = Accuracy(difference=x, discordance=min(1.0, x + 2 * only_b), repeats=acc.repeats,
                               design_effect=acc.design_effect)
            return accuracy_power(claim, shifted, problems, sims=sims, seed=seed)
        return accuracy_power(Claim(kind=claim.kind, value=x), acc, problems, sims=sims, seed=seed)

    if claim.kind == "better":
        low, high = max(claim.value, -only_b), 1 - 2 * only_b  # every pair but the B-only ones A-only
    else:
        low, high = (abs(acc.difference) if claim.kind == "equal" else max(0.0, -acc.difference)), 1 - 1e-9
    if power_at(high) < power:
        return None
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (low, mid) if power_at(mid) >= power else (mid, high)
    return high


def pilot_accuracy(*, only_a: float, only_b: float, pairs: int, problems: int, design_effect: float,
                   difference: float | None = None) -> Accuracy:
    """What measured paired counts say for planning: Δ (or `difference`), q (the rule of three's 3/K when no pair
    was discordant: 0 would make every simulated experiment a copy of this one), R and D."""
    repeats = max(1, round(pairs / problems))
    q = (only_a + only_b) / pairs if only_a + only_b else min(1.0, 3 / pairs)
    d = (only_a - only_b) / pairs if difference is None else difference
    return Accuracy(difference=d, discordance=max(q, abs(d)), repeats=repeats,
                    design_effect=min(max(design_effect, 1.0), float(repeats)))


def difference_evidence(acc: Accuracy, problems: int, *, detectable: bool, tokens_per_pair: float | None = None) -> str:
    """`ttscale compare`'s words on an accuracy difference's size: the |Δ| its problems detect (either way) with
    80% power and, when it detected none, the problems the measured Δ would need (and the generated tokens they
    would cost, both arms, at `tokens_per_pair`: the comparison's own)."""
    either = Claim(kind="better", value=0.0)
    mirrored = Accuracy(difference=abs(acc.difference), discordance=acc.discordance, repeats=acc.repeats,
                        design_effect=acc.design_effect)
    smallest = accuracy_detectable(either, mirrored, problems)
    size = f"{problems} × {acc.repeats}" if acc.repeats > 1 else f"{problems}"
    text = (f"{size} problems detect |Δ| ≥ {100 * smallest:.1f} pts with 80% power" if smallest is not None
            else f"{size} problems detect no |Δ| with 80% power")
    if not detectable:
        needed = accuracy_problems(either, mirrored, 0.8)
        text += (f"; the measured Δ needs {needed} × {acc.repeats} problems" if needed is not None
                 else "; no size detects the measured Δ (0)")
        if needed is not None and tokens_per_pair is not None:
            text += f" (about {needed * acc.repeats * tokens_per_pair:.3g} generated tokens, both arms)"
    return text


def ratio_evidence(mean_a: np.ndarray, mean_b: np.ndarray, *, detectable: bool) -> str | None:
    """`ttscale compare`'s words on a cost ratio's size, from per-problem mean costs: the ratio its problems tell
    from 1 (either way) with 80% power and, when it told none, the problems the measured ratio would need. None
    when the costs do not vary (every ratio is then told)."""
    from statsmodels.stats.power import NormalIndPower

    a, b = np.asarray(mean_a, dtype=float), np.asarray(mean_b, dtype=float)
    n = a.size
    spread = float(np.std(a / a.mean() - b / b.mean(), ddof=1)) if n > 1 else 0.0
    if not spread > 1e-12:
        return None
    solver = NormalIndPower()
    d = float(np.asarray(solver.solve_power(nobs1=n, power=0.8, alpha=ALPHA / 2, ratio=0,
                                            alternative="larger")).item())
    shown = math.exp(d * spread)
    text = f"{n} problems tell ≥ {shown:.2f}x or ≤ {1 / shown:.2f}x from 1 at 80% power"
    if not detectable:
        distance = abs(math.log(a.sum() / b.sum()))
        if distance < 1e-12:
            return text + "; no size tells the measured ratio (1.00x) from 1"
        # Telling ρ from 1 is a ratio claim of h = 1 at distance |log ρ| (the z-test's power depends only on it).
        needed = ratio_problems(Claim(kind="ratio", value=math.exp(distance)),
                                Ratio(ratio=math.exp(2 * distance), spread=spread), 0.8)
        text += f"; the measured ratio needs {needed} problems"
    return text


__all__ = ["ALPHA", "CLAIMS", "MAX_PROBLEMS", "Accuracy", "Claim", "Ratio", "accuracy_detectable", "accuracy_power",
           "accuracy_problems", "accuracy_reachable", "decided", "difference_evidence", "pilot_accuracy",
           "problem_types", "ratio_detectable", "ratio_evidence", "ratio_power", "ratio_problems", "simulate_counts",
           "simulate_ratio_power", "tables", "tango_score", "z_value"]
