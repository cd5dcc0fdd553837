"""Model shapes: what the cost model needs to know about a decoder, read from an HF `config.json`.

Symbols (used across `ttscale.cost`):
  P      parameters charged 2 FLOPs per generated token (`ModelShape.params`)
  A      attention width = layers × query heads × head dim (FLOPs of attention scale with it)
  K      KV bytes per token = 2 (K and V) × layers × KV heads × head dim × bytes per element
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any


class ModelShapeError(ValueError):
    """A model config or preset name that cannot be used; the message says what is allowed."""


#: HF config keys, with the names older architectures (GPT-2, GPT-J, Falcon) use for the same thing.
_KEYS: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "num_heads": ("num_attention_heads", "n_head", "num_heads"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "vocab_size": ("vocab_size",),
}
#: Architectures whose MLP has two matrices; every other (Llama, Qwen, Mistral, Gemma, ...) is gated.
_UNGATED = frozenset({"gpt2", "gptj", "gpt_neox", "opt", "falcon", "bloom", "phi", "starcoder2"})


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    """The decoder dimensions that set the cost of generating one token."""

    name: str
    """A label for reports (preset id, or the config's `_name_or_path`)."""
    num_layers: int
    """Transformer blocks."""
    num_heads: int
    """Query heads per layer."""
    num_kv_heads: int
    """Key/value heads per layer (fewer than `num_heads` under grouped-query attention)."""
    head_dim: int
    """Dimension of one attention head."""
    hidden_size: int
    """Residual stream width."""
    intermediate_size: int
    """MLP inner width (each of the gate/up/down projections of a gated MLP)."""
    vocab_size: int
    """Rows of the embedding (and of the LM head)."""
    tie_embeddings: bool = False
    """The LM head reuses the embedding matrix (counted once in `params_total`)."""
    gated_mlp: bool = True
    """SwiGLU-style MLP with three matrices (Llama, Qwen); False for a two-matrix MLP (GPT-2)."""
    qkv_bias: bool = False
    """Biases on the q/k/v projections (Qwen2 / Qwen2.5)."""
    o_bias: bool = False
    """Bias on the attention output projection (Llama's `attention_bias` sets q/k/v and o)."""
    mlp_bias: bool = False
    """Biases on the MLP projections."""
    qk_norm: bool = False
    """RMSNorm on queries and keys per head (Qwen3): `2 × head_dim` weights per layer."""
    params_override: float | None = None
    """Use this parameter count for compute instead of the one derived from the shape."""

    def __post_init__(self) -> None:
        for field in (
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "hidden_size",
            "intermediate_size",
            "vocab_size",
        ):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelShapeError(f"{field} must be an integer ≥ 1, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ModelShapeError(
                f"num_heads must be a multiple of num_kv_heads, got {self.num_heads} and {self.num_kv_heads}"
            )
        if self.params_override is not None and not (
            isinstance(self.params_override, int | float)
            and math.isfinite(self.params_override)
            and self.params_override > 0
        ):
            raise ModelShapeError(f"params must be a finite number > 0, got {self.params_override!r}")

    # -- parameter counts -----------------------------------------------------------------------
    @property
    def params_embedding(self) -> int:
        """Embedding weights, plus the LM head when it is a separate matrix."""
        per_matrix = self.vocab_size * self.hidden_size
        return per_matrix if self.tie_embeddings else 2 * per_matrix

    @property
    def params_non_embedding(self) -> int:
        """Every weight except the embedding and LM head (the convention of model cards)."""
        h, q, kv = self.hidden_size, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h
        if self.qkv_bias:
            attention += q + 2 * kv
        if self.o_bias:
            attention += h
        mlp_mats = 3 if self.gated_mlp else 2
        mlp = mlp_mats * h * self.intermediate_size
        if self.mlp_bias:
            mlp += (mlp_mats - 1) * self.intermediate_size + h
        norms = 2 * h + (2 * self.head_dim if self.qk_norm else 0)
        return self.num_layers * (attention + mlp + norms) + h  # + the final norm

    @property
    def params_total(self) -> int:
        """All weights, a tied embedding counted once (what `model.num_parameters()` reports)."""
        return self.params_non_embedding + self.params_embedding

    @property
    def params(self) -> float:
        """P of "2·P FLOPs per token": the override if given, else `params_total`."""
        return float(self.params_override) if self.params_override is not None else float(self.params_total)

    # -- what the cost formulas use ---------------------------------------------------------------
    @property
    def attention_width(self) -> int:
        """A = layers × query heads × head dim: a token attending to ℓ others costs 4·A·ℓ FLOPs."""
        return self.num_layers * self.num_heads * self.head_dim

    def kv_bytes_per_token(self, *, bytes_per_element: float = 2.0) -> float:
        """K: bytes of keys and values one token keeps in the cache, over all layers."""
        return 2.0 * self.num_layers * self.num_kv_heads * self.head_dim * bytes_per_element

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in self.__dict__.items() if k != "params_override"},
            "params": self.params,
            "params_total": self.params_total,
            "params_non_embedding": self.params_non_embedding,
        }

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | str | Path, *, name: str | None = None, params: float | None = None
    ) -> ModelShape:
        """Read an HF `config.json` (a dict, a file, or a model folder holding one).

        Multimodal configs keep the language model under `text_config`; that part is used.
        Mixture-of-experts configs need `params` (active parameters per token).
        """
        source = None if isinstance(config, Mapping) else str(config)
        data: Mapping[str, Any] = config if isinstance(config, Mapping) else _read_config_file(Path(config))
        if isinstance(data.get("text_config"), Mapping) and "num_hidden_layers" not in data:
            data = data["text_config"]
        experts = data.get("num_local_experts") or data.get("num_experts") or data.get("n_routed_experts")
        if experts and int(experts) > 1 and params is None:
            raise ModelShapeError(
                f"mixture-of-experts config ({experts} experts): pass params= the active parameters per token"
            )
        values = {field: _get_int(data, keys) for field, keys in _KEYS.items()}
        heads, hidden = values["num_heads"], values["hidden_size"]
        kv_heads = data.get("num_key_value_heads") or data.get("n_head_kv") or heads
        head_dim = data.get("head_dim") or hidden // heads
        inter = data.get("intermediate_size") or data.get("n_inner") or data.get("ffn_dim") or 4 * hidden
        model_type = str(data.get("model_type", ""))
        attention_bias = bool(data.get("attention_bias", False))
        label = name or str(data.get("_name_or_path") or source or model_type or "model")
        try:
            return cls(
                name=label,
                num_layers=values["num_layers"],
                num_heads=heads,
                num_kv_heads=int(kv_heads),
                head_dim=int(head_dim),
                hidden_size=hidden,
                intermediate_size=int(inter),
                vocab_size=values["vocab_size"],
                tie_embeddings=bool(data.get("tie_word_embeddings", False)),
                gated_mlp=model_type not in _UNGATED,
                # Qwen2 always has q/k/v biases and its config has no key saying so.
                qkv_bias=attention_bias or model_type == "qwen2",
                o_bias=attention_bias,
                mlp_bias=bool(data.get("mlp_bias", False)),
                qk_norm=model_type in {"qwen3", "qwen3_moe"},
                params_override=params,
            )
        except (TypeError, ValueError) as exc:
            raise ModelShapeError(f"config {label!r}: {exc}") from None

    @classmethod
    def preset(cls, name: str, *, params: float | None = None) -> ModelShape:
        """A shipped preset by HF id or short name, case-insensitive: `Qwen3-8B`, `qwen/qwen3-8b`."""
        canonical = _resolve_preset(name)
        return cls.from_config(_presets()[canonical]["config"], name=canonical, params=params)


