"""`ttscale run --config FILE`: settings come from the file, flags on the command line win."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttscale.cli import parse_args
from ttscale.cli.run import build_spec

YAML = """\
strategy: self_consistency
budget: 2k
task: arithmetic:1-2
limit: 5
seed: 7
max-model-len: 1024
backend: openai
base_url: http://127.0.0.1:8000/v1
model: smol
tokenizer: embedded
max_retries: 2
no_progress: true
params:
  n: 4
  max_tokens: 64
"""


@pytest.mark.parametrize("name", ["run.yaml", "run.json"])
def test_settings_come_from_the_file_and_flags_win(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name.endswith(".json"):
        import json

        import yaml

        path.write_text(json.dumps(yaml.safe_load(YAML)))
    else:
        path.write_text(YAML)
    argv = ["run", "--config", str(path), "--limit", "2", "--param", "n=8", "--out", str(tmp_path / "out")]
    args = parse_args(argv)
    spec, out, resuming = build_spec(args)
    assert (spec.strategy, spec.budget, spec.task, spec.seed) == ("self_consistency", "2k", "arithmetic:1-2", 7)
    assert spec.limit == 2  # the flag, not the file's 5
    assert spec.params == {"n": "8", "max_tokens": "64"}  # the flag's n, the file's max_tokens
    assert spec.engine.max_model_len == 1024 and spec.engine.seed == 7
    assert spec.backend == "openai" and spec.server is not None
    assert (spec.server.model, spec.server.tokenizer, spec.server.max_retries) == ("smol", "embedded", 2)
    assert args.no_progress is True and out == tmp_path / "out" and not resuming
