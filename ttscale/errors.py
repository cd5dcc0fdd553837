"""Errors the core raises and the CLI turns into one line (exit code 2, or a signal's code).

They live here, at the bottom of the package, so core code never imports from `ttscale.cli` to raise them.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class Stopped(Exception):
    """The run was stopped by a signal after saving what it finished: one line, the signal's exit code."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


__all__ = ["Stopped", "UsageError"]
