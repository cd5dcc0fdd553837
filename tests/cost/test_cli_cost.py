"""`ttscale cost`: the numbers of the cost model, and one-line errors with exit code 2."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from ttscale import cli
from ttscale.cost import CostModel, ModelShape, SparseAttention, load_hardware

SHARED = Path(__file__).parents[2].parent / "shared" / "data" / "kinetics"


@pytest.fixture(autouse=True)
def _only_cost_and_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Other subcommands are being written elsewhere; build the parser from ours alone.
    monkeypatch.setattr(
        cli, "SUBCOMMANDS", {k: v for k, v in cli.SUBCOMMANDS.items() if k in ("cost", "fit")}
    )


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_is_the_cost_models_expectation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "cost",
        "--model",
        "Qwen3-8B",
        "--params",
        "8.19B",
        "--prompt-tokens",
        "155",
        "--gen-tokens",
        "13063,22187,16921",
        "--samples",
        "8",
        "--hardware",
        "B200",
        "--json",
    )
    assert code == 0
    report = json.loads(out)
    model = CostModel(shape=ModelShape.preset("Qwen3-8B", params=8.19e9), hardware=load_hardware("B200"))
    cost = model.expected(prompt_tokens=155, gen_lengths=[13063, 22187, 16921], samples=8)
    assert math.isclose(report["compute_flops"], cost.compute_flops)
    assert math.isclose(report["memory_bytes"], cost.memory_bytes)
    assert math.isclose(report["eflops"], cost.eflops)
    assert report["intensity"] == 562.5 and report["params"] == 8.19e9


def test_config_file_sparse_and_custom_hardware(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 100,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out, _ = _run(
        capsys,
        "cost",
        "--model-config",
        str(tmp_path),
        "--prompt-tokens",
        "100",
        "--gen-tokens",
        "[4000, 6000]",
        "--block-topk",
        "16:4",
        "--hardware",
        "1e15/2e12",
        "--json",
    )
    assert code == 0
    model = CostModel(
        shape=ModelShape.from_config(config),
        hardware=load_hardware("1e15/2e12"),
        sparse=SparseAttention.block_topk(block_size=16, k=4),
    )
    assert math.isclose(
        json.loads(out)["eflops"],
        model.expected(prompt_tokens=100, gen_lengths=[4000, 6000], samples=1).eflops,
    )


def test_human_output_names_the_three_costs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "cost", "--model", "SmolLM2-135M", "--prompt-tokens", "50", "--gen-tokens", "200"
    )
    assert code == 0
    assert all(word in out for word in ("compute", "memory", "eFLOPs", "I = 562.5"))


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"Kinetics reference tables not found at {SHARED}")
def test_a_kinetics_row_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    with (SHARED / "aime24_qwen3-32b_dense.csv").open(newline="", encoding="utf-8") as handle:
        row = next(r for r in csv.DictReader(handle) if r["query_id"] == "7" and r["trial"] == "4")
    lengths = json.loads(row["generation_length"])
    # Prompt length solved from the row's memory cost, as in test_kinetics_tables; compute is then checked.
    kv, n = ModelShape.preset("Qwen3-32B").kv_bytes_per_token(), 4
    mean_g, mean_g2 = sum(lengths) / len(lengths), sum(g * g for g in lengths) / len(lengths)
    prompt = round((float(row["memory_cost"]) * 1e12 / 562.5 / kv - n * mean_g2 / 2) / mean_g)
    code, out, _ = _run(
        capsys,
        "cost",
        "--model",
        "Qwen3-32B",
        "--params",
        "32.76e9",
        "--prompt-tokens",
        str(prompt),
        "--gen-tokens",
        ",".join(map(str, lengths)),
        "--samples",
        "4",
        "--json",
    )
    report = json.loads(out)
    assert code == 0
    assert math.isclose(report["compute_flops"] * 1e-12, float(row["compute_cost"]), rel_tol=1e-6)
    assert math.isclose(report["eflops"] * 1e-12, float(row["total_cost"]), rel_tol=1e-6)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "Qwen3-9B"], "unknown model 'Qwen3-9B'; did you mean"),
        (["--model", "Qwen3-8B", "--hardware", "H300"], "unknown hardware 'H300'"),
        (["--model", "Qwen3-8B", "--samples", "0"], "--samples must be a whole number ≥ 1, got '0'"),
        (["--model", "Qwen3-8B", "--params", "lots"], "--params: cannot read 'lots'"),
        (["--model", "Qwen3-8B", "--params", "8.19Bn"], "--params: cannot read '8.19Bn'"),
        (["--model", "Qwen3-8B", "--params", "1e400"], "--params must be a finite number, got '1e400'"),
        (["--model", "Qwen3-8B", "--prompt-tokens", "1e99999999999999999999"], "--prompt-tokens must be a finite"),
        (["--model-config", "/no/such/dir"], "no model config at '/no/such/dir'"),
        (["--model", "Qwen3-8B", "--cached-tokens", "500"], "cached_prompt_tokens must be in"),
        (["--model", "Qwen3-8B", "--block-topk", "16"], "--block-topk K"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _run(capsys, "cost", "--prompt-tokens", "100", "--gen-tokens", "1000", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("ttscale: error: ") and message in err
