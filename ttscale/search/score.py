"""Scores for search: step-score aggregation, softmax allocation and resampling, a verifier spec's form.

Pure functions over lists of floats (no engine), shared by every tree strategy and by ETS,
whose node selection starts from the same REBASE allocation.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Literal

from ttscale.search.specs import parse_verifier_spec as parse_verifier_spec  # its home before groups existed

Aggregate = Literal["last", "min", "prod", "mean"]
AGGREGATES: tuple[str, ...] = ("last", "min", "prod", "mean")


def aggregate(scores: Sequence[float], how: Aggregate) -> float:
    """One number from a path's step scores.

    `last` is the PRM's estimate for the whole prefix (Snell et al. use it); `min` is the
    weakest step (Lightman et al.); `prod` treats steps as independent chances of being right;
    `mean` is lenient to one bad step.
    """
    if not scores:
        raise ValueError("aggregate needs at least one step score")
    if how == "last":
        return float(scores[-1])
    if how == "min":
        return float(min(scores))
    if how == "prod":
        return float(math.prod(scores))
    if how == "mean":
        return float(sum(scores) / len(scores))
    raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")


def softmax(values: Sequence[float], *, temperature: float = 1.0) -> list[float]:
    """softmax(v / T), stable for any finite values; T must be > 0."""
    if not values:
        return []
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    top = max(values)
    weights = [math.exp((v - top) / temperature) for v in values]
    total = sum(weights)
    return [w / total for w in weights]


#: Slack under an integer share before ceil rounds up: float noise on an exactly integral share
#: (W · w_j / Σ w = 2 computed as 2.0000000000000004) must not take a child from the nodes after it.
CEIL_TOLERANCE = 1e-9

Ties = Literal["later", "earlier"]


def allocate(
    scores: Sequence[float], total: int, *, temperature: float = 1.0, ties: Ties = "later"
) -> list[int]:
    """REBASE's allocation as the reference code rounds it: greedy ceilings, best node first.

    Wu et al.'s code (thu-wyz/inference_scaling, `rebase.py`, `Tree.select_softmax`; the same
    loop in SqueezeAILab/ETS `rebase.py`, `select_softmax` and `select_softmax_costmodel`).
    Symbols: R_j the score of node j; w_j = exp(R_j / T); W the width left to give (`total`).
    1. order the nodes by R_j, highest first;
    2. in that order, W_j = ceil(W · w_j / Σ_{k not served yet} w_k); W ← W − W_j;
    3. once W = 0 every later node gets W_j = 0 (it is not expanded).
    Σ W_j = total exactly: the last node with weight takes w_j / Σ w = 1, so all that is left.
    Ceilings favour the head: [.9, .8, .8] at T = 0.2 over 3 children gives the best node 2, one
    of the tied pair 1 and the other none, where rounding the softmax shares (1.36, 0.82, 0.82)
    would give 1 each.

    `ties` orders equal scores as the reference does: `later` first from `select_softmax`'s
    ascending sort then `reverse()` (REBASE, and ETS's re-allocation over the kept nodes);
    `earlier` first from `select_softmax_costmodel`'s `sorted(reverse=True)` (ETS's outcome
    weights). Float care the reference lacks, none of which changes the exact rule: weights are
    shifted by the top score before exp (the ratios do not see it), so no score overflows; each
    Σ is summed from the tail rather than decremented, because the reference's running `Σ −= w_j`
    drifts below the last weight and its ceil then hands out one child more than is left; and a
    share that is an integer is not rounded up for float noise above it (`CEIL_TOLERANCE`).
    """
    if total < 0:
        raise ValueError(f"total must be ≥ 0, got {total}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    if ties not in ("later", "earlier"):
        raise ValueError(f"ties must be later or earlier, got {ties!r}")
    if not scores:
        return []
    top = max(scores)
    weights = [math.exp((s - top) / temperature) for s in scores]
    # A stable sort keeps equal scores in list order: `earlier` sorts on −R, `later` reverses an ascending sort.
    if ties == "earlier":
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
    else:
        order = sorted(range(len(scores)), key=lambda i: scores[i])[::-1]
    unserved = [0.0] * (len(order) + 1)  # unserved[k] = Σ w over order[k:]
    for k in range(len(order) - 1, -1, -1):
        unserved[k] = weights[order[k]] + unserved[k + 1]
    counts = [0] * len(scores)
    left = total
    for k, i in enumerate(order):
        if left == 0:
            break
        # min(…, left) only guards float noise: mathematically w_j ≤ Σ unserved w, so W_j ≤ left.
        counts[i] = min(left, math.ceil(left * (weights[i] / unserved[k]) - CEIL_TOLERANCE))
        left -= counts[i]
    return counts


def resample(weights: Sequence[float], k: int, *, rng: random.Random) -> list[int]:
    """k indices drawn with replacement in proportion to `weights` (multinomial resampling)."""
    if k < 0:
        raise ValueError(f"k must be ≥ 0, got {k}")
    if not weights or sum(weights) <= 0:
        raise ValueError("resample needs weights with a positive sum")
    return rng.choices(range(len(weights)), weights=weights, k=k)


def logit(p: float, *, eps: float = 1e-6) -> float:
    """log(p / (1 − p)), with p clipped to [eps, 1 − eps] so a 0 or 1 score stays finite."""
    p = min(max(p, eps), 1 - eps)
    return math.log(p / (1 - p))


# -- verifiers ---------------------------------------------------------------------------------------
# A verifier spec's grammar (`name:key=value,...`, a value in parentheses taken whole) is ttscale.search.specs'.
