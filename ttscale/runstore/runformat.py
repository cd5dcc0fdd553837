"""The versions of a run's files, config.json and results.jsonl, and the one place older ones are read.

On disk, config.json and each results.jsonl record carry `"format"`, a whole number: writers stamp
`FORMAT_VERSION` (`stamp_config`, `stamp_record`, called by `RunDir.write_config` and `RunDir.append`). Readers
bring any older version to today's shape (`migrate_config`, `migrate_record`, called by `RunDir.read_config`,
`RunDir.records` and `ttscale.runstore.runs`), so the code that reads a run sees one shape: a record as
`RunRecord.to_json()` gives it, a config as `RunConfigData`. The version is the file's, not the data's: what a
reader gets no longer carries it, so a record reads back as it was appended. A version newer than this code
reads, or one that is not a whole number, is refused in one line naming the file (`RunFormatError`, a
`RunDirError`: the CLI prints it as one line and exits 2).

Versions:

1. Every run directory written before versions existed (no `"format"` key; an explicit 1 reads the same).
   It reads as version 2 with these differences filled in (and then as version 3, see 2):
   - config.json, `identity.engine` and `spec.engine`: runs made before -1 became `max_model_len`'s default
     stored None (the model's own length, or no start); for a run that started, that is the length -1 picks
     (vLLM's fit lowers the model's own length only when the KV cache cannot hold it), so None reads as -1.
     (In version 2, None is a setting of its own, exactly the model's length, and stays None.)
   - config.json, `identity.engine` and `spec.engine`: runs made before deterministic mode existed have no
     `deterministic`; they ran without it (False). A served model's identity (with `backend`) has neither.
   - config.json of a run made by `ttscale.run` (command `ttscale.run ...`): the call seeded the run's requests by
     its `seed` and left the engine's own seed at 0, where today it seeds both (as `ttscale run --seed` always
     did); every request carries its own seed, so the engine's seed drew nothing, and it reads as the run's.
   - results.jsonl: samples written before samples were graded have no `correct`; it reads as None, and the
     readers grade those samples with the run's task (`ttscale.runstore.runs`).
   - results.jsonl, GenRM records written before unreadable verdicts were left out of a solution's mean store
     each such verdict in `info.chains` as `[0.5, chain tokens, verdict tokens, "default"]` and count them in
     `info.verdicts.default`: read as `[None, ..., "unreadable"]` and counted as `unreadable`, as today's GenRM
     writes them (a sweep's replay leaves them out of the mean).
2. `"format": 2` at the top of config.json and first in every record, written from 2026-11-24 to 2026-11-27. It
   reads as version 3 with these differences filled in (issue 44: three strategies' defaults became their
   references' rules):
   - config.json of an `mcts` run: an unset `selection` ran UCT, now `selection=uct` in `spec.params`; its
     `identity.params` gain `c_base` (19652.0, unused by UCT) and, where `c_puct` was unset, `c_puct` None (the
     rule's reference value, 1 for UCT and PUCT: the 1.0 it ran with).
   - config.json of a `generated_tests` run: `select=codet` meant the paper's |set| × |tests|, now `codet_paper`;
     an unset `select` ran `tests_passed`, now stated; `identity.params` gain `tests_per_sample` None and
     `shortlist` 3 (neither read by those rules). results.jsonl: its records' `info.select` likewise.
   - a `sleep_time` run (config.json `identity.params` and `spec.params`, and its records' `info`) made before
     sleep-time compute followed its reference: it answered each query by a vote (`test_time` `vote`) from notes
     made in one pass of at most `sleep_tokens` tokens, with no memory limit. Its params read as
     `test_time="vote"`, `rethinks=1`, `rethink_tokens=sleep_tokens` (1 when 0), `memory_chars=None` and the
     `sleep_tokens` it ran with (the spec's too: its default was 256), which is what today's code does with
     those settings (today's defaults would rethink 10 times and answer once), so `--resume` finds the identity
     it stored; its records' `info` gains `rethink_passes` (1 when it spent sleep tokens, else 0). Version 1
     reads so too.
3. `"format": 3` at the top of config.json and first in every record, written from 2026-11-27 to 2026-12-02. It
   reads as version 4 with this difference filled in (issue 61: generated_tests counts tests as its references do):
   - config.json of a `generated_tests` run: under `select=codet` an unset `max_tests` capped the distinct tests at
     8, now `max_tests=8` in `spec.params` (today's unset means CodeT's no cap); under `select=codemonkeys` the
     votes counted each distinct test once, now `test_weights="once"` in `spec.params` (today's unset counts every
     written test); `identity.params` gain `test_weights` (None under the other rules, which count once).
   - an `mcts` run with `selection=openr` (its default) ran OpenR's `_simulate`, now `openr_simulate` in
     `spec.params` and `identity.params` and its records' `info.selection` (today's `openr` is `vanila_mcts`).
   Versions 1 and 2 read so too.
4. Today: `"format": 4` at the top of config.json and first in every record.

A results.jsonl may hold both: resuming a version-1 run appends version-2 records after the version-1 ones, and
each line is read by its own version. A resume rewrites config.json (in version 2) only to record its engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from ttscale.runstore.runfiles import RunDirError

FORMAT_VERSION = 4
"""The version this code writes, and the newest it reads."""
KEY = "format"
"""Where the version is: a top-level key of config.json and of each results.jsonl record."""


class RunFormatError(RunDirError):
    """A run file of a version this code does not read (newer than it, or not a whole number): one line."""


class RunConfigData(TypedDict, total=False):
    """config.json as today's code writes it (`run_config.write_config`); readers get it without `format`."""

    format: int
    """`FORMAT_VERSION`: on disk only (`stamp_config` adds it, `migrate_config` takes it off)."""
    identity: dict[str, Any]
    """What `--resume` checks: strategy, params, task, budget, seed, engine."""
    spec: dict[str, Any]
    """The RunSpec the run was made from (`--resume` reads it back)."""
    environment: dict[str, Any]
    """The machine it ran on: versions, and the started engine's description."""
    command: list[str]
    """The command line (credentials masked)."""
    created: str
    """When it was written (local time, ISO 8601)."""


