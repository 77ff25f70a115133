"""Reading (m, k, n) shapes from CSV or xlsx, with errors that name the sheet, row and column.

One header matcher serves both formats: a header cell such as `M`, `m (rows)`, `K dim` or
`n [cols]` names a dimension; the header row may sit below a title, other columns are
ignored, and rows whose m, k and n cells are all blank are skipped. Validation mirrors the
sheet's row guard (positive whole numbers; a number typed as text such as "4096" counts) and
reports every bad cell at once, so a user fixes the file in one pass.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from sheetgen.core.excel import looks_blank
from sheetgen.errors import InputError, WorkbookError
from sheetgen.files.untrusted import damage_as_error, load_openpyxl

MAX_DIM = 2**31 - 1  # cuBLAS takes 32-bit dimensions
DIMS = ("m", "k", "n")
MAX_REPORTED = 10  # bad cells listed in one message before "and N more"
HEADER_SEARCH_ROWS = 50  # how far down a sheet the m/k/n header is looked for
#: A million shapes take about 20 MB of CSV (`show` streams a CSV; other commands read it whole).
MAX_SHAPES_FILE_BYTES = 64_000_000
XLSX_SUFFIXES = (".xlsx", ".xlsm")

_BRACKETED = re.compile(r"\([^)]*\)|\[[^\]]*\]|\{[^}]*\}")
_FILLER_WORDS = {"dim", "dims", "dimension", "rows", "row", "cols", "col", "columns",
                 "column", "size"}


@dataclass(frozen=True)
class Shape:
    m: int
    k: int
    n: int


@dataclass(frozen=True)
class ShapeTable:
    """Shapes and where they were found: 1-based row numbers, 0-based column indices."""

    origin: str
    sheet: str | None  # None for CSV
    header_row: int
    columns: dict[str, int]
    rows: list[int] = field(default_factory=list)  # the source row of each shape
    shapes: list[Shape] = field(default_factory=list)


def header_key(cell: object) -> str | None:
    """The dimension a header cell names ("m", "k" or "n"), or None.

    Lowercase, drop anything in brackets or parentheses (units), drop filler words such as
    "dim", "rows", "cols", "size", then the rest must be exactly m, k or n.
    """
    if cell is None:
        return None
    text = _BRACKETED.sub(" ", str(cell).lower())
    words = [w for w in re.split(r"[\s_:.\-/]+", text) if w and w not in _FILLER_WORDS]
    key = "".join(words)
    return key if key in DIMS else None


def _header_columns(row: Sequence[object]) -> dict[str, int]:
    found: dict[str, int] = {}
    for i, cell in enumerate(row):
        key = header_key(cell)
        if key is not None and key not in found:
            found[key] = i
    return found


def parse_dim(value: object, where: str) -> int:
    """One dimension: a positive whole number (4096, 4096.0 or the text "4096"), at most
    MAX_DIM. Booleans and dates are not numbers."""
    if isinstance(value, bool):
        raise InputError(f"{where}: {value!r} is not a number")
    s = str(value).strip() if value is not None else ""
    if not s:
        raise InputError(f"{where}: blank (expected a positive whole number)")
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(s.replace("_", ""))
        except ValueError:
            raise InputError(f"{where}: {s!r} is not a number") from None
    if not math.isfinite(number):
        raise InputError(f"{where}: {s!r} is not a finite number")
    if number != math.floor(number):
        raise InputError(f"{where}: {s!r} is not a whole number")
    if number < 1:
        raise InputError(f"{where}: {s!r} must be at least 1")
    if number > MAX_DIM:
        raise InputError(f"{where}: {s!r} is too large (at most {MAX_DIM:,}, a 32-bit dimension)")
    return int(number)


def report(problems: list[str], total: int | None = None) -> str:
    """Every problem in one message, capped at MAX_REPORTED with "and N more"; `total`: how
    many there were, when `problems` holds only the first ones."""
    more = (len(problems) if total is None else total) - MAX_REPORTED
    return "; ".join(problems[:MAX_REPORTED]) + (f" (and {more} more)" if more > 0 else "")


def find_header(rows: Iterable[tuple[int, Sequence[object]]],
                 limit: int | None = HEADER_SEARCH_ROWS,
                 ) -> tuple[int | None, dict[str, int], tuple[int, Sequence[object]] | None]:
    """(row, columns, _) of the first row naming m, k and n; (None, {}, best near miss) when
    no row among the first `limit` non-blank ones does (None: every row is searched)."""
    best: tuple[int, Sequence[object]] | None = None
    best_hits = -1
    for n_seen, (line, row) in enumerate(rows):
        if limit is not None and n_seen >= limit:
            break
        cols = _header_columns(row)
        if len(cols) == len(DIMS):
            return line, cols, None
        if len(cols) > best_hits:
            best, best_hits = (line, row), len(cols)
    return None, {}, best


def _header_below_window(data: Sequence[tuple[int, Sequence[object]]]) -> int | None:
    """The row of the first m/k/n header past the first HEADER_SEARCH_ROWS non-blank rows."""
    return next((line for line, row in data[HEADER_SEARCH_ROWS:]
                 if len(_header_columns(row)) == len(DIMS)), None)


def _search_stop(data: Sequence[tuple[int, Sequence[object]]]) -> int:
    """The last row the header search looks at (the HEADER_SEARCH_ROWS-th non-blank one)."""
    return data[min(len(data), HEADER_SEARCH_ROWS) - 1][0] if data else 0


def missing_header(origin: str, near: tuple[int, Sequence[object]] | None,
                    data: Sequence[tuple[int, Sequence[object]]] = (),
                    hint: str = "delete the rows above it") -> InputError:
    """Why no header was found: nothing there, a header past the search window (`hint` says
    how to reach it), or the nearest miss and the columns it lacks."""
    if near is None:
        return InputError(f"{origin}: empty (expected a header with columns m, k, n)")
    later = _header_below_window(data)
    if later is not None:
        return InputError(f"{origin}: the header with columns m, k, n is on row {later}, "
                          f"but it is looked for only in the first {HEADER_SEARCH_ROWS} "
                          f"non-blank rows (the search stopped at row {_search_stop(data)}); "
                          f"{hint}")
    line, row = near
    found = _header_columns(row)
    missing = [d for d in DIMS if d not in found]
    cells = ", ".join(repr(str(c)) for c in row if not looks_blank(c)) or "nothing"
    return InputError(f"{origin}: missing column(s) {', '.join(missing)} in the header "
                      f"(row {line} has: {cells})")


def _table(rows: list[tuple[int, Sequence[object]]], origin: str, sheet: str | None,
           where: Any, formulas: Any = (), search_all: bool = False) -> ShapeTable:
    """Shapes below the header of already-read rows; `where(line, col, dim)` names a cell;
    `formulas` holds the (line, col) of formula cells (their saved result may be missing);
    search_all: look for the header in every row (the user named this sheet)."""
    data = _nonblank(rows)
    header_line, cols, near = find_header(data, None if search_all else HEADER_SEARCH_ROWS)
    if header_line is None:
        raise missing_header(origin, near, data)
    table = ShapeTable(origin, sheet, header_line, cols)
    for line, shape in _checked_shapes(rows, origin, header_line, cols, where, formulas):
        table.rows.append(line)
        table.shapes.append(shape)
    return table


def _checked_shapes(rows: Iterable[tuple[int, Sequence[object]]], origin: str,
                    header_line: int, cols: dict[str, int], where: Any, formulas: Any = (),
                    ) -> Iterator[tuple[int, Shape]]:
    """(row, shape) of each shape below the header: the one place a row is validated, for
    the whole-file readers and the streaming CSV reader alike. After the last row, one
    InputError lists every bad cell (the first MAX_REPORTED, then a count), or says there
    were no shapes; so a caller that wants no output before an error drains it first."""
    problems: list[str] = []  # the first MAX_REPORTED
    n_problems = n_shapes = 0
    for line, row in rows:  # all rows: a row of uncached formulas reads as blank
        if line <= header_line:
            continue
        cells = {d: row[c] if c < len(row) else None for d, c in cols.items()}
        if all(looks_blank(v) for v in cells.values()) and not any(
                (line, c) in formulas for c in cols.values()):
            continue
        dims: dict[str, int] = {}
        for dim, value in cells.items():
            # Fast path for the usual plain whole numbers; anything else (and any error) goes
            # through parse_dim, which gives the same value or the row/column message.
            if type(value) is int and 1 <= value <= MAX_DIM:
                dims[dim] = value
                continue
            if (isinstance(value, str) and value.isascii() and value.isdigit()
                    and 1 <= (number := int(value)) <= MAX_DIM):
                dims[dim] = number
                continue
            if looks_blank(value) and (line, cols[dim]) in formulas:
                problem = (f"{where(line, cols[dim], dim)}: holds a formula whose result was "
                           "never saved (the program that wrote the file does not "
                           "calculate); open and save it in Excel or LibreOffice first")
            else:
                try:
                    dims[dim] = parse_dim(value, where(line, cols[dim], dim))
                    continue
                except InputError as exc:
                    problem = str(exc)
            n_problems += 1
            if len(problems) < MAX_REPORTED:  # the rest only counted, so a file of bad
                problems.append(problem)  # rows takes no more memory than a good one
        if len(dims) == len(DIMS):
            n_shapes += 1
            yield line, Shape(**dims)
    if problems:
        raise InputError(report(problems, n_problems))
    if not n_shapes:
        raise InputError(f"{origin}: no shapes below the header on row {header_line}")


def read_shapes_text(text: str, origin: str) -> list[Shape]:
    """Shapes from CSV text (see the module docstring for what is accepted)."""
    return read_csv_table(text, origin).shapes


def read_csv_table(text: str, origin: str) -> ShapeTable:
    """Comma-separated as written; a file whose header is only found when split on ';',
    tab or '|' (as spreadsheets in many locales save "CSV") is read with that delimiter."""
    first = _csv_rows(text, ",")
    if not any(any(c.strip() for c in r) for _, r in first):
        raise InputError(f"{origin}: empty file (expected a header with columns m, k, n)")
    rows = first
    if find_header(_nonblank(first))[0] is None:
        for delimiter in (";", "\t", "|"):
            other = _csv_rows(text, delimiter)
            if find_header(_nonblank(other))[0] is not None:
                rows = other
                break
    return _table(rows, origin, None, _csv_where(origin))


def _csv_where(origin: str) -> Any:
    """How a CSV cell is named in a message: the file, the row and the dimension."""
    return lambda line, _col, dim: f"{origin} row {line}, column {dim}"


def _csv_rows(text: str, delimiter: str) -> list[tuple[int, list[str]]]:
    return list(enumerate(csv.reader(io.StringIO(text), delimiter=delimiter), start=1))


def _nonblank(rows: list[tuple[int, Sequence[object]]]) -> list[tuple[int, Sequence[object]]]:
    return [(i, r) for i, r in rows if any(not looks_blank(c) for c in r)]


def xlsx_rows(ws: Any) -> list[tuple[int, tuple[object, ...]]]:
    if hasattr(ws, "reset_dimensions"):
        ws.reset_dimensions()  # some writers store a wrong <dimension>; read every row
    return list(enumerate(ws.iter_rows(values_only=True), start=1))


def read_xlsx_table(path: str | Path, sheet: str | None = None) -> ShapeTable:
    """Shapes from an xlsx: the named sheet, else the first sheet with an m/k/n header.

    The file is opened through sheetgen.files.untrusted (size budget, damage as one line)."""
    p = Path(path)
    try:
        with damage_as_error(p.name):
            return _read_xlsx_table(p, sheet)
    except WorkbookError as exc:
        raise InputError(str(exc)) from None


def _read_xlsx_table(p: Path, sheet: str | None) -> ShapeTable:
    from xlsxwriter.utility import xl_rowcol_to_cell  # here: reading CSV needs no xlsxwriter

    wb = load_openpyxl(p, read_only=True, data_only=True)
    try:
        if sheet is not None:
            if sheet not in wb.sheetnames:
                raise InputError(f"{p.name} has no sheet {sheet!r} "
                                 f"(sheets: {', '.join(map(repr, wb.sheetnames))})")
            candidates = [sheet]
        else:
            candidates = list(wb.sheetnames)
        searched: list[tuple[str, list[tuple[int, Sequence[object]]]]] = []
        for name in candidates:
            rows = xlsx_rows(wb[name])
            origin = f"{p.name} sheet {name!r}"
            data = _nonblank(rows)
            if sheet is None and find_header(data)[0] is None:
                searched.append((name, data))
                continue  # not a shapes sheet: look at the next one

            def where(line: int, col: int, dim: str, origin: str = origin) -> str:
                return f"{origin} row {line}, column {dim} ({xl_rowcol_to_cell(line - 1, col)})"

            return _table(rows, origin, name, where, _FormulaCells(p, name),
                          search_all=sheet is not None)
        raise _no_shapes_sheet(p.name, searched)
    finally:
        wb.close()


def _no_shapes_sheet(name: str, searched: list[tuple[str, list[tuple[int, Sequence[object]]]]]
                     ) -> InputError:
    """No sheet of an auto-detected workbook has a header where the search looks: say how far
    it looked in each sheet, and how to name the sheet (a named sheet is searched to its
    end), pointing at a header found further down if there is one."""
    where = ", ".join(f"{s!r} to row {_search_stop(d)}" if d else f"{s!r} (empty)"
                      for s, d in searched)
    message = (f"{name}: no sheet has a header row with columns m, k, n in its first "
               f"{HEADER_SEARCH_ROWS} non-blank rows (searched {where})")
    deeper = next(((s, line) for s, d in searched
                   if (line := _header_below_window(d)) is not None), None)
    if deeper is not None:
        sheet, line = deeper
        return InputError(f"{message}; sheet {sheet!r} has one on row {line}: pass "
                          f"--shapes-sheet {shlex.quote(sheet)}, which searches that sheet "
                          "to its end")
    return InputError(f"{message}; name the sheet holding the shapes with --shapes-sheet")


class _FormulaCells:
    """(row, 0-based col) of the formula cells of one sheet, read only when first asked:
    with data_only, a formula whose result was never saved reads as blank."""

    def __init__(self, path: Path, sheet: str) -> None:
        self.path, self.sheet = path, sheet
        self.cells: set[tuple[int, int]] | None = None

    def __contains__(self, cell: object) -> bool:
        if self.cells is None:
            wb = load_openpyxl(self.path, read_only=True, data_only=False)
            try:
                self.cells = {(line, col)
                              for line, row in xlsx_rows(wb[self.sheet])
                              for col, v in enumerate(row)
                              if isinstance(v, str) and v.startswith("=")}
            finally:
                wb.close()
        return cell in self.cells


def is_xlsx(path: str | Path) -> bool:
    """An xlsx by name, or a zip package whatever its name."""
    p = Path(path)
    if p.suffix.lower() in XLSX_SUFFIXES:
        return True
    try:
        with p.open("rb") as fh:
            return fh.read(2) == b"PK"
    except OSError:
        return False


def read_shape_table(path: str | Path, sheet: str | None = None) -> ShapeTable:
    """The shapes of a CSV or xlsx file, with where each one was found."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p} is a directory, not a CSV or xlsx file")
    if not p.exists():
        raise InputError(f"cannot read {p}: No such file or directory")
    if p.suffix.lower() == ".xls":
        raise InputError(f"{p.name}: the old .xls format is not supported; save it as .xlsx")
    if is_xlsx(p):
        return read_xlsx_table(p, sheet)
    if sheet is not None:
        raise InputError(f"--shapes-sheet applies to xlsx files; {p.name} is read as CSV")
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_SHAPES_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
    if len(raw) > MAX_SHAPES_FILE_BYTES:
        raise InputError(f"{p} is larger than {MAX_SHAPES_FILE_BYTES // 1_000_000} MB, "
                         "sheetgen's limit for a shapes CSV")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{p}: not a UTF-8 text CSV file") from None
    return read_csv_table(text, p.name)


