"""One roofline row per operation per phase: QKV, attention, output projection, MLP or MoE
experts, lm_head, and the memory-bound non-matmul work, built from the Matmul sheet's
factories.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sheetgen.core.excel import is_number
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.model import factories as rf
from sheetgen.model import kernel_terms, refined
from sheetgen.model import refined_columns as rc
from sheetgen.model import transformer as ref
from sheetgen.model.vocabulary import Quantity
from sheetgen.sheets.transformer.common import (
    AB,
    ATTN_RATE,
    GEMM_RATE,
    OB,
    ON_CHIP,
    STEP_TOKENS,
    STEPS,
    WB,
    OpRow,
    q,
)


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


@dataclass(frozen=True)
class GemmKernel:
    """The names behind a GEMM row's kernel terms: its dims, count and kernels (each kernel
    runs count / kernels GEMMs side by side), and its K-loop and split-K columns."""

    m: str
    k: str
    n: str
    count: str
    kernels: str
    k_loop: str
    split_k: str

    def machine(self, a: dict[str, Any]) -> tuple[ref.Op, ref.GemmKernels]:
        """The row as the pure model's Op (its dims and kernels) and the Inputs' kernel
        terms. A column's reference sees only the names its template reads: a term it does
        not read is 0 (off) here."""
        i = rc.INPUTS
        op = ref.Op("", "", a[self.m], a.get(self.k, 0.0), a[self.n], a[self.count],
                    a[self.kernels], 0.0, 0.0, 0.0)
        sms = a[i.sm_count]
        return op, ref.GemmKernels(
            sms=sms if is_number(sms) else None, tile=(a.get(i.tile_m, 1), a.get(i.tile_n, 1)),
            k_latency=a.get(i.k_latency, 0.0), growth=refined.waves_on(a.get(i.k_tile, False)),
            tile_latency=a.get(i.tile_latency, 0.0), split_floor=a.get(i.split_floor, 0.0),
            split_min_k=a.get(i.split_min_k, 0.0))

    def split(self) -> str:
        """1 where each kernel's GEMMs split k (rc.split_share), as a template."""
        i = rc.INPUTS
        tiles = rc.tile_count(*(f"{{{x}}}" for x in (self.m, self.n, i.tile_m, i.tile_n)),
                              f"{{{self.count}}}/{{{self.kernels}}}")
        return rc.split_share(tiles, f"{{{self.k}}}")


def gemm_kernel_terms(g: GemmKernel) -> tuple[Quantity, Quantity]:
    """The row's K loop (each kernel's k · latency · tile scale, 0 where it splits) and its
    split-K floor (a second kernel's where it does), summed over its kernels."""
    i = rc.INPUTS
    split = g.split()
    loop = q(g.k_loop, "K loop", "s",
             f"{{{g.kernels}}}*(1-{split})*{{{g.k}}}*{{{i.k_latency}}}"
             f"*{rc.tile_scale(f'{{{g.m}}}')}",
             lambda a: ref.kernel_time(*g.machine(a))[0], fmt="time",
             doc="Per kernel: k · the K-loop latency · the tile scale, 0 where it splits k; "
                 "times its kernels.")
    floor = q(g.split_k, "split-K floor", "s",
              f"{{{g.kernels}}}*{split}*{{{i.split_floor}}}",
              lambda a: ref.kernel_time(*g.machine(a))[1], fmt="time",
              doc="A second (reduction) kernel's floor per kernel whose tiles under-fill the "
                  "SMs with k ≥ split-K from k; times its kernels.")
    return loop, floor


