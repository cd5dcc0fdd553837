"""One reader for suffixed numbers: budgets and the cost command's counts read them alike."""

from __future__ import annotations

import math

import pytest

from ttscale.quantities import parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [("8k", 8000.0), ("1.5M", 1.5e6), ("8.19B", 8.19e9), ("2G", 2e9), ("3T", 3e12), (" 7 ", 7.0), (".5k", 500.0)],
)
def test_suffixes_scale_by_powers_of_ten_exactly(text: str, value: float) -> None:
    assert parse_quantity(text) == (value, "")


def test_a_unit_is_returned_as_written_only_when_allowed() -> None:
    assert parse_quantity("3e15eflop", unit=True) == (3e15, "eflop")
    assert parse_quantity("8k Tokens", unit=True) == (8000.0, "Tokens")
    assert parse_quantity("3e15eflop") is None
    assert parse_quantity("1e") is None and parse_quantity("1e", unit=True) == (1.0, "e")


def test_a_caller_may_leave_a_suffix_to_the_unit() -> None:
    assert parse_quantity("512Tokens", unit=True, suffixes="kKMGB") == (512.0, "Tokens")
    assert parse_quantity("2kT", unit=True, suffixes="kKMGB") == (2000.0, "T")  # k still a multiplier
    assert parse_quantity("3T", suffixes="kKMGB") is None  # a unit where none is allowed
    assert parse_quantity("3T", unit=True) == (3e12, "")


def test_a_sign_is_read_only_when_allowed() -> None:
    assert parse_quantity("-2.5k", signed=True) == (-2500.0, "")
    assert parse_quantity("-2.5k") is None
    assert parse_quantity("+1") is None


@pytest.mark.parametrize("text", ["", "k", "abc", "nan", "inf", "8k8", "--5", "1.2.3", "8k 5"])
def test_what_is_not_a_number_is_none(text: str) -> None:
    assert parse_quantity(text, signed=True, unit=True) is None


def test_values_past_float_range_are_infinite_or_zero_for_the_caller_to_refuse() -> None:
    assert parse_quantity("1e400") == (math.inf, "")
    assert parse_quantity("1e99999999999999999999k") == (math.inf, "")
    assert parse_quantity("1e-99999999999999999999") == (0.0, "")
