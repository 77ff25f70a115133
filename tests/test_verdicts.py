"""Issue #19 §1-§2: PP at its best micro-batch count, and a near-tie called a tie.

Every figure here is held against this file's own plain-Python model: the roofline of each
layer, GPipe's flow shop L(M) = Σ stages + Σ hops + (M - 1) · pace at ceil(m/M) rows, and a
brute force over every candidate M = 1 ... min(m, 512) (ties to the smaller M). None of it
calls sheetgen's references. The hardware: A100 40GB SXM in bf16 (312e12 FLOP/s,
1.555e12 B/s), NVLink 300e9 B/s per direction and 5 µs, PCIe 31.5e9 B/s and 10 µs;
72 layers of 8192 <-> 32768 on G = 2 GPUs, efficiencies 1.0, and, as the issue's table, no
launch floor (`launch_overhead` 0) and ring all-reduces (`tp_allreduce`; test_parallelism
holds the preset's 5 µs floor and the fastest all-reduce by hand, and the last test here where
the floor moves the best M).
"""

from __future__ import annotations

import functools
import math
import random
from itertools import pairwise

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import scalars as planned_scalars

from sheetgen.assemble import BuildConfig, input_values, sheet_specs
from sheetgen.cli import cli
from sheetgen.inputs.shapes import Shape
from sheetgen.layout.planner import plan_workbook
from sheetgen.sheets.parallel import sheet as parallel
from sheetgen.sheets.parallel.text import rounded_text

PEAK, HBM, B = 312e12, 1.555e12, 2
NVLINK, NVLINK_LAT, PCIE, PCIE_LAT = 300e9, 5e-6, 31.5e9, 10e-6
K, N, LAYERS, G = 8192, 32768, 72, 2


@functools.cache
def scalars(**options):
    """helpers.scalars, planned once per set of options (a dozen tests read the defaults'
    and a few other sets; none edits them)."""
    return planned_scalars(**{"launch_overhead": 0.0, "tp_allreduce": "ring"} | options)


def roof(rows, inner, cols, peak=PEAK, hbm=HBM, b=B, floor=0.0):
    """One matmul call: its launch floor (0: the issue's table) + the roofline."""
    return floor + max(2 * rows * inner * cols / peak,
                       b * (rows * inner + inner * cols + rows * cols) / hbm)


def cuts(layers, g, k, n, narrow):
    """Stage ends: after every ceil(L/G) layers (balanced); the narrow cut moves an end one
    layer earlier where that layer outputs the wide activation (so hops carry m·min(k,n))."""
    per = math.ceil(layers / g)
    ends = list(range(per, layers, per))
    if narrow:
        wide_out = (lambda i: i % 2 == 0) if k < n else (lambda i: i % 2 == 1)
        # with one layer a stage, two ends can meet: that GPU idles, one hop passes it by
        ends = sorted({e - 1 if k != n and wide_out(e) else e for e in ends} - {0})
    return [0, *ends, layers]


def pp_latency(m, micro, *, k=K, n=N, layers=LAYERS, g=G, bw=NVLINK, lat=NVLINK_LAT,
               narrow=False, floor=0.0):
    """GPipe's flow shop, layer by layer: layer i is [rows × in]·[in × out], odd layers
    n -> k, even k -> n; a hop after every stage but the last."""
    rows = math.ceil(m / micro)
    servers = []
    ends = cuts(layers, g, k, n, narrow)
    for first, last in pairwise(ends):
        servers.append(sum(roof(rows, n, k, floor=floor) if i % 2
                           else roof(rows, k, n, floor=floor)
                           for i in range(first + 1, last + 1)))
        if last < layers:
            servers.append(B * rows * (k if last % 2 else n) / bw + lat)
    return sum(servers) + (micro - 1) * max(servers)


@functools.cache
def best(m, **kw):
    """(best M, its latency): every candidate M and both stage cuts, ties to the smaller M
    (each alternative at its best: best M, cheapest cut). Kept per arguments: several
    tests ask for the same m."""
    out = (0, math.inf)
    for micro in range(1, min(m, 512) + 1):
        t = min(pp_latency(m, micro, **kw), pp_latency(m, micro, narrow=True, **kw))
        if t < out[1]:
            out = (micro, t)
    return out


