"""What strategies that use a verifier share: the verifier's name checked with their parameters, and a tree search
opened with the verifier and its width.

Search checks a verifier spec's form (`SearchParams`) but cannot check its name: the registry sits above search.
`ChecksVerifier` checks it one layer up, once for every strategy, when the parameters are built (before any engine
starts), instead of a line in each strategy's `__post_init__`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ttscale.search import Search
from ttscale.verifiers.loading import check_verifier_spec, load_verifier

if TYPE_CHECKING:
    from ttscale.kit.context import Context
    from ttscale.search import SearchParams


class ChecksVerifier:
    """A base of strategy parameters with a `verifier` field (a registry spec, or None where a verifier is optional):
    an unknown name or a malformed spec is refused at construction. List it first among the bases,
    `class MyParams(ChecksVerifier, SearchParams)`, and call `super().__post_init__()` from your own."""

    def __post_init__(self) -> None:
        after = getattr(super(), "__post_init__", None)
        if after is not None:
            after()
        spec: str | None = getattr(self, "verifier", None)
        if spec is not None:
            check_verifier_spec(spec)


def open_search(ctx: Context, p: SearchParams, *, n: int | None, multiple_of: int = 1) -> tuple[Search, int]:
    """A tree search with the strategy's verifier (built once per spec and run) and its width: `n` when given, else
    what the budget pays for (`Search.width_from_budget(multiple_of=...)`)."""
    search = Search(ctx, p, verifier=load_verifier(p.verifier))
    return search, (n if n is not None else search.width_from_budget(multiple_of=multiple_of))


__all__ = ["ChecksVerifier", "open_search"]