def realistic_time(name: str, kernels: str | None, flops_: str | None, bytes_: str,
                   rate: str = GEMM_RATE, ramp: str | None = None,
                   gemm: GemmKernel | None = None, out_: str | None = None) -> Quantity:
    """kernels · launch floor + the slower of FLOPs / rate and bytes / (bandwidth · measured
    memory eff): the preset's sourced efficiencies, not the bound's. `rate`: the realistic
    FLOP/s (peak · measured compute eff; attention's own for the attention rows). A GEMM row
    (`ramp`: its compute ramp's share) runs at that share of the rate, its two times combine
    by the Inputs sheet's overlap exponent (the p-norm of the refined time), and `gemm`'s
    kernel terms follow (ref.op_time): plus the K loop, or with the tile growth on the larger
    of the two and the library's waves of tiles (each kernel's latency per tile + K loop).
    With `gemm` and `out_` (C's bytes per element) each byte of C written costs the Inputs
    sheet's write cost in bytes read (kernel_terms.write_memory_time)."""
    floor = f"{{{kernels}}}*{{launch_overhead}}+" if kernels else ""
    w = rc.INPUTS.write_cost
    written = (f"{{{gemm.count}}}*{{{gemm.m}}}*{{{gemm.n}}}*{{{out_}}}" if gemm and out_
               else "")
    mem = f"{{{bytes_}}}/{{xf_real_bw}}"
    if written:
        mem = rc.write_memory_expr(mem, written, "{xf_real_bw}")
    if flops_ and ramp:
        body = rc.overlapped(f"{{{flops_}}}/({{{rate}}}*{{{ramp}}})", mem, rc.INPUTS.overlap)
    elif flops_:
        body = f"MAX({{{flops_}}}/{{{rate}}},{mem})"
    else:
        body = mem
    if gemm:
        i = rc.INPUTS
        on = f'{{{i.k_tile}}}="{rc.ON}"'
        waves = rc.library_wave_count(f"{{{gemm.m}}}", f"{{{gemm.n}}}",
                                      f"{{{gemm.count}}}/{{{gemm.kernels}}}")
        # with the growth on: max(body, waves · (kernels · latency per tile + K loop)), else
        # body + K loop: one MAX, the body written once
        body = (f"MAX({body}+IF({on},0,{{{gemm.k_loop}}}),IF({on},{waves}*({{{gemm.kernels}}}"
                f"*{{{i.tile_latency}}}+{{{gemm.k_loop}}}),0))+{{{gemm.split_k}}}")

    def fn(a: dict[str, Any]) -> Any:
        t = a[bytes_] / a["xf_real_bw"]
        if written:
            assert gemm is not None and out_ is not None
            t = float(kernel_terms.write_memory_time(
                t, a[gemm.count] * a[gemm.m] * a[gemm.n] * a[out_], a[w], a["xf_real_bw"]))
        if flops_ and ramp:
            t = float(refined.refined_time(0.0, a[flops_] / (a[rate] * a[ramp]), t,
                                           a[rc.INPUTS.overlap]))
        elif flops_:
            t = max(a[flops_] / a[rate], t)
        if gemm:
            t = ref.with_kernel_terms(t, a[gemm.k_loop], a[gemm.split_k], *gemm.machine(a))
        return (a[kernels] * a["launch_overhead"] if kernels else 0.0) + t

    return q(name, "realistic time", "s", floor + body, fn, fmt="time",
             doc="Launch floor per kernel + the roofline at the measured efficiencies"
                 + (" (at the compute ramp's share, by the overlap exponent), then the K "
                    "loop and split-K floor." if ramp else "."))


def _op(ph: str, slug: str, label: str, m: tuple[str, Callable[[dict[str, Any]], float]],
        k: tuple[str, Callable[[dict[str, Any]], float]],
        n: tuple[str, Callable[[dict[str, Any]], float]],
        count: tuple[str, Callable[[dict[str, Any]], float]],
        kernels: tuple[str, Callable[[dict[str, Any]], float]] | None,
        a_: str | None, w_: str | None, o_: str | None, rate: str = GEMM_RATE) -> OpRow:
    p = f"xf_{ph}_{slug}_"
    dims = [q(p + d, d, "", t, f, fmt="ratio") for d, (t, f) in
            zip(("m", "k", "n", "count"), (m, k, n, count), strict=True)]
    kern = q(p + "kernels", "kernels", "", kernels[0], kernels[1], fmt="int") if kernels \
        else None
    f = counted_flops(p + "flops", p + "count", p + "m", p + "k", p + "n")
    b = operand_bytes(p + "bytes", p + "count", p + "m", p + "k", p + "n", a_, w_, o_)
    i = rf.intensity(p + "intensity", p + "flops", p + "bytes")
    r = rf.regime(p + "regime", p + "intensity")
    ct = rf.compute_time(p + "compute_time", p + "flops")
    mt = rf.memory_time(p + "memory_time", p + "bytes")
    t = rf.predicted_time(p + "time", p + "compute_time", p + "memory_time", "bound time")
    ramp = gemm_ramp(p + "ramp", p + "m", p + "k", p + "n") if rate == GEMM_RATE else None
    # a GEMM row's kernel terms: every GEMM row has its kernels (the attention rows do not
    # take them: flash attention's own rate, the hard max)
    gemm = GemmKernel(p + "m", p + "k", p + "n", p + "count", kern.name, p + "k_loop",
                      p + "split_k") if ramp and kern else None
    loop, split = gemm_kernel_terms(gemm) if gemm else (None, None)
    real = realistic_time(p + "real", kern.name if kern else None, p + "flops", p + "bytes",
                          rate, ramp.name if ramp else None, gemm, o_)
    return OpRow(label, (*dims, kern, f, b, i, r, ct, mt, t, ramp, loop, split, real), t.name,
                 real.name, (i.name, f.name))


def gemm_ramp(name: str, m: str, k: str, n: str) -> Quantity:
    """The compute ramp's share (rc.ramp_share) at one GEMM's 2·m·k·n FLOPs: the
    Inputs sheet's COMPUTE_RAMP_* cells, off (1) in every built-in preset."""
    one = rf.flops("_one", m, k, n)
    i = rc.INPUTS
    return q(name, "compute ramp", "fraction", rc.ramp_share(f"({one.template})"),
             lambda a: float(kernel_terms.compute_ramp(one.reference(**a), a[i.ramp_flops],
                                                       a[i.ramp_exponent], a[i.ramp_end])),
             fmt="pct", doc="The share of the measured compute efficiency one GEMM of "
                            "2·m·k·n FLOPs reaches (1 with the ramp off).")


