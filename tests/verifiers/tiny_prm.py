"""Builds a tiny process reward model with random weights (scores are meaningless; the path is real).

Architecture `Qwen2ForProcessRewardModel` as vLLM serves it: a Qwen2 trunk plus a two-layer
`score` head (hidden → hidden → 2 classes), saved as safetensors with the embedded model's
tokenizer. No download: everything comes from a config.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

STEP_TAG = "<file_sep>"  # a single special token of the embedded tokenizer, standing in for Qwen's <extra_0>


def build_tiny_prm(out: Path, *, tokenizer_dir: Path, seed: int = 0) -> Path:
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen2Config, Qwen2Model

    torch.manual_seed(seed)
    vocab = json.loads((tokenizer_dir / "config.json").read_text())["vocab_size"]
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    config.architectures = ["Qwen2ForProcessRewardModel"]
    trunk = Qwen2Model(config).to(torch.bfloat16)
    weights = {f"model.{k}": v.contiguous() for k, v in trunk.state_dict().items()}
    head = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 2)).to(torch.bfloat16)
    weights.update({f"score.{k}": v.contiguous() for k, v in head.state_dict().items()})
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(out / "model.safetensors"))
    config.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (tokenizer_dir / name).is_file():
            shutil.copy(tokenizer_dir / name, out / name)
    return out
