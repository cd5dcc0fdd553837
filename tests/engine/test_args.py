"""Engine configuration: any vLLM engine argument by name, typed by vLLM's own dataclass; chat-template options;
truncation counted. The real engine: one small run through the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ttscale.cli import main, parse_args
from ttscale.engine.args import EngineArgError, parse_engine_args
from ttscale.engine.base import EngineConfig, HFTokenizerMixin

pytest.importorskip("vllm")


def test_engine_args_are_typed_by_vllms_own_fields() -> None:
    parsed = parse_engine_args(
        ["max-num-seqs=8", "enforce_eager=false", "kv_cache_dtype=fp8", "quantization=none",
         'hf_overrides={"rope_theta": 10000}', "max_num_batched_tokens=4096"]
    )
    assert parsed == {"max_num_seqs": 8, "enforce_eager": False, "kv_cache_dtype": "fp8", "quantization": None,
                      "hf_overrides": {"rope_theta": 10000}, "max_num_batched_tokens": 4096}
    assert parse_engine_args({"max_num_seqs": 4}) == {"max_num_seqs": 4}  # typed values (a config file) pass


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("nosuch=1", "'nosuch' is not an engine argument of the installed vLLM; the closest are "),
        ("max_num_seq=1", "the closest are max_num_seqs"),
        ("max_num_seqs=lots", "max_num_seqs='lots': expected int"),
        ("enforce_eager=maybe", "enforce_eager='maybe': expected bool"),
        ("model=/elsewhere", "'model' is set by --model"),
        ("max_num_seqs", "engine arguments look like KEY=VALUE"),
    ],
)
def test_a_bad_engine_argument_is_named_in_one_line(item: str, expected: str) -> None:
    with pytest.raises(EngineArgError, match=None) as caught:
        parse_engine_args([item])
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_the_cli_refuses_an_unknown_engine_argument_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--strategy", "sc", "--engine-arg", "nosuch=1", "--limit", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ttscale: error: run: 'nosuch' is not an engine argument")
    assert "the closest are" in err


def test_an_engine_argument_that_is_a_field_sets_the_field_and_is_checked() -> None:
    config = EngineConfig(engine_args={"max_num_seqs": 8, "kv_cache_dtype": "fp8"})
    assert config.max_num_seqs == 8 and config.engine_args == {"kv_cache_dtype": "fp8"}
    with pytest.raises(ValueError, match="max_num_seqs must be ≥ 1, got 0"):
        EngineConfig(engine_args={"max_num_seqs": 0})
    assert EngineConfig().max_model_len == -1  # what the KV cache holds, at most the model's own: no number of ours
    assert json.loads(json.dumps(config.to_dict()))["engine_args"] == {"kv_cache_dtype": "fp8"}


def test_explicit_engine_args_are_typed_and_normalised_at_construction_without_vllm() -> None:
    # Field names typed by the field (as --engine-arg TEXT is), dashes or not; the rest left for the engine's start.
    code = (
        "import sys\n"
        "from ttscale.engine.base import EngineConfig\n"
        "c = EngineConfig(engine_args={'max-num-seqs': '8', 'max_model_len': '-1', 'runner': 'pooling',\n"
        "                              'kv-cache-dtype': 'fp8', 'nosuch': 1})\n"
        "assert (c.max_num_seqs, c.max_model_len, c.runner) == (8, -1, 'pooling'), c\n"
        "assert c.engine_args == {'kv_cache_dtype': 'fp8', 'nosuch': 1}, c.engine_args\n"
        "assert not {'vllm', 'torch'} & set(sys.modules), 'EngineConfig imported vllm or torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with pytest.raises(EngineArgError, match="engine argument max_num_seqs='lots': expected int"):
        EngineConfig(engine_args={"max_num_seqs": "lots"})


class _Reached(Exception):
    """vLLM's engine would start now (the test stops there)."""


