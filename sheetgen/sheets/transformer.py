"""The "Transformer" sheet: a real model's prefill and decode as live roofline rows.

Built only when a model is given (`--model NAME` or `--model-config PATH`). The model's
numbers and the workload (batch, prompt and generated tokens, tensor-parallel degree, the
precision of each operand) are input cells; every operation of one forward step is one row
per phase (prefill, decode) whose m, k, n, count, FLOPs, bytes, intensity, regime and times
are formulas from the same quantity factories as the Matmul sheet (sheets.roofline); the
totals (TTFT, TPOT, tokens/s, memory, fit, max batch, critical batch) are named as the API's
summary keys, so `read --block` gives them. sheetgen.model.transformer is the
independent pure-Python model the cells are tested against.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sheetgen.inputs import precision
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.inputs.presets import DTYPES
from sheetgen.layout import palette
from sheetgen.model import factories as rf
from sheetgen.model import transformer as ref
from sheetgen.model.vocabulary import (
    Axis,
    Block,
    BlockRow,
    Chart,
    Input,
    Quantity,
    Series,
    SheetSpec,
    Table,
    Text,
    Validation,
)
from sheetgen.sheets import practice
from sheetgen.sheets.gpu_specs import lookup, match, number
from sheetgen.sheets.matmul import ROOF_DECADES
from sheetgen.sheets.parallel import inputs as pin
from sheetgen.sheets.parallel import text as txt

SHEET = "Transformer"
ATTN_RATE = "xf_attn_real_flops"  # the attention rows' realistic FLOP/s
ON_CHIP = "xf_on_chip"  # bytes per element of an operand that never leaves the chip
#: the Inputs sheet's per-operand bytes (A, B, C), which every sheet's matmuls use
AB, WB, OB = rf.ACT_BYTES, rf.WEIGHT_BYTES, rf.OUT_BYTES
YES, NO = "yes", "no"
PHASES = (("pf", ref.PREFILL), ("dc", ref.DECODE))

_WHOLE = Validation("whole_min", minimum=1, maximum=2**31 - 1, message="A positive whole number")
_COUNT = Validation("whole_min", minimum=0, maximum=2**31 - 1, message="A whole number, 0 or more")


def _num(name: str, label: str, doc: str = "", unit: str = "",
         rule: Validation = _WHOLE) -> Input:
    return Input(name, label, unit, fmt="int", validation=rule, doc=doc)


def _choice(name: str, label: str, choices: tuple[str, ...], doc: str) -> Input:
    return Input(name, label, fmt="text", doc=doc,
                 validation=Validation("choices", choices=choices,
                                       message=" or ".join(choices)))


def _storage(name: str, label: str, doc: str) -> Input:
    return Input(name, label, fmt="text", doc=doc,
                 validation=Validation("choices", choices=precision.CHOICES,
                                       message="auto or a storage dtype (GPU Specs)"))


def q(name: str, label: str, unit: str, template: str, fn: Callable[[dict[str, Any]], Any],
      fmt: str = "sci", doc: str = "") -> Quantity:
    """A quantity whose reference takes its arguments as one dict."""
    return Quantity(name, label, unit, template, lambda **a: fn(a), fmt=fmt, doc=doc)


def storage_bytes_of(name: str, choice: str, auto: str, label: str) -> Quantity:
    """Bytes per element of the storage chosen in `choice` (GPU Specs' storage table);
    "auto": the storage the Inputs sheet's `auto` cell says (e.g. WEIGHT_STORAGE)."""
    def fn(a: dict[str, Any]) -> float:
        chosen = a[auto] if str(a[choice]).strip().lower() == precision.AUTO else a[choice]
        return lookup(a["storage_bytes"], a["storage_name"], chosen)

    return q(name, label, "B",
             f'INDEX({{storage_bytes[]}},MATCH(IF({{{choice}}}="{precision.AUTO}",{{{auto}}},'
             f"{{{choice}}}),{{storage_name[]}},0))", fn, fmt="ratio",
             doc=f"auto: {auto} on the Inputs sheet.")


def counted_flops(name: str, count: str, m: str, k: str, n: str) -> Quantity:
    """count · the matmul FLOPs of sheets.roofline.flops (2·m·k·n)."""
    one = rf.flops("_one", m, k, n)
    return q(name, "FLOPs", "FLOP", f"{{{count}}}*{one.template}",
             lambda a: a[count] * one.reference(**a))


def operand_bytes(name: str, count: str, m: str, k: str, n: str, a_: str | None,
                  w_: str | None, o_: str | None) -> Quantity:
    """count · the matmul bytes of factories.bytes_moved (a·m·k + w·k·n + o·m·n), each
    operand in this sheet's dtype for it; None: an operand that stays on chip (flash
    attention's score tile), 0 bytes per element (xf_on_chip)."""
    one = rf.bytes_moved("_one", m, k, n, a=a_ or ON_CHIP, w=w_ or ON_CHIP, o=o_ or ON_CHIP)
    return q(name, "bytes moved", "B", f"{{{count}}}*({one.template})",
             lambda a: a[count] * one.reference(**a),
             doc="Each operand once, in its own dtype.")


def realistic_time(name: str, kernels: str | None, flops_: str | None, bytes_: str,
                   rate: str = "xf_real_flops") -> Quantity:
    """kernels · launch floor + max(FLOPs / rate, bytes / (bandwidth · measured memory eff)):
    the preset's sourced efficiencies, not the bound's. `rate`: the realistic FLOP/s (peak ·
    measured compute eff; attention's own for the attention rows)."""
    floor = f"{{{kernels}}}*{{launch_overhead}}+" if kernels else ""
    mem = f"{{{bytes_}}}/{{xf_real_bw}}"
    body = f"MAX({{{flops_}}}/{{{rate}}},{mem})" if flops_ else mem

    def fn(a: dict[str, Any]) -> Any:
        t = a[bytes_] / a["xf_real_bw"]
        if flops_:
            t = max(a[flops_] / a[rate], t)
        return (a[kernels] * a["launch_overhead"] if kernels else 0.0) + t

    return q(name, "realistic time", "s", floor + body, fn, fmt="time",
             doc="Launch floor per kernel + the roofline at the measured efficiencies.")


def one_shot(name: str, nbytes: str, eff: str, label: str) -> Quantity:
    """One-shot all-reduce: every GPU reads all G−1 peers' buffers and reduces (one step)."""
    def fn(a: dict[str, Any]) -> float:
        return ref.allreduce_times(a[nbytes], a["xf_tp"], a["link_bw"] * a[eff],
                                   a["link_latency"])[ref.ONE_SHOT]

    return q(name, label, "s",
             f"IF({{xf_tp}}>1,({{xf_tp}}-1)*{{{nbytes}}}/({{link_bw}}*{{{eff}}})"
             "+{link_latency},0)", fn, fmt="time",
             doc="(G−1) · bytes / (bw · eff) + latency (vLLM, TensorRT-LLM custom all-reduce).")


def two_shot(name: str, nbytes: str, eff: str, label: str) -> Quantity:
    """Two-shot all-reduce: reduce-scatter then all-gather by direct peer access."""
    def fn(a: dict[str, Any]) -> float:
        return ref.allreduce_times(a[nbytes], a["xf_tp"], a["link_bw"] * a[eff],
                                   a["link_latency"])[ref.TWO_SHOT]

    return q(name, label, "s",
             f"IF({{xf_tp}}>1,2*({{xf_tp}}-1)/{{xf_tp}}*{{{nbytes}}}/({{link_bw}}*{{{eff}}})"
             "+2*{link_latency},0)", fn, fmt="time",
             doc="2(G−1)/G · bytes / (bw · eff) + 2 · latency.")


@dataclass(frozen=True)
class OpRow:
    """One operation of one phase: its cells, left to right."""

    label: str
    cells: tuple[Quantity | None, ...]
    bound: str  # the bound time's name
    real: str
    plotted: tuple[str, str] | None  # (intensity, flops) names for the chart


# ---------------------------------------------------------------------------- inputs

HIDDEN = _num("xf_hidden", "hidden size", "hidden_size / n_embd")
LAYERS = _num("xf_layers", "layers", "num_hidden_layers / n_layer")
HEADS = _num("xf_heads", "attention heads", "num_attention_heads / n_head")
KV_HEADS = _num("xf_kv_heads", "KV heads", "num_key_value_heads (GQA); = heads for MHA")
HEAD_DIM = _num("xf_head_dim", "head dim", "head_dim, else hidden size ÷ heads")
FFN = _num("xf_ffn", "MLP width", "intermediate_size / ffn_dim / n_inner")
VOCAB = _num("xf_vocab", "vocabulary", "vocab_size")
TIED = _choice("xf_tied", "lm_head tied to the embeddings", (YES, NO),
               "tie_word_embeddings: a tied lm_head reads the embedding table")
EXPERTS = _num("xf_experts", "experts", "num_local_experts / num_experts")
TOP_K = _num("xf_top_k", "experts per token", "num_experts_per_tok")
EXPERT_FFN = _num("xf_expert_ffn", "expert MLP width", "moe_intermediate_size, else the MLP width")
SHARED_FFN = _num("xf_shared_ffn", "shared expert width", "shared_expert_intermediate_size",
                  rule=_COUNT)

BATCH = _num("xf_batch", "batch (sequences)", "Sequences served together.")
PROMPT = _num("xf_prompt", "prompt tokens", "Tokens of each prompt (prefill).")
GENERATE = _num("xf_generate", "generated tokens", "Output tokens per sequence; the first comes "
                "from prefill, the other N − 1 from decode steps.")
TP = _num("xf_tp", "tensor-parallel GPUs (G)", "Heads, MLP and vocabulary split G ways.")
KV_DTYPE = _storage("xf_kv_dtype", "KV-cache dtype", "Keys and values in the cache; auto: the "
                    "activations' storage (Inputs: A stored as).")
E_DTYPE = _storage("xf_embed_dtype", "embedding and lm_head dtype",
                   "auto: the weights' storage (Inputs: B stored as); often kept in bf16 when "
                   "the other weights are quantized.")
RESERVE = Input("xf_reserve", "memory reserve", "fraction", fmt="pct",
                validation=Validation("decimal_range", minimum=0.0, maximum=0.99,
                                      message="A fraction from 0 to 0.99"),
                doc="Left for the CUDA context, NCCL buffers and workspaces; 0.10 = vLLM's "
                    "default gpu_memory_utilization 0.9 (vllm/config.py, CacheConfig).")
ALLREDUCE = _choice("xf_allreduce", "TP all-reduce", ref.ALLREDUCES,
                    "auto: the fastest of ring, one-shot and two-shot for each phase.")
ATTN_DTYPE = _choice("xf_attn_dtype", "attention compute dtype", (precision.AUTO, *DTYPES),
                     "The realistic estimate's attention rate. auto: the compute dtype, or fp16 "
                     "for fp8/int8 compute (flash-attention kernels take fp16/bf16 operands; "
                     "TensorRT-LLM's FP8 builds name float16 for the attention plugin).")
ATTN_EFF = Input("xf_attn_eff", "flash-attention efficiency", "fraction", fmt="pct",
                 validation=Validation("decimal_range", minimum=0.01, maximum=1.0,
                                       message="A fraction from 0.01 to 1"),
                 doc="Share of that dtype's peak attention reaches (realistic estimate): "
                     "FlashAttention-2 35 % on H100, FlashAttention-3 75 % (arXiv:2407.08608); "
                     "FlashAttention-2 50-73 % on A100 (arXiv:2307.08691).")

MODEL_INPUTS = (HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, TIED)
MOE_INPUTS = (EXPERTS, TOP_K, EXPERT_FFN)
WORKLOAD_INPUTS = (BATCH, PROMPT, GENERATE, TP, KV_DTYPE, E_DTYPE, RESERVE, ALLREDUCE,
                   ATTN_DTYPE, ATTN_EFF)


def _split(name: str, total: str, label: str) -> Quantity:
    return rf.ceil_div(name, total, "xf_tp", label, doc="ROUNDUP(total / G): the larger share.")


# ---------------------------------------------------------------------------- derived


def derived(cfg: ModelConfig) -> list[Quantity]:
    """Per-GPU widths, tokens and contexts of each phase, bytes per element."""
    up = 2 if cfg.gated else 1
    out = [
        q(ON_CHIP, "bytes per element kept on chip", "B", "0", lambda a: 0.0, fmt="int",
          doc="Flash attention's score tile: never written to HBM."),
        storage_bytes_of("xf_kvb", "xf_kv_dtype", "act_storage", "KV-cache bytes per element"),
        storage_bytes_of("xf_eb", "xf_embed_dtype", "weight_storage",
                         "embedding bytes per element"),
        _split("xf_heads_g", "xf_heads", "attention heads per GPU"),
        _split("xf_kv_g", "xf_kv_heads", "KV heads per GPU (at least 1: replicated)"),
        rf.ratio("xf_group", "xf_heads_g", "xf_kv_g", "query heads per KV head", "",
                 doc="GQA: these rows of attention share one K and V read."),
        q("xf_qkv_g", "QKV width per GPU", "", "({xf_heads_g}+2*{xf_kv_g})*{xf_head_dim}",
          lambda a: (a["xf_heads_g"] + 2 * a["xf_kv_g"]) * a["xf_head_dim"], fmt="int"),
        _split("xf_vocab_g", "xf_vocab", "vocabulary per GPU"),
        q("xf_pf_tokens", "prefill tokens (m)", "", "{xf_batch}*{xf_prompt}",
          lambda a: a["xf_batch"] * a["xf_prompt"], fmt="int"),
        rf.same_as("xf_dc_tokens", "xf_batch", "decode tokens per step (m)", "", fmt="int"),
        q("xf_pf_ctx", "prefill mean attended context (causal)", "", "({xf_prompt}+1)/2",
          lambda a: (a["xf_prompt"] + 1) / 2, fmt="ratio"),
        q("xf_dc_ctx", "decode mean context", "", "{xf_prompt}+{xf_generate}/2",
          lambda a: a["xf_prompt"] + a["xf_generate"] / 2, fmt="ratio",
          doc="Steps run contexts prompt + 1 … prompt + N − 1: the mean is prompt + N/2."),
        rf.plus("xf_context", ("xf_prompt", "xf_generate"), "context at the end", "",
                fmt="int"),
        rf.product("xf_real_flops", "peak_flops", "suggest_compute_eff",
                   "realistic FLOP/s (measured efficiency)", "FLOP/s"),
        rf.product("xf_real_bw", "hbm_bw", "suggest_memory_eff",
                   "realistic bandwidth (measured efficiency)", "B/s"),
        *attention_rate(),
    ]
    if cfg.moe:
        out.append(_split("xf_effn_g", "xf_expert_ffn", "expert MLP width per GPU"))
        for ph, _ in PHASES:
            tok = f"xf_{ph}_tokens"
            out.append(q(f"xf_{ph}_touched", f"{'prefill' if ph == 'pf' else 'decode'} "
                         "experts touched (expected)", "",
                         f"IF({{xf_top_k}}>={{xf_experts}},{{xf_experts}},{{xf_experts}}*(1-10^"
                         f"MAX(-300,{{{tok}}}*LOG10(1-{{xf_top_k}}/{{xf_experts}}))))",
                         lambda a, tok=tok: ref.distinct_experts(
                             a["xf_experts"], a["xf_top_k"], a[tok]), fmt="ratio",
                         doc="E·(1 − (1 − k/E)^T) for T tokens, uniform routing (the power "
                             "as 10^(T·log10(1 − k/E)), floored at 1E-300: no underflow)."))
        if cfg.shared_ffn:
            out.append(_split("xf_sffn_g", "xf_shared_ffn", "shared expert width per GPU"))
    else:
        out.append(_split("xf_ffn_g", "xf_ffn", "MLP width per GPU"))
    widths = ["{xf_qkv_g}", "{xf_hidden}",
              f"{up}*{{{'xf_effn_g' if cfg.moe else 'xf_ffn_g'}}}"]
    out.append(q("xf_widest", "widest activation per token", "", f"MAX({','.join(widths)})",
                 lambda a: max(a["xf_qkv_g"], a["xf_hidden"],
                               up * a["xf_effn_g" if cfg.moe else "xf_ffn_g"]), fmt="int"))
    return out


def attention_rate() -> list[Quantity]:
    """Attention's realistic FLOP/s: its dtype's dense peak (GPU Specs) · the flash-attention
    efficiency. Falls back to the compute dtype's peak where the GPU lacks that dtype."""
    wide = ",".join(f'{{dtype}}="{d}"' for d in ref.ATTENTION_DTYPES)
    peak = ("INDEX({spec_peaks[]},MATCH({gpu_name},{spec_name[]},0),"
            "MATCH({xf_attn_dtype_used},{dtype_name[]},0))")

    def used(a: dict[str, Any]) -> str:
        choice = str(a["xf_attn_dtype"]).strip().lower()
        return ref.attention_dtype(choice, str(a["dtype"]).strip().lower())

    def attn_peak(a: dict[str, Any]) -> float:
        row = match(a["spec_name"], a["gpu_name"])
        col = match(a["dtype_name"], a["xf_attn_dtype_used"])
        value = (float("nan") if row is None or col is None
                 else number(np.asarray(a["spec_peaks"], dtype=object)[row][col]))
        return a["peak_flops"] if math.isnan(value) else value

    return [
        q("xf_attn_dtype_used", "attention dtype used", "",
          f'IF({{xf_attn_dtype}}="{precision.AUTO}",IF(OR({wide}),{{dtype}},'
          f'"{ref.ATTENTION_FALLBACK}"),{{xf_attn_dtype}})', used, fmt="text",
          doc="auto: the compute dtype when 16-bit or wider, else fp16."),
        q("xf_attn_peak", "attention dtype's peak", "FLOP/s",
          f"IF(ISNUMBER({peak}),{peak},{{peak_flops}})", attn_peak,
          doc="GPU Specs' dense peak for that dtype (the compute dtype's if the GPU lacks it)."),
        rf.product("xf_attn_real_flops", "xf_attn_peak", "xf_attn_eff",
                   "realistic attention FLOP/s (flash attention)", "FLOP/s"),
    ]


# ---------------------------------------------------------------------------- op rows


def _op(ph: str, slug: str, label: str, m: tuple[str, Callable[[dict[str, Any]], float]],
        k: tuple[str, Callable[[dict[str, Any]], float]],
        n: tuple[str, Callable[[dict[str, Any]], float]],
        count: tuple[str, Callable[[dict[str, Any]], float]], kernels: str | None,
        a_: str | None, w_: str | None, o_: str | None, rate: str = "xf_real_flops") -> OpRow:
    p = f"xf_{ph}_{slug}_"
    dims = [q(p + d, d, "", t, f, fmt="ratio") for d, (t, f) in
            zip(("m", "k", "n", "count"), (m, k, n, count), strict=True)]
    kern = None
    if kernels:
        name = kernels.strip("{}")
        kern = q(p + "kernels", "kernels", "", kernels,
                 (lambda a: 1.0) if kernels == "1" else (lambda a: a[name]), fmt="int")
    f = counted_flops(p + "flops", p + "count", p + "m", p + "k", p + "n")
    b = operand_bytes(p + "bytes", p + "count", p + "m", p + "k", p + "n", a_, w_, o_)
    i = rf.intensity(p + "intensity", p + "flops", p + "bytes")
    r = rf.regime(p + "regime", p + "intensity")
    ct = rf.compute_time(p + "compute_time", p + "flops")
    mt = rf.memory_time(p + "memory_time", p + "bytes")
    t = rf.predicted_time(p + "time", p + "compute_time", p + "memory_time", "bound time")
    real = realistic_time(p + "real", kern.name if kern else None, p + "flops", p + "bytes",
                          rate)
    return OpRow(label, (*dims, kern, f, b, i, r, ct, mt, t, real), t.name, real.name,
                 (i.name, f.name))


def _ref(name: str) -> tuple[str, Callable[[dict[str, Any]], float]]:
    return f"{{{name}}}", lambda a: a[name]


def _times(*names: str) -> tuple[str, Callable[[dict[str, Any]], float]]:
    return "*".join(f"{{{n}}}" for n in names), lambda a: math.prod(a[n] for n in names)


def _const(value: float) -> tuple[str, Callable[[dict[str, Any]], float]]:
    return f"{value:g}", lambda a: value


def op_rows(cfg: ModelConfig, ph: str) -> list[OpRow]:
    """The operation rows of one phase, in execution order."""
    up = 2 if cfg.gated else 1
    tok = _ref(f"xf_{ph}_tokens")
    ctx = _ref(f"xf_{ph}_ctx")
    layers = _ref("xf_layers")
    kern = "{xf_layers}"
    rows_attn = _times("xf_prompt", "xf_group") if ph == "pf" else _ref("xf_group")
    heads = _times("xf_layers", "xf_batch", "xf_kv_g")
    ops = [
        _op(ph, "qkv", "QKV projection", tok, _ref("xf_hidden"), _ref("xf_qkv_g"), layers,
            kern, AB, WB, OB),
        _op(ph, "scores", "attention scores (Q·Kᵀ)", rows_attn, _ref("xf_head_dim"), ctx,
            heads, kern, AB, "xf_kvb", None, ATTN_RATE),
        _op(ph, "values", "attention values (P·V)", rows_attn, ctx, _ref("xf_head_dim"),
            heads, None, None, "xf_kvb", OB, ATTN_RATE),
        _op(ph, "out", "output projection", tok, _times("xf_heads_g", "xf_head_dim"),
            _ref("xf_hidden"), layers, kern, AB, WB, OB),
    ]
    upname = "gate+up" if cfg.gated else "up"
    if cfg.moe:
        touched = f"xf_{ph}_touched"
        rows = (f"{{xf_{ph}_tokens}}*{{xf_top_k}}/{{{touched}}}",
                lambda a: a[f"xf_{ph}_tokens"] * a["xf_top_k"] / a[touched])
        eff = ("2*{xf_effn_g}" if up == 2 else "{xf_effn_g}", lambda a: up * a["xf_effn_g"])
        ops += [
            _op(ph, "router", "MoE router", tok, _ref("xf_hidden"), _ref("xf_experts"), layers,
                kern, AB, WB, OB),
            _op(ph, "eup", f"experts {upname} (touched experts)", rows, _ref("xf_hidden"),
                eff, _times("xf_layers", touched), kern, AB, WB, OB),
            _op(ph, "edown", "experts down", rows, _ref("xf_effn_g"), _ref("xf_hidden"),
                _times("xf_layers", touched), kern, AB, WB, OB),
        ]
        if cfg.shared_ffn:
            sw = ("2*{xf_sffn_g}" if up == 2 else "{xf_sffn_g}", lambda a: up * a["xf_sffn_g"])
            ops += [
                _op(ph, "sup", f"shared expert {upname}", tok, _ref("xf_hidden"), sw, layers,
                    kern, AB, WB, OB),
                _op(ph, "sdown", "shared expert down", tok, _ref("xf_sffn_g"),
                    _ref("xf_hidden"), layers, kern, AB, WB, OB),
            ]
    else:
        fw = ("2*{xf_ffn_g}" if up == 2 else "{xf_ffn_g}", lambda a: up * a["xf_ffn_g"])
        ops += [
            _op(ph, "up", f"MLP {upname}", tok, _ref("xf_hidden"), fw, layers, kern, AB,
                WB, OB),
            _op(ph, "down", "MLP down", tok, _ref("xf_ffn_g"), _ref("xf_hidden"), layers, kern,
                AB, WB, OB),
        ]
    ops.append(_op(ph, "lm", "lm_head (last position)", _ref("xf_batch"), _ref("xf_hidden"),
                   _ref("xf_vocab_g"), _const(1), "1", AB, "xf_eb", OB))
    ops.append(_nonmatmul(cfg, ph))
    return ops


def _nonmatmul(cfg: ModelConfig, ph: str) -> OpRow:
    """Norms, residual adds, the MLP activation and the KV-cache write: memory-bound bytes."""
    p = f"xf_{ph}_misc_"
    up = 2 if cfg.gated else 1
    if cfg.moe:
        width = "{xf_top_k}*{xf_effn_g}" + ("+{xf_sffn_g}" if cfg.shared_ffn else "")

        def wfn(a: dict[str, Any]) -> float:
            return a["xf_top_k"] * a["xf_effn_g"] + (a["xf_sffn_g"] if cfg.shared_ffn else 0)
    else:
        width = "{xf_ffn_g}"

        def wfn(a: dict[str, Any]) -> float:
            return a["xf_ffn_g"]
    tok = f"xf_{ph}_tokens"
    m = rf.same_as(p + "m", tok, "m", "", fmt="ratio")
    kern = q(p + "kernels", "kernels", "", f"{ref.NONMATMUL_KERNELS}*{{xf_layers}}",
             lambda a: ref.NONMATMUL_KERNELS * a["xf_layers"], fmt="int")
    b = q(p + "bytes", "bytes moved", "B",
          f"{{xf_layers}}*{{{p}m}}*({{act_elem_bytes}}*({ref.NORM_RESIDUAL_ELEMENTS}*{{xf_hidden}}"
          f"+{up + 1}*({width}))+{{xf_kvb}}*2*{{xf_kv_g}}*{{xf_head_dim}})",
          lambda a: a["xf_layers"] * a[p + "m"] * (
              a[AB] * (ref.NORM_RESIDUAL_ELEMENTS * a["xf_hidden"] + (up + 1) * wfn(a))
              + a["xf_kvb"] * 2 * a["xf_kv_g"] * a["xf_head_dim"]),
          doc="Per token per layer: norms and residual adds 10·h, the activation "
              f"{up + 1}× its width, in the activation dtype; the new K and V in the KV dtype.")
    mt = rf.memory_time(p + "time", p + "bytes", "bound time")
    real = realistic_time(p + "real", kern.name, None, p + "bytes")
    return OpRow("non-matmul (norms, residual, activation, KV write)",
                 (m, None, None, None, kern, None, b, None, None, None, None, mt, real),
                 mt.name, real.name, None)


# ---------------------------------------------------------------------------- comm


def comm(ph: str) -> list[Quantity]:
    """The two all-reduces per layer of one phase: each algorithm, the one used, the total."""
    p = f"xf_{ph}_"
    nbytes = p + "ar_bytes"
    out = [q(nbytes, "bytes per all-reduce", "B", f"{{{p}tokens}}*{{xf_hidden}}*{{out_elem_bytes}}",
             lambda a: a[p + "tokens"] * a["xf_hidden"] * a[OB]),
           pin.ring_allreduce(p + "ring", nbytes, "ring", gpus="xf_tp", bw="link_bw",
                              latency="link_latency", eff="link_eff"),
           one_shot(p + "one", nbytes, "link_eff", "one-shot"),
           two_shot(p + "two", nbytes, "link_eff", "two-shot")]
    ring, one, two = p + "ring", p + "one", p + "two"

    def used(a: dict[str, Any]) -> str:
        return ref.allreduce_used({ref.RING: a[ring], ref.ONE_SHOT: a[one],
                                   ref.TWO_SHOT: a[two]}, a["xf_allreduce"])

    out.append(q(p + "ar_used", "all-reduce used", "",
                 f'IF({{xf_allreduce}}="{ref.AUTO}",IF(AND({{{ring}}}<={{{one}}},{{{ring}}}<='
                 f'{{{two}}}),"{ref.RING}",IF({{{one}}}<={{{two}}},"{ref.ONE_SHOT}",'
                 f'"{ref.TWO_SHOT}")),{{xf_allreduce}})', used, fmt="text",
                 doc="auto: the fastest of the three at the bound's link efficiency."))

    def pick(names: tuple[str, str, str], label: str, name: str) -> Quantity:
        r, o, t = names

        def fn(a: dict[str, Any]) -> float:
            chosen = {ref.RING: a[r], ref.ONE_SHOT: a[o], ref.TWO_SHOT: a[t]}[a[p + "ar_used"]]
            return 2 * a["xf_layers"] * chosen

        return q(name, label, "s",
                 f'2*{{xf_layers}}*IF({{{p}ar_used}}="{ref.RING}",{{{r}}},IF({{{p}ar_used}}='
                 f'"{ref.ONE_SHOT}",{{{o}}},{{{t}}}))', fn, fmt="time",
                 doc="Two all-reduces per layer (after attention, after the MLP).")

    out.append(pick((ring, one, two), "all-reduces per step (bound)", p + "comm_bound"))
    out += [pin.ring_allreduce(p + "ring_real", nbytes, "ring (measured link eff)",
                               gpus="xf_tp", bw="link_bw", latency="link_latency",
                               eff="suggest_link_eff"),
            one_shot(p + "one_real", nbytes, "suggest_link_eff", "one-shot (measured)"),
            two_shot(p + "two_real", nbytes, "suggest_link_eff", "two-shot (measured)")]
    out.append(pick((p + "ring_real", p + "one_real", p + "two_real"),
                    "all-reduces per step (realistic)", p + "comm"))
    return out


# ---------------------------------------------------------------------------- totals


def _weights(cfg: ModelConfig, gpu: bool) -> tuple[str, Callable[[dict[str, Any]], float]]:
    """Linear-layer weights of one GPU (gpu) or of the whole model, as elements."""
    up = 2 if cfg.gated else 1
    g = "_g" if gpu else ""
    h = "{xf_hidden}"
    qkv = "{xf_qkv_g}" if gpu else "({xf_heads}+2*{xf_kv_heads})*{xf_head_dim}"
    attn = f"{h}*{qkv}+{{xf_heads{g}}}*{{xf_head_dim}}*{h}"
    if cfg.moe:
        ef = "{xf_effn_g}" if gpu else "{xf_expert_ffn}"
        mlp = f"{{xf_experts}}*{up + 1}*{h}*{ef}+{h}*{{xf_experts}}"
        if cfg.shared_ffn:
            mlp += f"+{up + 1}*{h}*{'{xf_sffn_g}' if gpu else '{xf_shared_ffn}'}"
    else:
        mlp = f"{up + 1}*{h}*{'{xf_ffn_g}' if gpu else '{xf_ffn}'}"

    def fn(a: dict[str, Any]) -> float:
        hid, d = a["xf_hidden"], a["xf_head_dim"]
        heads = a["xf_heads_g"] if gpu else a["xf_heads"]
        width = a["xf_qkv_g"] if gpu else (a["xf_heads"] + 2 * a["xf_kv_heads"]) * d
        total = hid * width + heads * d * hid
        if cfg.moe:
            ef = a["xf_effn_g"] if gpu else a["xf_expert_ffn"]
            total += a["xf_experts"] * (up + 1) * hid * ef + hid * a["xf_experts"]
            if cfg.shared_ffn:
                total += (up + 1) * hid * (a["xf_sffn_g"] if gpu else a["xf_shared_ffn"])
        else:
            total += (up + 1) * hid * (a["xf_ffn_g"] if gpu else a["xf_ffn"])
        return a["xf_layers"] * total

    return f"{{xf_layers}}*({attn}+{mlp})", fn


def _tied(a: dict[str, Any]) -> float:
    return 1.0 if a["xf_tied"] == YES else 2.0


def totals(cfg: ModelConfig, rows: dict[str, list[OpRow]]) -> list[Quantity]:
    out: list[Quantity] = []
    for ph, phase in PHASES:
        bound = tuple(r.bound for r in rows[ph])
        real = tuple(r.real for r in rows[ph])
        out += [rf.plus(f"xf_{ph}_ops_bound", bound, f"{phase}: operations (bound)", "s",
                        fmt="time"),
                rf.plus(f"xf_{ph}_ops_real", real, f"{phase}: operations (realistic)", "s",
                        fmt="time")]
    lin_g, lin_g_fn = _weights(cfg, True)
    lin, lin_fn = _weights(cfg, False)
    out += [
        rf.plus("ttft_bound", ("xf_pf_ops_bound", "xf_pf_comm_bound"), "TTFT (bound)", "s",
                fmt="time", doc="Prefill: every operation at the roofline plus the "
                "all-reduces."),
        rf.plus("ttft", ("xf_pf_ops_real", "xf_pf_comm"), "TTFT (realistic)", "s",
                fmt="time", doc="Measured efficiencies and a launch floor per kernel."),
        rf.plus("tpot_bound", ("xf_dc_ops_bound", "xf_dc_comm_bound"), "TPOT (bound)", "s",
                fmt="time", doc="One decode step at the mean context."),
        rf.plus("tpot", ("xf_dc_ops_real", "xf_dc_comm"), "TPOT (realistic)", "s", fmt="time",
                doc="Mean time per output token over the decode steps."),
        rf.ratio("tokens_per_s", "xf_batch", "tpot", "decode tokens/s (whole batch)",
                 "tokens/s", fmt="ratio"),
        q("xf_tps_seq", "decode tokens/s per sequence", "tokens/s", "1/{tpot}",
          lambda a: 1.0 / a["tpot"], fmt="ratio"),
        q("xf_e2e", "end-to-end latency (realistic)", "s", "{ttft}+({xf_generate}-1)*{tpot}",
          lambda a: a["ttft"] + (a["xf_generate"] - 1) * a["tpot"], fmt="time",
          doc="TTFT + (N − 1) · TPOT"),
        q("xf_e2e_bound", "end-to-end latency (bound)", "s",
          "{ttft_bound}+({xf_generate}-1)*{tpot_bound}",
          lambda a: a["ttft_bound"] + (a["xf_generate"] - 1) * a["tpot_bound"], fmt="time"),
        q("xf_params", "parameters (whole model)", "",
          f"{lin}+{{xf_vocab}}*{{xf_hidden}}*IF({{xf_tied}}=\"{YES}\",1,2)"
          "+(2*{xf_layers}+1)*{xf_hidden}",
          lambda a: lin_fn(a) + a["xf_vocab"] * a["xf_hidden"] * _tied(a)
          + (2 * a["xf_layers"] + 1) * a["xf_hidden"]),
        q("xf_embed_g", "embedding table per GPU", "B", "{xf_eb}*{xf_vocab_g}*{xf_hidden}",
          lambda a: a["xf_eb"] * a["xf_vocab_g"] * a["xf_hidden"]),
        q("weights_bytes", "weights per GPU", "B",
          f"{{weight_elem_bytes}}*{lin_g}+{{xf_embed_g}}*IF({{xf_tied}}=\"{YES}\",1,2)"
          "+{xf_eb}*(2*{xf_layers}+1)*{xf_hidden}",
          lambda a: a[WB] * lin_g_fn(a) + a["xf_embed_g"] * _tied(a)
          + a["xf_eb"] * (2 * a["xf_layers"] + 1) * a["xf_hidden"],
          doc="Linear layers in the weight dtype; embeddings, lm_head and norms in theirs."),
        q("kv_bytes_per_token", "KV bytes per token (all layers)", "B",
          "2*{xf_layers}*{xf_kv_heads}*{xf_head_dim}*{xf_kvb}",
          lambda a: 2 * a["xf_layers"] * a["xf_kv_heads"] * a["xf_head_dim"] * a["xf_kvb"],
          doc="2 (K and V) · layers · KV heads · head dim · bytes"),
        q("xf_kv_token_g", "KV bytes per token on one GPU", "B",
          "2*{xf_layers}*{xf_kv_g}*{xf_head_dim}*{xf_kvb}",
          lambda a: 2 * a["xf_layers"] * a["xf_kv_g"] * a["xf_head_dim"] * a["xf_kvb"],
          doc="Replicated KV heads count on every GPU that holds them."),
        q("kv_bytes", "KV cache (whole batch, all GPUs' unique heads)", "B",
          "{xf_batch}*{xf_context}*{kv_bytes_per_token}",
          lambda a: a["xf_batch"] * a["xf_context"] * a["kv_bytes_per_token"]),
        q("xf_kv_gpu", "KV cache per GPU", "B", "{xf_batch}*{xf_context}*{xf_kv_token_g}",
          lambda a: a["xf_batch"] * a["xf_context"] * a["xf_kv_token_g"]),
        q("xf_act_seq", "prefill activations per sequence", "B",
          "{xf_prompt}*({act_elem_bytes}*{xf_hidden}+{out_elem_bytes}*{xf_widest})",
          lambda a: a["xf_prompt"] * (a[AB] * a["xf_hidden"] + a[OB] * a["xf_widest"]),
          doc="Input and widest output of one matmul, per prompt token."),
        rf.product("xf_activations", "xf_batch", "xf_act_seq", "peak activations", "B"),
        rf.plus("memory_per_gpu", ("weights_bytes", "xf_kv_gpu", "xf_activations"),
                "memory per GPU", "B"),
        q("xf_usable", "usable capacity (after the reserve)", "B",
          "{capacity_bytes}*(1-{xf_reserve})",
          lambda a: a["capacity_bytes"] * (1 - a["xf_reserve"]),
          doc="The capacity (Inputs: CAPACITY_BYTES, GiB or GB) less this sheet's reserve, "
              "which replaces the Inputs sheet's MEMORY_RESERVE here."),
        rf.at_most("fits", "memory_per_gpu", "xf_usable", "fits"),
        q("max_batch", "largest batch that fits at this context", "",
          "MAX(0,ROUNDDOWN(({xf_usable}-{weights_bytes})/({xf_context}*{xf_kv_token_g}"
          "+{xf_act_seq}),0))",
          lambda a: float(max(0, math.floor((a["xf_usable"] - a["weights_bytes"])
                                            / (a["xf_context"] * a["xf_kv_token_g"]
                                               + a["xf_act_seq"])))), fmt="int"),
        q("critical_batch", "critical batch (decode turns compute-bound)", "",
          "{attainable_ridge}*{weight_elem_bytes}/2"
          + ("*{xf_experts}/{xf_top_k}" if cfg.moe else ""),
          lambda a: a["attainable_ridge"] * a[WB] / 2
          * (a["xf_experts"] / a["xf_top_k"] if cfg.moe else 1.0), fmt="ratio",
          doc="peak · weight bytes / (2 · bandwidth)"
              + (" × E/k: each expert sees k/E of the tokens" if cfg.moe else "")),
        q("xf_decode_floor", "decode floor (weights + KV read once)", "s",
          f"({{weights_bytes}}-IF({{xf_tied}}=\"{YES}\",0,{{xf_embed_g}})"
          "+{xf_batch}*{xf_dc_ctx}*{xf_kv_token_g})/{hbm_bw}",
          lambda a: (a["weights_bytes"] - (0 if a["xf_tied"] == YES else a["xf_embed_g"])
                     + a["xf_batch"] * a["xf_dc_ctx"] * a["xf_kv_token_g"]) / a["hbm_bw"],
          fmt="time", doc="The input embedding table is not read: only the batch's rows."),
        rf.ratio("xf_kv_share", "xf_kv_gpu", "memory_per_gpu", "KV cache's share of memory",
                 "fraction", fmt="pct"),
    ]
    return out


# ---------------------------------------------------------------------------- sentences


def _gb(name: str) -> txt.Num:
    return txt.Num(f"{{{name}}}/1E+09", lambda a: a[name] / 1e9)


def _n(name: str) -> txt.Num:
    return txt.Num(f"{{{name}}}", lambda a: a[name])


def _us(name: str) -> txt.Num:
    return txt.Num(f"1E+06*{{{name}}}", lambda a: 1e6 * a[name])


def sentences() -> list[Quantity]:
    cb = _n("critical_batch")
    return [
        txt.sentence("xf_say_prefill", "prefill", [
            "Prefill runs ", _n("xf_pf_tokens"), " tokens through each weight read, ",
            txt.When("{xf_pf_tokens}>={critical_batch}",
                     lambda a: a["xf_pf_tokens"] >= a["critical_batch"],
                     ["above the critical batch of ", cb, ": its weight matmuls are "
                      "compute-bound, so TTFT halves with twice the FLOP/s (fp8 compute, or "
                      "twice the GPUs) and hardly moves with bandwidth."],
                     ["below the critical batch of ", cb, ": memory-bound, so TTFT halves "
                      "with twice the bandwidth or half the weight bytes."])]),
        txt.sentence("xf_say_decode", "decode", [
            "Decode runs ", _n("xf_batch"), " tokens per weight read, ",
            txt.When("{xf_batch}>={critical_batch}",
                     lambda a: a["xf_batch"] >= a["critical_batch"],
                     ["at or above the critical batch of ", cb, ": compute-bound; TPOT "
                      "halves with twice the FLOP/s."],
                     ["below the critical batch of ", cb, ": memory-bound. TPOT halves with "
                      "twice the bandwidth or half the bytes read per step: ",
                      _gb("weights_bytes"), " GB of weights and ", _gb("xf_kv_gpu"),
                      " GB of KV cache per GPU (int8 or fp8 weights, an fp8 KV cache, "
                      "or twice the GPUs)."])]),
        txt.sentence("xf_say_attention", "attention", [
            "Attention over the KV cache never turns compute-bound in decode: its intensity "
            "is ", _n("xf_dc_scores_intensity"), " FLOP/B (2 × ", _n("xf_group"),
            " query heads per KV head ÷ ", _n("xf_kvb"), " B per element) against a ridge "
            "of ", _n("attainable_ridge"), "; only more query heads per KV head raise it."]),
        txt.sentence("xf_say_kv", "KV cache", [
            "At ", _n("xf_context"), " tokens × batch ", _n("xf_batch"), " the KV cache is ",
            txt.Num("100*{xf_kv_share}", lambda a: 100 * a["xf_kv_share"], 2),
            " % of the memory per GPU (", _gb("xf_kv_gpu"), " of ", _gb("memory_per_gpu"),
            " GB)."]),
        txt.sentence("xf_say_fit", "fit", [
            txt.When("{fits}", lambda a: bool(a["fits"]),
                     ["Fits: ", _gb("memory_per_gpu"), " GB of ", _gb("xf_usable"),
                      " GB usable; up to ", _n("max_batch"), " sequences fit at this context."],
                     ["Does not fit: ", _gb("memory_per_gpu"), " GB against ",
                      _gb("xf_usable"), " GB usable (", _n("max_batch"),
                      " sequences fit at this context); quantize, or use more GPUs."])]),
        txt.sentence("xf_say_comm", "all-reduces", [
            txt.When("{xf_tp}>1", lambda a: a["xf_tp"] > 1,
                     ["Tensor parallel: 2 × ", _n("xf_layers"), " all-reduces per step. "
                      "Decode's ", txt.Num("{xf_dc_ar_bytes}/1E+03",
                                          lambda a: a["xf_dc_ar_bytes"] / 1e3),
                      " kB messages are latency-bound: the estimate uses ",
                      txt.Ref("xf_dc_ar_used"), ", ", _us("xf_dc_one"), " µs one-shot against ",
                      _us("xf_dc_ring"), " µs for the ring's 2(G−1) steps; prefill uses ",
                      txt.Ref("xf_pf_ar_used"), "."],
                     ["One GPU: no all-reduces."])]),
    ]


# ---------------------------------------------------------------------------- chart


def _pick(name: str, label: str, unit: str, values: list[tuple[str, Callable[..., float]]],
          scale: float = 1.0) -> Quantity:
    """Row i of a chart-data table shows the i-th value (a block cell); NA() past the end
    or where the value is no number, which charts skip."""
    body = "NA()"
    for i, (tmpl, _) in reversed(list(enumerate(values, start=1))):
        body = f"IF({{xf_point}}={i},{tmpl},{body})"
    div = f"/{scale:.0E}" if scale != 1.0 else ""

    def fn(a: dict[str, Any]) -> np.ndarray:
        from sheetgen.core.excel import ExcelError

        out = []
        for p in np.asarray(a["xf_point"], dtype=float):
            i = int(p)
            v = values[i - 1][1](a) if 1 <= i <= len(values) else None
            ok = isinstance(v, int | float) and math.isfinite(v)
            out.append(v / scale if ok else ExcelError("#N/A"))
        return np.asarray(out, dtype=object)

    return Quantity(name, label, unit, f"IF(ISNUMBER({body}),{body}{div},NA())",
                    lambda **a: fn(a), fmt="ratio", handles_gaps=True)


def chart_tables(rows: dict[str, list[OpRow]], col: int, header_row: int
                 ) -> tuple[Table, Table]:
    plotted = {ph: [r for r in rows[ph] if r.plotted] for ph, _ in PHASES}
    cols: list[Quantity] = []
    for ph, phase in PHASES:
        xs, ys = [], []
        for r in plotted[ph]:
            assert r.plotted is not None
            i, f = r.plotted
            xs.append((f"{{{i}}}", lambda a, i=i: a[i]))
            ys.append((f"{{{f}}}/{{{r.bound}}}", lambda a, f=f, t=r.bound: a[f] / a[t]))
        cols += [_pick(f"xf_pt_{ph}_x", f"{phase} intensity", "FLOP/B", xs),
                 _pick(f"xf_pt_{ph}_y", f"{phase} attained TFLOP/s", "FLOP/s", ys, 1e12)]
    points = Table(name="xf_points", header_row=header_row, col=col,
                   inputs=(Input("xf_point", "op", fmt="int", helper=True),
                           Input("xf_pt_op", "operation", fmt="text", helper=True)),
                   columns=tuple(cols))
    roof = Table(name="xf_roof", header_row=header_row, col=col + len(points.all_columns()) + 1,
                 inputs=(Input("xf_decade", "decades from ridge", fmt="int", helper=True),),
                 columns=(rf.same_as("xf_roof_x", "roof_x", "roofline x", "FLOP/B"),
                          rf.same_as("xf_roof_y", "roof_tflops", "roofline TFLOP/s",
                                     "TFLOP/s")))
    return points, roof


def chart(row: int, col: int) -> Chart:
    return Chart(
        title="Operations on the roofline (bound times)", row=row, col=col,
        series=(Series("roofline ceiling", "xf_roof_x", "xf_roof_y", line=True, marker="none",
                       fits_axes=False),
                Series("prefill", "xf_pt_pf_x", "xf_pt_pf_y", color=palette.COMPUTE,
                       labels="xf_pt_op"),
                Series("decode", "xf_pt_dc_x", "xf_pt_dc_y", color=palette.MEMORY,
                       labels="xf_pt_op")),
        x=Axis("arithmetic intensity (FLOP/B)", tight=True),
        y=Axis("attained TFLOP/s (TOP/s for int8)", tight=True), width_cols=10,
        height_rows=22)


# ---------------------------------------------------------------------------- drills

REVEAL = Input("xf_reveal", "reveal the answers (1 = yes)", fmt="int",
               validation=Validation("decimal_range", minimum=0, maximum=1,
                                     message="0 hides the answers, 1 shows them"))
#: (slug, question, the quantity that answers it, unit, format)
DRILLS = (
    ("kv", "KV bytes per token, all layers (2 · layers · KV heads · head dim · bytes)",
     "kv_bytes_per_token", "B", "sci"),
    ("floor", "decode floor: weights read per step + KV, ÷ HBM bandwidth",
     "xf_decode_floor", "s", "time"),
    ("critical", "critical batch: peak · weight bytes / (2 · bandwidth)", "critical_batch", "",
     "ratio"),
    ("weights", "weights per GPU", "weights_bytes", "B", "sci"),
)


def drills() -> list[BlockRow | str]:
    """Questions graded like the Practice sheet: type an estimate, get feedback within
    practice.TOLERANCE; the answers show when the reveal cell is 1."""
    rows: list[BlockRow | str] = [BlockRow(REVEAL.label, [REVEAL], "",
                                           "Set to 1 to show the answers.")]
    for slug, question, truth, unit, fmt in DRILLS:
        guess = Input(f"xf_guess_{slug}", "your estimate", unit, fmt=fmt, doc=question)
        fb = practice.numeric_feedback(f"xf_fb_{slug}", guess.name, truth, "feedback")
        ans = Quantity(f"xf_ans_{slug}", "answer", unit, f'IF({{xf_reveal}}=1,{{{truth}}},"")',
                       lambda truth=truth, **a: a[truth] if a["xf_reveal"] == 1 else "",
                       fmt=fmt)
        rows.append(BlockRow(question, [guess, fb, ans], unit))
    return rows


# ---------------------------------------------------------------------------- the sheet

OP_HEADER = ("operation", "m", "k", "n", "count", "kernels", "FLOPs", "bytes moved",
             "FLOP/B", "regime", "compute", "memory", "bound time", "realistic", "unit",
             "note")
CHART_COL = 9  # right of the blocks' notes, which overflow a few columns


def _rows(items: list[Quantity] | tuple[Input, ...]) -> list[BlockRow]:
    return [BlockRow(x.label, [x], x.unit, x.doc) for x in items]


def sheet(cfg: ModelConfig, google: bool = False) -> SheetSpec:
    """The sheet for this model's structure (dense or MoE, gated or plain, shared experts).
    `google`: without the chart (Google's scatter charts need the column layout and log10
    helpers of sheets/chart_helpers, not built for this sheet yet); its data stay."""
    model_inputs = [*MODEL_INPUTS, *(MOE_INPUTS if cfg.moe else ()),
                    *((SHARED_FFN,) if cfg.moe and cfg.shared_ffn else ())]
    rows = {ph: op_rows(cfg, ph) for ph, _ in PHASES}
    blocks: list[Block] = []
    r = 4
    inputs = Block(r, 0, ("Model and workload", "Value", "Unit", "Notes"),
                   ("Model (from the config; edit to explore)", *_rows(tuple(model_inputs)),
                    "Workload", *_rows(WORKLOAD_INPUTS)))
    blocks.append(inputs)
    r += len(inputs.rows) + 2
    tot = totals(cfg, rows)
    by = {x.name: x for x in tot}
    summary_names = ("ttft", "tpot", "ttft_bound", "tpot_bound", "tokens_per_s", "xf_tps_seq",
                     "xf_e2e", "xf_e2e_bound", "xf_decode_floor")
    memory_names = ("xf_params", "weights_bytes", "kv_bytes_per_token", "xf_kv_token_g",
                    "kv_bytes", "xf_kv_gpu", "xf_activations", "memory_per_gpu", "xf_usable",
                    "fits", "max_batch", "critical_batch", "xf_kv_share")
    shown = set(summary_names) | set(memory_names)
    summary = Block(r, 0, ("Totals", "Value", "Unit", "Notes"),
                    ("Latency and throughput", *_rows([by[n] for n in summary_names]),
                     "Memory", *_rows([by[n] for n in memory_names])))
    blocks.append(summary)
    r += len(summary.rows) + 2
    says = sentences()
    blocks.append(Block(r, 0, ("What it means (live)", ""), _rows(says), value_span=12))
    r += len(says) + 3
    drill = drills()
    blocks.append(Block(r, 0, ("Practice (within 10 % is correct)", "your estimate",
                               "feedback", "answer", "unit"), drill))
    r += len(drill) + 3
    helper = [x for x in tot if x.name not in shown]
    der = derived(cfg) + helper
    blocks.append(Block(r, 0, ("Derived", "Value", "Unit", "Notes"), _rows(der)))
    r += len(der) + 3
    comms = [x for ph, _ in PHASES for x in comm(ph)]
    blocks.append(Block(r, 0, ("Tensor-parallel all-reduces", "Value", "Unit", "Notes"),
                        ("Prefill", *_rows(comms[:len(comms) // 2]), "Decode",
                         *_rows(comms[len(comms) // 2:]))))
    r += len(comms) + 5
    texts = [
        Text(0, 0, f"Transformer: {cfg.name} on the roofline, prefill and decode", "title"),
        Text(1, 0, "One row per operation per phase: prefill (m = batch × prompt tokens) "
             "and one decode step (m = batch, attending over the KV cache at the mean "
             "context). Bound = the roofline at the Inputs sheet's efficiencies; realistic = "
             "the GPU preset's measured efficiencies plus a launch floor per kernel.",
             span=14),
        Text(2, 0, "Source: " + (cfg.source or "given fields") + (
            "; assumed: " + "; ".join(cfg.assumptions) if cfg.assumptions else ""),
             span=14),
    ]
    for ph, phase in PHASES:
        texts.append(Text(r - 1, 0, f"{phase.capitalize()}: one forward step", "subtitle"))
        blocks.append(Block(r, 0, OP_HEADER, [BlockRow(o.label, list(o.cells), "") for o in
                                              rows[ph]]))
        r += len(rows[ph]) + 3
    data_col = len(OP_HEADER) + 1
    points, roof = chart_tables(rows, data_col, 4)
    texts.append(Text(3, data_col, "Chart data (#N/A where no point)", "subtitle"))
    widths = {0: 46.0} | {i: 12.0 for i in range(1, len(OP_HEADER))}
    last = roof.col + len(roof.all_columns())
    return SheetSpec(
        name=SHEET, time_unit="ms", texts=tuple(texts), blocks=tuple(blocks),
        tables=(points, roof), charts=() if google else (chart(5, CHART_COL),),
        column_widths=widths,
        hidden_spans=((data_col, last - 1),))


# ---------------------------------------------------------------------------- values

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
        "xf_vocab": cfg.vocab, "xf_tied": YES if cfg.tied else NO,
        "xf_experts": cfg.experts, "xf_top_k": cfg.top_k, "xf_expert_ffn": cfg.expert_ffn,
        "xf_shared_ffn": cfg.shared_ffn,
        "xf_batch": ti.batch, "xf_prompt": ti.prompt_tokens, "xf_generate": ti.generate,
        "xf_tp": ti.tp, "xf_kv_dtype": d["kv"], "xf_embed_dtype": d["embedding"],
        "xf_reserve": ti.reserve, "xf_allreduce": ti.allreduce,
        "xf_attn_dtype": ti.attention_dtype or precision.AUTO, "xf_attn_eff": ti.attention_eff,
        "xf_point": list(range(1, n + 1)), "xf_pt_op": labels,
        "xf_decade": list(ROOF_DECADES), "xf_reveal": 0,
        **{f"xf_guess_{slug}": None for slug, *_ in DRILLS},
    }


def check_inputs(ti: TransformerInputs) -> None:
    """Refuse bad workload options up front, naming the option."""
    from sheetgen.errors import InputError

    for option, value, low in (("--batch", ti.batch, 1), ("--prompt-tokens", ti.prompt_tokens, 1),
                               ("--generate", ti.generate, 1), ("--tp", ti.tp, 1)):
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
                "time": scalars[row.bound], "realistic_time": scalars[row.real],
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
