"""ttscale.runstore.runformat: behaviour the mutation run (tools/mutation) found unchecked, on hand-made files.

Each example is a version-1 (or version-2) config or record and what today's reader must see of it."""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.runstore.runfiles import RunDirError
from ttscale.runstore.runformat import (
    FORMAT_VERSION,
    KEY,
    RunFormatError,
    migrate_config,
    migrate_record,
    stamp_config,
    stamp_record,
    version,
)


def test_today_is_version_3_under_the_key_format() -> None:
    assert (FORMAT_VERSION, KEY) == (4, "format")
    assert issubclass(RunFormatError, RunDirError)


@pytest.mark.parametrize(("data", "found"),
                         [({}, 1), ({"format": 1}, 1), ({"format": 2}, 2), ({"format": 3}, 3), ({"format": 4}, 4)])
def test_the_version_a_file_says(data: dict[str, Any], found: int) -> None:
    assert version(data, where="f") == found


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "cfg.json: run format 0 is not a version ttscale writes (a whole number from 1 to 4); the file was edited "
            "or not written by ttscale"),
        (-1, "cfg.json: run format -1 is not a version"),
        (True, "cfg.json: run format true is not a version"),
        (2.0, "cfg.json: run format 2.0 is not a version"),
        ("2", 'cfg.json: run format "2" is not a version'),
        # Shown as JSON, cut to 37 characters and "..." past 40: '"' and 36 x of the 52; 40 are shown whole.
        ("x" * 50, 'cfg.json: run format "' + "x" * 36 + '... is not a version'),
        ("x" * 38, 'cfg.json: run format "' + "x" * 38 + '" is not a version'),
        ("x" * 39, 'cfg.json: run format "' + "x" * 36 + '... is not a version'),
        ({1}, 'cfg.json: run format "{1}" is not a version'),  # not JSON: shown by its str
        (5, "cfg.json: run format 5 is newer than this ttscale reads (≤ 4); upgrade ttscale"),
    ],
    ids=["zero", "negative", "bool", "float", "str", "long", "forty", "forty_one", "not_json", "newer"],
)
def test_a_version_this_code_cannot_read_is_refused_naming_the_file(value: Any, message: str) -> None:
    with pytest.raises(RunFormatError) as caught:
        version({"format": value}, where="cfg.json")
    assert str(caught.value).startswith(message)


def test_a_version_1_engine_reads_none_as_minus_1_and_not_deterministic() -> None:
    old = {"identity": {"engine": {"model": "m", "max_model_len": None, "seed": 3}, "seed": 9},
           "spec": {"engine": {"model": "m", "max_model_len": 4096}}, "command": ["ttscale", "run"]}
    assert migrate_config(old, where="c") == {
        "identity": {"engine": {"deterministic": False, "model": "m", "max_model_len": -1, "seed": 3}, "seed": 9},
        "spec": {"engine": {"deterministic": False, "model": "m", "max_model_len": 4096}},
        "command": ["ttscale", "run"]}
    # The input is not edited.
    assert old["identity"]["engine"] == {"model": "m", "max_model_len": None, "seed": 3}


def test_a_version_1_engine_keeps_what_it_said_of_determinism() -> None:
    old = {"identity": {"engine": {"deterministic": True}}}
    assert migrate_config(old, where="c")["identity"]["engine"] == {"deterministic": True}


def test_a_version_2_config_keeps_none_and_loses_only_its_version() -> None:
    new = {"format": 2, "identity": {"engine": {"max_model_len": None}}, "created": "t"}
    assert migrate_config(new, where="c") == {"identity": {"engine": {"max_model_len": None}}, "created": "t"}


def test_a_served_model_is_read_as_it_was() -> None:
    old = {"identity": {"engine": {"backend": "openai", "max_model_len": None, "seed": 0}, "seed": 5},
           "command": ["ttscale.run", "x"]}
    assert migrate_config(old, where="c")["identity"]["engine"] == {"backend": "openai", "max_model_len": None,
                                                                    "seed": 0}


def test_a_version_1_api_run_reads_its_engine_seed_as_the_runs_seed() -> None:
    old = {"identity": {"engine": {"seed": 0}, "seed": 7}, "spec": {"engine": {"seed": 0}},
           "command": ["ttscale.run", "--seed", "7"]}
    out = migrate_config(old, where="c")
    assert out["identity"]["engine"]["seed"] == 7
    assert out["spec"]["engine"]["seed"] == 0  # the spec says no seed of its own: the default 0
    # An engine seeded on purpose (not 0), or a CLI run, keeps its seed.
    assert migrate_config({**old, "identity": {"engine": {"seed": 4}, "seed": 7}}, where="c")[
        "identity"]["engine"]["seed"] == 4
    assert migrate_config({**old, "command": ["ttscale", "run"]}, where="c")["identity"]["engine"]["seed"] == 0
    assert migrate_config({**old, "command": "ttscale.run"}, where="c")["identity"]["engine"]["seed"] == 0
    # Version 2 is today's shape: nothing is read into it.
    assert migrate_config({**old, "format": 2}, where="c")["identity"]["engine"] == {"seed": 0}