def _start(config: EngineConfig, monkeypatch: pytest.MonkeyPatch, reached: dict[str, object]) -> None:
    """Into `reached`: the model VLLMEngine.start fetched and the arguments it handed to vLLM's engine, whose
    start (`_async_llm`) is stopped, so no engine starts."""
    import asyncio

    import ttscale.engine.models
    import ttscale.engine.vllm as vllm_engine

    def no_model(model: str) -> str:
        reached["model"] = model
        return "/no/such/model"

    def stop(config: EngineConfig, model_path: str, cpu_plan: object, engine_args: dict[str, object]) -> None:
        reached["engine_args"] = engine_args
        raise _Reached

    monkeypatch.setattr(ttscale.engine.models, "resolve_model", no_model)
    monkeypatch.setattr(vllm_engine, "_async_llm", stop)
    asyncio.run(vllm_engine.VLLMEngine.start(config))


def test_an_unknown_explicit_engine_arg_fails_at_start_in_one_line_before_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reached: dict[str, object] = {}
    with pytest.raises(EngineArgError) as caught:
        _start(EngineConfig(engine_args={"max_num_seq": 8}), monkeypatch, reached)
    assert reached == {}  # refused before the model was fetched or vLLM's engine was reached
    message = str(caught.value)
    assert message.startswith("'max_num_seq' is not an engine argument of the installed vLLM; the closest are ")
    assert "max_num_seqs" in message and "\n" not in message
    with pytest.raises(EngineArgError, match="'model' is set by --model"):
        _start(EngineConfig(engine_args={"model": "/elsewhere"}), monkeypatch, reached)
    assert reached == {}
    # Known arguments reach vLLM's engine typed by vLLM's own fields.
    with pytest.raises(_Reached):
        _start(EngineConfig(engine_args={"kv_cache_dtype": "fp8", "max_num_batched_tokens": "4096",
                                         "hf_overrides": '{"rope_theta": 10000}'}), monkeypatch, reached)
    assert reached == {"model": "embedded", "engine_args": {
        "kv_cache_dtype": "fp8", "max_num_batched_tokens": 4096, "hf_overrides": {"rope_theta": 10000}}}


