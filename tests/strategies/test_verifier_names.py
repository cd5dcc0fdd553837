"""A strategy's verifier name is refused when its parameters are built (before any engine starts).

Search's parameters check only a spec's form (the verifier registry sits above search); each strategy that takes
a verifier checks the name in its own parameters, the tree searches as the pool strategies do.
"""

from __future__ import annotations

import dataclasses

import pytest

from ttscale.kit.params import params_class, parse_params
from ttscale.strategies import STRATEGIES


def _takes_a_verifier(name: str) -> bool:
    return any(f.name == "verifier" for f in dataclasses.fields(params_class(STRATEGIES.get(name))))


TREE_SEARCHES = ["astar", "beam", "dvts", "ets", "mcts", "particle_filter", "rebase"]


def test_every_tree_search_takes_a_verifier() -> None:
    assert [name for name in TREE_SEARCHES if not _takes_a_verifier(name)] == []


@pytest.mark.parametrize("name", [n for n in STRATEGIES.names() if _takes_a_verifier(n)])
def test_an_unknown_verifier_name_is_refused_by_the_strategys_parameters(name: str) -> None:
    with pytest.raises(KeyError, match="unknown verifier 'telepathy'"):
        parse_params(params_class(STRATEGIES.get(name)), {"verifier": "telepathy"})
