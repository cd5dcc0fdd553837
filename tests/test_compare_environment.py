"""`ttscale compare` of runs made on different engines (ttscale.comparisons.environments): split arms, the pair's
note, the CLI.

The runs are copies of a real run (tests/data/real_runs/sc-n4, its first five problems) with the engine
determinants written into config.json and, where a test says so, other sample texts: what two machines give.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ttscale.cli import main
from ttscale.comparisons.paired import CompareOptions, analyse, markdown
from ttscale.engine.cpu import REPORTED_FLAGS, plan
from ttscale.stats.paired import compare_pair
from ttscale.testing.cpu import KINDS, CPUKind

REAL = Path(__file__).parent / "data" / "real_runs" / "sc-n4"
SC = "self_consistency max_tokens=100"


def determinants(**changes: Any) -> dict[str, Any]:
    """An engine's determinants (ttscale.engine.determinism.determinants), with `changes`."""
    return {"model_sha256": "a" * 64, "tokenizer_sha256": "b" * 64, "chat_template_sha256": "c" * 64,
            "vllm_version": "0.32.0", "torch_version": "2.13.0+cpu", "dtype": "float32", "device": "cpu",
            "cpu_flags": ["avx2"], "threads_bind": "0-1", "deterministic": True, "engine_seed": 0, **changes}


def write_run(path: Path, *, found: dict[str, Any] | None, seed: int = 0, strategy: str | None = None,
              differ: tuple[int, ...] = ()) -> Path:
    """A run directory: the real run's first five problems, its engine's determinants `found` (None: an older run
    that recorded none), run seed `seed`, and other sample texts on the problems at the indices `differ`."""
    config = json.loads((REAL / "config.json").read_text())
    records = [json.loads(line) for line in (REAL / "results.jsonl").read_text().splitlines()[:5]]
    assert "determinants" not in config["environment"]["engine"]  # the template is an older run
    if found is not None:
        config["environment"]["engine"]["determinants"] = found
    config["identity"]["seed"] = config["spec"]["seed"] = seed
    if strategy is not None:
        config["identity"]["strategy"] = config["spec"]["strategy"] = strategy
    for i in differ:
        records[i]["samples"][0]["text"] += " (drawn on another machine)"
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_one_configuration_on_two_engines_is_an_environment_note(tmp_path: Path) -> None:
    a = write_run(tmp_path / "machine-a", found=determinants())
    b = write_run(tmp_path / "machine-b", found=determinants(dtype="bfloat16", cpu_flags=["amx_bf16", "avx2"]),
                  differ=(1, 3))
    result = analyse([a, b])
    assert [arm.label for arm in result.arms] == [f"{SC} [dtype float32]", f"{SC} [dtype bfloat16]"]
    differs = ["cpu_flags: ['avx2'] vs ['amx_bf16', 'avx2']", "dtype: float32 vs bfloat16"]
    (verdict,) = result.verdicts
    assert verdict == (f"{SC} [dtype float32] vs {SC} [dtype bfloat16]: same configuration, different engine "
                       f"environment ({'; '.join(differs)}): samples differ in 2 of 5 problems")
    assert "accuracy" not in verdict and verdict != result.pairs[0].verdict  # no strategy verdict
    data = result.to_dict()
    (pair,) = data["pairs"]
    assert pair["environment"] == {"differs": differs, "problems_differing": 2, "problems": 5}
    assert pair["environment_caution"] == [] and pair["verdict"] == verdict and data["verdicts"] == [verdict]
    assert [arm["environment"]["dtype"] for arm in data["arms"]] == ["float32", "bfloat16"]
    assert "engine_seed" not in data["arms"][0]["environment"]  # a repeat's seed is not its machine
    text = markdown(data)
    assert f"- {verdict}" in text
    assert ("Same configuration, different engine environment (cpu_flags: ['avx2'] vs ['amx_bf16', 'avx2']; dtype: "
            "float32 vs bfloat16): samples differ in 2 of 5 problems (paired by problem and run seed)") in text
    # --group run: each directory is an arm, and the pair of one configuration still says so.
    every_run = analyse([a, b], options=CompareOptions(group="run"))
    assert every_run.verdicts[0].endswith("same configuration, different engine environment "
                                          f"({'; '.join(differs)}): samples differ in 2 of 5 problems")