def tp_latency(m, *, k=K, n=N, layers=LAYERS, g=G, bw=NVLINK, lat=NVLINK_LAT, floor=0.0):
    """Megatron: type 1 (n -> k) row-split (k is narrower), its m×k all-reduced (ring)."""
    shard = math.ceil(n / g)
    ar = 2 * (g - 1) / g * B * m * k / bw + 2 * (g - 1) * lat
    odd, even = (layers + 1) // 2, layers // 2
    return odd * (roof(m, shard, k, floor=floor) + ar) + even * roof(m, k, shard, floor=floor)


def verdict(pp, tp, margin=0.05):
    return "pipeline" if pp <= tp * (1 - margin) else "tensor" if tp <= pp * (1 - margin) \
        else "tie"


def sweep(ms, **options):
    """The sheet's sweep at the given m (typed into its rows), as the reference model has it."""
    options = {"launch_overhead": 0.0, "tp_allreduce": "ring"} | options
    cfg = BuildConfig(shapes=[Shape(1, 1, 1)], spare_rows=0, **options).resolved()
    values = input_values(cfg)
    values["sweep_m_typed"] = list(ms) + [None] * (len(values["sweep_m_typed"]) - len(ms))
    values["sweep_times"] = [None] * len(values["sweep_times"])
    cols = plan_workbook(sheet_specs(cfg.layout()), values).model.columns
    return {key: list(cols[key][:len(ms)]) for key in
            ("sw_micro", "sw_p_latency", "sw_t_latency", "sw_b_latency")}


# §1's table, by hand first (so a wrong hand model fails here, not in the sheet).
def test_the_issue_table_by_hand():
    assert pp_latency(4096, 8) == pytest.approx(285.6e-3, abs=0.05e-3)
    assert best(4096) == (19, pytest.approx(267.7e-3, abs=0.05e-3))
    assert tp_latency(4096) == pytest.approx(262.1e-3, abs=0.05e-3)
    assert best(16384) == (77, pytest.approx(1029e-3, abs=0.5e-3))
    assert tp_latency(16384) == pytest.approx(1048e-3, abs=0.5e-3)
    host = {"bw": PCIE, "lat": PCIE_LAT}
    assert tp_latency(768, **host) == pytest.approx(62.7e-3, abs=0.05e-3)
    assert best(768, **host)[1] == pytest.approx(64.0e-3, abs=0.05e-3)
    assert best(1024, **host) == (5, pytest.approx(77.3e-3, abs=0.05e-3))
    assert tp_latency(1024, **host) == pytest.approx(83.3e-3, abs=0.05e-3)
    # m = 8 is memory-bound: micro-batching it 8 ways is 4.5x one GPU; its best M is 1
    assert pp_latency(8, 8) == pytest.approx(111.9e-3, abs=0.05e-3)
    assert best(8) == (1, pytest.approx(24.9e-3, abs=0.05e-3))
    # the curve is flat near its minimum: M = 16 ... 20 are all within 1 %
    assert all(pp_latency(4096, mb) < 1.01 * best(4096)[1] for mb in range(16, 21))


def test_defaults_pp_at_typed_and_best_m_against_tp():
    typed, auto = scalars(micro_batches=8), scalars()
    assert typed["pp_latency_m"] == pytest.approx(pp_latency(4096, 8), rel=1e-12)
    assert typed["b_latm"] == "tensor"  # 8.2 % at M = 8, the old headline
    assert 1 - typed["tp_latency"] / typed["pp_latency_m"] == pytest.approx(0.082, abs=5e-4)
    for s in (typed, auto):  # the best-M figures are shown either way
        assert s["pp_best_m"] == 19
        assert s["pp_latency_best"] == pytest.approx(best(4096)[1], rel=1e-12)
        assert s["tp_latency"] == pytest.approx(tp_latency(4096), rel=1e-12)
        assert s["b_latb"] == "tie"  # 2.1 %: the real margin
    assert auto["pp_m"] == 19 and auto["b_latm"] == "tie"
    assert auto["pp_latency_m"] == pytest.approx(best(4096)[1], rel=1e-12)
    assert "a tie: tensor parallel finishes one batch 2.1 % sooner" in auto["verdict_latency"]


