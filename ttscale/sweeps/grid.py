"""A sweep's grid: its entries, its cells (the run directories under `cells/`) and which cells are derived.

Which cells are derived from a larger one is read from the strategy's declared replay
(`@strategy(Params, replay=...)`, ttscale.kit.capabilities), never from its name: the source is the entry's point
the replay names (by default the same point) at the largest budget, and every other (point, budget) of the
entry reads from it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ttscale.budget import Budget
from ttscale.engine import ENGINES, check_backend
from ttscale.engine.base import EngineConfig
from ttscale.kit.capabilities import Replay, capabilities
from ttscale.kit.params import field_names, params_class
from ttscale.routing.policy import candidate_key
from ttscale.running.run_spec import stored_server
from ttscale.running.runner import RunSpec
from ttscale.runstore.names import SWEEP
from ttscale.runstore.runfiles import parse_json
from ttscale.runstore.storage import RunDir
from ttscale.strategies import STRATEGIES

#: Run seed of the held-out difficulty pool: requests are seeded by it, so it shares no sample with any candidate cell.
HOLDOUT_SEED = -1
_SAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


@dataclass(frozen=True, kw_only=True)
class GridEntry:
    """One strategy and the values of each hyper-parameter to sweep (the grid is their product)."""

    strategy: str
    """A registered strategy name (or alias)."""
    params: dict[str, list[str]] = field(default_factory=dict)
    """Parameter → its values; one value = fixed for this entry."""

    @classmethod
    def parse(cls, text: str) -> GridEntry:
        """`"self_consistency max_tokens=64 temperature=0.6|1.0"`: a strategy, then key=v1|v2 ..."""
        if not text.split():
            raise ValueError("a --strategy is empty: give 'NAME key=v1|v2 ...'")
        name, *items = text.split()
        given: list[tuple[str, list[str]]] = []
        for item in items:
            key, sep, values = item.partition("=")
            if not sep or not key or not values:
                raise ValueError(f"grid parameters look like key=value or key=v1|v2, got {item!r} in {text!r}")
            given.append((key, values.split("|")))
        if len({key for key, _ in given}) < len(given):
            raise ValueError(f"a parameter is given twice in {text!r}: give each once (v1|v2 for several values)")
        params = dict(given)
        if name in STRATEGIES:  # `rebase width=16` and `rebase n=16` are one cell, under the field's own name
            params = field_names(params_class(STRATEGIES.get(name)), params)
        return cls(strategy=name, params=params)

    def combos(self) -> list[dict[str, str]]:
        keys = sorted(self.params)
        return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(self.params[k] for k in keys))]


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One point of the grid: a run directory under `cells/`."""

    strategy: str
    """Canonical strategy name."""
    params: dict[str, str]
    """Its hyper-parameters, as given."""
    budget: str
    """Canonical budget string (`1024`, `3e+14flop`)."""
    seed: int
    """Engine seed."""
    source: str | None = None
    """Id of the cell this one is derived from by subsampling; None = run directly."""
    holdout: bool = False
    """The held-out difficulty pool (sweeps.holdout), not a candidate: run on `seed`'s engine under HOLDOUT_SEED."""

    @property
    def id(self) -> str:
        slug = "-".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        digest = hashlib.sha1(json.dumps(self.params, sort_keys=True).encode()).hexdigest()[:6]
        name = _SAFE.sub("_", f"{self.strategy}-{slug}" if slug else self.strategy)[:80]
        name = f"holdout-{name}" if self.holdout else name
        return f"{name}-{digest}-b{self.budget}-s{self.seed}" if slug else f"{name}-b{self.budget}-s{self.seed}"

    @property
    def candidate(self) -> str:
        return candidate_key(self.strategy, self.params)