def test_repeats_on_one_engine_stay_one_arm_and_only_shared_seeds_are_compared(tmp_path: Path) -> None:
    a0 = write_run(tmp_path / "a-s0", found=determinants())
    # Repeat 1 on the same machine: its engine ran with the repeat's seed (as a sweep starts it), one arm still.
    a1 = write_run(tmp_path / "a-s1", found=determinants(engine_seed=1), seed=1, differ=(0, 1, 2, 3, 4))
    b0 = write_run(tmp_path / "b-s0", found=determinants(vllm_version="0.33.0", device="cuda"))
    result = analyse([a0, a1, b0])
    assert [(arm.label, arm.info["run_seeds"]) for arm in result.arms] == [
        (f"{SC} [device cpu]", [0, 1]), (f"{SC} [device cuda]", [0])]
    (verdict,) = result.verdicts
    # Seed 1 ran on one side only (its texts all differ from seed 0's): 5 problems compared, none differing.
    assert verdict.endswith("(device: cpu vs cuda; vllm_version: 0.32.0 vs 0.33.0): samples differ in 0 of 5 "
                            "problems")
    # No run seed in common: nothing to compare the samples on, and the line says so.
    b1 = write_run(tmp_path / "b-s1", found=determinants(dtype="bfloat16"), seed=1)
    (apart,) = analyse([a0, b1]).verdicts
    assert apart.endswith("(dtype: float32 vs bfloat16): no problem ran with the same run seed on both sides")
    assert analyse([a0, b1]).to_dict()["pairs"][0]["environment"]["problems"] == 0


def test_one_configuration_on_one_engine_in_two_directories_is_still_one_seed_twice(tmp_path: Path) -> None:
    a = write_run(tmp_path / "first", found=determinants())
    b = write_run(tmp_path / "second", found=determinants(), differ=(2,))
    with pytest.raises(ValueError, match="run seed 0 is in two directories"):
        analyse([a, b])
    c = write_run(tmp_path / "third", found=determinants(engine_seed=7))  # the engine seed is no environment
    with pytest.raises(ValueError, match="run seed 0 is in two directories"):
        analyse([a, c])
    result = analyse([a, b], options=CompareOptions(group="run"))
    (pair,) = result.to_dict()["pairs"]
    assert result.environment_notes == (None,) and result.verdicts == [result.pairs[0].verdict]
    assert pair["environment"] is None and pair["environment_caution"] == []
    assert "accuracy" in pair["verdict"] and "engine environment" not in markdown(result.to_dict())


def test_two_strategies_on_two_engines_keep_their_verdict_with_a_caution(tmp_path: Path) -> None:
    a = write_run(tmp_path / "sc", found=determinants())
    b = write_run(tmp_path / "bon", found=determinants(dtype="bfloat16"), strategy="best_of_n", differ=(0,))
    result = analyse([a, b])
    assert [arm.label for arm in result.arms] == [SC, "best_of_n max_tokens=100"]  # not split: nothing to tell apart
    (verdict,) = result.verdicts
    assert verdict == result.pairs[0].verdict and verdict.startswith(f"{SC} vs best_of_n max_tokens=100: accuracy")
    assert "same configuration" not in verdict
    (pair,) = result.to_dict()["pairs"]
    assert pair["environment"] is None and pair["environment_caution"] == ["dtype: float32 vs bfloat16"]
    assert ("Caution: the arms also ran in different engine environments (dtype: float32 vs bfloat16)"
            in markdown(result.to_dict()))