def test_sweep_rows_use_their_own_best_m_whatever_m_is_typed():
    ms = [8, 768, 1024, 4096, 16384]
    for options, link in (({"micro_batches": 8}, {}),
                          ({"link_over": "host"}, {"bw": PCIE, "lat": PCIE_LAT})):
        got = sweep(ms, **options)
        for i, m in enumerate(ms):
            micro, latency = best(m, **link)
            assert got["sw_micro"][i] == micro, (m, options)
            assert got["sw_p_latency"][i] == pytest.approx(latency, rel=1e-12)
            assert got["sw_t_latency"][i] == pytest.approx(tp_latency(m, **link), rel=1e-12)
            assert got["sw_b_latency"][i] == verdict(latency, tp_latency(m, **link))
    nv = sweep([16384])
    assert nv["sw_micro"] == [77] and nv["sw_b_latency"] == ["tie"]  # 1.7 %, not "TP wins"


def test_where_the_verdicts_flip():
    """§2's tie list: over NVLink TP wins small m and PP's best-case edge from m ≈ 2,500 is
    at most about 3 %, a tie; over PCIe TP wins below m ≈ 600, a tie up to about 1,000, PP
    wins beyond. PP at its best M is sooner than TP over NVLink from about m = 7,000, and
    over PCIe from m ≈ 790."""
    nv = [2048, 2500, 3000, 7000, 7500, 8192, 16384, 32768]
    got = sweep(nv)
    want = [verdict(best(m)[1], tp_latency(m)) for m in nv]
    assert got["sw_b_latency"] == want == ["tensor"] + ["tie"] * 7
    edge = [1 - best(m)[1] / tp_latency(m) for m in nv[1:]]
    assert max(edge) < 0.03  # PP's best-case lead over NVLink is under 3 %
    assert best(6500)[1] > tp_latency(6500) and best(7500)[1] < tp_latency(7500)
    host = {"bw": PCIE, "lat": PCIE_LAT}
    pc = [512, 590, 600, 768, 900, 1024, 2048]
    got = sweep(pc, link_over="host")
    assert got["sw_b_latency"] == [verdict(best(m, **host)[1], tp_latency(m, **host))
                                   for m in pc] \
        == ["tensor", "tensor", "tie", "tie", "tie", "pipeline", "pipeline"]
    assert best(768, **host)[1] > tp_latency(768, **host)  # TP still sooner at 768
    assert best(800, **host)[1] < tp_latency(800, **host)  # PP sooner by 800


def test_the_tie_margin_applies_to_every_comparison_row():
    s = scalars()
    assert s["tie_margin"] == 0.05
    # throughput 3.3 % (stream) and 2.1 % (one at a time), latency 2.1 %: ties at 5 %
    for key in ("b_mem", "b_mem_stream", "b_stream", "b_flushed", "b_latm"):
        assert s[key] == "tie", key
    strict = scalars(tie_margin=0.01)
    assert (strict["b_mem_stream"], strict["b_stream"], strict["b_flushed"],
            strict["b_latm"]) == ("pipeline", "pipeline", "tensor", "tensor")
    assert strict["b_mem"] == "tie"  # 0.25 %, counted where it sits (below)
    assert scalars(tie_margin=0.001)["b_mem"] == "pipeline"
    assert "tensor parallel finishes one batch 2.1 % sooner (" in strict["verdict_latency"]


def test_memory_counted_where_it_sits():
    """§4: stage 1 holds the whole input m×n, the last stage collects the output m×n; PP
    19.64 GB at M = 8 against TP's 19.66 GB (a tie), 19.37 GB if batches stream."""
    weights = 36 * B * K * N  # either side: 36 layers' worth per GPU
    batch = B * 4096 * N  # 268 MB, the input (and the output) of the whole batch
    for micro in (8, 19):
        live = B * math.ceil(4096 / micro) * (N + K)  # one micro-batch in + out
        s = scalars(micro_batches=micro)
        assert s["pp_held"] == batch
        assert s["pp_mem"] == weights + batch + live
        assert s["pp_mem_stream"] == weights + live
    assert scalars(micro_batches=8)["pp_mem"] == pytest.approx(19.64e9, abs=0.005e9)
    tp = weights + B * 4096 * (N + K)  # layer 1 holds its replicated m×n input + m×k sums
    s = scalars(micro_batches=8)
    assert s["tp_mem"] == tp == pytest.approx(19.66e9, abs=0.005e9)
    assert s["b_mem"] == "tie" and s["b_mem_stream"] == "tie"
    assert "counted where it sits: pipeline 19.6 GB" in s["verdict_memory"]
    assert "19.4 GB if batches stream in and out" in s["verdict_memory"]