def stamp_config(data: Mapping[str, Any], *, where: str | Path = "config.json") -> RunConfigData:
    """`data` (a config in today's shape, or one that says its version) stamped with today's version, to write."""
    return _stamped(migrate_config(data, where=where) if KEY in data else data)  # type: ignore[return-value]


def stamp_record(record: Mapping[str, Any], *, where: str | Path = "a record") -> dict[str, Any]:
    """`record` (a `RunRecord.to_json()`, or one that says its version) with today's version first, to write."""
    return _stamped(migrate_record(record, where=where) if KEY in record else record)


def version(data: Mapping[str, Any], *, where: str | Path) -> int:
    """The version `data` says (1 when it says none); RunFormatError when this code cannot read it."""
    found = data.get(KEY, 1)
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        raise RunFormatError(f"{where}: run format {_shown(found)} is not a version ttscale writes (a whole "
                             f"number from 1 to {FORMAT_VERSION}); the file was edited or not written by ttscale")
    if found > FORMAT_VERSION:
        raise RunFormatError(f"{where}: run format {found} is newer than this ttscale reads (≤ {FORMAT_VERSION}); "
                             "upgrade ttscale")
    return found


def migrate_config(data: Mapping[str, Any], *, where: str | Path) -> dict[str, Any]:
    """config.json's object of any version this code reads, in today's shape (`RunConfigData` without `format`;
    a new dict, `data` is not edited). `where` names the file in the error."""
    found = version(data, where=where)
    old = found < 2
    out = {k: v for k, v in data.items() if k != KEY}
    if found < 3:
        out = _sleep_time_config(_defaults_named(out))
    if found < 4:
        out = _mcts_openr_simulate(_generated_tests_counts(out))
    made_by_api = isinstance(out.get("command"), list) and out["command"][:1] == ["ttscale.run"]
    for part in ("identity", "spec"):
        section = out.get(part)
        if old and isinstance(section, dict) and isinstance(section.get("engine"), dict):
            engine = _engine(section["engine"])
            if made_by_api and "backend" not in engine and engine.get("seed") == 0:
                engine["seed"] = section.get("seed", 0)
            out[part] = {**section, "engine": engine}
    return out


