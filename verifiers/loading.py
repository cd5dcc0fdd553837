"""A verifier from its spec (`name` or `name:key=value,...`): the name checked, the verifier built once per spec.

Strategies, the strategy kit and routing load their verifiers here and hand them to what scores with them
(`ttscale.search.Search(ctx, p, verifier=...)`): search, below the verifiers, never loads one itself.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ttscale.search.score import parse_verifier_spec
from ttscale.verifiers import VERIFIERS


@lru_cache(maxsize=32)
def load_verifier(spec: str) -> Any:
    """A verifier from its registry spec, built once per spec and shared by every problem of a run.

    Sharing is safe because verifiers get the problem's context on every call; it matters for
    model-based verifiers, which must not load a model per problem. Options are converted to
    the factory's field types when the factory is a parameter dataclass.
    """
    import dataclasses

    from ttscale.kit.params import parse_params

    name, options = parse_verifier_spec(spec)
    factory = VERIFIERS.get(name)
    if dataclasses.is_dataclass(factory) and isinstance(factory, type):
        return parse_params(factory, options)
    return factory(**options)


def check_verifier_spec(spec: str) -> None:
    """Refuse an unknown verifier name or a malformed spec at parameter time (before any engine starts)."""
    name, _ = parse_verifier_spec(spec)
    VERIFIERS.canonical(name)
