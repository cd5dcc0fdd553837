"""What strategies that use a verifier share (ttscale.blocks.verified): one base checks the verifier's name for
every strategy's parameters, and REBASE, ETS and particle filtering open their search the same way."""

from __future__ import annotations

import dataclasses

import pytest

from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.params import params_class
from ttscale.registry import UnknownNameError
from ttscale.strategies import STRATEGIES


def _with_a_verifier() -> list[str]:
    return [name for name in STRATEGIES.names()
            if "verifier" in {f.name for f in dataclasses.fields(params_class(STRATEGIES.get(name)))}]


def test_every_strategy_that_takes_a_verifier_checks_its_name_through_the_one_base() -> None:
    names = _with_a_verifier()
    assert {"astar", "beam", "best_of_n", "dvts", "ets", "generated_tests", "mcts", "no_thinking", "particle_filter",
            "rebase", "revision", "self_consistency"} <= set(names)
    for name in names:
        params = params_class(STRATEGIES.get(name))
        assert issubclass(params, ChecksVerifier), name
        with pytest.raises(UnknownNameError, match="unknown verifier 'no_such_verifier'"):
            params(verifier="no_such_verifier")
        params(verifier="noisy_oracle:noise=0.3")  # a known one, with options, is taken


def test_an_optional_verifier_may_be_left_out() -> None:
    for name in ("best_of_n", "self_consistency", "no_thinking", "revision", "generated_tests"):
        assert params_class(STRATEGIES.get(name))().verifier is None


def test_rebase_and_ets_share_their_width_and_balance_temperature() -> None:
    from ttscale.strategies.ets import ETSParams
    from ttscale.strategies.rebase import RebaseParams, RewardBalancedParams

    assert issubclass(ETSParams, RewardBalancedParams) and issubclass(RebaseParams, RewardBalancedParams)
    for params in (ETSParams, RebaseParams):
        assert params(n=8, temperature_b=0.5).n == 8
        with pytest.raises(ValueError, match="n must be"):
            params(n=0)
        with pytest.raises(ValueError, match="temperature_b must be"):
            params(temperature_b=0)
    # each still names itself in the deprecation of `width`
    assert "REBASE" in RebaseParams.DEPRECATED_ALIASES["width"] and "ETS" in ETSParams.DEPRECATED_ALIASES["width"]
