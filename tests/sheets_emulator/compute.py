"""The emulator's default formula hook: every formula cell gets a calculated value, as at
Google.

Why: the Sheets API never answers a formula cell with nothing. `values.get`/`batchGet` with
UNFORMATTED_VALUE return values that "will be calculated, but not formatted"
(https://developers.google.com/sheets/reference/rest/v4/ValueRenderOption), and
`CellData.effectiveValue` is "for cells with formulas, ... the calculated value" (the v4
discovery document). An emulator that answered blank unless a test remembered to install a
hook made `check` of a correct push report blank Inputs cells (issue #18's leftover).

The values come from sheetgen's formula evaluator (sheetgen.evaluate) run on the formulas
**as stored in the emulator** (typed cells, formula columns filled down by `repeatCell`, named
ranges): an engine independent of the reference model, so `check` still compares two
independent answers, as it does against Google.

Dozens of tests push the same workbook and read it back, so the results are kept per
process by the snapshot's content (its cells and named ranges, pickled and hashed): the
evaluator is a pure function of them, and a snapshot that differs in any value, type or
formula is evaluated afresh.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from typing import Any

from .a1 import a1
from .state import CellKey, Snapshot

#: results by content digest; bounded (one default push's results are ~30,000 cells)
_RESULTS: OrderedDict[bytes, dict[CellKey, Any]] = OrderedDict()
_RESULTS_MAX = 16
_LOCK = threading.Lock()


def engine_compute(snap: Snapshot) -> dict[CellKey, Any]:
    """UNFORMATTED_VALUE of every formula cell, evaluated from the stored cells (an error
    value as its text, e.g. "#N/A"). A new dict each call: callers may edit it."""
    key = _digest(snap)
    with _LOCK:
        hit = _RESULTS.get(key)
        if hit is not None:
            _RESULTS.move_to_end(key)
            return dict(hit)
    out = _evaluate(snap)
    with _LOCK:
        _RESULTS[key] = out
        while len(_RESULTS) > _RESULTS_MAX:
            _RESULTS.popitem(last=False)
    return dict(out)


def _digest(snap: Snapshot) -> bytes:
    """What the evaluation depends on, exactly: pickle keeps int/float/bool and str apart,
    and the order of sheets and cells (equal content pickled differently only misses)."""
    data = pickle.dumps((snap.sheets, snap.named_ranges), protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.sha256(data).digest()


def _evaluate(snap: Snapshot) -> dict[CellKey, Any]:
    from xlsxwriter.utility import xl_cell_to_rowcol

    from sheetgen.evaluate import ExcelError, evaluate_cells

    formulas: dict[str, dict[tuple[int, int], str]] = {}
    values: dict[str, dict[tuple[int, int], Any]] = {}
    for title, cells in snap.sheets.items():
        formulas[title], values[title] = {}, {}
        for addr, typed in cells.items():
            if not typed:
                continue
            rc = xl_cell_to_rowcol(addr)
            if "formulaValue" in typed:
                formulas[title][rc] = typed["formulaValue"]
            else:
                values[title][rc] = next(iter(typed.values()))
    ev = evaluate_cells(formulas, values, snap.named_ranges)
    out: dict[CellKey, Any] = {}
    for title, cells in formulas.items():
        for r, c in cells:
            v = ev.value(title, a1(r, c))
            if v is not None:
                out[(title, a1(r, c))] = str(v) if isinstance(v, ExcelError) else v
    return out
