"""The live sentences: which phase is compute- or memory-bound and what halves it, attention's
intensity, the KV cache's share, the fit, the all-reduces.
"""

from __future__ import annotations

from sheetgen.model.vocabulary import Quantity
from sheetgen.sheets.parallel import text as txt


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
            "Prefill runs ", _n("xf_pf_step"), " tokens through each weight read, ",
            txt.When("{xf_pf_step}>={critical_batch}",
                     lambda a: a["xf_pf_step"] >= a["critical_batch"],
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
