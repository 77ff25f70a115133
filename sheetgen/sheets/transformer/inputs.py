"""The Transformer sheet's input cells (the model's numbers and the workload) and the quantities
derived from them: per-GPU widths, tokens, contexts, bytes per element, the realistic rates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sheetgen.inputs import precision
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.inputs.presets import DTYPES
from sheetgen.model import factories as rf
from sheetgen.model import transformer as ref
from sheetgen.model.vocabulary import (
    Input,
    Quantity,
    Validation,
)
from sheetgen.sheets.gpu_specs import lookup, match, number
from sheetgen.sheets.transformer.common import (
    GEMM_RATE,
    NO,
    ON_CHIP,
    PHASES,
    STEP_TOKENS,
    YES,
    q,
)

_WHOLE = Validation("whole_min", minimum=1, maximum=2**31 - 1, message="A positive whole number")
_COUNT = Validation("whole_min", minimum=0, maximum=2**31 - 1, message="A whole number, 0 or more")


def _num(name: str, label: str, doc: str = "", unit: str = "",
         rule: Validation = _WHOLE) -> Input:
    return Input(name, label, unit, fmt="int", validation=rule, doc=doc)


def _fraction(name: str, label: str, low: float, high: float, doc: str) -> Input:
    return Input(name, label, "fraction", fmt="pct", doc=doc,
                 validation=Validation("decimal_range", minimum=low, maximum=high,
                                       message=f"A fraction from {low:g} to {high:g}"))


def _choice(name: str, label: str, choices: tuple[str, ...], doc: str) -> Input:
    return Input(name, label, fmt="text", doc=doc,
                 validation=Validation("choices", choices=choices,
                                       message=" or ".join(choices)))


def _storage(name: str, label: str, doc: str) -> Input:
    return Input(name, label, fmt="text", doc=doc,
                 validation=Validation("choices", choices=precision.CHOICES,
                                       message="auto or a storage dtype (GPU Specs)"))


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


HIDDEN = _num("xf_hidden", "hidden size", "hidden_size / n_embd")
LAYERS = _num("xf_layers", "layers", "num_hidden_layers / n_layer")
HEADS = _num("xf_heads", "attention heads", "num_attention_heads / n_head")
KV_HEADS = _num("xf_kv_heads", "KV heads", "num_key_value_heads (GQA); = heads for MHA")
HEAD_DIM = _num("xf_head_dim", "head dim", "head_dim, else hidden size ÷ heads")
FFN = _num("xf_ffn", "MLP width", "intermediate_size / ffn_dim / n_inner")
VOCAB = _num("xf_vocab", "vocabulary", "vocab_size")
TIED = _choice("xf_tied", "lm_head tied to the embeddings", (YES, NO),
               "tie_word_embeddings: a tied lm_head reads the embedding table")
CHUNK = _num("xf_chunk", "prefill chunk (tokens; 0: the whole prompt)",
             "Chunked prefill: each sequence's prompt in steps of at most this many tokens, "
             "each step reading every weight again (vLLM's max_num_batched_tokens, "
             "TensorRT-LLM's chunked context).", rule=_COUNT)
WINDOW = _num("xf_window", "sliding window (0: full attention)",
              "sliding_window: each token attends to the last W; the KV cache keeps W per "
              "sequence (Mistral 7B's rolling buffer, arXiv:2310.06825)", rule=_COUNT)
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
RESERVE = _fraction("xf_reserve", "memory reserve", 0.0, 0.99,
                    "Left for the CUDA context, NCCL buffers and workspaces; 0.10 = vLLM's "
                    "default gpu_memory_utilization 0.9 (vllm/config.py, CacheConfig).")
ALLREDUCE = _choice("xf_allreduce", "TP all-reduce", ref.ALLREDUCES,
                    "auto: the fastest of ring, one-shot and two-shot for each phase.")
ATTN_DTYPE = _choice("xf_attn_dtype", "attention compute dtype", (precision.AUTO, *DTYPES),
                     "The realistic estimate's attention rate. auto: the compute dtype, or fp16 "
                     "for fp8/int8 compute (flash-attention kernels take fp16/bf16 operands; "
                     "TensorRT-LLM's FP8 builds name float16 for the attention plugin).")
ATTN_EFF = _fraction("xf_attn_eff", "flash-attention efficiency", 0.01, 1.0,
                     "Share of that dtype's peak attention reaches (realistic estimate): "
                     "FlashAttention-2 35 % on H100, FlashAttention-3 75 % (arXiv:2407.08608); "
                     "FlashAttention-2 50-73 % on A100 (arXiv:2307.08691).")
LAYER_KERNELS = Input("xf_layer_kernels", "kernels per layer", "", fmt="int",
                      validation=_COUNT,
                      doc="Each pays the launch floor (Inputs: launch overhead) in the realistic "
                          f"estimate. {ref.LAYER_KERNELS}: TensorRT-LLM's llama without the "
                          "RMSNorm/GEMM plugins or fused MLP (models/llama/model.py: 2 RMSNorms "
                          "× 2, 5 GEMMs, 3 in the attention plugin, SiLU·gate, 2 residual adds); "
                          f"{ref.FUSED_LAYER_KERNELS} (the default): a fused build (vLLM, "
                          "TensorRT-LLM with its plugins). All-reduces apart.")

ATTN_QUANT = _choice("xf_attn_quant", "attention output quantized by its own kernel", (NO, YES),
                     "yes: the attention kernel writes 16 bit and a kernel of its own quantizes "
                     "it for the output projection, where the activations are narrower than "
                     "the GEMM outputs (fp8): one more kernel per layer, reading the output "
                     "dtype and writing the activation dtype. TensorRT-LLM v0.5's FP8 llama: "
                     "its gpt_attention plugin writes only its 16-bit type (gptAttentionPlugin"
                     ".cpp) and FP8RowLinear quantizes its input (quantization/layers.py), a "
                     "Quantize TensorRT cannot fuse into a plugin. no: fused or 16-bit.")

MODEL_INPUTS = (HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, TIED, WINDOW)
MOE_INPUTS = (EXPERTS, TOP_K, EXPERT_FFN)
WORKLOAD_INPUTS = (BATCH, PROMPT, GENERATE, TP, KV_DTYPE, E_DTYPE, RESERVE, ALLREDUCE,
                   ATTN_DTYPE, ATTN_EFF, CHUNK, LAYER_KERNELS, ATTN_QUANT)


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
        q("xf_pf_tokens", "prefill tokens (all steps)", "", "{xf_batch}*{xf_prompt}",
          lambda a: a["xf_batch"] * a["xf_prompt"], fmt="int"),
        q("xf_pf_steps", "prefill steps (chunks)", "",
          "IF({xf_chunk}=0,1,ROUNDUP({xf_prompt}/{xf_chunk},0))",
          lambda a: float(ref.prefill_steps(a["xf_prompt"], a["xf_chunk"])), fmt="int",
          doc="ROUNDUP(prompt / chunk); 1 without chunking."),
        rf.ratio("xf_pf_queries", "xf_prompt", "xf_pf_steps", "prompt tokens per step", "",
                 doc="The chunks are taken as equal: prompt / steps tokens each."),
        rf.product("xf_pf_step", "xf_batch", "xf_pf_queries", "prefill tokens per step (m)",
                   "", fmt="ratio"),
        rf.same_as("xf_dc_tokens", "xf_batch", "decode tokens per step (m)", "", fmt="int"),
        q("xf_pf_ctx", "prefill mean attended context (causal)", "",
          "IF(OR({xf_window}=0,{xf_prompt}<={xf_window}),({xf_prompt}+1)/2,"
          "({xf_window}*({xf_window}+1)/2+({xf_prompt}-{xf_window})*{xf_window})/{xf_prompt})",
          lambda a: ref.prefill_mean_keys(a["xf_prompt"], a["xf_window"]), fmt="ratio",
          doc="Query i attends to min(i, W) keys: (prompt + 1)/2 without a window."),
        q("xf_dc_ctx", "decode mean context", "",
          "IF(OR({xf_window}=0,{xf_prompt}+{xf_generate}-1<={xf_window}),"
          "{xf_prompt}+{xf_generate}/2,IF({xf_prompt}+1>={xf_window},{xf_window},"
          "(({xf_window}*({xf_window}+1)-{xf_prompt}*({xf_prompt}+1))/2"
          "+({xf_prompt}+{xf_generate}-1-{xf_window})*{xf_window})/({xf_generate}-1)))",
          lambda a: ref.decode_mean_context(a["xf_prompt"], a["xf_generate"], a["xf_window"]),
          fmt="ratio",
          doc="Steps run contexts prompt + 1 … prompt + N − 1, each capped at the window: "
              "the mean is prompt + N/2 when no cap applies."),
        rf.plus("xf_context", ("xf_prompt", "xf_generate"), "context at the end", "",
                fmt="int"),
        q("xf_kv_tokens", "KV-cache tokens per sequence", "",
          "IF({xf_window}=0,{xf_context},MIN({xf_context},{xf_window}))",
          lambda a: ref.kv_tokens(a["xf_context"], a["xf_window"]), fmt="int",
          doc="The context, at most the window (a rolling buffer of W tokens)."),
        q("xf_quant_kernels", "attention-output quantize kernels per layer", "",
          f'IF(AND({{xf_attn_quant}}="{YES}",{{{rf.ACT_BYTES}}}<{{{rf.OUT_BYTES}}}),'
          f'{ref.ATTENTION_QUANTIZE_KERNELS},0)',
          lambda a: ref.quantize_kernels(a["xf_attn_quant"] == YES,
                                         a[rf.ACT_BYTES], a[rf.OUT_BYTES]), fmt="int",
          doc=f"{ref.ATTENTION_QUANTIZE_KERNELS} when the attention output is quantized by its "
              "own kernel and the activations are narrower than the GEMM outputs, else 0: "
              "counted in the non-matmul rows' kernels and bytes."),
        rf.product(GEMM_RATE, "peak_flops", "suggest_compute_eff",
                   "realistic FLOP/s (measured efficiency)", "FLOP/s"),
        rf.product("xf_real_bw", "hbm_bw", "suggest_memory_eff",
                   "realistic bandwidth (measured efficiency)", "B/s"),
        *attention_rate(),
    ]
    if cfg.moe:
        out.append(_split("xf_effn_g", "xf_expert_ffn", "expert MLP width per GPU"))
        for ph, _ in PHASES:
            tok = STEP_TOKENS[ph]
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
