"""Engine environments in `ttscale compare`: arms split by what their samples depend on, and what a pair says.

Two runs of one configuration with the same seed draw the same samples only on engines that agree on the
determinants (`ttscale.engine.determinism`: model, tokenizer and chat template hashes, vLLM and torch
versions, dtype, device, CPU flags, thread binding, the mode). Merged into one arm they would clash (one run
seed in two directories); compared as two arms, their difference would read as a strategy's. So:

- a configuration's runs are split by environment when their determinants are known and differ; runs with
  no recorded determinants (older runs, engines that do not record them) group as they always did, and join
  the one known environment of their configuration when there is just one;
- a pair of arms of one configuration in different environments gets a note instead of a strategy verdict:
  which determinants differ, and in how many of the problems paired by (problem, run seed) the samples differ;
- a pair of different configurations that also ran in different environments keeps its verdict, with the
  environment differences as a caution (the two causes cannot be told apart from the records).

The engine seed is left out of an environment: a sweep starts each repeat's engine with the repeat's seed, and
the configuration grouping already treats the seed as what tells repeats apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ttscale.engine.determinism import differences

if TYPE_CHECKING:
    from ttscale.stats.paired import PairResult

Run = tuple[Path, str | None, dict[str, Any], list[dict[str, Any]]]
"""A run as `ttscale.comparisons.paired` reads it: directory, sweep label, config.json, records."""

#: Determinants that vary between the repeats of one configuration, so never split an arm.
_PER_REPEAT = ("engine_seed",)
#: The order in which a split arm's label names its environment: the likeliest to tell machines apart first.
_LABEL_ORDER = ("dtype", "device", "deterministic", "vllm_version", "torch_version", "threads_bind",
                "model_sha256", "tokenizer_sha256", "chat_template_sha256", "cpu_flags")


def environment(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """A run's engine environment (config.json `environment.engine.determinants` less the engine seed), or None
    when the run did not record one."""
    engine = (config.get("environment") or {}).get("engine")
    found = engine.get("determinants") if isinstance(engine, Mapping) else None
    if not isinstance(found, Mapping) or not found:
        return None
    return {k: v for k, v in found.items() if k not in _PER_REPEAT}


def _key(env: Mapping[str, Any] | None) -> str | None:
    return None if env is None else json.dumps(env, sort_keys=True, default=str)


def split(runs: list[Run]) -> list[tuple[str | None, list[Run]]]:
    """The runs of one configuration by engine environment, each part with its label suffix (None: not split).

    One known environment (or none): one part, as before determinants were recorded. Several: one part per
    environment, and the runs that recorded none in a part of their own (which machine they ran on is unknown)."""
    parts: dict[str | None, list[Run]] = {}
    for run in runs:
        parts.setdefault(_key(environment(run[2])), []).append(run)
    if sum(k is not None for k in parts) < 2:
        return [(None, runs)]
    named = _naming({k: json.loads(k) for k in parts if k is not None})
    return [("[environment unknown]" if k is None else named.get(k, f"[{part[0][0].name}]"), part)
            for k, part in parts.items()]


def _naming(envs: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """`[dtype bfloat16]`: the first determinant whose value tells every environment apart, when it is a short
    one ({} when none is: the caller names each part by its first directory)."""
    names = [*_LABEL_ORDER, *sorted({n for e in envs.values() for n in e} - set(_LABEL_ORDER))]
    for name in names:
        values = {k: e.get(name) for k, e in envs.items()}
        if all(isinstance(v, str | int | float | bool) for v in values.values()) and \
                len({json.dumps(v) for v in values.values()}) == len(values):
            return {k: f"[{name} {_short(name, v)}]" for k, v in values.items()}
    return {}


def _short(name: str, value: Any) -> str:
    return value[:12] if name.endswith("sha256") and isinstance(value, str) else str(value)


def merged(runs: list[Run]) -> dict[str, Any] | None:
    """The environment of an arm's runs: the one known among them (`split` leaves at most one), else None."""
    return next((env for env in map(environment, (r[2] for r in runs)) if env is not None), None)


