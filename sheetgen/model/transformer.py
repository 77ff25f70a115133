"""The Transformer estimate in pure Python: one roofline row per operation per phase, and the
serving totals (TTFT, TPOT, memory, fit, critical batch). It never looks at a formula: the
Transformer sheet's formulas are held to it, so agreeing is evidence.

Conventions (every figure SI: FLOP, byte, second):
- prefill runs m = batch · prompt tokens through every weight matmul; decode runs m = batch,
  one new token per sequence, attending over the KV cache;
- a matmul C[m×n] = A[m×k]·B[k×n] does 2·m·k·n FLOPs and moves a·m·k + w·k·n + o·m·n bytes,
  each operand in its own precision (activation a, weight or KV cache w, output o);
- attention is batched per KV head: the query heads sharing a KV head (GQA) are the rows, so
  K and V are read once per KV head; the score matrix stays on chip (flash attention);
- prefill attention is causal: each query attends to (prompt + 1) / 2 keys on average;
- chunked prefill: the prompt runs in S = ceil(prompt / chunk) equal steps, each reading
  every weight again (m = batch · prompt / S, S times as many matmuls); attention's FLOPs are
  those of the whole causal prompt, two all-reduces per layer per step;
- sliding-window attention (Mistral 7B, arXiv:2310.06825): each query attends to at most the
  last W keys, and the KV cache keeps W tokens per sequence (the paper's rolling buffer);
- the realistic estimate runs attention at flash attention's measured rate, not the GEMMs':
  its own dtype's peak (16-bit for fp8/int8 compute: flash-attention kernels take fp16/bf16
  operands) times its own efficiency (FlashAttention-2 reaches 35 % of an H100's peak,
  arXiv:2407.08608; 50-73 % of an A100's, arXiv:2307.08691);
- TPOT is the mean over the generate − 1 decode steps, whose contexts run prompt + 1 ...
  prompt + generate − 1: every decode cost is linear in the context (attention stays
  memory-bound), so the mean is the cost at the mean context prompt + generate / 2;
- a build that quantizes the attention output with a kernel of its own (fp8 compute behind an
  attention kernel that writes 16 bit: ATTENTION_QUANTIZE_KERNELS) pays that kernel's floor
  and its bytes (read the output dtype, write the activation dtype) in the non-matmul row;
- tensor parallel over G: heads, MLP and vocabulary split G ways (the larger share when
  uneven), KV heads replicated when fewer than G, two all-reduces of the layer output per
  layer in the output dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sheetgen.core import defaults
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.model import kernel_terms, refined

ALLREDUCES = defaults.ALLREDUCES
AUTO, RING, ONE_SHOT, TWO_SHOT = ALLREDUCES
PREFILL, DECODE = "prefill", "decode"
#: Bytes per element the non-matmul work moves per token per layer, in activation elements:
#: two norms (read and write the hidden vector: 4·h), two residual adds (read two, write one:
#: 6·h); the MLP activation reads its inputs and writes its output (gated: 3 × width,
#: plain: 2 × width); the new token's K and V are written to the cache in the KV dtype.
NORM_RESIDUAL_ELEMENTS = 10
#: Kernels per layer of an unfused build (each pays the per-kernel floor, `launch_overhead`):
#: TensorRT-LLM's llama built without the RMSNorm and GEMM plugins and without the fused MLP
#: (tensorrt_llm/models/llama/model.py,
#: LLaMADecoderLayer.forward; tensorrt_llm/functional.py rms_norm; layers/mlp.py GatedMLP;
#: layers/attention.py with the gpt_attention plugin): two RMSNorms of two kernels each (the
#: mean-square reduction, then the pointwise scale), five GEMMs (QKV, output, gate, up,
#: down), three in the attention plugin's context phase (padding offsets, rotary + KV-cache
#: write, fused multi-head attention), the SiLU·gate pointwise kernel and two residual adds.
#: The TP all-reduces are costed apart (two per layer).
LAYER_KERNELS = 15
#: A fused build's (vLLM's llama, TensorRT-LLM with the plugins and fused MLP): one kernel per
#: matmul row of this model (QKV, attention, output, gate+up, down) and four more (two fused
#: residual-add + RMSNorm, the activation, the KV-cache write).
FUSED_LAYER_KERNELS = 9
#: The realistic estimate's default: a fused build, as today's serving stacks run.
DEFAULT_LAYER_KERNELS = FUSED_LAYER_KERNELS
#: Flash attention's forward rate as a share of its dtype's dense peak, the realistic
#: estimate's default: FlashAttention-2 on an H100, "only 35% utilization" (Shah et al. 2024,
#: FlashAttention-3, arXiv:2407.08608, abstract; FlashAttention-3 reaches 75 %). On an A100
#: FlashAttention-2 reaches 50-73 % (Dao 2023, arXiv:2307.08691, abstract).
ATTENTION_EFF = 0.35
#: Compute dtypes a flash-attention kernel runs in as they are; narrower ones (fp8, int8
#: compute) run attention in fp16 (TensorRT-LLM's FP8 builds name float16 for the attention
#: plugin; vLLM's flash-attention kernels take fp16/bf16), whose peak equals bf16's.
ATTENTION_DTYPES = ("fp32", "tf32", "bf16", "fp16")
ATTENTION_FALLBACK = "fp16"
#: A standalone quantize of the attention output, one kernel per layer, where the activations
#: are narrower than the GEMM outputs (fp8 compute: each GEMM writes 16 bit and the next reads
#: fp8, so something must quantize in between) and the attention kernel cannot write the
#: narrow dtype. TensorRT-LLM v0.5's FP8 llama (github.com/NVIDIA/TensorRT-LLM, release/0.5.0
#: at 11e14500f35dd781b535ba009c906f55ecfee3b5): the output projection is an FP8RowLinear
#: (tensorrt_llm/layers/attention.py, `self.dense` when quant_mode.has_fp8_qdq()) whose forward
#: puts an explicit fp8 Quantize on its input (tensorrt_llm/quantization/layers.py,
#: FP8RowLinear.forward: `quantize(x, self.activation_scaling_factor.value, 'fp8')`); that
#: input is the gpt_attention plugin's output (`context = self.dense(context, workspace)`),
#: whose type is the plugin's own 16-bit type, never fp8
#: (cpp/tensorrt_llm/plugins/gptAttentionPlugin/gptAttentionPlugin.cpp,
#: getOutputDataType and supportsFormatCombination: `inOut[pos].type == mType`), and a
#: plugin's kernels are opaque to TensorRT's fusions, so the Quantize runs as a kernel of its
#: own. The other four GEMM inputs follow TensorRT layers (the RMSNorms' pointwise scale, the
#: SiLU·gate product) a Quantize can fuse into: not counted. The kernel reads the 16-bit output
#: and writes the activation dtype: (output + activation) bytes per element of the attention
#: output (heads per GPU × head dim per token).
ATTENTION_QUANTIZE_KERNELS = 1


@dataclass(frozen=True)
class Workload:
    """What is being served, and in which precision (bytes per element)."""

    batch: int = 1
    prompt: int = 512
    generate: int = 128
    tp: int = 1
    weight_bytes: float = 2.0
    act_bytes: float = 2.0
    out_bytes: float = 2.0
    kv_bytes: float = 2.0
    embed_bytes: float = 2.0  # the embedding table and lm_head
    reserve: float = 0.10  # share of capacity left for the CUDA context, NCCL, workspaces
    allreduce: str = AUTO
    attn_eff: float = ATTENTION_EFF  # flash attention's share of its dtype's peak (realistic)
    chunk: int = 0  # chunked prefill: tokens per step and sequence (0: the whole prompt)
    layer_kernels: float = DEFAULT_LAYER_KERNELS  # kernels per layer, each paying the launch floor
    attn_quantize: bool = False  # the attention output quantized by a kernel of its own


@dataclass(frozen=True)
class Machine:
    """The GPU figures the estimate uses (SI)."""

    peak: float
    bw: float
    capacity: float
    link_bw: float
    link_latency: float
    compute_eff: float = 1.0  # the bound's (the Inputs sheet's; 1.0 = pure roofline)
    memory_eff: float = 1.0
    link_eff: float = 1.0
    real_compute_eff: float = 1.0  # the realistic estimate's (the preset's measured ones)
    real_memory_eff: float = 1.0
    real_link_eff: float = 1.0
    launch: float = 0.0  # s per kernel, the realistic estimate's floor
    attn_peak: float | None = None  # peak FLOP/s of attention's dtype; None: `peak`
    #: the realistic GEMMs' compute ramp (F_half, h, end; kernel_terms.compute_ramp: F_half
    #: 0 = off) and overlap exponent (refined.refined_time: 0 = the hard max), as the Inputs
    #: sheet's refined time has them
    ramp: tuple[float, float, float] = (0.0, 1.0, 0.0)
    overlap: float = 0.0
    #: the kernel terms after each GEMM kernel (kernel_terms), as the Inputs sheet has them
    kernel: GemmKernels | None = None
    #: a byte of C a realistic GEMM writes, in bytes read (kernel_terms.write_memory_time)
    write_cost: float = 1.0


@dataclass(frozen=True)
class GemmKernels:
    """The kernel terms of the realistic GEMMs (sheetgen.model.kernel_terms): a K loop of
    `k_latency` per unit of k, a split-K kernel's `split_floor` where a kernel's tiles (of
    `tile`, over `sms`) under-fill the SMs and k ≥ `split_min_k` (0: never), and with `growth`
    a K loop that grows with the library's tile and bounds the time (`tile_latency` a tile).
    Each kernel of a row runs count / kernels of its GEMMs side by side (a MoE layer's experts
    in one grouped kernel)."""

    sms: float | None = None  # None: no SM count (no split-K, one wave)
    tile: tuple[int, int] = (128, 128)
    k_latency: float = 0.0
    growth: bool = False
    tile_latency: float = 0.0
    split_floor: float = 0.0
    split_min_k: float = 0.0


@dataclass(frozen=True)
class Op:
    """One row: `count` matmuls of m×k·k×n (or, with k = 0, a memory-only row of `bytes`)."""

    phase: str
    op: str
    m: float
    k: float
    n: float
    count: float
    kernels: float
    a: float
    w: float
    o: float
    extra_bytes: float = 0.0
    attention: bool = False  # runs at flash attention's rate in the realistic estimate

    @property
    def flops(self) -> float:
        return self.count * 2.0 * self.m * self.k * self.n

    @property
    def bytes_moved(self) -> float:
        one = self.a * self.m * self.k + self.w * self.k * self.n + self.o * self.m * self.n
        return self.count * one + self.extra_bytes


def attention_dtype(choice: str, compute: str) -> str:
    """The dtype attention computes in: `choice`, or for "auto" the compute dtype when a
    flash-attention kernel takes it, else fp16."""
    if choice != AUTO:
        return choice
    return compute if compute in ATTENTION_DTYPES else ATTENTION_FALLBACK


def prefill_steps(prompt: int, chunk: int = 0) -> int:
    """Forward steps of a prefill in chunks of at most `chunk` tokens (0: one step)."""
    return math.ceil(prompt / chunk) if chunk else 1


def prefill_mean_keys(prompt: int, window: int = 0) -> float:
    """Mean keys a causal query attends to over positions 1 … prompt: min(position, W)
    (window 0: no window)."""
    if not window or prompt <= window:
        return (prompt + 1) / 2.0
    inside = window * (window + 1) / 2.0  # positions 1 … W attend to themselves and before
    return (inside + (prompt - window) * window) / prompt


def decode_mean_context(prompt: int, generate: int, window: int = 0) -> float:
    """Mean keys over the generate − 1 decode steps, contexts prompt + 1 … prompt + generate
    − 1, each capped at the window: prompt + generate / 2 when no cap applies."""
    last = prompt + generate - 1
    if not window or last <= window:
        return prompt + generate / 2.0
    if prompt + 1 >= window:
        return float(window)
    below = sum_range(prompt + 1, window)  # the steps whose whole context fits the window
    return (below + (last - window) * window) / (generate - 1)


def sum_range(lo: int, hi: int) -> float:
    """lo + (lo + 1) + … + hi."""
    return (hi - lo + 1) * (lo + hi) / 2.0


def kv_tokens(context: int, window: int = 0) -> int:
    """Tokens of one sequence the KV cache holds: the context, at most the window."""
    return min(context, window) if window else context


def split(total: float, g: int) -> float:
    """The larger share of `total` over g GPUs (a whole number)."""
    return float(math.ceil(total / g))


def distinct_experts(experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts T tokens touch under uniform routing: E·(1 − (1 − k/E)^T)."""
    if top_k >= experts:
        return float(experts)
    # (1 − k/E)^T as 10^(T·log10(1 − k/E)) floored at 1e-300, as the sheet writes it: a
    # spreadsheet's power underflows to an error (#NUM!) for large T
    return experts * (1.0 - 10.0 ** max(-300.0, tokens * math.log10(1.0 - top_k / experts)))


