"""The one-call Python API (ttscale.run, ttscale.Engine) on the real engine, and its checks without one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ttscale


@pytest.mark.slow
def test_run_writes_a_resumable_run_and_an_engine_serves_several(tmp_path: Path) -> None:
    first, second = tmp_path / "sc", tmp_path / "bon"
    with ttscale.Engine(model="embedded", max_num_seqs=32) as engine:
        a = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out=first,
                        params={"n": 2, "max_tokens": 48}, engine=engine)
        b = ttscale.run(strategy="best_of_n", budget="1k", limit=2, out=second, params={"n": 2, "max_tokens": 48},
                        engine=engine)
        again = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out=first,
                            params={"n": 2, "max_tokens": 48}, engine=engine)
        grid = ttscale.sweep(strategies=["self_consistency max_tokens=48"], budgets=[96, 192], limit=2,
                             out=tmp_path / "sweep", engine=engine)
    # A sweep on the same engine: the 192-token pool ran, the 96-token cell was replayed from it.
    assert sorted((c["budget"], c["derived_from"] is None) for c in grid.cells) == [("192", True), ("96", False)]
    assert len(grid.table) == 2 and grid.matched
    assert len(ttscale.load_runs(grid.path / "cells")) == 4  # its cells are run directories like any other
    html = ttscale.report([first, second], out=tmp_path / "report.html")
    assert "<svg" in html and (tmp_path / "report.html").read_text() == html
    assert 0.0 <= a.summary["accuracy"] <= 1.0 and a.summary["problems"] == 2 and b.summary["problems"] == 2
    assert len(a.records) == 2 and a.records["correct"].sum() == a.summary["correct"]
    assert again.summary["resumed"] is True  # the same call again: nothing run twice
    lines = (first / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    config = json.loads((first / "config.json").read_text())
    assert config["environment"]["engine"]["vllm_config"]["max_num_seqs"] == 32
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", "run", "--resume", str(first), "--json",
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout[done.stdout.index("{"):])["resumed"] is True
    assert (first / "results.jsonl").read_text().splitlines() == lines  # the CLI found nothing to redo


def test_engine_settings_are_checked_before_anything_starts() -> None:
    engine = ttscale.Engine(max_model_len=4096, kv_cache_dtype="auto")  # not started until used
    assert engine.config.max_model_len == 4096 and engine.config.engine_args == {"kv_cache_dtype": "auto"}
    with pytest.raises(ValueError, match="max_model_len must be in"):
        ttscale.Engine(max_model_len=10)
    with pytest.raises(ValueError, match="not an engine argument of the installed vLLM"):
        ttscale.Engine(max_num_seq=8)


def test_fit_and_report_read_real_runs_as_the_cli_does(capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.cli import main

    runs = [Path(__file__).parent / "data" / "real_runs" / name for name in ("sc-n4", "sc-n8", "sc-n16")]
    fit = ttscale.fit(law="saturation", runs=runs, x="samples", n_boot=100)
    assert main(["fit", "--law", "saturation", "--x", "samples", "--n-boot", "100", "--json", *map(str, runs)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(fit.to_dict()))
    markdown = ttscale.report(runs)
    assert main(["report", *map(str, runs)]) == 0
    assert capsys.readouterr().out == markdown and all(r.name in markdown for r in runs)
    with pytest.raises(ValueError, match="give either run directories"):
        ttscale.fit(law="coverage")
    with pytest.raises(ValueError, match="format must be md or html"):
        ttscale.report(runs, format="pdf")


def test_run_refuses_bad_settings_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="did you mean 'self_consistency'"):
        ttscale.run(strategy="self_consistncy", out=tmp_path / "x")
    with pytest.raises(ValueError, match="n must be ≥ 1"):
        ttscale.run(strategy="self_consistency", params={"n": 0}, out=tmp_path / "y")
    assert not (tmp_path / "y").exists()  # refused before any directory or engine
