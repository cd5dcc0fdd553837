"""A replayed sweep cell is written as a run is (through the run pipeline's writer): what a failure leaves behind."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from tests.adaptive.sim import SeededSimulator, engine_config
from ttscale.runstore import storage
from ttscale.runstore.runfiles import storage_error
from ttscale.runstore.storage import CONFIG, RESULTS, StorageError
from ttscale.sweeps import GridEntry, SweepSpec, cell_dir, create_sweep, run_sweep
from ttscale.sweeps.grid import Cell


def _sweep(tmp_path: Path) -> tuple[SweepSpec, Path, Cell]:
    spec = SweepSpec(grid=(GridEntry.parse("self_consistency max_tokens=32"),), budgets=("64", "128"),
                     task="arithmetic:1-3", limit=3, engine=engine_config(tmp_path))
    root = tmp_path / "sweep"
    create_sweep(spec, root, command=["test"])
    derived = [c for c in spec.cells() if c.source]
    assert len(derived) == 1
    return spec, root, derived[0]


def _full(monkeypatch: pytest.MonkeyPatch, *, name: str, folder: Path, after: int = 0) -> None:
    """The disk fills up for `name` in `folder` after `after` such writes succeeded."""
    atomic, appends = storage.write_atomic, storage.RunDir.append_many
    seen = [0]

    def fails(path: Path) -> bool:
        seen[0] += path.parent == folder and path.name == name
        return path.parent == folder and path.name == name and seen[0] > after

    def write_atomic(path: Path, data: bytes) -> None:
        if fails(path):
            raise storage_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), path, "write")
        atomic(path, data)

    def append_many(self: storage.RunDir, records: list[dict[str, object]]) -> None:
        if fails(self.path / RESULTS):
            raise storage_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), self.path / RESULTS, "append to")
        appends(self, records)

    monkeypatch.setattr(storage, "write_atomic", write_atomic)
    monkeypatch.setattr(storage.RunDir, "append_many", append_many)


def test_a_replayed_cell_cut_off_before_its_first_record_leaves_nothing_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, root, cell = _sweep(tmp_path)
    folder = cell_dir(root, cell).path
    _full(monkeypatch, name=CONFIG, folder=folder)
    sim = SeededSimulator(seed=1)
    with pytest.raises(StorageError, match="No space left on device"):
        asyncio.run(run_sweep(spec, root, engine=sim, progress=False))
    assert not folder.exists()  # no lock, no empty results.jsonl: as a run's failed start, it removed what it made
    assert cell.source and len((root / "cells" / cell.source / RESULTS).read_text().splitlines()) == 3  # ran live
    monkeypatch.undo()  # space is back: the sweep derives the cell
    requests = len(sim.requests)
    log: list[str] = []
    asyncio.run(run_sweep(spec, root, engine=sim, progress=False, log=log.append))
    assert log == [f"sweep: derived {cell.id} from {cell.source}"] and len(sim.requests) == requests
    assert len(cell_dir(root, cell).records()) == 3


def test_a_replayed_cell_on_a_full_disk_keeps_the_records_written_and_a_resume_derives_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, root, cell = _sweep(tmp_path)
    folder = cell_dir(root, cell).path
    _full(monkeypatch, name=RESULTS, folder=folder, after=1)
    sim = SeededSimulator(seed=1)
    with pytest.raises(StorageError, match="No space left on device"):
        asyncio.run(run_sweep(spec, root, engine=sim, progress=False))
    assert len(cell_dir(root, cell).records()) == 1 and (folder / CONFIG).is_file()  # the first record is kept
    monkeypatch.undo()
    asyncio.run(run_sweep(spec, root, engine=sim, progress=False))
    records = cell_dir(root, cell).records()
    assert len(records) == 3 and len({r["id"] for r in records}) == 3
    assert all(r["info"]["derived_from"] == cell.source for r in records)
