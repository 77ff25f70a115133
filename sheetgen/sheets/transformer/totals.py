"""The serving totals: TTFT, TPOT, tokens/s, end-to-end latency, weights, KV cache, memory, fit,
largest batch, critical batch, decode floor; named as the API's summary keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sheetgen.inputs.model_config import ModelConfig
from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Quantity
from sheetgen.sheets.transformer.common import (
    AB,
    OB,
    PHASES,
    WB,
    YES,
    OpRow,
    q,
)


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
          "{xf_batch}*{xf_kv_tokens}*{kv_bytes_per_token}",
          lambda a: a["xf_batch"] * a["xf_kv_tokens"] * a["kv_bytes_per_token"]),
        q("xf_kv_gpu", "KV cache per GPU", "B", "{xf_batch}*{xf_kv_tokens}*{xf_kv_token_g}",
          lambda a: a["xf_batch"] * a["xf_kv_tokens"] * a["xf_kv_token_g"]),
        q("xf_act_seq", "prefill activations per sequence", "B",
          "{xf_pf_queries}*({act_elem_bytes}*{xf_hidden}+{out_elem_bytes}*{xf_widest})",
          lambda a: a["xf_pf_queries"] * (a[AB] * a["xf_hidden"] + a[OB] * a["xf_widest"]),
          doc="Input and widest output of one matmul, per prompt token of one step."),
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
          "MAX(0,ROUNDDOWN(({xf_usable}-{weights_bytes})/({xf_kv_tokens}*{xf_kv_token_g}"
          "+{xf_act_seq}),0))",
          lambda a: float(max(0, math.floor((a["xf_usable"] - a["weights_bytes"])
                                            / (a["xf_kv_tokens"] * a["xf_kv_token_g"]
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
