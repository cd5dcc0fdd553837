from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ttscale.engine.models import ModelError, resolve_model


def test_local_folder_and_hub_ids(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == str(tmp_path.resolve())
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.parametrize("bad", ["/no/such/dir", "./relative/missing", "not a model", "a/b/c"])
def test_missing_models_are_clear_errors(bad: str) -> None:
    with pytest.raises(ModelError, match="not found"):
        resolve_model(bad)


def test_folder_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"no config\.json"):
        resolve_model(str(tmp_path))


@pytest.mark.slow
def test_two_processes_converting_at_once_get_one_complete_model(tmp_path: Path) -> None:
    """The embedded GGUF conversion is locked and renamed into place: both callers see the same full folder."""
    code = "from ttscale.engine.models import prepare_embedded; print(prepare_embedded())"
    env = {**__import__("os").environ, "TTSCALE_CACHE": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-1000:] for _, err in outs]
    paths = {out.strip().splitlines()[-1] for out, _ in outs}
    assert len(paths) == 1
    folder = Path(paths.pop())
    assert (folder / ".complete").is_file() and (folder / "model.safetensors").stat().st_size > 200_000_000
    assert (folder / "tokenizer.json").is_file() and (folder / "config.json").is_file()
    leftovers = [p.name for p in folder.parent.iterdir() if p.name.startswith(".") and p.is_dir()]
    assert leftovers == []  # no temporary folder left behind