@dataclass(frozen=True)
class Shapes:
    """The per-GPU widths under tensor parallel G."""

    heads: float
    kv_heads: float
    group: float  # query heads per KV head on one GPU
    qkv: float  # the fused QKV projection's output width
    ffn: float
    expert_ffn: float
    shared_ffn: float
    vocab: float


def shapes(cfg: ModelConfig, g: int) -> Shapes:
    heads, kv = split(cfg.heads, g), split(cfg.kv_heads, g)
    return Shapes(heads, kv, heads / kv, (heads + 2 * kv) * cfg.head_dim, split(cfg.ffn, g),
                  split(cfg.expert_ffn, g), split(cfg.shared_ffn, g), split(cfg.vocab, g))


def mlp_widths(cfg: ModelConfig, s: Shapes) -> tuple[float, float]:
    """(width of the first MLP matmul's output, elementwise width per token) of one GPU."""
    up = 2 if cfg.gated else 1
    per_token = cfg.top_k * s.expert_ffn + s.shared_ffn if cfg.moe else s.ffn
    return up * (s.expert_ffn if cfg.moe else s.ffn), per_token


def matmul_kernels(cfg: ModelConfig) -> int:
    """Kernels per layer the matmul rows count (one each): QKV, attention, output, and the
    MLP's two (MoE: router, experts up and down, and the shared expert's two)."""
    return 3 + ((3 + (2 if cfg.shared_ffn else 0)) if cfg.moe else 2)


