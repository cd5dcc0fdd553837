"""Shared stages (ttscale/kit/stages.py): computed once per key, by whoever asks first; durable; resumable."""

from __future__ import annotations

import asyncio
import json
import pickle
from pathlib import Path

import pytest

from ttscale.kit.stages import StageStore


def test_concurrent_askers_share_one_computation(tmp_path: Path) -> None:
    store = StageStore(tmp_path / "stages.jsonl")
    calls: list[str] = []

    async def compute(key: str) -> tuple[dict[str, object], dict[str, object]]:
        calls.append(key)
        await asyncio.sleep(0.01)  # the others arrive while it runs
        return {"notes": f"about {key}"}, {"generated_tokens": 7}

    async def main() -> list[tuple[str, bool]]:
        results = await asyncio.gather(*(store.once(k, lambda k=k: compute(k)) for k in ["a", "b", "a", "a", "b"]))
        return [(r.value["notes"], r.computed_here) for r in results]

    got = asyncio.run(main())
    assert sorted(calls) == ["a", "b"]
    assert [n for n, _ in got] == ["about a", "about b", "about a", "about a", "about b"]
    assert sum(here for _, here in got) == 2  # exactly one asker per key computed it
    lines = (tmp_path / "stages.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["key"] for line in lines) == ["a", "b"]


def test_a_reopened_store_reuses_what_was_stored_and_cuts_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "stages.jsonl"
    first = StageStore(path)
    asyncio.run(first.once("a", _value("A")))
    with path.open("ab") as handle:
        handle.write(b'{"key": "b", "value": {"notes": "cut of')  # killed mid-write
    second = StageStore(path)
    assert [r.key for r in second.results()] == ["a"]
    again = asyncio.run(second.once("a", _fail))  # stored: never computed again
    assert again.value == {"notes": "A"} and not again.computed_here
    asyncio.run(second.once("b", _value("B")))
    rows = [json.loads(line) for line in path.read_text().splitlines()]  # the torn bytes are gone, no glued line
    assert [r["key"] for r in rows] == ["a", "b"]


def test_a_failed_stage_reaches_its_waiters_and_may_be_asked_again(tmp_path: Path) -> None:
    store = StageStore(tmp_path / "stages.jsonl")

    async def main() -> None:
        results = await asyncio.gather(store.once("a", _slow_fail), store.once("a", _value("never")),
                                       return_exceptions=True)
        assert all(isinstance(r, RuntimeError) for r in results)
        ok = await store.once("a", _value("A"))
        assert ok.computed_here and ok.value == {"notes": "A"}

    asyncio.run(main())
    assert len((tmp_path / "stages.jsonl").read_text().splitlines()) == 1


def test_a_pickled_store_arrives_empty_and_in_memory(tmp_path: Path) -> None:
    store = StageStore(tmp_path / "stages.jsonl")
    asyncio.run(store.once("a", _value("A")))
    copy = pickle.loads(pickle.dumps(store))  # a Ray worker's copy: the driver owns the file
    assert copy.path is None and copy.results() == []


def _value(notes: str):  # type: ignore[no-untyped-def]
    async def compute() -> tuple[dict[str, object], dict[str, object]]:
        return {"notes": notes}, {"generated_tokens": 1}

    return compute


async def _fail() -> tuple[dict[str, object], dict[str, object]]:
    pytest.fail("a stored stage was computed again")


async def _slow_fail() -> tuple[dict[str, object], dict[str, object]]:
    await asyncio.sleep(0.01)
    raise RuntimeError("engine gone")
