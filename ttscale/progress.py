"""Live progress of a run: a bar of problems finished, with tokens spent and requests in flight beside it.

The bar counts problems, so it ends at 100% when the run does, and its rate and remaining time come
from problems finished. A bar of tokens against the budget did not: a run rarely spends its whole
budget, so such a bar ended near 25% with minutes "left". A tree search finishes its problems only
at their end, and all of them run at once, so for most of such a run the bar stays at 0/N with no
rate and no estimate (none is better than a made-up one); the tokens generated (of the budget, when
it is in tokens) and the requests the engine holds move in the postfix meanwhile, showing the run
is alive.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any


class Progress:
    """The counters the runner and the engine wrapper update; rendered by tqdm (or nothing when disabled)."""

    def __init__(
        self,
        *,
        problems: int,
        done: int = 0,
        token_budget: float | None = None,
        enabled: bool = True,
        file: IO[str] | None = None,
    ) -> None:
        self.problems = problems
        self.done = done
        self.in_flight = 0
        self.generated = 0
        self.token_budget = token_budget
        """The most tokens this call's problems may generate (None: a budget not in tokens)."""
        self._last_render = 0.0
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=problems,
                initial=done,  # a resumed run's finished problems: counted, not in the rate
                desc="problems",
                unit="problem",
                file=file or sys.stderr,
                dynamic_ncols=True,
                mininterval=0.5,
                smoothing=0.1,
            )
            self._postfix(force=True)

    def request_started(self) -> None:
        self.in_flight += 1
        self._postfix()

    def request_finished(self, generated_tokens: int) -> None:
        self.in_flight -= 1
        self.add_tokens(generated_tokens)

    def add_tokens(self, generated_tokens: int) -> None:
        """Tokens generated (by a request of this process, or by a whole problem solved elsewhere)."""
        self.generated += generated_tokens
        self._postfix()

    def problem_done(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(1)
        self._postfix(force=True)

    def close(self) -> None:
        if self._bar is not None:
            self._postfix(force=True)
            self._bar.close()
            self._bar = None

    def describe(self) -> str:
        budget = f" of {_count(self.token_budget)}" if self.token_budget else ""
        return f"{_count(self.generated)}{budget} tokens, {self.in_flight} requests in flight"

    def _postfix(self, *, force: bool = False) -> None:
        # Rendering costs more than the bookkeeping: at most twice a second unless a problem finished.
        now = time.monotonic()
        if self._bar is None or (not force and now - self._last_render < 0.5):
            return
        self._last_render = now
        self._bar.set_postfix_str(self.describe(), refresh=True)


def _count(value: float) -> str:
    """A count as people read it at a glance: 812, 1.23k, 24k, 1.5M."""
    for unit in ("", "k", "M"):
        if abs(value) < 999.5:
            return f"{value:.3g}{unit}" if unit else f"{value:.0f}"
        value /= 1000
    return f"{value:.3g}G"


__all__ = ["Progress"]
