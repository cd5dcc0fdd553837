"""Scores for search: step-score aggregation, softmax allocation and resampling, verifier loading.

Pure functions over lists of floats (no engine), shared by every tree strategy and by ETS,
whose node selection starts from the same REBASE allocation.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

from ttscale.verifiers import VERIFIERS

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


def allocate(scores: Sequence[float], total: int, *, temperature: float = 1.0) -> list[int]:
    """REBASE's allocation: W_j = round(total · softmax(R / T)_j), rounded so that Σ W_j = total exactly.

    Largest-remainder rounding (ties to the earlier node), so a high-scored node never gets
    fewer children than a lower-scored one.
    """
    if total < 0:
        raise ValueError(f"total must be ≥ 0, got {total}")
    if not scores:
        return []
    shares = [p * total for p in softmax(scores, temperature=temperature)]
    counts = [math.floor(s) for s in shares]
    order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - counts[i]), -scores[i], i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
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


def parse_verifier_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`name` or `name:key=value,key=value` → (name, options as strings)."""
    name, _, rest = spec.partition(":")
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"verifier options must look like key=value, got {item!r} in {spec!r}")
        options[key.strip()] = value.strip()
    if not name.strip():
        raise ValueError(f"verifier spec must start with a name, got {spec!r}")
    return name.strip(), options


@lru_cache(maxsize=32)
def load_verifier(spec: str) -> Any:
    """A verifier from its registry spec, built once per spec and shared by every problem of a run.

    Sharing is safe because verifiers get the problem's context on every call; it matters for
    model-based verifiers, which must not load a model per problem. Options are converted to
    the factory's field types when the factory is a parameter dataclass.
    """
    import dataclasses

    from ttscale.params import parse_params

    name, options = parse_verifier_spec(spec)
    factory = VERIFIERS.get(name)
    if dataclasses.is_dataclass(factory) and isinstance(factory, type):
        return parse_params(factory, options)
    return factory(**options)


def check_verifier_spec(spec: str) -> None:
    """Refuse an unknown verifier name or a malformed spec at parameter time (before any engine starts)."""
    name, _ = parse_verifier_spec(spec)
    VERIFIERS.canonical(name)
