"""Engine backends registered like strategies: a new backend is one file and its registry line, and `ttscale run`,
`ttscale sweep`, the API and resume take it by name; the backend says which of its failures are passing faults."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

import ttscale
from ttscale.cli import main
from ttscale.engine import ENGINES, backend_for, check_backend
from ttscale.engine.base import EngineConfig
from ttscale.engine.openai import OpenAIConfig
from ttscale.running.run_spec import RunSpec
from ttscale.sweeps import GridEntry, SweepSpec

#: The whole of a new backend: its options' class, how it starts, which failure is a passing fault. It serves the
#: scripted arithmetic policy of `ttscale.testing` (no model), failing every request while `flaky`.
TOY_BACKEND = '''
from dataclasses import dataclass

from ttscale.engine.backend import Backend
from ttscale.testing.policy import SimulatedArithmeticPolicy


class Hiccup(RuntimeError):
    """The toy server's passing fault."""


@dataclass(frozen=True, kw_only=True)
class ToyConfig:
    seed: int = 0
    """The simulated policy's seed."""
    flaky: bool = False
    """Every request fails with a Hiccup."""


class FlakyPolicy(SimulatedArithmeticPolicy):
    async def generate(self, prompt, params, *, seed=None):
        raise Hiccup("the toy server hiccuped")


class ToyBackend(Backend):
    config = ToyConfig
    started: list = []

    @classmethod
    async def start(cls, config):
        cls.started.append(config)
        return (FlakyPolicy if config.flaky else SimulatedArithmeticPolicy)(seed=config.seed)

    @classmethod
    def is_transient(cls, exc):
        return isinstance(exc, Hiccup)
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> type:
    """The toy backend, written to a file of its own and registered by one line; the registry restored after."""
    for name in ("_targets", "_aliases", "_loaded"):
        monkeypatch.setattr(ENGINES, name, dict(getattr(ENGINES, name)))
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "toy_backend_module.py").write_text(textwrap.dedent(TOY_BACKEND))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "toy_backend_module", raising=False)
    ENGINES.register("toy", "toy_backend_module:ToyBackend")  # the registry line
    backend: type = ENGINES.get("toy")
    backend.started.clear()  # type: ignore[attr-defined]
    return backend