def read_shapes(path: str | Path, sheet: str | None = None) -> list[Shape]:
    """Shapes from a CSV or xlsx file."""
    return read_shape_table(path, sheet).shapes


def default_shapes() -> list[Shape]:
    """The built-in dozen shapes: decode GEMVs, skinny, square and large matmuls."""
    text = resources.files("sheetgen.templates").joinpath("shapes.csv").read_text("utf-8")
    return read_shapes_text(text, "templates/shapes.csv")


class ShapeSource:
    """Shapes checked in full when made (every bad cell is one InputError before any shape
    is used), then given a piece at a time. A CSV file is read again for the pieces, so at
    most one piece of shapes is held whatever the file's length (`sheetgen show` of a
    million shapes); an xlsx file or a list holds its shapes."""

    def __init__(self, shapes: list[Shape] | None = None, *, count: int | None = None,
                 reread: Any = None) -> None:
        self.held = shapes
        self.count = len(shapes) if shapes is not None else int(count or 0)
        self._reread = reread  # () -> iterator of the shapes again, when none are held

    def pieces(self, size: int) -> Iterator[list[Shape]]:
        """The shapes in order, `size` at a time (one empty piece when there are none)."""
        if self.held is not None:
            for start in range(0, max(len(self.held), 1), size):
                yield self.held[start:start + size]
            return
        piece: list[Shape] = []
        for shape in self._reread():
            piece.append(shape)
            if len(piece) == size:
                yield piece
                piece = []
        if piece:
            yield piece