def test_the_best_m_is_the_brute_force_argmin_on_random_pipelines():
    """The helper table's MIN/MATCH against this file's brute force, on random shapes,
    stage counts and links (both sides of every ridge, hops that set the pace)."""
    rng = random.Random(19)
    for _ in range(12):
        m = rng.choice([1, 3, 17, 100, 640, 1000, 2500, 4096, 9000])
        k, n = rng.choice([256, 1024, 4096, 8192]), rng.choice([512, 2048, 8192, 32768])
        layers, g = rng.randint(1, 12), rng.randint(1, 5)
        bw, lat = rng.choice([(NVLINK, NVLINK_LAT), (PCIE, PCIE_LAT), (1e9, 50e-6)])
        s = scalars(pipeline_shape=(m, k, n), layers=layers, gpus=g, link_bw=bw,
                    link_latency=lat)
        micro, latency = best(m, k=k, n=n, layers=layers, g=g, bw=bw, lat=lat)
        case = (m, k, n, layers, g, bw)
        assert s["pp_best_m"] == micro, case
        assert s["pp_latency_best"] == pytest.approx(latency, rel=1e-12), case


def test_fp8_on_an_h100_hops_and_all_reduces_carry_bf16():
    """§3 meets §1-§2: fp8 operands, bf16 outputs (the default for fp8 compute). H100 SXM
    (NVIDIA datasheet): 1978.9e12 FLOP/s dense fp8, 3.35e12 B/s HBM3, NVLink 4 450e9 B/s
    per direction, 5 µs. TP 45.73 ms (each all-reduce 159 µs in bf16, not 85 µs in fp8),
    PP 43.48 ms at its best M = 12 (45.08 ms at M = 8): PP 4.9 % sooner, a tie."""
    peak, hbm, bw, lat = 1978.9e12, 3.35e12, 450e9, 5e-6
    a, w, o = 1, 1, 2  # bytes per element: fp8 A and B, bf16 C

    def roof8(rows, inner, cols):
        return max(2 * rows * inner * cols / peak,
                   (a * rows * inner + w * inner * cols + o * rows * cols) / hbm)

    def pp8(micro):
        rows = math.ceil(4096 / micro)
        stage = 18 * (roof8(rows, N, K) + roof8(rows, K, N))
        hop = o * rows * N / bw + lat  # after layer 36 (type 2: m×n), in bf16
        return 2 * stage + hop + (micro - 1) * max(stage, hop)

    ar = 2 * (2 - 1) / 2 * o * 4096 * K / bw + 2 * (2 - 1) * lat
    assert ar == pytest.approx(159e-6, abs=0.5e-6)
    tp8 = 36 * (roof8(4096, N // 2, K) + ar) + 36 * roof8(4096, K, N // 2)
    best8 = min(range(1, 513), key=lambda mb: (pp8(mb), mb))
    assert best8 == 12 and pp8(12) == pytest.approx(43.48e-3, abs=0.005e-3)
    assert pp8(8) == pytest.approx(45.08e-3, abs=0.005e-3)
    assert tp8 == pytest.approx(45.73e-3, abs=0.005e-3)
    s = scalars(gpu="H100 SXM", dtype="fp8")
    assert s["allreduce_time"] == pytest.approx(ar, rel=1e-12)
    assert s["pp_best_m"] == 12 and s["pp_latency_best"] == pytest.approx(pp8(12), rel=1e-12)
    assert s["tp_latency"] == pytest.approx(tp8, rel=1e-12)
    assert s["b_latm"] == "tie"
    assert "a tie: pipeline parallel finishes one batch 4.9 % sooner" in s["verdict_latency"]


def test_the_narrow_cut_is_shown_and_used_where_it_is_cheaper():
    """§5: cutting one layer off the balanced boundary sends m×k instead of m×n (4× less)
    at the price of unequal stages. On the defaults the balanced cut wins (NVLink m = 4096:
    267.7 vs 274.3 ms; PCIe m = 1024: 77.3 vs 78.4 ms); over a 1 GB/s link with
    4096·1024·16384 the m×n hop (134 MB) would set the pace, and the narrow cut wins."""
    s = scalars()
    assert s["pp_latency_bal"] == pytest.approx(267.66e-3, abs=5e-6)
    assert s["pp_latency_narrow"] == pytest.approx(pp_latency(4096, 19, narrow=True),
                                                   rel=1e-12)
    assert s["pp_latency_narrow"] == pytest.approx(274.3e-3, abs=0.05e-3)
    assert s["pp_cut"] == "balanced" and s["pp_latency_m"] == s["pp_latency_bal"]
    host = scalars(pipeline_shape=(1024, K, N), link_over="host")
    assert host["pp_m"] == 5 and host["pp_cut"] == "balanced"
    assert host["pp_latency_narrow"] == pytest.approx(78.45e-3, abs=0.005e-3)
    slow = {"k": 1024, "n": 16384, "layers": 8, "bw": 1e9, "lat": 5e-6}
    s = scalars(pipeline_shape=(4096, 1024, 16384), layers=8, link_bw=1e9, link_latency=5e-6)
    micro = s["pp_best_m"]
    assert micro == best(4096, **slow)[0]
    want = pp_latency(4096, micro, narrow=True, **slow)
    assert want < pp_latency(4096, micro, **slow)
    assert s["pp_cut"] == "narrow" and s["pp_latency_m"] == pytest.approx(want, rel=1e-12)
    for layers, g in ((9, 3), (7, 2), (12, 5), (3, 3)):  # odd ceil(L/G): lengths alternate
        opts = {"k": 1024, "n": 4096, "layers": layers, "g": g, "bw": 1e9, "lat": 5e-6}
        s = scalars(pipeline_shape=(512, 1024, 4096), layers=layers, gpus=g, link_bw=1e9,
                    link_latency=5e-6, micro_batches=4)
        assert s["pp_latency_narrow"] == pytest.approx(
            pp_latency(512, 4, narrow=True, **opts), rel=1e-12), (layers, g)
        assert s["pp_latency_bal"] == pytest.approx(pp_latency(512, 4, **opts), rel=1e-12)


def test_cli_and_api_take_auto_or_a_number(tmp_path):
    assert scalars(micro_batches=None)["pp_m"] == 19
    assert scalars(micro_batches=12)["pp_m"] == 12
    out = tmp_path / "p.xlsx"
    args = ["build", str(out), "--spare-rows", "0", "--micro-batches", "auto", "--tie-margin",
            "0.01"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    for bad, needle in ((["--micro-batches", "some"], "neither auto nor a whole number"),
                        (["--tie-margin", "2"], "--tie-margin must be a fraction")):
        result = CliRunner().invoke(cli, ["build", str(tmp_path / "x.xlsx"), *bad])
        assert result.exit_code == 2 and needle in result.output, result.output


def test_when_tp_helps_is_a_live_sentence_that_flips():
    """§5: w_s > b·P/(2B) + G·λ·P/(2·m·w_ar). A100 bf16 over PCIe (31.5e9 B/s, 10 µs):
    4096·1024·4096 has w_s = 4096 against 2·312e12/(2·31.5e9) = 9905 (+ 744): TP 14.27 ms,
    one GPU 7.93 ms. 8192·1024·16384 has w_s = 16384 > 9905 + 372: TP 51.6 against 63.4 ms,
    though its all-reduced width is only 1024."""
    bw_term = B * PEAK / (2 * PCIE)
    assert bw_term == pytest.approx(9905, abs=0.5)
    assert pytest.approx(1040, abs=0.5) == B * PEAK / (2 * NVLINK)
    slow = scalars(pipeline_shape=(4096, 1024, 4096), link_over="host")
    assert slow["tp_latency"] == pytest.approx(14.27e-3, abs=0.005e-3)
    assert slow["single_latency"] == pytest.approx(7.93e-3, abs=0.005e-3)
    lat_term = 2 * PCIE_LAT * PEAK / (2 * 4096 * 1024)
    assert (f"Here, with the ring all-reduce (σ = 1, ν = 1), 4096 ≤ 9905 + {round(lat_term)}, "
            "so TP does not help") in slow["verdict_tp"]
    wide = scalars(pipeline_shape=(8192, 1024, 16384), link_over="host")
    assert wide["tp_latency"] == pytest.approx(51.6e-3, abs=0.05e-3)
    assert wide["single_latency"] == pytest.approx(63.4e-3, abs=0.05e-3)
    assert "(σ = 1, ν = 1), 16384 > 9905 + 372, so TP helps" in wide["verdict_tp"]
    lasting = " ".join(parallel.LASTING)
    assert "at any m" not in lasting and "largest at small m" not in lasting
    assert "w_s > b·P/(2B) + G·λ·P/(2·m·w_ar)" in lasting


def test_overlap_hides_the_all_reduce_up_to_the_compute():
    s0, s1 = scalars(), scalars(tp_overlap=0.5)
    ar = 36 * (B * 4096 * K / NVLINK + 2 * NVLINK_LAT)  # 36 all-reduces, G = 2
    assert s0["tp_hidden"] == 0 and s1["tp_hidden"] == pytest.approx(ar / 2, rel=1e-12)
    assert s1["tp_latency"] == pytest.approx(s0["tp_latency"] - ar / 2, rel=1e-12)
    tiny = scalars(pipeline_shape=(1, 1024, 4096), link_over="host", tp_overlap=1.0)
    assert tiny["tp_hidden"] == pytest.approx(tiny["tp_compute"], rel=1e-12)  # capped
    assert "PP's lead is TP's all-reduce time not hidden behind compute, 8.41 ms" \
        in s0["verdict_throughput"]


def test_wording_an_interviewer_would_not_mark_down():
    """§7: What-if A2 and its live line, B80/B83, GPU Specs A2, Inputs' peak note."""
    from sheetgen.sheets import gpu_specs, inputs, whatif

    a2 = next(t.text for t in whatif.sheet().texts if (t.row, t.col) == (1, 0))
    assert "opposite directions" in a2 and "about doubles when k or n doubles" in a2
    s = scalars()
    assert s["whatif_shows"] == (  # 128·4096·4096 bf16: m* = 222.4, 2m = 256 crosses it
        "On this shape the base is memory-bound; with this k and n it is memory-bound below "
        "m* and compute-bound from m = 223 rows. Time when doubling m: ×1.2 (now "
        "compute-bound); k: ×1.97; n: ×1.97; all three: ×4.8 (now compute-bound).")
    assert "the pipeline is full without micro-batches" in s["verdict_micro"]
    assert "re-reads the weights" not in s["verdict_micro"]
    specs = next(t.text for t in gpu_specs.sheet().texts if (t.row, t.col) == (1, 0))
    assert "HBM bandwidth in bytes/s, reads and writes together" in specs
    assert "fp32" in inputs.PEAK_FLOPS.doc and "CUDA-core" in inputs.PEAK_FLOPS.doc


def _two_stage_brute_force(m, k, n, ends, hop_cols, bw, lat):
    """numpy brute force over M = 1 ... min(m, 512) for two stages ending after `ends[0]`
    of `ends[1]` layers (odd layers n -> k, even k -> n): (latency, stages, hop) per M."""
    micro = np.arange(1, min(m, 512) + 1, dtype=float)
    rows = np.ceil(m / micro)

    def layer(i):  # the roofline of layer i at `rows` rows, A100 bf16
        inner, cols = (n, k) if i % 2 else (k, n)
        return np.maximum(2 * rows * inner * cols / PEAK,
                          B * (rows * inner + inner * cols + rows * cols) / HBM)

    first = sum(layer(i) for i in range(1, ends[0] + 1))
    second = sum(layer(i) for i in range(ends[0] + 1, ends[1] + 1))
    hop = B * rows * hop_cols / bw + lat
    pace = np.maximum(np.maximum(first, second), hop)
    return first + second + hop + (micro - 1) * pace, np.maximum(first, second), hop


def test_the_narrow_cut_gets_its_own_best_m():
    """k ≫ n on 2 GPUs over PCIe (31.5 GB/s, 10 µs): 6 layers of 2048 <-> 32768, m = 4096.
    Balanced: layers 1-3 | 4-6, the hop after layer 3 carries m×k (268 MB); narrow: layers
    1-2 | 3-6, the hop after layer 2 carries m×n (16.8 MB). By numpy brute force the
    balanced cut is best at M = 20 (9.303 ms) and the narrow cut at M = 18 (7.298 ms); the
    narrow cut at the balanced cut's M = 20 takes 7.867 ms (what a best M found on the
    balanced cut alone gave)."""
    m, k, n, bw, lat = 4096, 32768, 2048, PCIE, PCIE_LAT
    bal, bal_stage, bal_hop = _two_stage_brute_force(m, k, n, (3, 6), k, bw, lat)
    nar, nar_stage, nar_hop = _two_stage_brute_force(m, k, n, (2, 6), n, bw, lat)
    assert int(np.argmin(bal)) + 1 == 20 and bal.min() == pytest.approx(9.303e-3, abs=5e-7)
    assert bal_hop[19] > bal_stage[19]  # there the 268 MB m×k hop sets the balanced pace
    assert int(np.argmin(nar)) + 1 == 18 and nar.min() == pytest.approx(7.2977e-3, abs=5e-8)
    assert nar[19] == pytest.approx(7.867e-3, abs=5e-7)  # narrow at M = 20: 7.8 % worse
    both = np.minimum(bal, nar)
    best_m = int(np.argmin(both)) + 1
    assert best_m == 18
    s = scalars(pipeline_shape=(m, k, n), layers=6, gpus=2, link_bw=bw, link_latency=lat)
    assert s["pp_best_m"] == 18 and s["pp_m"] == 18
    assert s["pp_cut"] == "narrow" and s["pp_cut_best"] == "narrow"
    assert s["pp_latency_best"] == pytest.approx(both.min(), rel=1e-12)
    assert s["pp_latency_m"] == pytest.approx(both.min(), rel=1e-12)
    # every PP figure is the narrow cut's: one hop of m×n, stages of 2 and 4 layers
    rows = math.ceil(m / 18)  # 228
    assert s["pp_stage_max"] == pytest.approx(nar_stage[17], rel=1e-12)
    assert nar_stage[17] == pytest.approx(4 * 2 * rows * n * k / PEAK, rel=1e-12)  # 392.3 µs
    assert s["pp_hop_max"] == pytest.approx(nar_hop[17], rel=1e-12)
    assert s["pp_pace_by"] == "a stage"
    assert s["pp_compute"] == pytest.approx(18 * nar_stage[17], rel=1e-12)
    assert s["pp_volume"] == B * m * n == 16_777_216  # not the balanced cut's 268,435,456
    assert s["pp_comm"] == pytest.approx(18 * (B * rows * n / bw + lat), rel=1e-12)
    weights = 4 * B * k * n  # stage 2's 4 layers: 536,870,912 B (the balanced cut: 3)
    assert s["pp_weights"] == weights == 536_870_912
    held = B * m * n  # the last stage collects the m×n output
    acts = B * rows * (k + n)  # one micro-batch's live in + out
    assert s["pp_held"] == held
    assert s["pp_mem"] == weights + held + acts == 569_524_224
    # the sweep's row at the input m is the same pair
    cols = sweep([m], pipeline_shape=(m, k, n), layers=6, gpus=2, link_bw=bw,
                 link_latency=lat)
    assert cols["sw_micro"] == [18]
    assert cols["sw_p_latency"][0] == pytest.approx(both.min(), rel=1e-12)


def test_where_the_balanced_cut_wins_nothing_changes():
    """The defaults (72 layers of 8192 <-> 32768, G = 2, NVLink): the balanced cut's own
    best M = 19 (267.66 ms) is the best over both cuts; its figures are the balanced cut's:
    36 layers a stage, one hop of m×n (268,435,456 B) after layer 36."""
    s = scalars()
    assert s["pp_best_m"] == 19 and s["pp_cut"] == "balanced"
    assert s["pp_latency_best"] == pytest.approx(pp_latency(4096, 19), rel=1e-12)
    rows = math.ceil(4096 / 19)  # 216
    stage = 18 * (roof(rows, N, K) + roof(rows, K, N))
    assert s["pp_stage_max"] == pytest.approx(stage, rel=1e-12)
    assert s["pp_volume"] == B * 4096 * N == 268_435_456
    assert s["pp_comm"] == pytest.approx(19 * (B * rows * N / NVLINK + NVLINK_LAT), rel=1e-12)
    assert s["pp_weights"] == 36 * B * K * N


def test_the_launch_floor_moves_the_best_m_and_the_verdict():
    """Every micro-batch launches each layer's kernel again: with the preset's 5 µs floor a
    72-layer pipeline of 1024 <-> 4096 at m = 2048 (27.5 µs a layer on one GPU) loses most
    of what micro-batching bought. Without the floor PP's best is M = 7, 2.28 ms, 20 %
    ahead of TP's 2.85 ms; with it, M = 3 and 3.39 ms, 5.4 % behind TP's 3.21 ms."""
    shape = {"k": 1024, "n": 4096}
    floor = 5e-6
    assert best(2048, **shape) == (7, pytest.approx(2.2818e-3, abs=0.05e-6))
    assert tp_latency(2048, **shape) == pytest.approx(2.8456e-3, abs=0.05e-6)
    micro, pp = best(2048, floor=floor, **shape)
    tp = tp_latency(2048, floor=floor, **shape)
    assert micro == 3 and pp == pytest.approx(3.3880e-3, abs=0.05e-6)
    assert tp == pytest.approx(3.2056e-3, abs=0.05e-6)
    assert verdict(pp, tp) == "tensor"
    bare = scalars(pipeline_shape=(2048, 1024, 4096))
    s = scalars(pipeline_shape=(2048, 1024, 4096), launch_overhead=floor)
    assert (bare["pp_best_m"], bare["b_latb"]) == (7, "pipeline")
    assert (s["pp_best_m"], s["b_latb"]) == (3, "tensor")
    assert s["pp_latency_best"] == pytest.approx(pp, rel=1e-12)
    assert s["tp_latency"] == pytest.approx(tp, rel=1e-12)
    assert s["verdict_latency"].startswith(
        "Latency: tensor parallel finishes one batch 5.4 % sooner (tensor 3.21 ms, "
        "pipeline 3.39 ms with 3 micro-batches, its best M")
    cols = sweep([2048], pipeline_shape=(2048, 1024, 4096), launch_overhead=floor)
    assert cols["sw_micro"] == [3] and cols["sw_b_latency"] == ["tensor"]
    assert cols["sw_p_latency"][0] == pytest.approx(pp, rel=1e-12)


def test_one_gpu_reads_as_equal_not_as_a_winner():
    """On one GPU, PP and TP are the same run: every comparison row is a tie and each
    sentence says the two are equal, whatever the last digit of each side (the idle share
    computes 1.3E-15 against 0 before it is rounded). By hand: one layer of 4096·100·4095 in
    fp32 on the RTX PRO 6000 (0.918 of its peak) is memory-bound, so M = 1 is the best M and
    the pipeline is the one GPU's 72 layers."""
    s = scalars(gpu="RTX PRO 6000 Server", dtype="fp32", gpus=1,
                pipeline_shape=(4096, 100, 4095), link_over="host", tp_pairing="wide",
                compute_eff=0.918, tp_overlap=1.0)
    assert s["pp_m"] == 1 and s["pp_idle"] == 0.0 and s["tp_idle"] == 0.0
    assert s["pp_latency_m"] == pytest.approx(s["tp_latency"], rel=1e-15)
    for name in ("b_latm", "b_latb", "b_stream", "b_flushed", "b_comm", "b_volume", "b_idle",
                 "b_compute"):
        assert s[name] == "tie", name
    assert s["verdict_latency"].startswith("Latency: a tie: the two are equal (tensor ")
    assert s["verdict_throughput"] == (
        "Throughput: for a stream of batches a tie: the two are equal (pipeline "
        f"{rounded_text(s['pp_tput_stream_one'])} vs tensor "
        f"{rounded_text(s['tp_tput'])} rows/s); one batch at a time, a tie: the two "
        f"are equal (pipeline {rounded_text(s['pp_tput_flushed'])} vs tensor "
        f"{rounded_text(s['tp_tput'])} rows/s).")
    assert s["verdict_comm"] == "Communication: none on one GPU."
