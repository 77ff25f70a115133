"""The Transformer sheet's inputs as a value (TransformerInputs), their cell values, their checks,
and the op rows as the API returns them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sheetgen.inputs import precision
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.inputs.presets import DTYPES
from sheetgen.model import factories as rf
from sheetgen.model import transformer as ref
from sheetgen.sheets.matmul import ROOF_DECADES
from sheetgen.sheets.transformer.common import (
    NO,
    PHASES,
    YES,
)
from sheetgen.sheets.transformer.drills import DRILLS
from sheetgen.sheets.transformer.ops import op_rows


@dataclass(frozen=True)
class TransformerInputs:
    """Everything the Transformer sheet is built from."""

    model: ModelConfig
    batch: int = 1
    prompt_tokens: int = 512
    generate: int = 128
    tp: int = 1
    kv_dtype: str | None = None
    embedding_dtype: str | None = None
    reserve: float = 0.10
    allreduce: str = ref.AUTO
    attention_dtype: str | None = None  # None: auto (the compute dtype, fp16 under fp8/int8)
    attention_eff: float = ref.ATTENTION_EFF
    prefill_chunk: int = 0  # tokens per prefill step and sequence; 0: the whole prompt
    layer_kernels: int = ref.DEFAULT_LAYER_KERNELS  # each pays the launch floor (realistic)
    attention_quantize: bool = False  # the attention output quantized by a kernel of its own

    def dtypes(self) -> dict[str, str]:
        """The KV cache's and the embeddings' storage choices ("auto": the activations' and
        the weights' storage on the Inputs sheet)."""
        return {"kv": self.kv_dtype or precision.AUTO,
                "embedding": self.embedding_dtype or precision.AUTO}


def input_values(ti: TransformerInputs) -> dict[str, Any]:
    cfg = ti.model
    d = ti.dtypes()
    rows = {ph: [r for r in op_rows(cfg, ph) if r.plotted] for ph, _ in PHASES}
    n = max(len(v) for v in rows.values())
    labels = [r.label for r in rows["pf"]] + [""] * (n - len(rows["pf"]))
    return {
        "xf_hidden": cfg.hidden, "xf_layers": cfg.layers, "xf_heads": cfg.heads,
        "xf_kv_heads": cfg.kv_heads, "xf_head_dim": cfg.head_dim, "xf_ffn": cfg.ffn,
        "xf_vocab": cfg.vocab, "xf_tied": YES if cfg.tied else NO, "xf_window": cfg.window,
        "xf_experts": cfg.experts, "xf_top_k": cfg.top_k, "xf_expert_ffn": cfg.expert_ffn,
        "xf_shared_ffn": cfg.shared_ffn,
        "xf_batch": ti.batch, "xf_prompt": ti.prompt_tokens, "xf_generate": ti.generate,
        "xf_tp": ti.tp, "xf_kv_dtype": d["kv"], "xf_embed_dtype": d["embedding"],
        "xf_reserve": ti.reserve, "xf_allreduce": ti.allreduce,
        "xf_attn_dtype": ti.attention_dtype or precision.AUTO, "xf_attn_eff": ti.attention_eff,
        "xf_chunk": ti.prefill_chunk, "xf_layer_kernels": ti.layer_kernels,
        "xf_attn_quant": YES if ti.attention_quantize else NO,
        "xf_point": list(range(1, n + 1)), "xf_pt_op": labels,
        "xf_decade": list(ROOF_DECADES), "xf_reveal": 0,
        **{f"xf_guess_{slug}": None for slug, *_ in DRILLS},
    }


def check_inputs(ti: TransformerInputs) -> None:
    """Refuse bad workload options up front, naming the option."""
    from sheetgen.errors import InputError

    for option, value, low in (("--batch", ti.batch, 1), ("--prompt-tokens", ti.prompt_tokens, 1),
                               ("--generate", ti.generate, 1), ("--tp", ti.tp, 1),
                               ("--prefill-chunk", ti.prefill_chunk, 0),
                               ("--layer-kernels", ti.layer_kernels, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 2**31 - 1:
            raise InputError(f"{option} must be a whole number from {low}, got {value!r}")
    for option, value in zip(("--kv-dtype", "--embedding-dtype"), ti.dtypes().values(),
                             strict=True):
        precision.check_storage(value, option)
    if not (isinstance(ti.reserve, int | float) and 0 <= ti.reserve <= 0.99):
        raise InputError(f"--reserve must be a fraction from 0 to 0.99, got {ti.reserve!r}")
    if ti.attention_dtype not in (None, precision.AUTO, *DTYPES):
        raise InputError(f"--attention-dtype must be auto or one of {', '.join(DTYPES)}, got "
                         f"{ti.attention_dtype!r}")
    eff = ti.attention_eff
    if isinstance(eff, bool) or not (isinstance(eff, int | float) and 0.01 <= eff <= 1):
        raise InputError(f"--attention-eff must be a fraction from 0.01 to 1, got {eff!r}")
    if not isinstance(ti.attention_quantize, bool):
        raise InputError("--attention-quantize must be yes or no, got "
                         f"{ti.attention_quantize!r}")
    if ti.allreduce not in ref.ALLREDUCES:
        raise InputError(f"--allreduce must be one of {', '.join(ref.ALLREDUCES)}, got "
                         f"{ti.allreduce!r}")


def op_records(cfg: ModelConfig, scalars: dict[str, Any]) -> list[dict[str, Any]]:
    """The op rows as the API gives them (SI), from a plan's reference values."""
    out = []
    for ph, phase in PHASES:
        for row in op_rows(cfg, ph):
            p = row.bound.removesuffix("time")

            def get(key: str, p: str = p) -> Any:
                return scalars.get(p + key, float("nan"))

            bytes_ = scalars[p + "bytes"]
            flops = get("flops") if p + "flops" in scalars else 0.0
            out.append({
                "phase": phase, "op": row.label, "m": get("m"), "k": get("k"), "n": get("n"),
                "count": get("count"), "flops": flops, "bytes_moved": bytes_,
                "intensity": flops / bytes_, "regime": scalars.get(p + "regime",
                                                                   rf.MEMORY_BOUND),
                "time": scalars[row.bound], "compute_ramp": get("ramp"),  # NaN: no ramp
                "k_loop": get("k_loop"), "split_k": get("split_k"),  # NaN: not a GEMM row
                "realistic_time": scalars[row.real],
                "attained_flops": flops / scalars[row.bound],
                "shape_label": f"{phase} {row.label.split(' (')[0]}",
                "refined_time": scalars[row.real]})
    return out


def structure_from_labels(labels: list[str]) -> ModelConfig:
    """The structure a Transformer tab was built for, from its column-A texts (its title and
    operation labels): where a workbook has no document properties to keep it (a Google
    spreadsheet). The numbers are placeholders; the checker reads them from the cells."""
    import json

    texts = [str(x) for x in labels]
    title = next((x for x in texts if x.startswith("Transformer: ")), "")
    name = title.removeprefix("Transformer: ").split(" on the roofline")[0]
    moe = any(x.startswith("MoE router") for x in texts)
    gated = any("gate+up" in x for x in texts)
    shared = any(x.startswith("shared expert") for x in texts)
    return ModelConfig.from_json(json.dumps({"name": name, "gated": gated, "moe": moe,
                                             "shared": shared}))