def migrate_record(data: Mapping[str, Any], *, where: str | Path) -> dict[str, Any]:
    """One results.jsonl record of any version this code reads, in today's shape (as `RunRecord.to_json()` gives
    it; a new dict, `data` is not edited). `where` names the file and line in the error."""
    found = version(data, where=where)
    out = {k: v for k, v in data.items() if k != KEY}
    info = out.get("info")
    if found < 4 and out.get("strategy") == "mcts" and isinstance(info, dict) and info.get("selection") == "openr":
        out["info"] = info = {**info, "selection": "openr_simulate"}
    if found < 3 and out.get("strategy") == "generated_tests" and isinstance(info, dict):
        out["info"] = {**info, "select": _GENERATED_TESTS_SELECT.get(info.get("select"), info.get("select"))}
    if found < 3 and out.get("strategy") == "sleep_time" and isinstance(info, dict) and "rethink_passes" not in info:
        spent = info.get("sleep_tokens")
        out["info"] = {**info, "rethink_passes": 1 if isinstance(spent, int) and spent > 0 else 0}
    if found >= 2:
        return out
    samples = out.get("samples")
    if isinstance(samples, list) and any(isinstance(s, dict) and "correct" not in s for s in samples):
        out["samples"] = [{**s, "correct": None} if isinstance(s, dict) and "correct" not in s else s
                          for s in samples]
    if out.get("strategy") == "genrm" and isinstance(info, dict):
        out["info"] = _genrm_info(info)
    return out


_GENERATED_TESTS_SELECT: dict[Any, str] = {None: "tests_passed", "codet": "codet_paper"}
"""A version-2 generated_tests `select` (None: unset) as today names the rule it ran."""
_STRATEGY_NAMES = {"mcts": "mcts", "monte_carlo_tree_search": "mcts", "generated_tests": "generated_tests"}


def _defaults_named(config: dict[str, Any]) -> dict[str, Any]:
    """A version-2 config whose strategy's default rule changed in version 3 with the rule it ran named (a new dict):
    a resume rebuilds the same parameters, and a reader sees which rule made the results."""
    spec, identity = config.get("spec"), config.get("identity")
    if not isinstance(spec, dict) or not isinstance(identity, dict):
        return config
    name = _STRATEGY_NAMES.get(str(identity.get("strategy", spec.get("strategy"))))
    given, params = spec.get("params"), identity.get("params")
    if name is None or not isinstance(given, dict) or not isinstance(params, dict):
        return config
    given, params = dict(given), dict(params)
    if name == "mcts":
        given.setdefault("selection", "uct")
        params.setdefault("c_base", 19652.0)
        if "c_puct" not in given:
            params["c_puct"] = None
    else:
        given["select"] = _GENERATED_TESTS_SELECT.get(given.get("select"), given.get("select"))
        params["select"] = _GENERATED_TESTS_SELECT.get(params.get("select"), params.get("select"))
        params.setdefault("tests_per_sample", None)
        params.setdefault("shortlist", 3)
    return {**config, "spec": {**spec, "params": given}, "identity": {**identity, "params": params}}


