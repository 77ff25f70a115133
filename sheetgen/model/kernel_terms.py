"""Three terms of a measured matmul's time that the roofline's max(compute, memory) leaves
out, each added after it (they run one after the other with the GEMM, so they do not overlap;
the one exception, a K loop that grows with the tile, bounds the GEMM instead: below):

    k_loop   = k · latency_per_k · tile(m)          the serial K loop of one thread block
                                                    (a bound on the GEMM where tile(m) grows)
    split_k  = floor_2 if tiles < SMs and k ≥ K_split, else 0
                                                    a second (reduction) kernel's launch floor
    quantize = max(b·m·k · bytes_per_element / (bandwidth · eff_q),
                   b·m · row_latency, k · element_latency)
                                                    a separate activation-quantize kernel

The K loop: every output tile walks k in steps of the tile depth, each step waiting on a
load from memory; a GEMM whose output has few tiles (small m·n) cannot hide that latency
behind other tiles, so its time grows with k while its FLOPs and bytes stay tiny (on
aiconfigurator's H100 table, m = 1, n = 32: 2.6 µs at k = 32, 5.0 µs at k = 2,048). The
latency per unit of k is fitted; a large GEMM's compute or memory time dwarfs it.

Each step of that loop is one tile's MMAs at one SM's share of the peak, so its latency
grows with the tile, and a library that picks its tile by m makes it grow with m. vLLM's
CUTLASS FP8 GEMM on Hopper
(https://github.com/vllm-project/vllm/blob/44d638a89638f617e8315b25ad699a5a72e845b9/csrc/quantization/cutlass_w8a8/c3x/scaled_mm_sm90_fp8_dispatch.cuh)
runs 64×64 tiles for m ≤ 64, 64×128 for m ≤ 128 and 128×128 beyond, and never splits k
(later versions swap A and B for m ≤ 64 and keep the two larger tiles): its tile(m) = 1, 2,
4 (the tile's area over 64×64; 1 for every m when the growth is off).
On aiconfigurator's H100 vLLM fp8 table, n = 32, k = 65,536: 51 µs for m ≤ 64, 95 µs at
128, 196 µs at 256, where 2·64·64 FLOPs per unit of k at 1/132 of 73 % of the fp8 peak
is 0.75 ns a unit of k, 49 µs. The growth is a switch of the fitted form, never a fit.
There the K loop is not added to the refined time but bounds it: an output of fewer tiles
than SMs runs each tile's loop on one SM, so the GEMM takes at least the launch floor plus
one tile's loop, however few its FLOPs and bytes, and where the tiles fill the SMs their
waves' compute time is the larger one:

    gemm     = max(refined, floor + waves · (tile_latency + k_loop))
                                                    (growth on; refined + k_loop when off)

waves counts the library's tiles (64×64, 64×128, 128×128 as above) over the SMs, and
tile_latency is each tile's own cost beside its K loop, its prologue and epilogue, fitted:
vLLM's H100 fp8 GEMM at m = 1, k = 32 takes 5.1 µs at n = 8,192, 6.7 µs at 16,384 and
15.6 µs at 65,536 (1,024 tiles of 64, eight waves of 132): about 1.5 µs a wave.

The split-K floor: a GEMM whose output tiles (sheetgen.model.refined.tiles) fill fewer
thread blocks than the GPU has SMs leaves most SMs idle, so a library splits k across blocks
and sums the partial results in a second kernel, whose launch costs a floor of its own. The
libraries' switch is a heuristic; the default K_split = 2,048 is where aiconfigurator's H100
bf16 table steps (m = 1, n = 32: 3.8 µs at k = 1,024, 5.0 µs at k = 2,048, about one floor
more). The second floor is fitted, K_split is an input (0 turns the term off).

The quantize pass: a dynamic FP8 path (TensorRT-LLM's `FP8QDQLinearMethod.apply` without a
static input scale calls `torch.ops.tensorrt_llm.quantize_e4m3_per_tensor`) reads the bf16
activation A once to find its absolute maximum, then again to scale it, and writes it as
fp8: 2 + 2 + 1 = 5 bytes per element of A before the fp8 GEMM reads its 1 byte. The bytes per
element are a property of the timed code path (0 when A arrives already quantized), stated
by the measurement file, never fitted. The pass is a kernel with a roofline of its own, the
slowest of three times:
- its bytes at the HBM bandwidth times its own efficiency eff_q (0: the GEMM's memory
  efficiency, as when the pass is charged its bytes only);
- a serial cost per row of A: vLLM's dynamic per-tensor scale
  (https://github.com/vllm-project/vllm/blob/main/csrc/quantization/fp8/common.cu,
  `dynamic_scaled_fp8_quant`) runs one thread block per row, each ending in an atomic on the
  one scale, so 32,768 rows of 32 elements take 238.6 µs on an H100 (7.1 ns a row) where
  their bf16 GEMM takes 3.8 µs;
- one row's time, per element of k: SGLang's per-token quantization reads each row with one
  warp, so one row of 65,536 takes 40.2 µs on an H100 (0.6 ns an element) while its bf16 GEMM
  takes 7.8 µs; the rows run side by side, so the longest row bounds the pass.
eff_q and the two latencies are fitted only where a file states a pass, and kept when they
lower the held-out error (sheetgen.calibrate.fit).

One more term scales the compute efficiency before the refined time (so it sits inside the
p-norm of compute and memory time), a Hill-type ramp in the matmul's FLOPs:

    ramp     = 1 / (1 + (F_half / F)^h)   = F^h / (F^h + F_half^h);  1 when F_half = 0 (off)
    compute  = F / (peak · compute efficiency · ramp)

A library picks a kernel per shape: small problems get small tiles, short pipelines and
fewer SMs, so the attained share of the peak climbs with size over several decades rather
than jumping. Calculon's A100 system file
(https://github.com/calculon-ai/calculon/blob/4f81f02977cfd7123cb564ef40a6b565e27b2ea5/systems/a100_80g.json)
steps the matrix efficiency the same way: 0.1 below 1 GFLOP, 0.6 from 1, 0.9 from 16, 0.95
from 128; the ramp is that table made smooth, with its knee fitted. F_half is the FLOP
count at which half the asymptotic efficiency is reached, h how steeply it gets there. With
h = 1 the ramp adds F_half / (peak · efficiency) to the compute time, a floor on the compute
side only; h ≠ 1 is what no floor can mimic.

A fitted asymptote is a guess beyond the data (one form tried on XLA's H100 shapes, none
larger than 4,096³, fitted 0.92 of the peak where MAMF measures 80.3 % for large GEMMs).
So `calibrate` states the efficiency where the data ends, at F_end (the largest matmul
measured), and holds it beyond:

    ramp     = min(1, (1 + (F_half / F_end)^h) / (1 + (F_half / F)^h))

the same curve up to F_end (the efficiency there times the ramp's share of it), flat after.
F_end = 0 keeps the asymptote (a preset written before F_end existed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.model import refined as refined_model
from sheetgen.model.refined import sms_known

#: bytes per element of A that a dynamic per-tensor FP8 quantization moves before the GEMM:
#: read bf16 (2) for the absolute maximum, read bf16 (2) again and write fp8 (1) to quantize.
DYNAMIC_FP8_QUANTIZE_BYTES = 2.0 + 2.0 + 1.0
#: the same for a dynamic per-token (per-row) quantization: one pass per row that reads the
#: bf16 row (2) and writes it as fp8 (1); its second read of the row, for the scaling, comes
#: from cache, since a row is at most a few hundred KB.
PER_TOKEN_FP8_QUANTIZE_BYTES = 2.0 + 1.0


def k_loop_time(k: Any, latency_per_k: Any, split: Any = 0, tile: Any = 1) -> Any:
    """Seconds of the serial K loop: k times the fitted latency per unit of k times the
    tile's scale (k_tile_scale), 0 where the GEMM runs split-K (`split` 1: its k is cut into
    slices that run side by side)."""
    return ((1.0 - np.asarray(split, dtype=float)) * np.asarray(k, dtype=float)
            * np.asarray(tile, dtype=float) * latency_per_k)


#: the m up to which the library's tile is 64×64, then 64×128 (tile scale 1, then 2; 4
#: beyond): vLLM's sm90 FP8 dispatch (the module docstring)
K_TILE_SMALL_M, K_TILE_MEDIUM_M = 64, 128
#: the library's tile edges: Tm = 64 up to K_TILE_MEDIUM_M, else 128; Tn = 64 up to
#: K_TILE_SMALL_M, else 128
TILE_EDGE_SMALL, TILE_EDGE_LARGE = 64.0, 128.0


def library_tile(m: Any) -> tuple[Any, Any]:
    """The library's tile (Tm, Tn) for m: 64×64 for m ≤ 64, 64×128 for m ≤ 128, 128×128
    beyond."""
    mm = np.asarray(m, dtype=float)
    return (np.where(mm <= K_TILE_MEDIUM_M, TILE_EDGE_SMALL, TILE_EDGE_LARGE),
            np.where(mm <= K_TILE_SMALL_M, TILE_EDGE_SMALL, TILE_EDGE_LARGE))


def library_waves(b: Any, m: Any, n: Any, sms: Any, growth: Any) -> Any:
    """Waves of the library's tiles (library_tile) over `sms` where the tile grows with m:
    ceil(b · ceil(m/Tm) · ceil(n/Tn) / SMs); 1 where the growth is off or the SM count
    unknown."""
    if not sms_known(sms):
        return np.ones(np.shape(np.asarray(m, dtype=float)))
    tm, tn = library_tile(m)
    counted = refined_model.waves(np.asarray(b, dtype=float)
                                  * refined_model.tiles(m, n, tm, tn), sms)
    return np.where(np.asarray(growth, dtype=bool), counted, 1.0)


def k_tile_scale(m: Any, growth: Any) -> Any:
    """The K loop's latency per unit of k relative to a 64×64 tile's: the library's tile's
    area over 64×64 (1, 2 or 4 as m is at most 64, at most 128 or more) where the tile grows
    with m (`growth` true); else 1."""
    tm, tn = library_tile(m)
    return np.where(np.asarray(growth, dtype=bool), tm * tn / TILE_EDGE_SMALL**2, 1.0)


#: k from which a GEMM that under-fills the SMs is taken to run split-K (two kernels)
SPLIT_K_MIN_K = 2048


def split_k(tiles: Any, sms: Any, k: Any, min_k: Any) -> Any:
    """1.0 where the output tiles under-fill the SMs and k ≥ min_k (the GEMM runs split-K),
    else 0.0 (always 0 when min_k is 0, or without an SM count: a preset may leave it out)."""
    t, kk = np.asarray(tiles, dtype=float), np.asarray(k, dtype=float)
    if not sms_known(sms):
        return np.zeros(np.broadcast(t, kk).shape)
    return ((t < sms) & (kk >= min_k) & (np.asarray(min_k, dtype=float) > 0)) * 1.0


def split_k_floor(tiles: Any, sms: Any, k: Any, min_k: Any, floor: Any) -> Any:
    """The second kernel's floor where the GEMM runs split-K (split_k), else 0."""
    return split_k(tiles, sms, k, min_k) * floor


