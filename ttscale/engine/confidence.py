"""A trace's confidence from its own token log-probabilities, as DeepConf defines it.

Fu, Wang, Tian, Zhao, "Deep Think with Confidence", arXiv:2508.15260 (2025); reference code
facebookresearch/deepconf (`helper.py`, `analysis_offline.py`).

Symbols: at position i the engine returns the log-probabilities of its top-k candidates (and of the sampled
token when it is not among them); the token confidence is C_i = −(1/k) Σ_j log P_i(j): high when the model
put its mass on few tokens. The group confidence of a window of n tokens is the mean of C_i over it (sliding,
one window per position from n on; a trace shorter than n is one group). A trace is scored by one of
- `mean`: the mean of all C_i (the paper's average trace confidence);
- `lowest_group`: the lowest group confidence (the paper's C_least, which online stopping watches);
- `bottom_10`: the mean of the lowest 10% of group confidences (at least one group);
- `tail`: the mean of C_i over the last `tail` tokens (2,048 in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

TraceScore = Literal["mean", "lowest_group", "bottom_10", "tail"]
TRACE_SCORES: tuple[TraceScore, ...] = ("mean", "lowest_group", "bottom_10", "tail")
WINDOW = 2048
"""The paper's group size n and tail length, in tokens."""


def token_confidence(logprobs: Iterable[float]) -> float:
    """C_i: minus the mean log-probability of the candidates the engine returned at one position."""
    values = [float(v) for v in logprobs]
    if not values:
        raise ValueError("a token's confidence needs at least one log-probability")
    # A candidate the engine rounds to −inf (probability 0) says nothing about the spread: left out.
    finite = [v for v in values if math.isfinite(v)] or [0.0]
    return -sum(finite) / len(finite)


def group_confidences(confidences: Sequence[float], *, window: int = WINDOW) -> list[float]:
    """The sliding-window means of `confidences` (one per window of `window` tokens; one mean if shorter)."""
    if window < 1:
        raise ValueError(f"window must be ≥ 1, got {window}")
    if not confidences:
        return []
    if len(confidences) <= window:
        return [sum(confidences) / len(confidences)]
    running = sum(confidences[:window])
    means = [running / window]
    for i in range(window, len(confidences)):  # a running sum: O(length), not O(length × window)
        running += confidences[i] - confidences[i - window]
        means.append(running / window)
    return means


class GroupWatch:
    """The running group confidence of a trace as its tokens arrive, for stopping it early.

    `add(c)` takes the next token's confidence and returns the group confidence of the window that ends there
    (None until `window` tokens have arrived, as the reference's patched vLLM waits for a full window).
    """

    def __init__(self, *, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be ≥ 1, got {window}")
        self.window = window
        self.confidences: list[float] = []
        self._sum = 0.0
        self.lowest: float | None = None
        """The lowest group confidence seen so far."""

    def add(self, confidence: float) -> float | None:
        self.confidences.append(confidence)
        self._sum += confidence
        if len(self.confidences) > self.window:
            self._sum -= self.confidences[-self.window - 1]
        if len(self.confidences) < self.window:
            return None
        group = self._sum / self.window
        self.lowest = group if self.lowest is None else min(self.lowest, group)
        return group


def trace_score(
    confidences: Sequence[float], *, score: TraceScore = "lowest_group", window: int = WINDOW, tail: int = WINDOW
) -> float | None:
    """The trace's confidence by `score` (see the module doc); None for a trace without confidences."""
    if not confidences:
        return None
    if score == "mean":
        return sum(confidences) / len(confidences)
    if score == "tail":
        last = confidences[-tail:]
        return sum(last) / len(last)
    groups = group_confidences(confidences, window=window)
    if score == "lowest_group":
        return min(groups)
    if score == "bottom_10":
        lowest = sorted(groups)[: max(1, int(len(groups) * 0.1))]
        return sum(lowest) / len(lowest)
    raise ValueError(f"score must be one of {', '.join(TRACE_SCORES)}, got {score!r}")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile of `values` with linear interpolation (numpy's default), without importing numpy."""
    if not values:
        raise ValueError("a percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def keep_top(scores: Sequence[float | None], *, eta: float) -> list[int]:
    """Indices of the traces in the top `eta` share by score (DeepConf's filter: score ≥ the (1 − η) percentile
    of the scores, so ties at the threshold are all kept). Traces without a score are never kept."""
    if not 0 < eta <= 1:
        raise ValueError(f"eta must be in (0, 1], got {eta}")
    scored = [s for s in scores if s is not None]
    if not scored:
        return []
    threshold = percentile(scored, (1 - eta) * 100)
    # The percentile interpolates: a float's last bit must not drop the trace that sits exactly on it.
    return [i for i, s in enumerate(scores) if s is not None and s >= threshold - 1e-12 * max(1.0, abs(threshold))]