def other_kernels(cfg: ModelConfig, layer_kernels: float) -> float:
    """Kernels per layer left to the non-matmul row: kernels per layer less the matmul rows'
    (at least 0)."""
    return max(0.0, layer_kernels - matmul_kernels(cfg))


def quantize_kernels(attn_quantize: bool, act_bytes: float, out_bytes: float) -> float:
    """Standalone attention-output quantize kernels per layer: ATTENTION_QUANTIZE_KERNELS where
    the build quantizes the attention output apart and the activations are narrower than the
    GEMM outputs (quantized on the fly), else 0."""
    return float(ATTENTION_QUANTIZE_KERNELS) if attn_quantize and act_bytes < out_bytes else 0.0


def phase_ops(cfg: ModelConfig, wl: Workload, phase: str) -> list[Op]:
    """The operations of one forward step of `phase`, on one GPU."""
    s = shapes(cfg, wl.tp)
    h, d, layers, b = cfg.hidden, cfg.head_dim, cfg.layers, wl.batch
    prefill = phase == PREFILL
    steps = prefill_steps(wl.prompt, wl.chunk) if prefill else 1
    total = float(b * wl.prompt) if prefill else float(b)
    tokens = total / steps  # one step's
    queries = wl.prompt / steps if prefill else 1.0
    layers_steps = layers * steps
    ctx = (prefill_mean_keys(wl.prompt, cfg.window) if prefill
           else decode_mean_context(wl.prompt, wl.generate, cfg.window))
    a, w, o, kv = wl.act_bytes, wl.weight_bytes, wl.out_bytes, wl.kv_bytes
    up = 2 if cfg.gated else 1
    n = layers_steps  # matmuls of each kind, and their kernels
    ops = [
        Op(phase, "qkv", tokens, h, s.qkv, n, n, a, w, o),
        Op(phase, "attention scores", queries * s.group, d, ctx, n * b * s.kv_heads,
           n, a, kv, 0.0, attention=True),
        Op(phase, "attention values", queries * s.group, ctx, d, n * b * s.kv_heads,
           0, 0.0, kv, o, attention=True),
        Op(phase, "out proj", tokens, s.heads * d, h, n, n, a, w, o),
    ]
    if cfg.moe:
        touched = distinct_experts(cfg.experts, cfg.top_k, tokens)
        rows = tokens * cfg.top_k / touched
        ops += [
            Op(phase, "router", tokens, h, cfg.experts, n, n, a, w, o),
            Op(phase, "experts up" if not cfg.gated else "experts gate+up", rows, h,
               up * s.expert_ffn, n * touched, n, a, w, o),
            Op(phase, "experts down", rows, s.expert_ffn, h, n * touched, n, a, w, o),
        ]
        if cfg.shared_ffn:
            ops += [Op(phase, "shared gate+up" if cfg.gated else "shared up", tokens, h,
                       up * s.shared_ffn, n, n, a, w, o),
                    Op(phase, "shared down", tokens, s.shared_ffn, h, n, n, a, w, o)]
    else:
        ops += [Op(phase, "mlp gate+up" if cfg.gated else "mlp up", tokens, h, up * s.ffn,
                   n, n, a, w, o),
                Op(phase, "mlp down", tokens, s.ffn, h, n, n, a, w, o)]
    ops.append(Op(phase, "lm_head", float(b), h, s.vocab, 1, 1, a, wl.embed_bytes, o))
    _, elementwise = mlp_widths(cfg, s)
    quant = quantize_kernels(wl.attn_quantize, a, o)
    per_token = (a * (NORM_RESIDUAL_ELEMENTS * h + (up + 1) * elementwise)
                 + kv * 2 * s.kv_heads * d + quant * (o + a) * s.heads * d)
    ops.append(Op(phase, "non-matmul", total, 0.0, 0.0, 0.0,
                  n * (other_kernels(cfg, wl.layer_kernels) + quant),
                  a, w, o, extra_bytes=layers * total * per_token))
    return ops