def test_runs_without_determinants_group_as_before(tmp_path: Path) -> None:
    old = write_run(tmp_path / "old", found=None)
    with pytest.raises(ValueError, match="run seed 0 is in two directories"):
        analyse([old, write_run(tmp_path / "old-again", found=None, differ=(1,))])
    repeat = write_run(tmp_path / "old-s1", found=None, seed=1)
    bon = write_run(tmp_path / "bon", found=None, strategy="best_of_n")
    result = analyse([old, repeat, bon])
    assert [(arm.label, arm.info["run_seeds"], arm.info["environment"]) for arm in result.arms] == [
        (SC, [0, 1], None), ("best_of_n max_tokens=100", [0], None)]
    a, b = result.arms
    assert result.verdicts == [compare_pair(a.label, a.records, b.label, b.records).verdict]
    data = result.to_dict()
    assert data["pairs"][0]["environment"] is None and data["pairs"][0]["environment_caution"] == []
    # compare.json written before the environment keys renders as it did.
    older = {**data, "pairs": [{k: v for k, v in p.items() if not k.startswith("environment")} for p in data["pairs"]]}
    assert markdown(older) == markdown(data)
    # One run that recorded its engine, repeats that did not: one arm, as before (one known environment).
    known = write_run(tmp_path / "new-s2", found=determinants(), seed=2)
    mixed = analyse([old, repeat, known, bon])
    first = mixed.arms[0]
    assert (first.label, first.info["run_seeds"], first.info["environment"]["dtype"]) == (SC, [0, 1, 2], "float32")
    # Two known environments and an unknown one: the unknown run cannot be placed, so it is an arm of its own.
    other = write_run(tmp_path / "other-s1", found=determinants(dtype="bfloat16"), seed=1)
    split = analyse([old, known, other])
    assert sorted(arm.label for arm in split.arms) == sorted(
        [f"{SC} [environment unknown]", f"{SC} [dtype float32]", f"{SC} [dtype bfloat16]"])


def test_when_no_short_determinant_tells_the_engines_apart_the_directory_does(tmp_path: Path) -> None:
    a = write_run(tmp_path / "amx-box", found=determinants(cpu_flags=["amx_bf16", "avx2"]))
    b = write_run(tmp_path / "avx-box", found=determinants(), differ=(4,))
    result = analyse([a, b])
    assert [arm.label for arm in result.arms] == [f"{SC} [amx-box]", f"{SC} [avx-box]"]
    assert result.verdicts[0].endswith("(cpu_flags: ['amx_bf16', 'avx2'] vs ['avx2']): samples differ in 1 of 5 "
                                       "problems")


def test_the_cli_prints_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "machine-a", found=determinants())
    b = write_run(tmp_path / "machine-b", found=determinants(dtype="bfloat16"), differ=(0, 2))
    assert main(["compare", str(a), str(b), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    (pair,) = printed["pairs"]
    assert pair["environment"] == {"differs": ["dtype: float32 vs bfloat16"], "problems_differing": 2, "problems": 5}
    assert printed["verdicts"][0].endswith(": same configuration, different engine environment (dtype: float32 vs "
                                           "bfloat16): samples differ in 2 of 5 problems")
    assert main(["compare", str(a), str(b)]) == 0
    assert "Same configuration, different engine environment (dtype: float32 vs bfloat16)" in capsys.readouterr().out
    same = write_run(tmp_path / "machine-a-again", found=determinants())
    assert main(["compare", str(a), str(same)]) == 2
    assert "run seed 0 is in two directories" in capsys.readouterr().err


def test_a_run_on_each_cpu_kind_against_an_avx2_box_names_what_its_plan_changed(tmp_path: Path,
                                                                                 cpu_kind: CPUKind) -> None:
    """The determinants a run on this CPU kind records (its plan's dtype and flags, as the engine records them),
    compared with the same configuration run on an 8-core AVX2-only box: the note names exactly what differs."""
    here = plan("auto", cores=[0, 1], environ={})
    avx2 = plan("auto", flags=KINDS["avx2"].host.flags, machine="x86_64", cores=list(range(8)), environ={})
    a = write_run(tmp_path / "avx2-box", found=determinants(dtype=avx2.dtype, cpu_flags=list(avx2.flags),
                                                            threads_bind=avx2.threads_bind))
    b = write_run(tmp_path / "this-kind", found=determinants(dtype=here.dtype, cpu_flags=sorted(here.flags),
                                                             threads_bind=here.threads_bind), differ=(3,))
    flags = sorted(f for f in REPORTED_FLAGS if f in cpu_kind.host.flags)
    differs = ([f"cpu_flags: ['avx2'] vs {flags}"] if flags != ["avx2"] else []) + (
        [f"dtype: float32 vs {cpu_kind.dtype}"] if cpu_kind.dtype != "float32" else []) + ["threads_bind: 0-7 vs 0-1"]
    (verdict,) = analyse([a, b]).verdicts
    assert verdict.endswith(f"same configuration, different engine environment ({'; '.join(differs)}): samples "
                            "differ in 1 of 5 problems")
