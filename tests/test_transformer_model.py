"""Model configs and the Transformer reference, held to hand computations (issue #20)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sheetgen.errors import InputError
from sheetgen.inputs.model_config import bundled, from_dict, load_bundled, read_config
from sheetgen.model import transformer as t

H100 = t.Machine(peak=989.4e12, bw=3.35e12, capacity=80e9, link_bw=450e9, link_latency=5e-6)
LLAMA_70B = {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
             "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
             "vocab_size": 128256, "tie_word_embeddings": False}


def test_every_listed_model_is_bundled_with_its_source() -> None:
    models = bundled()
    for name in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mistral-7b",
                 "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-72b", "opt-13b"):
        src = models[name]["_source"]
        assert src["repo"].startswith("https://huggingface.co/")
        assert src["checked"]


@pytest.mark.parametrize(("name", "params"), [
    ("llama-3.1-8b", 8.03e9), ("llama-3.1-70b", 70.55e9), ("llama-3.1-405b", 405.9e9),
    ("mixtral-8x7b", 46.7e9), ("qwen2.5-7b", 7.62e9), ("qwen2.5-72b", 72.7e9),
    ("mistral-7b", 7.24e9), ("opt-13b", 12.85e9),
])
def test_parameter_counts_match_the_published_sizes(name: str, params: float) -> None:
    # published: Llama 3.1 8B 8.03B, 70B 70.55B (issue #20); Mixtral 46.7B (Mistral AI);
    # Qwen2.5-7B 7.61B, 72B 72.7B (model cards); Mistral 7.24B; OPT-13B 12.85B
    assert t.parameters(load_bundled(name)) == pytest.approx(params, rel=2e-3)


def test_llama_kv_per_token_by_hand() -> None:
    # 2 (K and V) · 80 layers · 8 KV heads · 128 · 2 B = 327,680 B; 8B: 2·32·8·128·2
    assert t.kv_per_token(load_bundled("llama-3.1-70b"), 2) == 327_680
    assert t.kv_per_token(load_bundled("llama-3.1-8b"), 2) == 131_072
    assert load_bundled("llama-3.1-70b").head_dim == 8192 // 64  # no head_dim field


def test_70b_fits_one_h100_only_at_one_byte_per_weight() -> None:
    cfg = load_bundled("Llama-3.1-70B")
    w1, _ = t.weights_per_gpu(cfg, t.Workload(weight_bytes=1, embed_bytes=1))
    assert w1 == pytest.approx(70.55e9, rel=1e-3)
    # 80e9 − 70.55e9 = 9.45e9 B of room: 28.8k tokens of bf16 KV at batch 1
    assert (80e9 - w1) / 327_680 == pytest.approx(28_800, rel=2e-3)
    # embeddings and lm_head kept in bf16: 68.45e9 + 2·1.05e9 = 72.66e9 B
    w_mixed, _ = t.weights_per_gpu(cfg, t.Workload(weight_bytes=1, embed_bytes=2))
    assert w_mixed == pytest.approx(72.66e9, rel=1e-3)


def test_critical_batch_bf16_and_int8_weights_on_h100() -> None:
    cfg = load_bundled("llama-3.1-70b")
    bf16 = t.estimate(cfg, t.Workload(), H100).summary["critical_batch"]
    int8 = t.estimate(cfg, t.Workload(weight_bytes=1), H100).summary["critical_batch"]
    # peak · bytes per weight / (2 · bandwidth): 989.4e12·2/(2·3.35e12) = 295.3; int8: 147.7
    assert bf16 == pytest.approx(295.3, abs=0.05)
    assert int8 == pytest.approx(147.7, abs=0.05)


def test_mixtral_distinct_experts_at_four_tokens() -> None:
    # 8·(1 − (6/8)^4) = 8·(1 − 0.3164) = 5.469
    assert t.distinct_experts(8, 2, 4) == pytest.approx(5.46875)


def test_decode_weight_floor_70b_tp4() -> None:
    cfg = load_bundled("llama-3.1-70b")
    s = t.estimate(cfg, t.Workload(tp=4, batch=1, prompt=512, generate=128), H100).summary
    # the weights read per step (all but the input embedding table): (68.45e9 linear +
    # 1.05e9 lm_head) · 2 B / 4 GPUs = 34.75e9 B at 3.35 TB/s = 10.37 ms, plus the KV read
    kv = 1 * (512 + 64) * 2 * 80 * 2 * 128 * 2  # batch · mean context · per token on one GPU
    assert s["decode_floor"] == pytest.approx((34.75e9 + kv) / 3.35e12, rel=2e-3)
    # the ring's latency terms: 160 all-reduces · 2(G−1) · 5 µs = 4.8 ms per token
    ring = t.allreduce_times(8192 * 2, 4, 450e9, 5e-6)
    assert 160 * ring[t.RING] == pytest.approx(4.8e-3 + 160 * 1.5 * 16384 / 450e9)
    assert s["decode_allreduce"] == t.ONE_SHOT  # latency-bound: one step beats 2(G−1)
    assert s["prefill_allreduce"] in (t.RING, t.TWO_SHOT)  # 4 MiB messages: bandwidth


def test_operand_bytes_and_gqa_widths() -> None:
    cfg = load_bundled("llama-3.1-70b")
    ops = {o.op: o for o in t.phase_ops(cfg, t.Workload(tp=4, batch=2, weight_bytes=0.5),
                                        t.DECODE)}
    qkv = ops["qkv"]
    assert (qkv.m, qkv.k, qkv.n) == (2, 8192, (16 + 2 * 2) * 128)
    assert qkv.bytes_moved == 80 * (2 * 2 * 8192 + 0.5 * 8192 * 2560 + 2 * 2 * 2560)
    scores = ops["attention scores"]
    # decode: 8 query heads share a KV head; 2 KV heads per GPU at TP4; context 512 + 64
    assert (scores.m, scores.k, scores.n, scores.count) == (8, 128, 576, 80 * 2 * 2)
    assert scores.flops / scores.bytes_moved < 10  # never near the ridge: memory-bound
    tp16 = t.shapes(cfg, 16)
    assert (tp16.heads, tp16.kv_heads) == (4, 1)  # 8 KV heads replicated over 16 GPUs


def test_moe_rows_count_active_flops_and_touched_expert_bytes() -> None:
    cfg = load_bundled("mixtral-8x7b")
    ops = {o.op: o for o in t.phase_ops(cfg, t.Workload(batch=4), t.DECODE)}
    up = ops["experts gate+up"]
    assert up.count == pytest.approx(32 * 5.46875)
    assert up.flops == pytest.approx(32 * 2 * (4 * 2) * 4096 * 2 * 14336)  # 4 tokens × top-2
    weights = 32 * 5.46875 * 4096 * 2 * 14336 * 2
    assert up.bytes_moved == pytest.approx(weights + 32 * 2 * 4 * 2 * (4096 + 2 * 14336))


def test_config_fields_of_each_family(tmp_path: Path) -> None:
    gpt2 = from_dict({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
                      "vocab_size": 50257, "n_inner": None})
    assert (gpt2.ffn, gpt2.kv_heads, gpt2.gated, gpt2.tied) == (3072, 12, False, True)
    qmoe = from_dict({"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
                      "num_attention_heads": 16, "num_key_value_heads": 16,
                      "vocab_size": 151936, "intermediate_size": 5632, "num_experts": 60,
                      "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
                      "shared_expert_intermediate_size": 5632})
    assert (qmoe.experts, qmoe.top_k, qmoe.expert_ffn, qmoe.shared_ffn) == (60, 4, 1408, 5632)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_70B, "model_type": "my_llama", "hidden_act": "silu"}))
    mine = read_config(path)
    assert mine.gated and any("my_llama" in a for a in mine.assumptions)
    assert t.parameters(mine) == pytest.approx(70.55e9, rel=1e-3)


def test_missing_field_is_one_error_naming_it(tmp_path: Path) -> None:
    raw = dict(LLAMA_70B)
    del raw["num_hidden_layers"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError, match="num_hidden_layers"):
        read_config(path)
    with pytest.raises(InputError, match="unknown model 'llama-9'"):
        load_bundled("llama-9")


def test_sliding_window_read_from_the_config() -> None:
    # Mistral-7B-v0.1's config: sliding_window 4096 (its paper's Table 1: window 4096)
    assert load_bundled("mistral-7b").window == 4096
    assert load_bundled("llama-3.1-8b").window == 0
    # Qwen2 configs carry sliding_window with use_sliding_window false: no window
    qwen = {**LLAMA_70B, "model_type": "qwen2", "sliding_window": 131072,
            "use_sliding_window": False}
    assert from_dict(qwen).window == 0
    assert from_dict({**qwen, "use_sliding_window": True}).window == 131072
    with pytest.raises(InputError, match="sliding_window"):
        from_dict({**LLAMA_70B, "sliding_window": -1})


def test_sliding_window_caps_attention_and_the_kv_cache_by_hand() -> None:
    """Mistral-7B (W = 4096), one sequence, 6000-token prompt, 4001 generated tokens."""
    cfg = load_bundled("mistral-7b")
    wl = t.Workload(prompt=6000, generate=4001)
    # prefill: query i attends to min(i, 4096) keys; (4096·4097/2 + 1904·4096) / 6000
    assert t.prefill_mean_keys(6000, 4096) == pytest.approx(16_189_440 / 6000)
    assert t.prefill_mean_keys(4000, 4096) == 4001 / 2  # inside the window: causal mean
    # decode: contexts 6001 … 10000 all exceed the window: 4096 keys per step
    assert t.decode_mean_context(6000, 4001, 4096) == 4096
    # prompt 3000, 2001 tokens: contexts 3001 … 4096 (sum 7097·1096/2) then 904 steps at 4096
    assert t.decode_mean_context(3000, 2001, 4096) == pytest.approx(
        (7097 * 1096 / 2 + 904 * 4096) / 2000)
    assert t.decode_mean_context(3000, 1001, 4096) == 3000 + 1001 / 2  # never capped
    s = t.estimate(cfg, wl, H100).summary
    # the cache keeps 4096 tokens: 4096 · (2 · 32 layers · 8 KV heads · 128 · 2 B) = 0.5 GiB
    assert s["kv_bytes"] == 4096 * 131_072 == 2**29
    ops = {(o.phase, o.op): o for o in t.phase_ops(cfg, wl, t.PREFILL)}
    scores = ops[(t.PREFILL, "attention scores")]
    # 2 · (6000 queries · 4 per KV head) · 128 · 2698.24 keys · (32 layers · 8 KV heads)
    assert scores.flops == pytest.approx(2 * 6000 * 4 * 128 * 2698.24 * 32 * 8)
    full = t.estimate(dataclasses.replace(cfg, window=0), wl, H100).summary
    assert full["kv_bytes"] == 10_001 * 131_072 and full["tpot"] > s["tpot"]


def test_chunked_prefill_reads_the_weights_once_per_chunk_by_hand() -> None:
    """Llama-3.1-8B, one 8192-token prompt in chunks of 2048: 4 steps of m = 2048."""
    cfg = load_bundled("llama-3.1-8b")
    assert t.prefill_steps(8192, 2048) == 4 and t.prefill_steps(8192, 3000) == 3
    assert t.prefill_steps(8192, 0) == t.prefill_steps(100, 8192) == 1
    whole = {o.op: o for o in t.phase_ops(cfg, t.Workload(prompt=8192), t.PREFILL)}
    chunked = {o.op: o for o in t.phase_ops(cfg, t.Workload(prompt=8192, chunk=2048),
                                            t.PREFILL)}
    qkv = chunked["qkv"]
    assert (qkv.m, qkv.count) == (2048, 32 * 4)
    # the same FLOPs: 2 · 8192 tokens · 4096 · 6144 (QKV: 32 + 2 · 8 heads of 128) · 32 layers
    assert qkv.flops == whole["qkv"].flops == 2 * 8192 * 4096 * 6144 * 32
    # bf16: the 4096 × 6144 weight is read 4 times, activations and outputs once
    assert qkv.bytes_moved == 32 * 4 * (2 * 2048 * 4096 + 2 * 4096 * 6144 + 2 * 2048 * 6144)
    assert chunked["attention scores"].flops == pytest.approx(whole["attention scores"].flops)
    assert chunked["lm_head"].count == 1
    assert chunked["non-matmul"].bytes_moved == whole["non-matmul"].bytes_moved
    s = t.estimate(cfg, t.Workload(prompt=8192, chunk=2048), H100).summary
    full = t.estimate(cfg, t.Workload(prompt=8192), H100).summary
    # 2048-token chunks stay above the critical batch (295): compute-bound, the re-reads hide
    assert s["ttft_bound"] == pytest.approx(full["ttft_bound"])
    # 64-token chunks are memory-bound: 128 steps each read the layers' 6.98e9 bf16 weights
    # (8.03e9 parameters less the two 128256 × 4096 tables), 13.96 GB
    small = t.estimate(cfg, t.Workload(prompt=8192, chunk=64), H100).summary
    assert small["ttft_bound"] > 128 * 13.9e9 / 3.35e12 > 3 * full["ttft_bound"]
    # prefill's peak activations: one chunk's 2048 tokens · (2 · 4096 + 2 · 28672) B
    assert s["activations"] == 2048 * (2 * 4096 + 2 * 28672)


#: TensorRT-LLM v0.5's Llama 2 engine shapes (docs/source/performance.md's build.py flags)
LLAMA2_7B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
             "vocab_size": 32000, "tie_word_embeddings": False}


def test_kernels_per_layer_by_hand() -> None:
    """An unfused TensorRT-LLM llama layer runs 15 kernels (2 RMSNorms × 2, 5 GEMMs, 3 in the
    attention plugin, SiLU·gate, 2 residual adds); the matmul rows count 5 of them (QKV,
    attention, output, gate+up, down), the non-matmul row the other 10."""
    assert t.LAYER_KERNELS == 2 * 2 + 5 + 3 + 1 + 2 == 15
    assert t.FUSED_LAYER_KERNELS == 9
    dense, moe = from_dict(LLAMA2_7B), load_bundled("mixtral-8x7b")
    assert t.matmul_kernels(dense) == 5 and t.matmul_kernels(moe) == 6  # router, up, down
    assert t.other_kernels(dense, 15) == 10 and t.other_kernels(dense, 3) == 0
    ops = t.phase_ops(dense, t.Workload(prompt=128, generate=1, layer_kernels=15), t.PREFILL)
    # 32 layers × 15 kernels, and the lm_head's one
    assert sum(o.kernels for o in ops) == 32 * 15 + 1 == 481
    chunked = t.phase_ops(dense, t.Workload(prompt=128, generate=1, chunk=64, layer_kernels=15),
                          t.PREFILL)
    assert sum(o.kernels for o in chunked) == 2 * 32 * 15 + 1
    # the default is a fused build's 9
    assert t.DEFAULT_LAYER_KERNELS == 9
    fused = t.phase_ops(dense, t.Workload(prompt=128, generate=1), t.PREFILL)
    assert sum(o.kernels for o in fused) == 32 * 9 + 1


def test_kernel_floors_add_to_the_realistic_ttft_by_hand() -> None:
    """Roofline + launches: each kernel's floor adds to the time. LLaMA 7B, 128-token prompt,
    5 µs per kernel: 32 layers × 15 kernels × 5 µs = 2.4 ms of floors, 0.96 ms more than a
    fused build's 9 kernels (32 × 6 × 5 µs); the bound has none."""
    cfg = from_dict(LLAMA2_7B)
    hw = dataclasses.replace(H100, launch=5e-6)
    unfused = t.estimate(cfg, t.Workload(prompt=128, generate=1, layer_kernels=15), hw).summary
    fused = t.estimate(cfg, t.Workload(prompt=128, generate=1, layer_kernels=9), hw).summary
    assert unfused["ttft"] - fused["ttft"] == pytest.approx(32 * 6 * 5e-6, rel=1e-9)
    assert unfused["ttft_bound"] == fused["ttft_bound"]
    none = t.estimate(cfg, t.Workload(prompt=128, generate=1, layer_kernels=15),
                      dataclasses.replace(H100, launch=0.0)).summary
    assert unfused["ttft"] - none["ttft"] == pytest.approx((32 * 15 + 1) * 5e-6, rel=1e-9)
    # 80 layers × 15 kernels × 5 µs = 6.0 ms (LLaMA 70B), plus the lm_head's 5 µs
    big = from_dict({**LLAMA2_7B, "num_hidden_layers": 80})
    a = t.estimate(big, t.Workload(prompt=128, generate=1, layer_kernels=15), hw).summary
    b = t.estimate(big, t.Workload(prompt=128, generate=1, layer_kernels=15),
                   dataclasses.replace(hw, launch=0))
    assert a["ttft"] - b.summary["ttft"] == pytest.approx(80 * 15 * 5e-6 + 5e-6, rel=1e-9)