@dataclass(frozen=True, kw_only=True)
class SweepSpec:
    """Everything that determines a sweep's cells (stored in sweep.json)."""

    grid: tuple[GridEntry, ...]
    """The strategies and their hyper-parameter values."""
    budgets: tuple[str, ...]
    """Per-problem budgets (every cell of the grid at each)."""
    seeds: tuple[int, ...] = (0,)
    """Engine seeds: each is a replicate of the whole grid (one engine start each)."""
    task: str = "arithmetic"
    """A task spec, as for `ttscale run`."""
    task_options: dict[str, Any] = field(default_factory=dict)
    """Keyword options of the task factory."""
    limit: int | None = None
    """Only the first `limit` problems."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """Engine settings (the seed is set per replicate)."""
    backend: str = "vllm"
    """A registered backend (`ttscale.engine.ENGINES`): `vllm`, an engine in this process per seed; `openai`, a
    served model (`server`), every request seeded; or a plugin's."""
    server: Any = None
    """The options of a backend with a config class of its own (an OpenAIConfig for `openai`); None for `vllm`."""
    concurrency: int = 64
    """Problems in flight at once within a cell."""
    hardware: str = "B200"
    """Hardware profile pricing FLOPs in the records."""
    subsample: bool = True
    """Derive the smaller budgets of sample-pool strategies from the largest one's stored pool."""
    holdout: int = 0
    """Samples per problem of a held-out difficulty pool (probe + p̂₁, see ttscale.sweeps.holdout); 0 = none."""
    task_defaults: bool = True
    """Cells get the task's suggested parameters (`ttscale.kit.params.task_defaults`); False for sweeps made before
    them (sweep.json without the key), so a resumed sweep's new cells run as its first ones did."""

    def __post_init__(self) -> None:
        if not self.grid:
            raise ValueError("grid must name at least one strategy")
        try:
            check_backend(self.backend, self.server)
        except ValueError:  # the registered backends, each as it takes its options
            names = ENGINES.names()
            own = [n for n in names if ENGINES.get(n).config is None]
            served = [n for n in names if n not in own]
            raise ValueError(f"backend must be {' or '.join(own)}, or {' or '.join(served)} with a server; got "
                             f"{self.backend!r} with {'a' if self.server else 'no'} server") from None
        if not self.budgets:
            raise ValueError("budgets must hold at least one budget")
        canonical = tuple(_canonical_budget(b) for b in self.budgets)
        if len(set(canonical)) != len(canonical):
            raise ValueError(f"budgets must be distinct, got {', '.join(self.budgets)}")
        object.__setattr__(self, "budgets", tuple(sorted(canonical, key=lambda b: Budget.parse(b).limit)))
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one, got {list(self.seeds)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be ≥ 1, got {self.limit}")
        if self.holdout < 0 or (self.holdout and HOLDOUT_SEED in self.seeds):
            raise ValueError(f"holdout must be ≥ 0 and seeds must not hold {HOLDOUT_SEED} (the held-out pool's), got "
                             f"holdout {self.holdout}, seeds {list(self.seeds)}")

    def cells(self) -> list[Cell]:
        """Every cell, sources before the cells derived from them."""
        out: list[Cell] = []
        for entry, seed in itertools.product(self.grid, self.seeds):
            name = STRATEGIES.canonical(entry.strategy)
            assert name is not None
            replay = self.replay(name, entry)
            if replay is None:
                out.extend(Cell(strategy=name, params=params, budget=b, seed=seed)
                           for params in entry.combos() for b in self.budgets)
                continue
            # Cells that feed others first: e.g. a GenRM (S, V) is derived from the entry's largest S and V.
            for params in sorted(entry.combos(), key=lambda c: replay.source(entry.params, c) != c):
                top = Cell(strategy=name, params=replay.source(entry.params, params), budget=self.budgets[-1],
                           seed=seed)
                if top.params == params:
                    out.append(top)
                out.extend(replace(top, params=params, budget=b, source=top.id) for b in self.budgets
                           if (params, b) != (top.params, top.budget))
        return out

    def run_spec(self, cell: Cell) -> RunSpec:
        return RunSpec(strategy=cell.strategy, budget=cell.budget, task=self.task, task_options=self.task_options,
                       params=dict(cell.params), limit=self.limit, seed=HOLDOUT_SEED if cell.holdout else cell.seed,
                       engine=replace(self.engine, seed=cell.seed), concurrency=self.concurrency,
                       hardware=self.hardware, backend=self.backend, server=self.server)

    def replay(self, strategy: str, entry: GridEntry) -> Replay | None:
        """The strategy's declared replay when this entry derives cells with it (token budgets, `subsample` on)."""
        if not self.subsample or any(Budget.parse(b).unit != "tokens" for b in self.budgets):
            return None
        replay = capabilities(STRATEGIES.get(strategy)).replay
        return replay if replay is not None and replay.applies(entry.params, len(self.budgets)) else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["grid"] = [asdict(e) for e in self.grid]
        if callable(getattr(self.server, "to_dict", None)):  # as the server states itself for files: no secrets
            data["server"] = self.server.to_dict()  # (an OpenAIConfig's URL without user:password or query values)
        return json.loads(json.dumps(data, default=str))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSpec:
        values = dict(data)
        values["grid"] = tuple(GridEntry(**e) for e in values["grid"])
        values["budgets"], values["seeds"] = tuple(values["budgets"]), tuple(values["seeds"])
        values.setdefault("task_defaults", False)  # written before task defaults existed
        # Settings an older or newer EngineConfig does not know are dropped, as `ttscale run --resume` does.
        known = {f.name for f in fields(EngineConfig)}
        values["engine"] = EngineConfig(**{k: v for k, v in values.get("engine", {}).items() if k in known})
        if isinstance(values.get("server"), dict):
            values["server"] = stored_server(str(values.get("backend", "vllm")), values["server"])
        return cls(**values)


def _canonical_budget(text: str) -> str:
    budget = Budget.parse(text)
    return str(int(budget.limit)) if budget.unit == "tokens" else f"{budget.limit:g}{budget.unit}"


def load_spec(root: str | Path) -> SweepSpec:
    path = Path(root) / SWEEP
    try:
        return SweepSpec.from_dict(parse_json(path.read_text(encoding="utf-8"))["spec"])
    except FileNotFoundError:
        raise ValueError(f"{str(root)!r} is not a ttscale sweep: no {SWEEP}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


SCHEDULING_ONLY = frozenset({"concurrency", "server"})
"""Sweep settings that change how cells run, not what they hold (a server's key and address may change; the model it
serves may not: `on_server`)."""


def refuse_other_grid(stored: SweepSpec, given: SweepSpec, root: str | Path) -> None:
    """A ValueError naming what differs when `root` holds a sweep of another grid than the one `given`: calling
    again with the same folder finishes that sweep; it must not silently run the stored grid in place of another."""
    old, new = stored.to_dict(), SweepSpec.from_dict(given.to_dict()).to_dict()
    differing = sorted(key for key in old.keys() | new.keys() if key not in SCHEDULING_ONLY
                       and old.get(key) != new.get(key))
    if differing:
        raise ValueError(f"{str(root)!r} already holds a sweep of another grid ({', '.join(differing)} differ): "
                         f"finish it with out={str(root)!r} alone, or pick another out")


def on_server(stored: SweepSpec, server: Any, root: str | Path) -> SweepSpec:
    """The sweep in `root` continued on `server` (None: on the server it stores). Where it is served from and with
    what key may change (sweep.json stores a URL with its secrets masked: they are given again); the backend and the
    model served may not, or its cells would mix two models."""
    if server is None:
        return stored
    from ttscale.engine import backend_for

    was = (stored.backend, getattr(stored.server, "model", None))
    now = (backend_for(server), getattr(server, "model", None))
    if now != was:
        raise ValueError(f"{str(root)!r} holds a sweep of {was[0]} model {was[1]!r}: it continues on that model, "
                         f"not on {now[0]} model {now[1]!r} (pick another out for another model)")
    return replace(stored, server=server)


def cell_dir(root: str | Path, cell: Cell) -> RunDir:
    return RunDir(Path(root) / "cells" / cell.id)