def preset_names() -> list[str]:
    """HF ids of the shipped model presets."""
    return sorted(_presets())


def load_shape(model: str | Path | Mapping[str, Any], *, params: float | None = None) -> ModelShape:
    """A shape from a preset name, a config file or folder, or a config dict (the CLI's `--model`)."""
    if isinstance(model, Mapping):
        return ModelShape.from_config(model, params=params)
    path = Path(model).expanduser()
    if path.exists():
        return ModelShape.from_config(path, params=params)
    return ModelShape.preset(str(model), params=params)


# -- internals ----------------------------------------------------------------------------------
def _get_int(config: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    for key in keys:
        if config.get(key) is not None:
            return int(config[key])
    raise ModelShapeError(f"config has no {keys[0]!r}; is it a decoder-only language model's config.json?")


def _read_config_file(path: Path) -> Mapping[str, Any]:
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ModelShapeError(
            f"no model config at {str(path)!r} (give a config.json or a folder that holds one)"
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelShapeError(f"cannot read {str(file)!r}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ModelShapeError(f"{str(file)!r} is not a JSON object")
    return data


@cache
def _presets() -> dict[str, dict[str, Any]]:
    text = resources.files("ttscale").joinpath("data/model_shapes.json").read_text(encoding="utf-8")
    models: dict[str, dict[str, Any]] = json.loads(text)["models"]
    return models


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@cache
def _lookup() -> dict[str, str]:
    """Normalised names → canonical HF id: the id, the part after '/', and the aliases."""
    table: dict[str, str] = {}
    for canonical, entry in _presets().items():
        for alias in (canonical, canonical.split("/")[-1], *entry.get("aliases", [])):
            table[_key(alias)] = canonical
    return table


def _resolve_preset(name: str) -> str:
    table = _lookup()
    key = _key(name)
    for candidate in (key, key.split("/")[-1]):
        if candidate in table:
            return table[candidate]
        # Chat and instruct variants have the base model's shape.
        for suffix in ("-instruct", "-chat", "-it", "-base"):
            if candidate.endswith(suffix) and candidate[: -len(suffix)] in table:
                return table[candidate[: -len(suffix)]]
    close = difflib.get_close_matches(key.split("/")[-1], list(table), n=1, cutoff=0.6)
    hint = f"; did you mean {table[close[0]]!r}?" if close else ""
    raise ModelShapeError(
        f"unknown model {name!r}{hint} (presets: {', '.join(n.split('/')[-1] for n in preset_names())}; "
        "or give a config.json path)"
    )
