from __future__ import annotations

import pytest

from ttscale.evals import TASKS
from ttscale.registry import Registry, UnknownNameError
from ttscale.strategies import STRATEGIES


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
    from ttscale.kit.params import params_class

    for name in STRATEGIES.names():
        assert params_class(STRATEGIES.get(name))


def test_the_decorator_registers_the_object_and_a_taken_name_is_refused() -> None:
    reg: Registry[object] = Registry("thing")
    reg.register("dumps", "json:dumps", aliases=("to_json",))

    @reg.register("mine", aliases=("my_thing",))
    def mine() -> str:
        return "mine"

    assert reg.get("MY-THING") is mine and reg.names() == ["dumps", "mine"]
    for name, aliases in (("dumps", ()), ("other", ("to_json",)), ("Mine", ())):
        with pytest.raises(ValueError, match=r"thing '\w+' is already registered .*pass replace=True"):
            reg.register(name, "json:loads", aliases=aliases)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("mine")(lambda: "again")
    reg.register("dumps", "json:loads", replace=True)
    assert reg.get("dumps")("[1]") == [1]  # replaced, and not the cached dumps
    with pytest.raises(ValueError, match="names are identifiers"):
        reg.register("no spaces", "json:dumps")


def test_a_built_in_name_cannot_be_taken_by_a_plugin() -> None:
    from ttscale.strategies import STRATEGIES as home

    assert home is STRATEGIES  # one registry, defined where the strategies live
    with pytest.raises(ValueError, match="strategy 'beam' is already registered"):
        STRATEGIES.register("beam", "json:dumps")