def test_attention_output_quantize_by_hand() -> None:
    """An FP8 build whose attention kernel writes 16 bit quantizes the attention output with a
    kernel of its own (TensorRT-LLM v0.5: FP8RowLinear's Quantize behind the gpt_attention
    plugin). LLaMA 7B, 128-token prompt, fp8 activations, 16-bit outputs: one kernel more per
    layer (32 × 5 µs = 160 µs) and 128 tokens · 32 heads · 128 · (2 + 1) B = 1,572,864 B per
    layer, 50,331,648 B in all, at 3.35 TB/s; none where the activations are 16-bit."""
    cfg, hw = from_dict(LLAMA2_7B), dataclasses.replace(H100, launch=5e-6)
    assert t.ATTENTION_QUANTIZE_KERNELS == 1
    assert t.quantize_kernels(True, 1, 2) == 1 and t.quantize_kernels(True, 2, 2) == 0
    assert t.quantize_kernels(False, 1, 2) == 0

    def misc(**kw: object) -> t.Op:
        wl = t.Workload(prompt=128, generate=1, layer_kernels=15, act_bytes=1, weight_bytes=1,
                        kv_bytes=1, **kw)
        return t.phase_ops(cfg, wl, t.PREFILL)[-1]

    plain, quant = misc(), misc(attn_quantize=True)
    assert quant.kernels - plain.kernels == 32
    assert quant.bytes_moved - plain.bytes_moved == 32 * 128 * 32 * 128 * 3 == 50_331_648
    wl = t.Workload(prompt=128, generate=1, layer_kernels=15, act_bytes=1, weight_bytes=1)
    on = t.estimate(cfg, dataclasses.replace(wl, attn_quantize=True), hw).summary
    off = t.estimate(cfg, wl, hw).summary
    assert on["ttft"] - off["ttft"] == pytest.approx(32 * 5e-6 + 50_331_648 / 3.35e12, rel=1e-9)
    bf16 = t.Workload(prompt=128, generate=1, layer_kernels=15)
    assert t.estimate(cfg, dataclasses.replace(bf16, attn_quantize=True), hw).summary["ttft"] \
        == t.estimate(cfg, bf16, hw).summary["ttft"]