def allreduce_times(nbytes: float, g: int, bw: float, latency: float) -> dict[str, float]:
    """One all-reduce of `nbytes` over g GPUs by each algorithm (0 on one GPU).

    ring (Patarasuk & Yuan 2009, NCCL's): 2(G−1)/G · S/bw + 2(G−1) · latency;
    one-shot (every GPU reads all peers' buffers and reduces, one step): (G−1) · S/bw +
    latency; two-shot (reduce-scatter then all-gather by direct peer access, two steps):
    2(G−1)/G · S/bw + 2 · latency. vLLM's custom all-reduce
    (csrc/custom_all_reduce.cuh, cross_device_reduce_1stage / _2stage) and TensorRT-LLM's
    (ONESHOT / TWOSHOT) use the one-shot form for small messages.
    """
    if g <= 1:
        return {RING: 0.0, ONE_SHOT: 0.0, TWO_SHOT: 0.0}
    return {RING: 2 * (g - 1) / g * nbytes / bw + 2 * (g - 1) * latency,
            ONE_SHOT: (g - 1) * nbytes / bw + latency,
            TWO_SHOT: 2 * (g - 1) / g * nbytes / bw + 2 * latency}


def allreduce_used(times: dict[str, float], choice: str) -> str:
    """The chosen algorithm; `auto` picks the fastest (ties: ring, one-shot, two-shot)."""
    if choice != AUTO:
        return choice
    return min((RING, ONE_SHOT, TWO_SHOT), key=lambda k: times[k])


