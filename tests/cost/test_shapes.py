"""Model shapes: presets, HF configs, parameter counts, and error messages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ttscale.cost import (
    Hardware,
    HardwareError,
    ModelShape,
    ModelShapeError,
    load_hardware,
    load_shape,
    preset_names,
)

# Parameter counts published with the models (model cards / `num_parameters()`), in billions.
PUBLISHED = {
    "Qwen/Qwen3-0.6B": 0.596,
    "Qwen/Qwen3-1.7B": 1.72,
    "Qwen/Qwen3-4B": 4.02,
    "Qwen/Qwen3-8B": 8.19,
    "Qwen/Qwen3-14B": 14.77,
    "Qwen/Qwen3-32B": 32.76,
    "meta-llama/Llama-3.2-1B": 1.236,
    "meta-llama/Llama-3.2-3B": 3.213,
    "meta-llama/Llama-3.1-8B": 8.03,
    "meta-llama/Llama-3.1-70B": 70.55,
    "Qwen/Qwen2.5-0.5B": 0.494,
    "Qwen/Qwen2.5-1.5B": 1.54,
    "Qwen/Qwen2.5-3B": 3.09,
    "Qwen/Qwen2.5-7B": 7.62,
    "Qwen/Qwen2.5-14B": 14.77,
    "Qwen/Qwen2.5-32B": 32.76,
    "Qwen/Qwen2.5-72B": 72.7,
    "HuggingFaceTB/SmolLM2-135M": 0.1345,
}


def test_presets_cover_the_families_asked_for() -> None:
    assert set(preset_names()) == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_match_the_published_ones(name: str) -> None:
    shape = ModelShape.preset(name)
    assert math.isclose(shape.params_total / 1e9, PUBLISHED[name], rel_tol=5e-3)
    assert shape.params_non_embedding < shape.params_total
    assert shape.params == shape.params_total  # no override: P is the model's own count


def test_qwen3_non_embedding_count_matches_its_model_card() -> None:
    assert math.isclose(ModelShape.preset("Qwen3-8B").params_non_embedding / 1e9, 6.95, rel_tol=5e-3)
    assert math.isclose(ModelShape.preset("Qwen3-0.6B").params_non_embedding / 1e9, 0.44, rel_tol=5e-3)


@pytest.mark.parametrize("alias", ["Qwen3-8B", "qwen3-8b", "Qwen/Qwen3-8B", "QWEN3_8B", "Qwen3-8B-Instruct"])
def test_preset_names_resolve_case_and_variant_insensitively(alias: str) -> None:
    assert ModelShape.preset(alias).name == "Qwen/Qwen3-8B"


def test_unknown_preset_suggests_the_nearest() -> None:
    with pytest.raises(ModelShapeError, match=r"unknown model 'Qwen3-9B'; did you mean 'Qwen/Qwen3-8B'\?"):
        ModelShape.preset("Qwen3-9B")


def test_config_from_dict_file_folder_and_multimodal_wrapper(tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 100,
        "tie_word_embeddings": True,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "vl.json").write_text(json.dumps({"model_type": "vl", "text_config": config}))
    shapes = [
        ModelShape.from_config(config),
        load_shape(tmp_path),
        load_shape(tmp_path / "config.json"),
        ModelShape.from_config(tmp_path / "vl.json"),
    ]
    counts = {s.params_total for s in shapes}
    assert len(counts) == 1
    # by hand: per layer q 64·64, k,v 64·32 each, o 64·64, MLP 3·64·128, two norms; + final norm + embedding
    per_layer = 64 * 64 * 2 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64
    assert counts == {2 * per_layer + 64 + 100 * 64}
    assert shapes[0].head_dim == 16 and shapes[0].kv_bytes_per_token() == 2 * 2 * 2 * 16 * 2


def test_params_override_and_its_validation() -> None:
    assert ModelShape.preset("Qwen3-8B", params=8e9).params == 8e9
    with pytest.raises(ModelShapeError, match="params must be a finite number > 0, got -1"):
        ModelShape.preset("Qwen3-8B", params=-1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": 0}, "num_layers must be an integer ≥ 1, got 0"),
        ({"num_key_value_heads": 3}, "num_heads must be a multiple of num_kv_heads, got 4 and 3"),
        ({"num_hidden_layers": None}, "config has no 'num_hidden_layers'"),
    ],
)
def test_bad_configs_say_what_is_wrong(change: dict, message: str) -> None:
    config = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 100,
        **change,
    }
    with pytest.raises(ModelShapeError, match=message):
        ModelShape.from_config(config)


def test_mixture_of_experts_needs_active_params() -> None:
    config = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 100,
        "num_experts": 8,
    }
    with pytest.raises(ModelShapeError, match="mixture-of-experts"):
        ModelShape.from_config(config)
    assert ModelShape.from_config(config, params=1e6).params == 1e6


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ModelShapeError, match="no model config at"):
        ModelShape.from_config(tmp_path / "absent")


def test_hardware_presets_and_custom_profiles() -> None:
    assert load_hardware().name == "B200" and load_hardware().intensity == 562.5
    assert load_hardware("b200").intensity == 562.5
    for name in ("A100", "H100", "H200"):
        assert 100 < load_hardware(name).intensity < 400
    assert load_hardware("H200").intensity < load_hardware("H100").intensity  # same FLOPs, more bandwidth
    assert math.isclose(load_hardware("989e12/3.35e12").intensity, 989e12 / 3.35e12)
    custom = load_hardware({"name": "mine", "peak_flops": 2e15, "bandwidth": 4e12})
    assert custom.intensity == 500.0 and load_hardware(custom) is custom


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("H300", r"unknown hardware 'H300'; did you mean 'H200'\?"),
        ({"peak_flops": 1e15}, "needs peak_flops and bandwidth"),
    ],
)
def test_bad_hardware(spec: object, message: str) -> None:
    with pytest.raises(HardwareError, match=message):
        load_hardware(spec)  # type: ignore[arg-type]


def test_hardware_validates_at_construction() -> None:
    with pytest.raises(HardwareError, match="bandwidth must be a finite number > 0, got 0"):
        Hardware(name="x", peak_flops=1e15, bandwidth=0)