def _texts(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(s.get("text") if isinstance(s, Mapping) else s for s in record.get("samples") or ())


@dataclass(frozen=True, kw_only=True)
class EnvironmentNote:
    """Two arms whose engine environments differ: what differs and, for one configuration, what it changed."""

    same_configuration: bool
    """The arms differ only in their environment (else the differences are a caution on a strategy verdict)."""
    differs: tuple[str, ...]
    """`name: A vs B` per differing determinant (`ttscale.engine.determinism.differences`)."""
    problems_differing: int = 0
    """Problems with at least one (problem, run seed) pair whose samples' texts differ."""
    problems: int = 0
    """Problems with at least one (problem, run seed) pair that ran on both sides, neither errored."""

    def verdict(self, pair: PairResult) -> str:
        """The pair's line: the environment note for one configuration, the strategy verdict otherwise."""
        if not self.same_configuration:
            return pair.verdict
        return f"{pair.a} vs {pair.b}: {_said(self.differs, self.problems_differing, self.problems)}"

    def fields(self) -> dict[str, Any]:
        """The pair's compare.json keys: `environment` (the note, one configuration) and `environment_caution`."""
        if not self.same_configuration:
            return {"environment": None, "environment_caution": list(self.differs)}
        return {"environment": {"differs": list(self.differs), "problems_differing": self.problems_differing,
                                "problems": self.problems}, "environment_caution": []}


class Arm(Protocol):
    """What `note` reads of a comparison's arm (`paired.Arm`, from the module above, which hands it here)."""

    @property
    def records(self) -> Mapping[tuple[str, int], Mapping[str, Any]]: ...
    @property
    def info(self) -> Mapping[str, Any]: ...
    @property
    def key(self) -> str | None: ...


def note(a: Arm, b: Arm) -> EnvironmentNote | None:
    """What two arms' environments say about their pair; None when they agree or either is unknown."""
    differs = tuple(differences(a.info.get("environment"), b.info.get("environment")))
    if not differs:
        return None
    if a.key is None or a.key != b.key:
        return EnvironmentNote(same_configuration=False, differs=differs)
    # Samples are compared where both sides ran the same problem under the same run seed (same per-request
    # seeds): elsewhere they differ whatever the engines are.
    seen: dict[str, bool] = {}
    for key in sorted(set(a.records) & set(b.records)):
        ra, rb = a.records[key], b.records[key]
        if not (ra.get("error") or rb.get("error")):
            seen[key[0]] = seen.get(key[0], False) or _texts(ra) != _texts(rb)
    return EnvironmentNote(same_configuration=True, differs=differs, problems_differing=sum(seen.values()),
                           problems=len(seen))


def _said(differs: Sequence[str], differing: int, problems: int) -> str:
    head = f"same configuration, different engine environment ({'; '.join(differs)})"
    if not problems:
        return f"{head}: no problem ran with the same run seed on both sides"
    return f"{head}: samples differ in {differing} of {problems} problems"


def verdict(pair: PairResult, note: EnvironmentNote | None) -> str:
    """A pair's line in `verdicts`."""
    return note.verdict(pair) if note else pair.verdict


def pair_dict(pair: PairResult, note: EnvironmentNote | None) -> dict[str, Any]:
    """A pair in compare.json: `ttscale.stats.paired`'s, with its verdict, `environment` and `environment_caution`."""
    fields = note.fields() if note else {"environment": None, "environment_caution": []}
    return {**pair.to_dict(), "verdict": verdict(pair, note), **fields}


def markdown_lines(pair: Mapping[str, Any]) -> list[str]:
    """The lines a pair's table is preceded by (compare.json's pair; none for compare.json without the keys)."""
    env, caution = pair.get("environment"), pair.get("environment_caution")
    if env:
        said = _said(env["differs"], env["problems_differing"], env["problems"])
        return ["", f"{said[0].upper()}{said[1:]} (paired by problem and run seed). The effects below are the "
                    "environment's, not a strategy's."]
    if caution:
        return ["", f"Caution: the arms also ran in different engine environments ({'; '.join(caution)}); the "
                    "effects below mix the strategies' difference with the environments'."]
    return []


__all__ = ["EnvironmentNote", "Run", "environment", "markdown_lines", "merged", "note", "pair_dict", "split", "verdict"]