@dataclass
class Estimate:
    """Op rows with their bound and realistic times (same order), and the totals."""

    ops: list[Op]
    op_bound: list[float]
    op_real: list[float]
    summary: dict[str, Any] = field(default_factory=dict)


def op_time(op: Op, peak: float, bw: float, kernels_floor: float = 0.0,
            ramp: tuple[float, float, float] | None = None, overlap: float = 0.0,
            kernel: GemmKernels | None = None, write_cost: float = 1.0) -> float:
    """kernels · floor + max(FLOPs / peak, bytes / bw); with `ramp` (a GEMM row of the
    realistic estimate), FLOPs at the ramp's share of `peak` for one GEMM's 2·m·k·n, the
    bytes of C at `write_cost` reads a byte, the two times combined by the overlap exponent,
    then the kernel terms (kernel_terms)."""
    memory = op.bytes_moved / bw
    if ramp is None or op.k == 0:
        return op.kernels * kernels_floor + max(op.flops / peak, memory)
    memory = float(kernel_terms.write_memory_time(memory, op.count * op.m * op.n * op.o,
                                                  write_cost, bw))
    share = float(kernel_terms.compute_ramp(2.0 * op.m * op.k * op.n, *ramp))
    gemm = float(refined.refined_time(0.0, op.flops / (peak * share), memory, overlap))
    if kernel:
        gemm = with_kernel_terms(gemm, *kernel_time(op, kernel), op, kernel)
    return op.kernels * kernels_floor + gemm


