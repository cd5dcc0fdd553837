from __future__ import annotations

import pytest

from ttscale.params import parse_assignments, parse_params
from ttscale.sampling import PoolParams


def test_strings_become_typed_values() -> None:
    p = parse_params(PoolParams, {"n": "8", "temperature": "0.5", "refill": "false", "max_tokens": "64"})
    assert (p.n, p.temperature, p.refill, p.max_tokens) == (8, 0.5, False, 64)
    assert parse_params(PoolParams, {"n": "none"}).n is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"width": "3"}, "unknown parameter 'width'; allowed: max_tokens, n, refill, temperature, top_p"),
        ({"n": "0"}, "n must be ≥ 1, got 0"),
        ({"n": "two"}, "parameter n must be int or NoneType, got 'two'"),
        ({"top_p": "1.5"}, "top_p must be in (0, 1], got 1.5"),
        ({"temperature": "inf"}, "parameter temperature must be float"),
        ({"n": "4", "refill": "true"}, "refill applies only when n is derived from the budget"),
    ],
)
def test_bad_params_are_refused_clearly(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_params(PoolParams, raw)
    assert message in str(info.value)


def test_parse_assignments() -> None:
    assert parse_assignments(["n=8", " temperature = 0.7 "]) == {"n": "8", "temperature": "0.7"}
    with pytest.raises(ValueError, match="key=value"):
        parse_assignments(["n8"])