def _strategy_params(config: dict[str, Any], strategy: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Copies of (spec.params, identity.params) of a config of `strategy`; None for another strategy or shape."""
    spec, identity = config.get("spec"), config.get("identity")
    if not isinstance(spec, dict) or not isinstance(identity, dict):
        return None
    given, params = spec.get("params"), identity.get("params")
    name = _STRATEGY_NAMES.get(str(identity.get("strategy", spec.get("strategy"))))
    if name != strategy or not isinstance(given, dict) or not isinstance(params, dict):
        return None
    return dict(given), dict(params)


def _with_params(config: dict[str, Any], given: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    return {**config, "spec": {**config["spec"], "params": given}, "identity": {**config["identity"], "params": params}}


def _generated_tests_counts(config: dict[str, Any]) -> dict[str, Any]:
    """A version-3 generated_tests config with the test counts it ran named (a new dict; others as they are)."""
    found = _strategy_params(config, "generated_tests")
    if found is None:
        return config
    given, params = found
    if params.get("select") == "codet" and "max_tests" not in given:
        given["max_tests"] = params["max_tests"] = 8
    if params.get("select") == "codemonkeys" and "test_weights" not in given:
        given["test_weights"] = params["test_weights"] = "once"
    params.setdefault("test_weights", None)
    return _with_params(config, given, params)


def _mcts_openr_simulate(config: dict[str, Any]) -> dict[str, Any]:
    """A version-3 mcts config whose `openr` rule was OpenR's `_simulate`, named `openr_simulate` (a new dict)."""
    found = _strategy_params(config, "mcts")
    if found is None:
        return config
    given, params = found
    if (params["selection"] if "selection" in params else given.get("selection")) != "openr":
        return config
    return _with_params(config, {**given, "selection": "openr_simulate"}, {**params, "selection": "openr_simulate"})


SLEEP_TIME_BEFORE_3 = {"test_time": "vote", "verbosity": 0, "rethinks": 1, "memory_chars": None}
"""A version-2 sleep-time run's params that today's defaults would change (see version 2 in the module doc)."""


def _sleep_time_config(config: dict[str, Any]) -> dict[str, Any]:
    """A config of version < 3: a sleep-time run's params in today's terms (a new dict; others as they are)."""
    identity, spec = config.get("identity"), config.get("spec")
    if not isinstance(identity, dict) or identity.get("strategy") != "sleep_time":
        return config
    stored = identity.get("params")
    if not isinstance(stored, dict) or "test_time" in stored:
        return config
    sleep = stored.get("sleep_tokens", 256)
    filled = {**SLEEP_TIME_BEFORE_3, "rethink_tokens": max(1, sleep) if isinstance(sleep, int) else 256}
    out = {**config, "identity": {**identity, "params": {**stored, **filled}}}
    if isinstance(spec, dict) and isinstance(spec.get("params"), dict):
        out["spec"] = {**spec, "params": {"sleep_tokens": sleep, **spec["params"], **filled}}
    return out


def _stamped(data: Mapping[str, Any]) -> dict[str, Any]:
    """Without a version of its own, `data` is in today's shape (what today's writers give)."""
    return {KEY: FORMAT_VERSION, **data}


def _engine(engine: dict[str, Any]) -> dict[str, Any]:
    """A version-1 engine's settings (identity or spec) in today's terms (a new dict); a served model's as they are."""
    if "backend" in engine:
        return dict(engine)
    if "max_model_len" in engine and engine["max_model_len"] is None:
        engine = {**engine, "max_model_len": -1}
    return {"deterministic": False, **engine}


def _genrm_info(info: dict[str, Any]) -> dict[str, Any]:
    """GenRM's verdicts with the old "default" (r = 0.5) read as "unreadable" (r = None), as today's are."""
    out = dict(info)
    chains = info.get("chains")
    if isinstance(chains, list):
        out["chains"] = [[[None, *x[1:3], "unreadable"] if isinstance(x, list) and len(x) == 4 and x[3] == "default"
                          else x for x in per] if isinstance(per, list) else per for per in chains]
    counts = info.get("verdicts")
    if isinstance(counts, dict) and isinstance(counts.get("default"), int):
        kept = {k: v for k, v in counts.items() if k != "default"}
        unreadable = kept.get("unreadable", 0)
        kept["unreadable"] = counts["default"] + (unreadable if isinstance(unreadable, int) else 0)
        out["verdicts"] = kept
    return out


def _shown(value: Any) -> str:
    """A value as the file shows it (JSON), cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = ["FORMAT_VERSION", "KEY", "RunConfigData", "RunFormatError", "migrate_config", "migrate_record",
           "stamp_config", "stamp_record", "version"]