def with_kernel_terms(gemm: float, loop: float, split: float, op: Op,
                      kernel: GemmKernels) -> float:
    """A GEMM row's time (`gemm`, without floors) with its K loop and split-K floor
    (kernel_time): the loop added, or with the growth on the larger of the two and the
    library's waves of tiles (each kernel's latency per tile + its loop); then the floor."""
    if kernel.growth:
        waves = float(kernel_terms.library_waves(op.count / op.kernels, op.m, op.n,
                                                 kernel.sms, True))
        return max(gemm, waves * (op.kernels * kernel.tile_latency + loop)) + split
    return gemm + loop + split


def kernel_time(op: Op, kernel: GemmKernels) -> tuple[float, float]:
    """(K loop, split-K floor) of a GEMM row, summed over its kernels: each kernel's count /
    kernels GEMMs split k where their tiles under-fill the SMs and k ≥ split_min_k."""
    tiles = op.count / op.kernels * float(refined.tiles(op.m, op.n, *kernel.tile))
    split = float(kernel_terms.split_k(tiles, kernel.sms, op.k, kernel.split_min_k))
    scale = float(kernel_terms.k_tile_scale(op.m, kernel.growth))
    loop = op.kernels * float(kernel_terms.k_loop_time(op.k, kernel.k_latency, split, scale))
    return loop, op.kernels * split * kernel.split_floor


def weights_per_gpu(cfg: ModelConfig, wl: Workload) -> tuple[float, float]:
    """(bytes of one GPU's weights, bytes of its input embedding table)."""
    s = shapes(cfg, wl.tp)
    h, d = cfg.hidden, cfg.head_dim
    attn = h * s.qkv + s.heads * d * h
    up = 2 if cfg.gated else 1
    if cfg.moe:
        mlp = (cfg.experts * (up + 1) * h * s.expert_ffn + h * cfg.experts
               + (up + 1) * h * s.shared_ffn)
    else:
        mlp = (up + 1) * h * s.ffn
    embed = s.vocab * h * wl.embed_bytes
    norms = (2 * cfg.layers + 1) * h * wl.embed_bytes
    linear = cfg.layers * (attn + mlp) * wl.weight_bytes
    return linear + embed * (1 if cfg.tied else 2) + norms, embed


def parameters(cfg: ModelConfig) -> float:
    """Parameters of the whole model (one GPU, one byte each)."""
    return weights_per_gpu(cfg, Workload(tp=1, weight_bytes=1, embed_bytes=1))[0]


def kv_per_token(cfg: ModelConfig, kv_bytes: float, kv_heads: float | None = None) -> float:
    """K and V of one token over all layers: 2 · layers · KV heads · head_dim · bytes."""
    heads = cfg.kv_heads if kv_heads is None else kv_heads
    return 2.0 * cfg.layers * heads * cfg.head_dim * kv_bytes