def _ref(name: str) -> tuple[str, Callable[[dict[str, Any]], float]]:
    return f"{{{name}}}", lambda a: a[name]


def _times(*names: str) -> tuple[str, Callable[[dict[str, Any]], float]]:
    return "*".join(f"{{{n}}}" for n in names), lambda a: math.prod(a[n] for n in names)


def _const(value: float) -> tuple[str, Callable[[dict[str, Any]], float]]:
    return f"{value:g}", lambda a: value


def op_rows(cfg: ModelConfig, ph: str) -> list[OpRow]:
    """The operation rows of one phase, in execution order."""
    up = 2 if cfg.gated else 1
    step = STEPS[ph]  # chunked prefill: every weight matmul runs once per step
    per_step = (step,) if step else ()
    tok = _ref(STEP_TOKENS[ph])
    ctx = _ref(f"xf_{ph}_ctx")
    layers = _times("xf_layers", *per_step)
    kern = layers
    rows_attn = _times("xf_pf_queries", "xf_group") if ph == "pf" else _ref("xf_group")
    heads = _times("xf_layers", "xf_batch", "xf_kv_g", *per_step)
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
        rows = (f"{{{STEP_TOKENS[ph]}}}*{{xf_top_k}}/{{{touched}}}",
                lambda a: a[STEP_TOKENS[ph]] * a["xf_top_k"] / a[touched])
        eff = ("2*{xf_effn_g}" if up == 2 else "{xf_effn_g}", lambda a: up * a["xf_effn_g"])
        ops += [
            _op(ph, "router", "MoE router", tok, _ref("xf_hidden"), _ref("xf_experts"), layers,
                kern, AB, WB, OB),
            _op(ph, "eup", f"experts {upname} (touched experts)", rows, _ref("xf_hidden"),
                eff, _times("xf_layers", touched, *per_step), kern, AB, WB, OB),
            _op(ph, "edown", "experts down", rows, _ref("xf_effn_g"), _ref("xf_hidden"),
                _times("xf_layers", touched, *per_step), kern, AB, WB, OB),
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
                   _ref("xf_vocab_g"), _const(1), _const(1), AB, "xf_eb", OB))
    ops.append(_nonmatmul(cfg, ph))
    return ops


#: the attention-output quantize kernels per layer (sheets.transformer.inputs.derived)
QUANT = "xf_quant_kernels"


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
    step = STEPS[ph]
    mm = ref.matmul_kernels(cfg)
    kern = q(p + "kernels", "kernels", "",
             f"(MAX(0,{{xf_layer_kernels}}-{mm})+{{{QUANT}}})*{{xf_layers}}"
             + (f"*{{{step}}}" if step else ""),
             lambda a: (ref.other_kernels(cfg, a["xf_layer_kernels"]) + a[QUANT])
             * a["xf_layers"] * (a[step] if step else 1),
             fmt="int", doc=f"Kernels per layer less the {mm} the matmul rows count, plus the "
                            "attention-output quantize kernels, per layer (and prefill step).")
    b = q(p + "bytes", "bytes moved", "B",
          f"{{xf_layers}}*{{{p}m}}*({{{AB}}}*({ref.NORM_RESIDUAL_ELEMENTS}*{{xf_hidden}}"
          f"+{up + 1}*({width}))+{{xf_kvb}}*2*{{xf_kv_g}}*{{xf_head_dim}}"
          f"+{{{QUANT}}}*({{{OB}}}+{{{AB}}})*{{xf_heads_g}}*{{xf_head_dim}})",
          lambda a: a["xf_layers"] * a[p + "m"] * (
              a[AB] * (ref.NORM_RESIDUAL_ELEMENTS * a["xf_hidden"] + (up + 1) * wfn(a))
              + a["xf_kvb"] * 2 * a["xf_kv_g"] * a["xf_head_dim"]
              + a[QUANT] * (a[OB] + a[AB]) * a["xf_heads_g"] * a["xf_head_dim"]),
          doc="Per token per layer: norms and residual adds 10·h, the activation "
              f"{up + 1}× its width, in the activation dtype; the new K and V in the KV dtype; "
              "a standalone quantize of the attention output reads it in the output dtype and "
              "writes it in the activation dtype.")
    mt = rf.memory_time(p + "time", p + "bytes", "bound time")
    real = realistic_time(p + "real", kern.name, None, p + "bytes")
    return OpRow("non-matmul (norms, residual, activation, KV write)",
                 (m, None, None, None, kern, None, b, None, None, None, None, mt, None, None,
                  None, real),
                 mt.name, real.name, None)
