"""Work that problems of one run share: computed once per key, stored with the run, reused on resume.

Sleep-time compute (Lin et al., "Sleep-time Compute: Beyond Inference Scaling at Test-time", arXiv:2504.13171,
2025) thinks about a context once, before its queries arrive, and every query of that context reads the result.
A strategy asks for such a stage with `Context.shared_stage(key, ...)`: the first problem to ask computes it (on
a ledger of its own, seeded by the key, so the result does not depend on which query came first), the others
wait for it, and the result is appended to the run's `stages.jsonl` (fsynced) before anyone reads it, so a run
killed and resumed never computes a stage twice. Without a run directory (a bare `Context`, a replay), the
store is kept in memory for the process's lifetime.

A distributed run (`--workers`) keeps one store per worker: a context whose queries land on two workers is
computed by each (both results are recorded; the ledgers count both).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttscale.runstore.runfiles import append_line, whole_lines


@dataclass(frozen=True)
class StageResult:
    """A shared stage as every problem that asked for it sees it."""

    key: str
    value: dict[str, Any]
    """What the stage computed (the strategy's own fields: a sleep-time stage's notes)."""
    ledger: dict[str, Any]
    """The stage's own ledger (`Ledger.to_dict()`): its tokens are not any one problem's."""
    computed_here: bool = False
    """Whether this problem's call computed it (False: another problem did, or an earlier run of this one)."""


@dataclass
class StageStore:
    """The shared stages of one run, by key; `path` None keeps them in memory only."""

    path: Path | None = None
    _done: dict[str, StageResult] = field(default_factory=dict)
    _running: dict[str, asyncio.Future[StageResult]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path is not None:
            self._load(self.path)

    def __reduce__(self) -> tuple[Any, ...]:
        # A Ray worker gets a run's prepared spec pickled: it keeps stages in memory, the driver owns the file.
        return (StageStore, ())

    async def once(self, key: str, compute: Callable[[], Awaitable[tuple[dict[str, Any], dict[str, Any]]]]
                   ) -> StageResult:
        """The stage `key`: stored, in progress (awaited), or computed now by `compute() -> (value, ledger)`."""
        if key in self._done:
            return self._done[key]
        if key in self._running:
            return await asyncio.shield(self._running[key])
        future: asyncio.Future[StageResult] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            value, ledger = await compute()
            result = StageResult(key=key, value=value, ledger=ledger)
            self._append(result)  # durable before any query reads it
            self._done[key] = result
            future.set_result(result)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a stage nobody else waited for must not warn at exit
            raise
        finally:
            del self._running[key]
        return StageResult(key=key, value=value, ledger=ledger, computed_here=True)

    def results(self) -> list[StageResult]:
        """Every stage stored, in the order computed."""
        return list(self._done.values())

    def _load(self, path: Path) -> None:
        for line in whole_lines(path):  # a torn last line (a kill mid-write): its stage is computed again
            try:
                row = json.loads(line)
                result = StageResult(key=str(row["key"]), value=dict(row["value"]), ledger=dict(row["ledger"]))
            except (ValueError, KeyError, TypeError):
                continue  # a line we cannot read is no stage: computed again, and the line left as it is
            self._done.setdefault(result.key, result)

    def _append(self, result: StageResult) -> None:
        if self.path is None:
            return
        line = json.dumps({"key": result.key, "value": result.value, "ledger": result.ledger}, sort_keys=True,
                          ensure_ascii=False)
        append_line(self.path, line.encode("utf-8", "surrogatepass"))
