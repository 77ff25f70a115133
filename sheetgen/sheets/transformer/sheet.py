"""The Transformer sheet laid out: inputs, totals, sentences, drills, derived quantities, all-
reduces and the two phases' operation tables, with the chart.
"""

from __future__ import annotations

from sheetgen.inputs.model_config import ModelConfig
from sheetgen.model.vocabulary import (
    Block,
    BlockRow,
    Input,
    Quantity,
    SheetSpec,
    Table,
    Text,
)
from sheetgen.sheets.transformer.chart import chart, chart_tables, google_chart, google_tables
from sheetgen.sheets.transformer.comm import comm
from sheetgen.sheets.transformer.common import (
    PHASES,
    SHEET,
)
from sheetgen.sheets.transformer.drills import drills
from sheetgen.sheets.transformer.inputs import (
    MODEL_INPUTS,
    MOE_INPUTS,
    SHARED_FFN,
    WORKLOAD_INPUTS,
    derived,
)
from sheetgen.sheets.transformer.ops import op_rows
from sheetgen.sheets.transformer.sentences import sentences
from sheetgen.sheets.transformer.totals import totals

OP_HEADER = ("operation", "m", "k", "n", "count", "kernels", "FLOPs", "bytes moved",
             "FLOP/B", "regime", "compute", "memory", "bound time", "compute ramp",
             "K loop", "split-K floor", "realistic", "unit",
             "note")
CHART_COL = 9  # right of the blocks' notes, which overflow a few columns


def _rows(items: list[Quantity] | tuple[Input, ...]) -> list[BlockRow]:
    return [BlockRow(x.label, [x], x.unit, x.doc) for x in items]


def sheet(cfg: ModelConfig, google: bool = False) -> SheetSpec:
    """The sheet for this model's structure (dense or MoE, gated or plain, shared experts).
    `google`: the chart plots LOG10 helper columns on linear axes (Google Sheets has no log
    axis), laid out as the API's split domain needs (chart.google_tables)."""
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
             "the GPU preset's measured efficiencies (attention: flash attention's) plus a "
             "launch floor per kernel, GEMMs at the compute ramp's share and by the overlap "
             "exponent, then their K loop and split-K floor (Inputs sheet).",
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
    # "memory-bound" needs 13 characters at the sheet's font: 12 cut it in LibreOffice's PDF
    widths = {0: 46.0} | {i: 12.0 for i in range(1, len(OP_HEADER))} | {
        OP_HEADER.index("regime"): 14.0}
    last = roof.col + len(roof.all_columns())
    tables: tuple[Table, ...] = (points, roof)
    if google:
        logs, blanks, end = google_tables(points, roof)
        tables += logs
        texts += [Text(roof.header_row, c, "(blank)", "note") for c in blanks]
        last = end + 1
    return SheetSpec(
        name=SHEET, time_unit="ms", texts=tuple(texts), blocks=tuple(blocks),
        tables=tables, charts=(google_chart(5, CHART_COL) if google else chart(5, CHART_COL),),
        column_widths=widths,
        hidden_spans=((data_col, last - 1),))