def compute_ramp(flops: Any, half_flops: Any, exponent: Any, end_flops: Any = 0.0) -> Any:
    """The share of the compute efficiency a matmul of `flops` FLOPs reaches: 1 / (1 +
    (half_flops / flops)^exponent) of the asymptotic one; 1 when half_flops is 0 (the ramp
    off). With `end_flops` > 0 the efficiency is the one reached there (the largest matmul
    measured) and held beyond it: the share min(1, (1 + (half_flops / end_flops)^exponent) /
    (1 + (half_flops / flops)^exponent)), so no fit extrapolates past its data."""
    f = np.asarray(flops, dtype=float)
    half = np.asarray(half_flops, dtype=float)
    end = np.asarray(end_flops, dtype=float)
    with np.errstate(divide="ignore"):
        ratio = np.where(half > 0, half / f, 0.0)
        at_end = np.where((half > 0) & (end > 0), half / np.where(end > 0, end, 1.0), 0.0)
    share = (1.0 + at_end ** exponent) / (1.0 + ratio ** exponent)  # ≤ 1 without an end
    return np.where(half > 0, np.minimum(1.0, share), 1.0)


def write_memory_time(memory: Any, written: Any, write_cost: Any, bandwidth: Any) -> Any:
    """The memory time with each of the `written` bytes (C's) costing `write_cost` bytes read:
    `memory` + (write_cost − 1) · written / bandwidth (the attainable one). Fitted on
    published tables, 1.1–1.6 on NVIDIA's bf16 GEMMs: the short-k GEMMs with a large output,
    whose traffic is mostly C, take longer than their bytes at the read rate
    (docs/measuring.md)."""
    return (np.asarray(memory, dtype=float)
            + (np.asarray(write_cost, dtype=float) - 1.0) * np.asarray(written, dtype=float)
            / bandwidth)