def test_ttscale_run_takes_a_registered_backend_by_name_and_resumes_on_it(
    toy: type, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["run", "--backend", "toy", "--strategy", "self_consistency", "--budget", "256", "--task", "arithmetic",
            "--limit", "4", "--param", "max_tokens=48", "--concurrency", "2", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    assert [type(c).__name__ for c in toy.started] == ["ToyConfig"]  # type: ignore[attr-defined]
    config = json.loads((out / "config.json").read_text())
    assert config["spec"]["backend"] == "toy" and config["spec"]["server"] == {"seed": 0, "flaky": False}
    assert config["identity"]["engine"]["backend"] == "toy"
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["samples"] and r["error"] is None for r in records)
    # The stored run is read back on the backend's own config class, and resumes (nothing is left to run).
    stored = RunSpec.from_stored(config["spec"], out / "config.json")
    assert stored.backend == "toy" and stored.server == toy.config()  # type: ignore[attr-defined]
    assert main(["run", "--resume", str(out)]) == 0, capsys.readouterr().err
    assert len((out / "results.jsonl").read_text().splitlines()) == 4


def test_a_registered_backends_options_are_flags_generated_from_its_config_class(
    toy: type, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--backend toy` takes ToyConfig's fields as `--toy-FIELD` flags (its docstrings as help), read into its config
    on a new run and on top of the stored one on resume; a value the flag cannot read, or another backend's flag, is
    one line and exit 2."""
    from ttscale.cli import build_parser

    shown = build_parser().parse_args  # the parser of today's registry, the toy backend included
    with pytest.raises(SystemExit):
        shown(["run", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "--toy-seed SEED" in helped and "--backend toy: The simulated policy's seed. (default 0)" in helped
    assert "--toy-flaky, --no-toy-flaky" in helped and "Every request fails with a Hiccup." in helped
    out = tmp_path / "run"
    argv = ["run", "--backend", "toy", "--toy-seed", "7", "--toy-flaky", "--strategy", "self_consistency", "--budget",
            "256", "--task", "arithmetic", "--limit", "2", "--param", "max_tokens=48", "--out", str(out), "--json"]
    assert main(argv) == 1, capsys.readouterr().err  # every problem unfinished: the toy server hiccuped
    assert toy.started == [toy.config(seed=7, flaky=True)]  # type: ignore[attr-defined]
    assert json.loads((out / "config.json").read_text())["spec"]["server"] == {"seed": 7, "flaky": True}
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-toy-flaky", "--json"]) == 0, capsys.readouterr().err
    assert toy.started[-1] == toy.config(seed=7, flaky=False)  # type: ignore[attr-defined]
    assert json.loads(capsys.readouterr().out)["problems"] == 2
    for wrong, said in ((["--backend", "toy", "--toy-seed", "x"], "argument --toy-seed: invalid int value: 'x'"),
                        (["--toy-seed", "3"], "run: --toy-seed applies to --backend toy only")):
        assert main(["run", "--strategy", "sc", "--out", str(tmp_path / "never"), *wrong]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err
    assert not (tmp_path / "never").exists()


def test_ttscale_sweep_runs_its_cells_on_a_registered_backend(
    toy: type, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", "--backend", "toy", "--toy-seed", "4", "--strategy", "best_of_n n=1|2", "--budgets", "96",
            "--limit", "3", "--task", "arithmetic", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    cells = sorted((out / "cells").iterdir())
    assert len(cells) == 2
    for cell in cells:
        spec = json.loads((cell / "config.json").read_text())["spec"]
        assert spec["backend"] == "toy" and spec["server"]["seed"] == 4  # --toy-seed, the option's generated flag
        assert len((cell / "results.jsonl").read_text().splitlines()) == 3
    assert json.loads((out / "sweep.json").read_text())["spec"]["backend"] == "toy"


def test_a_backends_passing_fault_leaves_the_problem_unfinished_not_wrong(toy: type, tmp_path: Path) -> None:
    config = toy.config(flaky=True)  # type: ignore[attr-defined]
    assert backend_for(config) == "toy"
    run = ttscale.run(strategy="self_consistency", budget="256", task="arithmetic", limit=2,
                      params={"max_tokens": "48"}, out=tmp_path / "flaky", server=config)
    assert (run.summary["unfinished"], run.summary["errors"], run.summary["problems"]) == (2, 0, 0)
    attempts = [json.loads(line) for line in (tmp_path / "flaky" / "results.jsonl").read_text().splitlines()]
    assert [(a["unfinished"], a["error"]) for a in attempts] == [(True, "Hiccup: the toy server hiccuped")] * 2


def test_backend_choices_and_cells_come_from_the_registry(toy: type, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--backend", "nosuch", "--strategy", "sc"]) == 2
    assert "choose from 'openai', 'toy', 'vllm'" in capsys.readouterr().err
    toy_config = toy.config()  # type: ignore[attr-defined]
    spec = SweepSpec(grid=(GridEntry.parse("best_of_n n=1"),), budgets=("64",), backend="toy", server=toy_config)
    cell = spec.run_spec(spec.cells()[0])
    assert cell.backend == "toy" and cell.engine_config() is toy_config
    again = SweepSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again.server == toy_config
    with pytest.raises(ValueError, match="backend must be vllm, or openai or toy with a server"):
        SweepSpec(grid=spec.grid, budgets=("64",), backend="toy")


def test_a_backend_takes_only_its_own_config() -> None:
    check_backend("vllm", None)
    check_backend("openai", OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    with pytest.raises(ValueError, match="backend must be one of openai, vllm, got 'vlm'"):
        RunSpec(strategy="best_of_n", backend="vlm")
    with pytest.raises(ValueError, match="backend openai needs a server: an OpenAIConfig, got none"):
        RunSpec(strategy="best_of_n", backend="openai")
    with pytest.raises(ValueError, match="backend vllm takes no server"):
        RunSpec(strategy="best_of_n", server=OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    assert backend_for(EngineConfig()) == "vllm"
    with pytest.raises(TypeError, match="no registered backend takes a dict"):
        backend_for({})