def test_the_cli_names_an_engine_argument_error_from_the_start_in_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ttscale.cli.run

    def run_that_starts_an_engine(args: object) -> int:
        parse_engine_args({"max_num_seq": 8})  # what the start raises for engine_args stored or given in Python
        return 0

    monkeypatch.setattr(ttscale.cli.run, "cmd_run", run_that_starts_an_engine)
    assert main(["run", "--strategy", "sc"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ttscale: error: 'max_num_seq' is not an engine argument")


@pytest.mark.parametrize("argv", [["--max-model-len", "-1"], ["--max-model-len=-1"],
                                  ["--engine-arg", "max_model_len=-1"]])
def test_max_model_len_minus_one_fits_the_kv_cache(argv: list[str], tmp_path: Path) -> None:
    from ttscale.cli.run import build_spec

    spec, _, _ = build_spec(parse_args(["run", "--strategy", "sc", *argv, "--out", str(tmp_path)]))
    assert spec.engine.max_model_len == -1 and "max_model_len" not in spec.engine.engine_args
    assert EngineConfig(max_model_len=-1).max_model_len == -1
    assert EngineConfig(max_model_len=None).max_model_len is None  # exactly the model's own, as vLLM takes None
    for bad in (-2, 0, 63):
        with pytest.raises(ValueError, match=rf"max_model_len must be in \[64, 1048576\], or -1 for the largest "
                                             rf"length the KV cache holds \(at most the model's own\), got {bad}"):
            EngineConfig(max_model_len=bad)


def test_an_unstarted_minus_one_is_no_context_limit_to_count_with() -> None:
    from types import SimpleNamespace

    from ttscale.budget import Budget, Ledger
    from ttscale.evals.arithmetic import ArithmeticTask
    from ttscale.kit.context import Context

    task = ArithmeticTask(levels=(1,), per_level=1)
    for limit, room in ((-1, 1 << 30), (None, 1 << 30), (4096, 4000)):
        engine: Any = SimpleNamespace(config=EngineConfig(max_model_len=limit))
        ctx = Context(problem=task.problems()[0], task=task, engine=engine, ledger=Ledger(Budget.parse(100)))
        assert ctx.room(96) == room


def test_a_cpu_engine_fitted_to_memory_batches_the_models_whole_context() -> None:
    from ttscale.engine.models import prepare_embedded
    from ttscale.engine.vllm import _whole_prefills

    # -1 is no length: whole prefills must hold the model's own (8192 for SmolLM2), which vLLM checks first.
    assert _whole_prefills(EngineConfig(), str(prepare_embedded()))["max_num_batched_tokens"] == 8192
    assert _whole_prefills(EngineConfig(max_model_len=4096), str(prepare_embedded()))["max_num_batched_tokens"] == 4096


def test_engine_settings_come_from_a_config_file_and_flags_win(tmp_path: Path) -> None:
    from ttscale.cli.run import build_spec

    path = tmp_path / "run.yaml"
    path.write_text("strategy: sc\nengine:\n  max_num_seqs: 16\n  kv_cache_dtype: fp8\n"
                    "  hf_overrides: {rope_theta: 10000}\nchat_template_kwargs:\n  enable_thinking: false\n")
    argv = ["run", "--config", str(path), "--engine-arg", "max_num_seqs=4", "--out", str(tmp_path / "out")]
    spec, _, _ = build_spec(parse_args(argv))
    assert spec.engine.max_num_seqs == 4  # the flag's
    assert spec.engine.engine_args == {"kv_cache_dtype": "fp8", "hf_overrides": {"rope_theta": 10000}}
    assert spec.engine.chat_template_kwargs == {"enable_thinking": False}


class _Tokenizer(HFTokenizerMixin):
    def __init__(self, tokenizer: object, kwargs: dict[str, object]) -> None:
        self._tokenizer = tokenizer
        self.chat_template_kwargs = kwargs


def test_chat_template_options_reach_the_template(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from ttscale.engine.models import prepare_embedded

    folder = tmp_path / "tok"
    shutil.copytree(prepare_embedded(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    # A Qwen3-like switch: without thinking, the reply starts with an empty, closed thinking block.
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n"
        "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
    )
    messages = [{"role": "user", "content": "2+2?"}]
    off = tokenizer.decode(_Tokenizer(tokenizer, {"enable_thinking": False}).chat_prompt(messages))
    on = tokenizer.decode(_Tokenizer(tokenizer, {}).chat_prompt(messages))
    assert off.endswith("<think>\n\n</think>\n\n") and not on.endswith("</think>\n\n")


@pytest.mark.slow
def test_engine_args_reach_vllm_and_cut_answers_are_counted(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["run", "--strategy", "best_of_n", "--budget", "1k", "--limit", "2", "--param", "n=3",
            "--param", "max_tokens=6", "--engine-arg", "max_num_seqs=8", "--out", str(out), "--json"]
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", *argv], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    engine = json.loads((out / "config.json").read_text())["environment"]["engine"]
    assert engine["vllm_config"]["max_num_seqs"] == 8  # vLLM's own scheduler config
    assert engine["max_model_len"] == engine["vllm_config"]["max_model_len"] == 8192  # SmolLM2's own limit
    # What the samples depend on, from the started engine: the dtype in force (the CPU plan's), the model's hashes.
    found = engine["determinants"]
    assert found["dtype"] == engine["cpu"]["dtype"] and found["deterministic"] is False and found["device"] == "cpu"
    assert all(len(found[k]) == 64 for k in ("model_sha256", "tokenizer_sha256", "chat_template_sha256"))
    summary = json.loads((out / "summary.json").read_text())
    # 6 tokens cannot hold an answer: every sample stopped at max_tokens, and the run said so once.
    assert summary["cut_samples"] == 6 and summary["problems_with_cut_samples"] == 2
    assert summary["cut_sample_share"] == 1.0 and summary["context_cut_samples"] == 0
    assert done.stderr.count("ttscale: warning:") == 1 and "stopped at a length limit" in done.stderr
    # The terminal shows ttscale's progress (tokens, problems, requests in flight), not the engine's logs,
    # which are in the run directory.
    assert "100%" in done.stderr and "| 2/2 [" in done.stderr and "tokens, 0 requests in flight" in done.stderr, (
        done.stderr[-2000:])
    assert "INFO" not in done.stderr and "WARNING" not in done.stderr, done.stderr[-2000:]
    assert "INFO" in (out / "engine.log").read_text(errors="replace")
