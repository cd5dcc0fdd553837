"""A verifier spec's form: `name`, or `name:key=value,key=value`, where a value in parentheses is taken whole.

Commas separate a verifier's options, so an option whose value holds commas (a nested verifier's own spec, as
GRM's `meta`) is written in parentheses: `grm:samples=4,meta=(prm:model=DIR,aggregate=min)` gives `grm` the
options `samples=4` and `meta=prm:model=DIR,aggregate=min`. Groups nest (`meta=(grm:meta=(llm_judge:votes=2))`);
a value in a group is stripped of its outer spaces. Only a value that *begins* with `(` is a group, so every spec
written before groups existed parses as it did unless one of its values began with `(` (write such a value in a
group of its own: `step_tag=((x))` is `(x)`). Parentheses inside a plain value (`tag=a(b)`) are letters as before.

Only the form is checked here: which names and options exist is the verifier registry's
(`ttscale.verifiers.loading.check_verifier_spec`), above search.
"""

from __future__ import annotations

from collections.abc import Mapping


def _close(text: str, start: int, *, key: str, spec: str) -> int:
    """The index of the `)` closing the `(` at `text[start]`; a one-line ValueError when it is never closed."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    raise ValueError(f"verifier spec {spec!r}: the '(' opening option {key!r}'s value is never closed")


def _items(rest: str, spec: str) -> list[str]:
    """`rest` split at the commas outside the groups (a value that begins with `(`, to its matching `)`)."""
    items: list[str] = []
    start = index = 0
    while index < len(rest):
        char = rest[index]
        if char == ",":
            items.append(rest[start:index])
            start = index = index + 1
            continue
        if char == "=" and "=" not in rest[start:index]:  # the item's first `=`: where its value begins
            first = index + 1
            while first < len(rest) and rest[first].isspace():
                first += 1
            if first < len(rest) and rest[first] == "(":
                index = _close(rest, first, key=rest[start:index].strip(), spec=spec) + 1
                continue
        index += 1
    items.append(rest[start:])
    return items


def _value(key: str, value: str, spec: str) -> str:
    """An option's value: a group's inside (stripped), or the plain value."""
    if not value.startswith("("):
        return value
    end = _close(value, 0, key=key, spec=spec)
    if end != len(value) - 1:
        raise ValueError(f"verifier spec {spec!r}: option {key!r} has {value[end + 1:]!r} after the ')' closing its "
                         "value (a value in parentheses ends at its ')')")
    return value[1:end].strip()


def parse_verifier_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`name` or `name:key=value,key=value` → (name, options as strings), a value in parentheses taken whole (see
    the module docstring). Only the form: which names exist is the verifier registry's
    (`ttscale.verifiers.check_verifier_spec`), above search: a caller hands `Search` the verifier it loaded."""
    name, _, rest = spec.partition(":")
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in _items(rest, spec))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"verifier options must look like key=value, got {item!r} in {spec!r}")
        options[key.strip()] = _value(key.strip(), value.strip(), spec)
    if not name.strip():
        raise ValueError(f"verifier spec must start with a name, got {spec!r}")
    return name.strip(), options


def render_verifier_spec(name: str, options: Mapping[str, str]) -> str:
    """The spec `parse_verifier_spec` reads back as (name, options): a value holding a comma, or beginning with `(`,
    is written in parentheses. A value that no spec can hold (an unmatched `)` beside a comma) is refused."""
    parts = []
    for key, value in options.items():
        plain = "," not in value and not value.startswith("(")
        parts.append(f"{key}={value if plain else f'({value})'}")
    spec = f"{name}:{','.join(parts)}" if parts else name
    try:
        back = parse_verifier_spec(spec)
    except ValueError:
        back = None
    if back != (name, dict(options)):
        raise ValueError(f"no verifier spec can write {name!r} with the options {dict(options)!r}")
    return spec


__all__ = ["parse_verifier_spec", "render_verifier_spec"]