def test_sections_that_are_not_engines_are_left_alone() -> None:
    old = {"identity": {"engine": "vllm"}, "spec": None, "environment": {"engine": {"max_model_len": None}}}
    assert migrate_config(old, where="c") == old


def test_a_version_1_record_grades_nothing_it_did_not_grade() -> None:
    old = {"id": "p", "samples": [{"answer": "1"}, {"answer": "2", "correct": True}, "odd"]}
    assert migrate_record(old, where="r") == {
        "id": "p", "samples": [{"answer": "1", "correct": None}, {"answer": "2", "correct": True}, "odd"]}
    assert old["samples"][0] == {"answer": "1"}
    graded = {"id": "p", "samples": [{"answer": "1", "correct": False}]}
    assert migrate_record(graded, where="r") == graded
    new = {"format": 2, "id": "p", "samples": [{"answer": "1"}]}
    assert migrate_record(new, where="r") == {"id": "p", "samples": [{"answer": "1"}]}


def test_a_version_1_genrm_record_reads_default_verdicts_as_unreadable() -> None:
    info = {"chains": [[[0.5, 10, 2, "default"], [1.0, 9, 1, "yes"], [0.5, 1, 1]], "x"],
            "verdicts": {"yes": 1, "default": 2, "unreadable": 1}, "other": 3}
    out = migrate_record({"strategy": "genrm", "info": info}, where="r")["info"]
    assert out == {"chains": [[[None, 10, 2, "unreadable"], [1.0, 9, 1, "yes"], [0.5, 1, 1]], "x"],
                   "verdicts": {"yes": 1, "unreadable": 3}, "other": 3}
    assert info["verdicts"] == {"yes": 1, "default": 2, "unreadable": 1}
    assert migrate_record({"strategy": "genrm", "info": {"verdicts": {"default": 2}}}, where="r")["info"] == {
        "verdicts": {"unreadable": 2}}
    # Only GenRM's records, and only in version 1.
    assert migrate_record({"strategy": "best_of_n", "info": info}, where="r")["info"] == info
    assert migrate_record({"format": 2, "strategy": "genrm", "info": info}, where="r")["info"] == info


def test_stamping_puts_the_version_first() -> None:
    assert list(stamp_record({"id": "p", "samples": []})) == ["format", "id", "samples"]
    assert stamp_record({"format": 1, "samples": [{"a": 1}]}) == {"format": 4, "samples": [{"a": 1,
                                                                                           "correct": None}]}
    assert stamp_config({"identity": {"engine": {}}}) == {"format": 4, "identity": {"engine": {}}}
    assert stamp_config({"format": 1, "identity": {"engine": {}}}) == {
        "format": 4, "identity": {"engine": {"deterministic": False}}}
    with pytest.raises(RunFormatError, match=r"^run.json: run format 9 is newer"):
        stamp_config({"format": 9}, where="run.json")


def test_stamping_names_the_file_it_refuses() -> None:
    with pytest.raises(RunFormatError, match=r"^config\.json: run format 9 is newer"):
        stamp_config({"format": 9})
    with pytest.raises(RunFormatError, match=r"^a record: run format 9 is newer"):
        stamp_record({"format": 9})
    with pytest.raises(RunFormatError, match=r"^results\.jsonl line 3: run format 9 is newer"):
        stamp_record({"format": 9}, where="results.jsonl line 3")


def test_a_record_without_a_version_is_todays_and_is_stamped_as_it_is() -> None:
    record = {"id": "p", "samples": [{"answer": "1"}], "strategy": "genrm", "info": {"verdicts": {"default": 1}}}
    assert stamp_record(record) == {"format": 4, **record}


def test_an_unreadable_count_that_is_not_a_number_counts_as_none() -> None:
    out = migrate_record({"strategy": "genrm", "info": {"verdicts": {"default": 2, "unreadable": "x"}}}, where="r")
    assert out["info"]["verdicts"] == {"unreadable": 2}


def test_samples_that_are_not_objects_are_left_as_they_are() -> None:
    record = {"samples": [5, None, {"answer": "1", "correct": True}]}
    assert migrate_record(record, where="r") == record


# -- version 2 -> 3: the rules a version-2 run ran, named; sleep-time's params in today's terms ------------------------


