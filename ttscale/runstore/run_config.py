"""A run's config.json: the identity `--resume` checks, the spec it was made from, the machine it ran on.

What it holds is made here (`new_config`) and compared here (`check_resume`); the run's writer
(`ttscale.runstore.writer`) writes it, stamped with its format version, and it is read back in today's shape whatever
version wrote it (`ttscale.runstore.runformat`, through `RunDir.write_config` and `RunDir.read_config`)."""

from __future__ import annotations

import json
import numbers
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, NoReturn, Protocol

from ttscale.runstore.storage import CONFIG, RunDir, RunDirError


class Prepared(Protocol):
    """What the run store reads of a prepared run (`ttscale.running.runner.Prepared`, handed down by the running layer
    above, which the run store never imports): its spec, stored as config.json's `spec`, its identity, and what
    summary.json states (`ttscale.runstore.writer`)."""

    @property
    def spec(self) -> Any:
        """The run's `ttscale.running.run_spec.RunSpec` (a dataclass)."""

    @property
    def problems(self) -> Sequence[Any]:
        """The run's problems (each with an `id`)."""

    @property
    def strategy_name(self) -> str:
        """The strategy's registered name."""

    @property
    def budget(self) -> Any:
        """The budget per problem (a `ttscale.budget.Budget`)."""

    @property
    def total(self) -> Any:
        """The budget over the whole run (a `Budget`), or None."""

    def identity(self) -> dict[str, Any]:
        """The part of config.json that must match for `--resume`."""
        ...


#: A `ttscale.running.run_spec.RunSpec`: the run store reads its fields by name, never importing the layer that
#: defines it.
RunSpec = Any


def new_config(prepared: Prepared, engine: dict[str, Any] | None = None, argv: list[str] | None = None
               ) -> dict[str, Any]:
    """A new run's config.json, in today's shape (the writer stamps its format version and writes it before the
    engine starts, so a run killed while its engine starts can already be resumed). `engine`: the engine's
    description when known (else recorded once it runs: `RunWriter.started`); `argv`: the command (None: sys.argv)."""
    from ttscale.version import __version__

    spec = json.loads(json.dumps(asdict(prepared.spec), default=str))
    public_url = getattr(prepared.spec.server, "public_url", None)
    if public_url is not None:  # never a user:password or a query value from the URL (a served model's)
        spec["server"]["base_url"] = public_url()
    return {
        "identity": json.loads(json.dumps(prepared.identity(), default=str)),
        "spec": spec,
        "environment": {
            "ttscale_version": __version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "engine": engine,
        },
        "command": redact_argv(argv if argv is not None else sys.argv),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def redact_argv(argv: Sequence[str]) -> list[str]:
    """The command line with any user:password in a URL and every query value (`?code=`, `?sig=`, ...) but a
    harmless one's (`api-version`) masked as `***`."""
    from ttscale.engine.openai_config import redact_url

    return [redact_url(str(arg)) for arg in argv]


def check_spec_types(spec: RunSpec) -> None:
    """Each field of the type it is declared with, before anything reads it: a spec comes from Python callers and
    from a stored config.json (`--resume`), so `params` may arrive as a string or `task` as a number. Mappings are
    copied, so a caller editing its dict later does not edit the spec."""
    def refuse(name: str, what: str) -> NoReturn:
        value = getattr(spec, name)
        raise ValueError(f"{name} must be {what}, got {value!r} ({type(value).__name__})")

    for name, what in (("strategy", "a strategy name"), ("budget", "a budget such as '8k' or '1e15 flop'"),
                       ("task", "a task spec such as 'arithmetic' or 'jsonl:PATH'"), ("hardware", "a hardware name")):
        if not isinstance(getattr(spec, name), str):
            refuse(name, f"a string ({what})")
    if spec.total_budget is not None and not isinstance(spec.total_budget, str):
        refuse("total_budget", "None or a string (a budget such as '200k')")
    for name in ("params", "task_options"):
        if not isinstance(getattr(spec, name), Mapping):
            refuse(name, "a dict of names to values")
        object.__setattr__(spec, name, dict(getattr(spec, name)))
    for name, allow_none in (("limit", True), ("seed", False), ("concurrency", False)):
        value = getattr(spec, name)
        if value is None and allow_none:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            refuse(name, "a whole number" + (" or None" if allow_none else ""))
        object.__setattr__(spec, name, int(value))
    from ttscale.engine.base import EngineConfig

    if not isinstance(spec.engine, EngineConfig):
        refuse("engine", "an EngineConfig")


def check_resume(run_dir: RunDir, prepared: Prepared, *, config: dict[str, Any] | None = None) -> None:
    """Refuse to resume a run whose stored identity differs from the one asked for (the stored one read in
    today's terms: `ttscale.runstore.runformat.migrate_config`). `config`: its config.json as already read (None:
    read here)."""
    stored = (run_dir.read_config() if config is None else config).get("identity")
    if not isinstance(stored, dict):  # edited by hand, or not written by ttscale: nothing to compare with
        raise RunDirError(f"cannot resume {str(run_dir.path)!r}: {run_dir.path / CONFIG} has no identity "
                          f"object (got {type(stored).__name__}); it was edited or not written by ttscale")
    current = json.loads(json.dumps(prepared.identity(), default=str))
    if stored != current:
        changed = _differences(stored, current)
        detail = "; ".join(f"{k}: stored {json.dumps(a)} vs now {json.dumps(b)}" for k, a, b in changed)
        raise RunDirError(f"cannot resume {str(run_dir.path)!r}: the run differs in {detail}")


def _differences(stored: dict[str, Any], current: dict[str, Any], prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted key, stored, now) for each value that differs, inside the engine's settings too (one setting, not
    two whole configs, is what a reader needs to see)."""
    out: list[tuple[str, Any, Any]] = []
    for key in sorted(set(current) | set(stored)):
        a, b = stored.get(key), current.get(key)
        if a == b:
            continue
        if key == "engine" and not prefix and isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, prefix="engine.")
        else:
            out.append((prefix + key, a, b))
    return out

