"""The Transformer sheet (issue #20) by concern: a real model's prefill and decode as live
roofline rows.

Built only when a model is given (`--model NAME` or `--model-config PATH`). The model's
numbers and the workload (batch, prompt and generated tokens, tensor-parallel degree, the
precision of each operand) are input cells (inputs); every operation of one forward step is
one row per phase (prefill, decode) whose m, k, n, count, FLOPs, bytes, intensity, regime and
times are formulas from the same quantity factories as the Matmul sheet (ops); the
tensor-parallel all-reduces (comm); the totals (TTFT, TPOT, tokens/s, memory, fit, max batch,
critical batch) are named as the API's summary keys, so `read --block` gives them (totals);
live sentences, drills and the roofline chart; the layout (sheet) and the inputs as a value
(values). sheetgen.model.transformer is the independent pure-Python model the cells are
tested against.
"""

from sheetgen.sheets.transformer.common import SHEET
from sheetgen.sheets.transformer.ops import op_rows
from sheetgen.sheets.transformer.sheet import sheet
from sheetgen.sheets.transformer.values import (
    TransformerInputs,
    check_inputs,
    input_values,
    op_records,
    structure_from_labels,
)

__all__ = ["SHEET", "TransformerInputs", "check_inputs", "input_values", "op_records",
           "op_rows", "sheet", "structure_from_labels"]
