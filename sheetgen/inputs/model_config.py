"""Transformer model configs: a Hugging Face config.json read in its own field names, or one
of the bundled configs in templates/models (each with the source of its numbers).

sheetgen never downloads anything: `--model-config PATH` reads a local file, `--model NAME`
a bundled one. Families: Llama, Mistral, Qwen2 (gated SiLU MLP, GQA); Mixtral and Qwen2-MoE
(experts, top-k); GPT-2, GPT-NeoX and OPT (plain MLP, multi-head attention). Any other
`model_type` that has the needed fields works too, and the config says what was assumed.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from sheetgen.errors import InputError

#: model_type -> (MLP gated?, embeddings tied by default?): transformers' config defaults
#: (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, Qwen2MoeConfig, GPTNeoXConfig set
#: tie_word_embeddings=False; GPT2Config and OPTConfig keep PretrainedConfig's True).
FAMILIES: dict[str, tuple[bool, bool]] = {
    "llama": (True, False), "mistral": (True, False), "qwen2": (True, False),
    "mixtral": (True, False), "qwen2_moe": (True, False),
    "gpt2": (False, True), "gpt_neox": (False, False), "opt": (False, True),
}
#: Each quantity and the config fields that give it, first found wins (Llama-style, GPT-2,
#: others).
FIELDS: dict[str, tuple[str, ...]] = {
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "heads": ("num_attention_heads", "n_head"),
    "vocab": ("vocab_size",),
}
FFN_FIELDS = ("intermediate_size", "ffn_dim", "n_inner")
EXPERT_FIELDS = ("num_local_experts", "num_experts")
MODELS_DIR = "models"


@dataclass(frozen=True)
class ModelConfig:
    """One transformer's shape, in the quantities the sheet needs (all counts)."""

    name: str
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int  # dense MLP width (a MoE model's per-expert width is expert_ffn)
    vocab: int
    gated: bool  # SwiGLU-style gate, up and down (else up and down)
    tied: bool  # lm_head shares the input embedding table
    experts: int = 0  # 0: a dense model
    top_k: int = 0
    expert_ffn: int = 0
    shared_ffn: int = 0  # Qwen2-MoE's shared expert width (0: none)
    max_context: int = 0  # 0: not stated
    window: int = 0  # sliding-window attention span in tokens (0: full attention)
    source: str = ""
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    @property
    def moe(self) -> bool:
        return self.experts > 1

    def to_json(self) -> str:
        """What shapes the sheet (its rows), compact enough for a workbook property (Excel
        keeps at most 255 characters); the numbers live in the sheet's input cells."""
        return json.dumps({"name": self.name[:60], "model_type": self.model_type[:30],
                           "gated": self.gated, "moe": self.moe, "shared": self.shared_ffn > 0},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ModelConfig:
        """A config with the structure `to_json` kept (placeholder numbers: the checker
        reads the real ones from the workbook's cells)."""
        d = json.loads(text)
        moe = bool(d.get("moe"))
        return cls(name=str(d.get("name", "")), model_type=str(d.get("model_type", "")),
                   hidden=1, layers=1, heads=1, kv_heads=1, head_dim=1, ffn=1, vocab=1,
                   gated=bool(d.get("gated")), tied=False, experts=2 if moe else 0,
                   top_k=1 if moe else 0, expert_ffn=1 if moe else 0,
                   shared_ffn=1 if d.get("shared") else 0)


def _whole(raw: dict[str, Any], key: str, where: str) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 1 or float(value) % 1:
        raise InputError(f"{where}: {key} must be a positive whole number, got {value!r}")
    return int(value)


def _first(raw: dict[str, Any], keys: tuple[str, ...], what: str, where: str) -> tuple[str, int]:
    for key in keys:
        if raw.get(key) is not None:
            return key, _whole(raw, key, where)
    names = keys[0] if len(keys) == 1 else f"{keys[0]} (or {', '.join(keys[1:])})"
    raise InputError(f"{where} lacks {names} ({what}), which the Transformer sheet needs")


def from_dict(raw: dict[str, Any], *, name: str = "", where: str = "model config",
              source: str = "") -> ModelConfig:
    """A ModelConfig from config.json's fields, in their own names; a missing field is one
    InputError naming it; what had to be assumed is listed in `assumptions`."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a JSON object of config fields")
    model_type = str(raw.get("model_type") or "").strip()
    notes: list[str] = []
    known = model_type in FAMILIES
    if not known:
        notes.append(f"model_type {model_type or '(none)'!r} is not a family sheetgen knows "
                     "(llama, mistral, qwen2, mixtral, qwen2_moe, gpt2, gpt_neox, opt): read "
                     "with the Llama-style field names")
    got = {q: _first(raw, keys, q, where)[1] for q, keys in FIELDS.items()}
    hidden, heads = got["hidden"], got["heads"]
    if raw.get("num_key_value_heads") is not None:
        kv = _whole(raw, "num_key_value_heads", where)
    else:
        kv = heads
        if model_type not in ("gpt2", "gpt_neox", "opt"):
            notes.append("no num_key_value_heads: multi-head attention assumed "
                         "(KV heads = attention heads, transformers' default)")
    if heads % kv:
        raise InputError(f"{where}: num_attention_heads {heads} is not a multiple of "
                         f"num_key_value_heads {kv}")
    if raw.get("head_dim") is not None:
        head_dim = _whole(raw, "head_dim", where)
    else:
        if hidden % heads:
            raise InputError(f"{where} lacks head_dim and hidden size {hidden} is not a "
                             f"multiple of the {heads} heads")
        head_dim = hidden // heads
    experts = 0
    for key in EXPERT_FIELDS:
        if raw.get(key) is not None:
            experts = _whole(raw, key, where)
            break
    top_k = expert_ffn = shared_ffn = 0
    if experts > 1:
        top_k = _first(raw, ("num_experts_per_tok",), "experts per token", where)[1]
        if top_k > experts:
            raise InputError(f"{where}: num_experts_per_tok {top_k} is more than the "
                             f"{experts} experts")
        if raw.get("moe_intermediate_size") is not None:
            expert_ffn = _whole(raw, "moe_intermediate_size", where)
        else:
            expert_ffn = _first(raw, FFN_FIELDS, "expert MLP width", where)[1]
        if raw.get("shared_expert_intermediate_size"):
            shared_ffn = _whole(raw, "shared_expert_intermediate_size", where)
        if raw.get("decoder_sparse_step", 1) not in (1, None) or raw.get("mlp_only_layers"):
            notes.append("decoder_sparse_step/mlp_only_layers ignored: every layer is "
                         "taken as a MoE layer")
    if raw.get("n_inner") is None and model_type == "gpt2" and not any(
            raw.get(k) is not None for k in FFN_FIELDS):
        ffn = 4 * hidden
        notes.append("n_inner is null: GPT-2's 4 × n_embd MLP width")
    elif experts > 1 and not any(raw.get(k) is not None for k in FFN_FIELDS):
        ffn = expert_ffn
    else:
        ffn = _first(raw, FFN_FIELDS, "MLP width", where)[1]
    if known:
        gated, tied_default = FAMILIES[model_type]
    else:
        act = str(raw.get("hidden_act") or raw.get("activation_function") or "").lower()
        gated = act in ("silu", "swish", "swiglu", "geglu")
        tied_default = True
        notes.append(f"{'gated (gate, up, down)' if gated else 'plain (up, down)'} MLP "
                     f"assumed from the activation {act or '(none)'!r}")
    if raw.get("tie_word_embeddings") is not None:
        tied = bool(raw["tie_word_embeddings"])
    else:
        tied = tied_default
        if not known:
            notes.append("no tie_word_embeddings: tied, transformers' default")
    if model_type == "opt" and raw.get("word_embed_proj_dim", hidden) != hidden:
        notes.append("word_embed_proj_dim differs from hidden_size: the projections are "
                     "left out")
    window = 0
    if raw.get("sliding_window") is not None and raw.get("use_sliding_window") is not False:
        window = _whole(raw, "sliding_window", where)
        if raw.get("use_sliding_window") and raw.get("max_window_layers") is not None:
            notes.append("max_window_layers ignored: every layer is taken as windowed")
    max_context = 0
    for key in ("max_position_embeddings", "n_positions", "n_ctx"):
        if isinstance(raw.get(key), int) and raw[key] > 0:
            max_context = int(raw[key])
            break
    return ModelConfig(
        name=name or str(raw.get("_name_or_path") or model_type or "model"),
        model_type=model_type or "unknown", hidden=hidden, layers=got["layers"], heads=heads,
        kv_heads=kv, head_dim=head_dim, ffn=ffn, vocab=got["vocab"], gated=gated, tied=tied,
        experts=experts if experts > 1 else 0, top_k=top_k, expert_ffn=expert_ffn,
        shared_ffn=shared_ffn, max_context=max_context, window=window, source=source,
        assumptions=tuple(notes))


def read_config(path: str | os.PathLike[str]) -> ModelConfig:
    """A local config.json (never fetched from anywhere)."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise InputError(f"--model-config {p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--model-config {p}: cannot read it ({exc})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--model-config {p}: not JSON ({exc.msg}, line {exc.lineno})") from None
    return from_dict(raw, name=p.parent.name if p.name == "config.json" else p.stem,
                     where=str(p), source=str(p))


def _bundled_dir() -> Any:
    return resources.files("sheetgen.templates").joinpath(MODELS_DIR)


def bundled() -> dict[str, dict[str, Any]]:
    """Bundled configs by name (file stem), each with its `_source`."""
    out = {}
    for entry in sorted(_bundled_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            out[entry.name[:-5]] = json.loads(entry.read_text("utf-8"))
    return out


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def load_bundled(name: str) -> ModelConfig:
    """A bundled config by name ("llama-3.1-70b"), or by its Hugging Face repo
    ("meta-llama/Llama-3.1-70B"); case, dots and dashes do not matter."""
    models = bundled()
    want = _norm(name)
    for key, raw in models.items():
        repo = str(raw.get("_source", {}).get("repo", "")).rsplit("huggingface.co/", 1)[-1]
        if want in (_norm(key), _norm(repo), _norm(repo.rsplit("/", 1)[-1])):
            src = raw.get("_source", {})
            return from_dict({k: v for k, v in raw.items() if not k.startswith("_")},
                             name=key, where=f"bundled model {key}",
                             source=f"{src.get('file', '')}; {src.get('checked', '')}")
    raise InputError(f"unknown model {name!r}; choose one of: {', '.join(models)} "
                     "(`sheetgen models`), or give --model-config PATH")


def resolve(config: str | os.PathLike[str] | dict[str, Any] | ModelConfig) -> ModelConfig:
    """What the API takes: a bundled name, a path to a config.json, a dict of its fields."""
    if isinstance(config, ModelConfig):
        return config
    if isinstance(config, dict):
        return from_dict(config, where="config dict", source="a dict of config fields")
    text = os.fspath(config)
    if text.endswith(".json") or (os.sep in text and Path(text).exists()):
        return read_config(text)
    return load_bundled(text)
