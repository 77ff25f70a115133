"""Issue #19 §1-§2: PP at its best micro-batch count, and a near-tie called a tie.

Every figure here is held against this file's own plain-Python model: the roofline of each
layer, GPipe's flow shop L(M) = Σ stages + Σ hops + (M - 1) · pace at ceil(m/M) rows, and a
brute force over every candidate M = 1 ... min(m, 512) (ties to the smaller M). None of it
calls sheetgen's references. The hardware: A100 40GB SXM in bf16 (312e12 FLOP/s,
1.555e12 B/s), NVLink 300e9 B/s per direction and 5 µs, PCIe 31.5e9 B/s and 10 µs;
72 layers of 8192 <-> 32768 on G = 2 GPUs, efficiencies 1.0.
"""

from __future__ import annotations

import math
import random

import pytest
from click.testing import CliRunner

import sheetgen
from sheetgen.assemble import BuildConfig, input_values, sheet_specs
from sheetgen.cli import cli
from sheetgen.inputs.shapes import Shape
from sheetgen.layout.planner import plan_workbook

PEAK, HBM, B = 312e12, 1.555e12, 2
NVLINK, NVLINK_LAT, PCIE, PCIE_LAT = 300e9, 5e-6, 31.5e9, 10e-6
K, N, LAYERS, G = 8192, 32768, 72, 2


def roof(rows, inner, cols, peak=PEAK, hbm=HBM, b=B):
    return max(2 * rows * inner * cols / peak, b * (rows * inner + inner * cols + rows * cols)
               / hbm)


def pp_latency(m, micro, *, k=K, n=N, layers=LAYERS, g=G, bw=NVLINK, lat=NVLINK_LAT):
    """GPipe's flow shop, layer by layer: layer i is [rows × in]·[in × out], odd layers
    n -> k, even k -> n; stages of ceil(L/G) layers; a hop after every stage but the last."""
    rows = math.ceil(m / micro)
    per = math.ceil(layers / g)
    servers = []
    first = 1
    while first <= layers:
        last = min(first + per - 1, layers)
        servers.append(sum(roof(rows, n, k) if i % 2 else roof(rows, k, n)
                           for i in range(first, last + 1)))
        if last < layers:
            width = k if last % 2 else n
            servers.append(B * rows * width / bw + lat)
        first = last + 1
    return sum(servers) + (micro - 1) * max(servers)


def best(m, **kw):
    """(best M, its latency): every candidate, ties to the smaller M."""
    out = (0, math.inf)
    for micro in range(1, min(m, 512) + 1):
        t = pp_latency(m, micro, **kw)
        if t < out[1]:
            out = (micro, t)
    return out


def tp_latency(m, *, k=K, n=N, layers=LAYERS, g=G, bw=NVLINK, lat=NVLINK_LAT):
    """Megatron: type 1 (n -> k) row-split (k is narrower), its m×k all-reduced (ring)."""
    shard = math.ceil(n / g)
    ar = 2 * (g - 1) / g * B * m * k / bw + 2 * (g - 1) * lat
    odd, even = (layers + 1) // 2, layers // 2
    return odd * (roof(m, shard, k) + ar) + even * roof(m, k, shard)


def verdict(pp, tp, margin=0.05):
    return "pipeline" if pp <= tp * (1 - margin) else "tensor" if tp <= pp * (1 - margin) \
        else "tie"


def scalars(**options):
    return sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, **options).model.scalars


def sweep(ms, **options):
    """The sheet's sweep at the given m (typed into its rows), as the reference model has it."""
    cfg = BuildConfig(shapes=[Shape(1, 1, 1)], spare_rows=0, **options).resolved()
    values = input_values(cfg)
    values["sweep_m_typed"] = list(ms) + [None] * (len(values["sweep_m_typed"]) - len(ms))
    values["sweep_times"] = [None] * len(values["sweep_times"])
    cols = plan_workbook(sheet_specs(cfg), values).model.columns
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
    # memory: 1.6 % apart, throughput 3.3 % and 2.1 %: all ties at 5 %, all verdicts at 1 %
    for key in ("b_mem", "b_stream", "b_flushed", "b_latm"):
        assert s[key] == "tie", key
    strict = scalars(tie_margin=0.01)
    assert (strict["b_mem"], strict["b_stream"], strict["b_flushed"], strict["b_latm"]) == \
        ("pipeline", "pipeline", "tensor", "tensor")
    assert "a tie: pipeline parallel needs 1.6 % less" in s["verdict_memory"]
    assert "tensor parallel finishes one batch 2.1 % sooner (" in strict["verdict_latency"]


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
