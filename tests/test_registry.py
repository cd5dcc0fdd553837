from __future__ import annotations

import pytest

from ttscale import STRATEGIES, TASKS
from ttscale.registry import Registry, UnknownNameError


def test_aliases_and_case_resolve() -> None:
    assert STRATEGIES.canonical("SC") == "self_consistency"
    assert STRATEGIES.canonical("best-of-n") == "best_of_n"
    assert "arithmetic" in TASKS


def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError) as info:
        STRATEGIES.canonical("self_consistncy")
    assert "did you mean 'self_consistency'?" in str(info.value)


def test_lazy_loading_imports_on_get() -> None:
    reg = Registry("thing")
    reg.register("dumps", "json:dumps")
    assert reg.get("dumps")([1]) == "[1]"
    with pytest.raises(ValueError, match="module:attr"):
        reg.register("bad", "json.dumps")


def test_every_registered_strategy_has_params() -> None:
    from ttscale.params import params_class

    for name in STRATEGIES.names():
        assert params_class(STRATEGIES.get(name))
