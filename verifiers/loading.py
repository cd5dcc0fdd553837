"""A verifier from its spec (`name` or `name:key=value,...`, a value in parentheses taken whole: see
ttscale.search.specs): the name and the options' names checked, the verifier built once per spec.

Strategies, the strategy kit and routing load their verifiers here and hand them to what scores with them
(`ttscale.search.Search(ctx, p, verifier=...)`): search, below the verifiers, never loads one itself.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ttscale.registry import UnknownNameError
from ttscale.search.specs import parse_verifier_spec
from ttscale.verifiers import VERIFIERS


@lru_cache(maxsize=32)
def load_verifier(spec: str) -> Any:
    """A verifier from its registry spec, built once per spec and shared by every problem of a run.

    Sharing is safe because verifiers get the problem's context on every call; it matters for
    model-based verifiers, which must not load a model per problem.
    """
    return build_verifier(spec)


def build_verifier(spec: str) -> Any:
    """A new verifier from its registry spec (`load_verifier` shares one per spec). Options are converted to the
    factory's field types when the factory is a parameter dataclass, whose checks then run (`samples must be ≥ 1`);
    building one starts nothing (a model-based verifier loads its model when it first scores)."""
    import dataclasses

    from ttscale.kit.params import parse_params

    name, options = parse_verifier_spec(spec)
    factory = VERIFIERS.get(name)
    if dataclasses.is_dataclass(factory) and isinstance(factory, type):
        return parse_params(factory, options)
    return factory(**options)


def verifier_options(name: str) -> tuple[str, ...] | None:
    """The options the verifier `name` takes (its parameter dataclass's public fields, and their aliases), or None
    where its factory is not a parameter dataclass (a plugin's function: its options are its own)."""
    import dataclasses

    factory = VERIFIERS.get(name)
    if not (dataclasses.is_dataclass(factory) and isinstance(factory, type)):
        return None
    fields = [f.name for f in dataclasses.fields(factory) if f.init and not f.name.startswith("_")]
    return (*fields, *getattr(factory, "ALIASES", {}))


def check_verifier_spec(spec: str) -> None:
    """Refuse an unknown verifier name, an option it does not take, or a malformed spec at parameter time (before
    any engine starts), in one line; the options a verifier declares as verifier specs of their own
    (`NESTED_VERIFIERS`, as GRM's meta RM) are checked as specs too."""
    name, options = parse_verifier_spec(spec)
    canonical = VERIFIERS.canonical(name) or name
    allowed = verifier_options(canonical)
    unknown = [key for key in options if allowed is not None and key not in allowed]
    if unknown:
        raise ValueError(f"verifier {canonical} has no option {unknown[0]!r} (its options: "
                         f"{', '.join(sorted(allowed or ()))}) in {spec!r}")
    for key in getattr(VERIFIERS.get(canonical), "NESTED_VERIFIERS", ()):
        if key in options:
            try:
                check_verifier_spec(options[key])
            except UnknownNameError as exc:
                raise UnknownNameError(f"{canonical}'s option {key}: {exc}") from None
            except ValueError as exc:
                raise ValueError(f"{canonical}'s option {key}: {exc}") from None
