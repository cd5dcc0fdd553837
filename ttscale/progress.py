"""Live progress of a run: generated tokens against the budget, requests in flight, problems done.

A problem of a tree search finishes only at its end, and all problems run at once, so a bar of
problems sits at 0% for most of a run. Tokens move with every request: the bar counts generated
tokens against the whole run's budget (per-problem budget × problems, or the total budget), and
its postfix says how many problems are done and how many requests the engine holds.
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
        self._last_render = 0.0
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=int(token_budget) if token_budget else None,
                desc="tokens",
                unit="tok",
                unit_scale=True,
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
        if self._bar is not None:
            self._bar.update(generated_tokens)
        self._postfix()

    def problem_done(self) -> None:
        self.done += 1
        self._postfix(force=True)

    def close(self) -> None:
        if self._bar is not None:
            self._postfix(force=True)
            self._bar.close()
            self._bar = None

    def describe(self) -> str:
        return f"problems {self.done}/{self.problems}, {self.in_flight} requests in flight"

    def _postfix(self, *, force: bool = False) -> None:
        # Rendering costs more than the bookkeeping: at most twice a second unless a problem finished.
        now = time.monotonic()
        if self._bar is None or (not force and now - self._last_render < 0.5):
            return
        self._last_render = now
        self._bar.set_postfix_str(self.describe(), refresh=True)


__all__ = ["Progress"]