def open_shapes(path: str | Path, sheet: str | None = None) -> ShapeSource:
    """The shapes of a CSV or xlsx file, checked, to be read a piece at a time.

    A plain CSV file is read twice as a stream: a first pass runs the same checks as
    read_shapes and keeps only a count, so a bad row 150,000 is still one error before any
    output; a second pass (`ShapeSource.pieces`) yields the shapes. Anything the stream
    cannot settle from the first HEADER_SEARCH_ROWS non-blank rows (no header there, an
    empty file), and every non-CSV or non-regular file, goes through read_shapes, so each
    error is read_shapes' own. (A file rewritten between the passes is checked again as
    the pieces are read: a new bad row then raises after some pieces were used.)"""
    p = Path(path)
    layout = None
    if (sheet is None and p.suffix.lower() != ".xls" and p.is_file() and not is_xlsx(p)
            and p.stat().st_size <= MAX_SHAPES_FILE_BYTES):
        layout = _csv_layout(p)
    if layout is None:
        return ShapeSource(read_shapes(p, sheet))
    delimiter, header_line, cols = layout

    def shapes() -> Iterator[Shape]:
        rows = _csv_file_rows(p, delimiter)
        for _, shape in _checked_shapes(rows, p.name, header_line, cols, _csv_where(p.name)):
            yield shape

    count = sum(1 for _ in shapes())  # raises the one InputError, as read_shapes would
    return ShapeSource(count=count, reread=shapes)


def _csv_layout(p: Path) -> tuple[str, int, dict[str, int]] | None:
    """(delimiter, header row, columns) as read_csv_table finds them, from the first
    HEADER_SEARCH_ROWS non-blank rows; None when no delimiter shows the header there."""
    for delimiter in (",", ";", "\t", "|"):
        rows = _csv_file_rows(p, delimiter)
        head = list(itertools.islice(
            ((i, r) for i, r in rows if any(not looks_blank(c) for c in r)),
            HEADER_SEARCH_ROWS))
        rows.close()
        header_line, cols, _ = find_header(head)
        if header_line is not None:
            return delimiter, header_line, cols
    return None


def _csv_file_rows(p: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """A CSV file's rows, numbered from 1, read as a stream; read errors as read_shapes
    words them."""
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            yield from enumerate(csv.reader(fh, delimiter=delimiter), start=1)
    except UnicodeDecodeError:
        raise InputError(f"{p}: not a UTF-8 text CSV file") from None
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