def quantize_bytes(b: Any, m: Any, k: Any, bytes_per_element: Any) -> Any:
    """Bytes the activation-quantize pass moves: b·m·k elements of A."""
    return (np.asarray(b, dtype=float) * np.asarray(m, dtype=float)
            * np.asarray(k, dtype=float) * bytes_per_element)


def quantize_time(moved: Any, bandwidth: Any, efficiency: Any, rows: Any, k: Any,
                  row_latency: Any, element_latency: Any) -> Any:
    """Seconds of the activation-quantize pass: the slowest of its bytes `moved` at
    bandwidth · efficiency, `rows` (b·m) serial row costs and one row of k elements; 0 where
    the pass moves nothing (no pass)."""
    mv = np.asarray(moved, dtype=float)
    own = np.maximum(np.maximum(mv / (bandwidth * efficiency),
                                np.asarray(rows, dtype=float) * row_latency),
                     np.asarray(k, dtype=float) * element_latency)
    return np.where(mv > 0, own, 0.0)


def total_time(refined: Any, k_loop: Any, split_k: Any, quantize: Any, floor: Any = 0.0,
               tile_bound: Any = False, waves: Any = 1.0, tile_latency: Any = 0.0) -> Any:
    """The refined roofline time plus the K loop, the split-K floor and the quantize pass, run
    in sequence; where the K loop grows with the tile (`tile_bound`), the GEMM takes the
    larger of its refined time and the launch `floor` plus `waves` of one tile each (its
    `tile_latency` and its K loop) instead of their sum (the module docstring)."""
    r = np.asarray(refined, dtype=float)
    bound = np.asarray(floor, dtype=float) + np.asarray(waves, dtype=float) * (
        np.asarray(tile_latency, dtype=float) + k_loop)
    gemm = np.where(np.asarray(tile_bound, dtype=bool), np.maximum(r, bound), r + k_loop)
    return gemm + split_k + quantize
