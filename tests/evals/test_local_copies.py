"""`ttscale.evals.LOCAL_COPIES`, the one source of `--data-dir`'s help and README's layout, is what the loaders read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ttscale.evals import LOCAL_COPIES, load_task


@pytest.fixture(autouse=True)
def _no_data_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TTSCALE_DATA_DIR", raising=False)


@pytest.mark.parametrize("name", sorted(LOCAL_COPIES))
def test_each_local_copy_is_where_its_loader_looks(name: str, tmp_path: Path, shared_data: Path) -> None:
    # Only the one file, at the path LOCAL_COPIES names: a loader looking elsewhere (the hub, `<dir>/<task>/test.jsonl`
    # for HumanEval) fails here instead of reading it.
    source = shared_data / LOCAL_COPIES[name]
    target = tmp_path / LOCAL_COPIES[name]
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    problems = load_task(name, data_dir=tmp_path).problems()
    assert len(problems) >= 30 and all(p.question for p in problems)


def test_data_dir_help_names_every_local_copy_and_no_generic_layout() -> None:
    from ttscale.running.flags import data_dir_help

    text = data_dir_help()
    assert all(f"<dir>/{path}" in text for path in LOCAL_COPIES.values())
    assert "<task>" not in text