def _v2(strategy: str, info: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {KEY: 2, "id": "p1", "strategy": strategy, "info": info, **extra}


def test_a_version_2_generated_tests_record_names_its_rule() -> None:
    assert migrate_record(_v2("generated_tests", {}), where="r")["info"] == {"select": "tests_passed"}
    assert migrate_record(_v2("generated_tests", {"select": "codet"}), where="r")["info"]["select"] == "codet_paper"
    assert migrate_record(_v2("generated_tests", {"select": "codemonkeys"}), where="r")["info"]["select"] == \
        "codemonkeys"
    # A version-3 record says what it ran already: left alone.
    assert migrate_record({**_v2("generated_tests", {}), KEY: 3}, where="r")["info"] == {}


def test_a_version_2_sleep_time_record_counts_its_one_pass() -> None:
    def passes(info: dict[str, Any], v: int = 2) -> Any:
        return migrate_record({**_v2("sleep_time", info), KEY: v}, where="r")["info"].get("rethink_passes")

    assert (passes({"sleep_tokens": 40}), passes({"sleep_tokens": 1}), passes({"sleep_tokens": 0})) == (1, 1, 0)
    assert (passes({"sleep_tokens": "40"}), passes({})) == (0, 0)  # no count it could have spent
    assert passes({"sleep_tokens": 40, "rethink_passes": 4}) == 4 and passes({"sleep_tokens": 40}, v=3) is None


def _config(strategy: str, given: Any, params: Any, *, spec_strategy: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"params": given}
    if spec_strategy:
        spec["strategy"] = strategy
    return {KEY: 2, "spec": spec, "identity": {"strategy": strategy, "params": params}}


def test_a_version_2_config_names_the_rule_its_strategy_ran() -> None:
    mcts = migrate_config(_config("monte_carlo_tree_search", {}, {}), where="c")
    assert mcts["spec"]["params"] == {"selection": "uct"}
    assert mcts["identity"]["params"] == {"c_base": 19652.0, "c_puct": None}
    puct = migrate_config(_config("mcts", {"c_puct": 2.0}, {"c_puct": 2.0}), where="c")
    assert puct["identity"]["params"] == {"c_puct": 2.0, "c_base": 19652.0}
    # The strategy named only by the spec is read there too.
    spec_only = {KEY: 2, "spec": {"strategy": "generated_tests", "params": {}}, "identity": {"params": {}}}
    assert migrate_config(spec_only, where="c")["identity"]["params"] == {
        "select": "tests_passed", "tests_per_sample": None, "shortlist": 3, "test_weights": None}
    kept = migrate_config(_config("generated_tests", {"select": "codemonkeys"}, {"select": "codemonkeys"},
                                  spec_strategy=False), where="c")
    # ... and, as every run before version 4, CodeMonkeys' votes over each distinct test once.
    assert kept["spec"]["params"] == {"select": "codemonkeys", "test_weights": "once"}
    assert kept["identity"]["params"] == {"select": "codemonkeys", "tests_per_sample": None, "shortlist": 3,
                                          "test_weights": "once"}
    # Params that are not objects: nothing to name, the config as it was.
    odd = _config("mcts", {}, None)
    assert migrate_config(odd, where="c") == {k: v for k, v in odd.items() if k != KEY}


def test_a_version_2_sleep_time_config_reads_as_the_vote_of_one_pass() -> None:
    def params(stored: dict[str, Any], spec: Any = None) -> tuple[Any, Any]:
        config = {KEY: 2, "spec": spec if spec is not None else {"params": {}},
                  "identity": {"strategy": "sleep_time", "params": stored}}
        out = migrate_config(config, where="c")
        return out["identity"]["params"], out["spec"]["params"] if isinstance(out["spec"], dict) else None

    before = {"test_time": "vote", "verbosity": 0, "rethinks": 1, "memory_chars": None}
    assert params({"sleep_tokens": 40}) == ({"sleep_tokens": 40, **before, "rethink_tokens": 40},
                                            {"sleep_tokens": 40, **before, "rethink_tokens": 40})
    assert params({})[0] == {**before, "rethink_tokens": 256}  # the version-2 default budget: one pass of it
    assert params({"sleep_tokens": 0})[0]["rethink_tokens"] == 1
    assert params({"sleep_tokens": "x"})[0]["rethink_tokens"] == 256
    assert params({"test_time": "verbosity"}) == ({"test_time": "verbosity"}, {})  # says its axis: today's already
    assert migrate_config({KEY: 2, "spec": "odd", "identity": {"strategy": "sleep_time", "params": {}}},
                          where="c")["spec"] == "odd"