def estimate(cfg: ModelConfig, wl: Workload, hw: Machine) -> Estimate:
    """Every op row and the totals, bound (pure roofline at the Inputs' efficiencies) and
    realistic (the preset's measured efficiencies plus a launch floor per kernel)."""
    ops = phase_ops(cfg, wl, PREFILL) + phase_ops(cfg, wl, DECODE)
    bpeak, bbw = hw.peak * hw.compute_eff, hw.bw * hw.memory_eff
    rpeak, rbw = hw.peak * hw.real_compute_eff, hw.bw * hw.real_memory_eff
    apeak = (hw.peak if hw.attn_peak is None else hw.attn_peak) * wl.attn_eff
    bound = [op_time(op, bpeak, bbw) for op in ops]
    real = [op_time(op, apeak, rbw, hw.launch) if op.attention
            else op_time(op, rpeak, rbw, hw.launch, hw.ramp, hw.overlap, hw.kernel,
                         hw.write_cost)
            for op in ops]
    s = shapes(cfg, wl.tp)
    out: dict[str, Any] = {}
    steps = prefill_steps(wl.prompt, wl.chunk)
    for phase, tokens, per in ((PREFILL, wl.batch * wl.prompt / steps, steps),
                               (DECODE, wl.batch, 1)):
        nbytes = tokens * cfg.hidden * wl.out_bytes
        tb = allreduce_times(nbytes, wl.tp, hw.link_bw * hw.link_eff, hw.link_latency)
        tr = allreduce_times(nbytes, wl.tp, hw.link_bw * hw.real_link_eff, hw.link_latency)
        used = allreduce_used(tb, wl.allreduce)
        out[f"{phase}_allreduce"] = used
        out[f"{phase}_comm_bound"] = 2 * cfg.layers * per * tb[used]
        out[f"{phase}_comm"] = 2 * cfg.layers * per * tr[used]  # the bound's choice
        out[f"{phase}_allreduce_times"] = tb
        idx = [i for i, op in enumerate(ops) if op.phase == phase]
        out[f"{phase}_bound"] = sum(bound[i] for i in idx) + out[f"{phase}_comm_bound"]
        out[f"{phase}_real"] = sum(real[i] for i in idx) + out[f"{phase}_comm"]
    weights, embed = weights_per_gpu(cfg, wl)
    context = kv_tokens(wl.prompt + wl.generate, cfg.window)
    kv_tok_g = kv_per_token(cfg, wl.kv_bytes, s.kv_heads)
    up_width, _ = mlp_widths(cfg, s)
    widest = max(s.qkv, up_width, cfg.hidden)
    act_per_seq = wl.prompt / steps * (wl.act_bytes * cfg.hidden + wl.out_bytes * widest)
    activations = wl.batch * act_per_seq
    kv_g = wl.batch * context * kv_tok_g
    usable = hw.capacity * (1 - wl.reserve)
    memory = weights + kv_g + activations
    ridge = (hw.peak * hw.compute_eff) / (hw.bw * hw.memory_eff)
    critical = ridge * wl.weight_bytes / 2 * (cfg.experts / cfg.top_k if cfg.moe else 1.0)
    mean_ctx = decode_mean_context(wl.prompt, wl.generate, cfg.window)
    read_per_step = weights - (0.0 if cfg.tied else embed)
    tpot, ttft = out[f"{DECODE}_real"], out[f"{PREFILL}_real"]
    out.update(
        ttft=ttft, tpot=tpot, ttft_bound=out[f"{PREFILL}_bound"],
        tpot_bound=out[f"{DECODE}_bound"], tokens_per_s=wl.batch / tpot,
        tokens_per_s_per_sequence=1.0 / tpot,
        e2e=ttft + (wl.generate - 1) * tpot,
        e2e_bound=out[f"{PREFILL}_bound"] + (wl.generate - 1) * out[f"{DECODE}_bound"],
        weights_bytes=weights, parameters=parameters(cfg),
        kv_bytes_per_token=kv_per_token(cfg, wl.kv_bytes),
        kv_bytes=wl.batch * context * kv_per_token(cfg, wl.kv_bytes),
        kv_bytes_per_gpu=kv_g, activations=activations, memory_per_gpu=memory,
        usable_memory=usable, fits=memory <= usable,
        max_batch=float(max(0, math.floor((usable - weights) / (context * kv_tok_g
                                                                 + act_per_seq)))),
        critical_batch=critical,
        decode_floor=(read_per_step + wl.batch * mean_ctx * kv_tok_g) / hw.bw,
        kv_share=kv_g / memory,
    )
    return Estimate(ops=ops, op_bound=bound, op_real=real, summary=out)
