"""The vocabulary every sheet is declared in: inputs, quantities, blocks and tables.

A `Quantity` is the single source of truth for one derived value: its label, unit, number
format, spreadsheet formula template and Python reference. Templates name other values by
placeholder, never by cell address, so the planner can put them anywhere:

    {x}      the value x: the same row of x's column when x is in the same table,
             else x's named cell (or its absolute address)
    {x[]}    the whole column (or span of columns) x, as a range
    {x[:]}   x's column from its first row down to the current row (running totals)

Reference functions take their arguments by name (the same names as the placeholders) and are
written with NumPy so one call evaluates a whole column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal

#: How a guarded table wraps each derived column: blank unless the row's guard says "ok".
GUARD_WRAP = 'IF({guard}="ok",{body},{otherwise})'
#: What a guarded row shows: "" in tables people read, NA() (#N/A) in chart data, which
#: Excel, LibreOffice and Google Sheets all skip ("" is text to Excel's XY chart: its x falls
#: back to 1, 2, 3 and its y plots as 0).
BLANK_ROW, NA_ROW = '""', "NA()"
NA_CODE = "#N/A"
#: How a quantity computed from a possible gap (Quantity.gap_marker) shows the gap's marker.
GAP_WRAP = "IF(ISNUMBER({source}),{body},{marker})"

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(\[\]|\[:\])?\}")

RefKind = Literal["cell", "range", "running"]
#: A placeholder's suffix -> what it refers to: {x} a cell (a table column's cell on the same
#: row), {x[]} the whole range, {x[:]} the running range from the first row down to this one.
PLACEHOLDER_KINDS: dict[str | None, RefKind] = {None: "cell", "[]": "range", "[:]": "running"}


@dataclass(frozen=True)
class Validation:
    """Data validation for an input cell: a dropdown over a named range, or a number rule."""

    kind: Literal["list", "choices", "whole_min", "decimal_range"]
    source: str | None = None  # list: the name of a range-valued column
    choices: tuple[str, ...] = ()  # choices: the allowed texts
    minimum: float | None = None
    maximum: float | None = None
    message: str = ""

    def whole_formula(self, cell: str) -> str:
        """The whole_min rule as a custom-formula condition on `cell` (relative, the range's
        top-left cell): what Excel's built-in "whole number between" rule accepts, for engines
        whose validation has no integer condition (Google Sheets' BooleanCondition has none)."""
        lo, hi = int(self.minimum or 1), int(self.maximum or 2**31 - 1)
        return "=" + WHOLE_RULE.format(cell=cell, minimum=lo, maximum=hi)


#: The roofline's two regimes, as the sheets, the model, the chart and the terminal say them
#: (a label of the physics; layout/styles gives each its colours).
COMPUTE_BOUND = "compute-bound"
MEMORY_BOUND = "memory-bound"

#: Excel's whole-number validation as a formula: a number, integral, within [min, max].
WHOLE_RULE = "AND(ISNUMBER({cell}),INT({cell})={cell},{cell}>={minimum},{cell}<={maximum})"


@dataclass(frozen=True)
class Input:
    """A value the user may change: written as a constant in an input-styled cell."""

    name: str
    label: str
    unit: str = ""
    fmt: str = "general"
    defined_name: str | None = None
    validation: Validation | None = None
    doc: str = ""
    #: How a table cell reads this input from another workbook's cell when the table is
    #: linked to the user's own sheet (`sheetgen fill`): {source} is that cell's address.
    link: str = "{source}"
    #: A constant the build lays down for formulas to use (a layer index, the chart's decade
    #: steps), not one the user is meant to change: styled like a formula, not an input.
    helper: bool = False
    #: For a time (unit "s"): the unit its cell holds, in place of its sheet's time unit.
    time_unit: str | None = None

    def link_formula(self, source: str) -> str:
        """The formula of a cell that reads this input live from `source` (an address)."""
        return "=" + self.link.replace("{source}", source)


#: A linked number: `*1` turns a number typed as text ("4096") into the number, as the
#: shapes reader accepts it; a blank source gives 0, which the row guard flags.
LINK_NUMBER = "{source}*1"


@cache  # templates are few and parsed in every plan
def _template_refs(template: str) -> tuple[tuple[str, RefKind], ...]:
    return tuple((m.group(1), PLACEHOLDER_KINDS[m.group(2)])
                 for m in PLACEHOLDER.finditer(template))


@dataclass(frozen=True)
class Quantity:
    """A derived value: one formula template and the Python reference that must agree with it."""

    name: str
    label: str
    unit: str
    template: str
    reference: Callable[..., Any]
    fmt: str = "general"
    defined_name: str | None = None
    doc: str = ""
    #: A quantity that can be a gap (no number: an fp8 peak on an A100) names the quantity
    #: whose text marks the gap. Every quantity computed from it then shows that marker
    #: instead of an error value: the planner wraps its formula in
    #: IF(ISNUMBER(source),body,marker) and the model gives the marker too.
    gap_marker: str | None = None
    #: True for a quantity that tests the gap itself (a status cell): never wrapped.
    handles_gaps: bool = False
    #: For a time (unit "s"): the unit its cell holds, in place of its sheet's time unit.
    time_unit: str | None = None
    #: The template converts units itself (a sentence saying "... ms"): the planner hands it
    #: every reference in SI, whatever unit that reference's cell holds (see cell_units).
    si_refs: bool = False

    def refs(self) -> list[tuple[str, RefKind]]:
        """Placeholders in template order, with how each is referenced."""
        return list(_template_refs(self.template))

    def dependencies(self) -> set[str]:
        return {name for name, _ in self.refs()}


def composed(outer: Quantity, *inner: Quantity) -> Quantity:
    """`outer` with each `inner` quantity's formula written in place of its placeholder: one
    cell instead of several (a helper table of hundreds of rows a column). The reference
    computes the inner values first, from their own references, so both stay one definition.
    """
    parts = {q.name: q for q in inner}
    ranged = [m.group(1) for m in PLACEHOLDER.finditer(outer.template)
              if m.group(1) in parts and m.group(2)]
    if ranged:  # a range needs the column's cells: there is no cell to write inside
        raise ValueError(f"{outer.name} uses {ranged[0]} as a range: it cannot be composed")
    template = PLACEHOLDER.sub(
        lambda m: f"({parts[m.group(1)].template})" if m.group(1) in parts else m.group(0),
        outer.template)

    def reference(**a: Any) -> Any:
        env = dict(a)
        for q in inner:
            env[q.name] = q.reference(**{d: env[d] for d in q.dependencies()})
        return outer.reference(**{d: env[d] for d in outer.dependencies()})

    return replace(outer, template=template, reference=reference)


@dataclass(frozen=True)
class Text:
    """A title or a note: plain text at a fixed cell."""

    row: int
    col: int
    text: str
    style: Literal["title", "note", "subtitle", "label"] = "note"
    #: columns the text is merged across and wrapped in (0: one cell, overflowing right);
    #: long prose gets a fixed width so it stays on screen and on the printed page
    span: int = 0


@dataclass(frozen=True)
class BlockRow:
    """One row of a block: a label, value cells side by side, a unit and a note."""

    label: str
    cells: Sequence[Input | Quantity | None]
    unit: str = ""
    note: str = ""
    suggestion: Quantity | None = None


@dataclass(frozen=True)
class Block:
    """Scalar values laid out as rows of `label | value(s) | unit | [suggestion] | note`."""

    row: int
    col: int
    header: Sequence[str]
    rows: Sequence[BlockRow | str]  # a str is a sub-heading row
    #: value cells merged across this many columns and wrapped (live sentences); 0: one cell
    value_span: int = 0

    def items(self) -> list[Input | Quantity]:
        return [c for r in self.rows if isinstance(r, BlockRow) for c in r.cells if c] + [
            r.suggestion for r in self.rows if isinstance(r, BlockRow) and r.suggestion
        ]


@dataclass(frozen=True)
class Span:
    """Consecutive columns of a table addressed together as one 2-D range."""

    name: str
    first: str
    last: str
    defined_name: str | None = None


@dataclass(frozen=True)
class Table:
    """Rows of the same formulas: input columns, then derived columns, one row per item.

    `guard` is a derived column every other derived column waits on: while it is not "ok"
    the row's formulas show "" (blank or bad inputs), which keeps spare rows clean.
    """

    name: str
    header_row: int
    col: int
    inputs: Sequence[Input]
    columns: Sequence[Quantity]
    guard: str | None = None
    spans: Sequence[Span] = field(default_factory=tuple)
    #: A table with no inputs of its own whose rows are those of the named table (same
    #: header row, same count); its columns read that table's columns on the same row, and
    #: `guard` may name that table's guard. For helper columns placed apart (chart data).
    rows_of: str | None = None
    #: rows the guard rejects show NA() rather than "" (chart data; see NA_ROW)
    na_rows: bool = False
    #: False: a table that only feeds formulas (a ranking of candidates): kept out of the
    #: print area, with the texts above it
    prints: bool = True
    range_names: dict[str, str] = field(default_factory=dict)  # column name -> defined name

    @property
    def first_row(self) -> int:
        return self.header_row + 1

    def all_columns(self) -> list[Input | Quantity]:
        return [*self.inputs, *self.columns]


@dataclass(frozen=True)
class Series:
    """One series of an XY chart: an x and a y column of tables, by name. A line, markers,
    or both (a line with markers); `row` keeps one row of the columns (a single point)."""

    name: str  # the legend's name
    x: str
    y: str
    line: bool = False
    marker: str = "circle"  # "none": a line without markers
    color: str | None = None  # palette hex; None: the writer's default for a line/points
    marker_size: int = 6
    labels: str | None = None  # a text column: each point's label (where the engine can)
    row: int | None = None  # only this row (0-based in its table)
    fits_axes: bool = True  # its plotted points count for tight axis bounds


@dataclass(frozen=True)
class Axis:
    title: str
    log: bool = True  # base 10 (Google Sheets has no log axis: log10 data, linear axes)
    #: Fix the axis to the whole decades around the plotted points (x and y both numbers)
    #: of the series that fit_axes (build-time values).
    tight: bool = False


@dataclass(frozen=True)
class Chart:
    """An XY (scatter) chart: series in legend order over two axes. The roofline is one
    (ceiling, regimes, ridge), the Parallelism sweep another (latency against m)."""

    title: str
    row: int
    col: int
    series: Sequence[Series]
    x: Axis
    y: Axis
    #: The columns hold log10 of the values (linear axes: Google has no log axis); tight
    #: bounds are then the log10 of the decades (-1..4 for 0.1..10^4).
    log10_data: bool = False
    width_cols: int = 12  # the area it covers, for the print range (default-width columns)
    height_rows: int = 22
    #: a text quantity whose live value is the title (xlsx and fill read it from its cell;
    #: Google Sheets, whose chart titles are plain text, gets its value at push time)
    title_from: str | None = None


@dataclass(frozen=True)
class FormatSwitch:
    """Cells whose unit reads differently while a live input says so (int8 rates in TOP/s,
    not TFLOP/s). Applies to `source` and every value computed from it, transitively, that
    is shown with one of `formats`' keys; they get the other format while `condition` (a
    template, true or false) holds: a conditional number format in xlsx, and the build's
    own choice, by `holds` on the build's inputs, where conditions cannot set a format."""

    source: str
    condition: str
    holds: Callable[..., bool]  # the condition in Python, arguments by placeholder name
    formats: dict[str, str]  # format key -> the key shown while the condition holds


@dataclass(frozen=True)
class Dimmed:
    """Table columns greyed out while `condition` (a template, no '=') holds: the wave
    columns while wave quantization is off, so an unused figure does not read as a result."""

    columns: Sequence[str]
    condition: str


@dataclass(frozen=True)
class SheetSpec:
    """Everything on one sheet, positioned by row/column (zero-based)."""

    name: str
    texts: Sequence[Text] = ()
    blocks: Sequence[Block] = ()
    tables: Sequence[Table] = ()
    charts: Sequence[Chart] = ()
    column_widths: dict[int, float] = field(default_factory=dict)
    freeze: tuple[int, int] | None = None
    regime_columns: Sequence[str] = ()  # columns that get the compute/memory colouring
    hidden_columns: Sequence[str] = ()  # table columns hidden from view (practice answers)
    format_switches: Sequence[FormatSwitch] = ()  # workbook-wide, declared where they live
    #: The unit this sheet's time cells hold ("s", "ms" or "µs"); every formula and the
    #: checker convert, and read and the API still give seconds (see cell_units).
    time_unit: str = "s"
    #: column index ranges (first, last) hidden as a whole: chart data the chart still plots
    hidden_spans: Sequence[tuple[int, int]] = ()
    #: row index ranges (first, last) printed on one page where they fit one: a group whose
    #: name is on its first row only (a GPU's sources) must not continue nameless on the next
    keep_rows: Sequence[tuple[int, int]] = ()
    #: columns greyed out while a live condition holds (a conditional format)
    dimmed: Sequence[Dimmed] = ()
