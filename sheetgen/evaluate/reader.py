"""Read an xlsx file into plain per-sheet cell lists, ignoring cached formula results.

Why not openpyxl: for large generated sheets a single C-level regex pass over the sheet XML is
several times faster than openpyxl's read-only mode (see benchmarks/bench_evaluate.py). The
regex only accepts the common serialisation (``<c r=.. s=.. t=..><f>..</f><v>..</v></c>``, and
shared formulas copied down their master's column, as sheetgen writes big tables); a sheet
where any cell falls outside it (other shared shapes, array formulas, rich inline strings,
prefixed namespaces, missing ``r``) is read with ElementTree instead, so the fast path is
verified, never assumed.
"""

from __future__ import annotations

import codecs
import html
import os
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np

from sheetgen.core.excel import ERROR_CODES, ExcelError
from sheetgen.errors import WorkbookError
from sheetgen.files.untrusted import open_package, read_part

from .refs import a1, col_to_index
from .shared import RowTemplate

_NS_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_NS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_NS_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"

_XESC = re.compile(r"_x([0-9A-Fa-f]{4})_")
_REF = re.compile(r"([A-Z]{1,3})(\d+)")


@dataclass
class RawSheet:
    """One worksheet's cells: formulas (text starts with '=') and input values."""

    name: str
    f_rows: Any = field(default_factory=list)  # list[int] or int64 array
    f_cols: Any = field(default_factory=list)
    f_texts: list[str] = field(default_factory=list)
    n_rows: Any = field(default_factory=lambda: np.zeros(0, np.int64))  # numeric inputs
    n_cols: Any = field(default_factory=lambda: np.zeros(0, np.int64))
    n_vals: Any = field(default_factory=lambda: np.zeros(0))
    v_rows: list[int] = field(default_factory=list)
    v_cols: list[int] = field(default_factory=list)
    v_vals: list[Any] = field(default_factory=list)
    #: shared formulas, kept as one template per run instead of a text per cell (a
    #: 1M-row table would otherwise hold some 17M strings)
    shared: list[SharedRun] = field(default_factory=list)

    def formula_texts(self) -> list[tuple[int, int, str]]:
        """(row, col, '=text') of every formula cell, shared copies written out."""
        out = list(zip(np.asarray(self.f_rows).tolist(), np.asarray(self.f_cols).tolist(),
                       self.f_texts, strict=True))
        for run in self.shared:
            rows = run.rows.tolist()
            out += zip(rows, [run.col] * len(rows), ["=" + t for t in run.template.many(rows)],
                       strict=True)
        return out


@dataclass
class SharedRun:
    """The cells of one shared formula: a column, its rows (sorted, 1-based; the first
    is the master's) and the master's row template."""

    col: int
    rows: np.ndarray
    template: RowTemplate

    def text_at(self, row: int) -> str:
        return "=" + self.template.at(row)


@dataclass
class RawWorkbook:
    """Sheets in workbook order plus defined names (global and sheet-scoped)."""

    sheets: list[RawSheet]
    names: dict[str, str]
    local_names: dict[tuple[str, str], str]


def _unescape(s: str) -> str:
    if "&" in s:
        s = _xml_text(s)
    if "_x" in s:
        s = _XESC.sub(lambda m: chr(int(m.group(1), 16)), s)
    return s


def _typed(t: str | None, v: str, shared: list[str], where: str) -> Any:
    """Decode a cached/input value by its cell type attribute."""
    if t is None or t == "n":
        try:
            return float(v)
        except ValueError:
            raise WorkbookError(f"bad number {v!r} in cell {where}") from None
    if t == "s":
        try:
            return shared[int(v)]
        except (ValueError, IndexError):
            raise WorkbookError(f"bad shared-string index {v!r} in cell {where}") from None
    if t == "b":
        return v.strip() in ("1", "true")
    if t == "e":
        v = v.strip()
        return ExcelError(v) if v in ERROR_CODES else ExcelError("#VALUE!")
    return _unescape(v)  # str, inlineStr, d


def _read_shared_strings(zf: zipfile.ZipFile, path: str) -> list[str]:
    if path not in zf.namelist():
        return []
    out: list[str] = []
    si_tag, t_tag, rph_tag = f"{{{_NS_MAIN}}}si", f"{{{_NS_MAIN}}}t", f"{{{_NS_MAIN}}}rPh"
    with zf.open(path) as fh:
        for _ev, el in ET.iterparse(fh, events=("end",)):
            if el.tag == si_tag:
                parts = []
                for sub in el.iter():
                    if sub.tag == rph_tag:
                        sub.clear()  # phonetic hints are not part of the text
                    elif sub.tag == t_tag and sub.text:
                        parts.append(sub.text)
                out.append(_XESC.sub(lambda m: chr(int(m.group(1), 16)), "".join(parts)))
                el.clear()
    return out


class _ColIndex(dict[str, int]):
    """'AB' -> 28, memoised (column letters repeat on every row)."""

    def __missing__(self, key: str) -> int:
        value = self[key] = col_to_index(key)
        return value


_SLICE = 1 << 23  # characters of sheet XML per regex slice
_F_CELL = re.compile(r'<c r="([A-Z]{1,3})(\d+)"[^>]*><f>([^<]*)</f>')
_S_CELL = re.compile(  # a shared formula's master (with its text) or one of its copies
    r'<c r="([A-Z]{1,3})(\d+)"[^>]*><f t="shared"(?: ref="[A-Z]{1,3}\d+:[A-Z]{1,3}\d+")?'
    r' si="(\d+)"(?:/>|>([^<]*)</f>)'
)
_V_CELL = re.compile(  # every non-formula cell: numbers, typed values, inline text, blanks
    # (a blank as xlsxwriter writes it, <c .../>, or as openpyxl does, <c ... />: `fill`)
    r'<c r="([A-Z]{1,3})(\d+)"(?: s="\d+")?(?: t="(\w+)")?'
    r'(?:><v>([^<]*)</v></c>|><is><t(?: xml:space="preserve")?>([^<]*)</t></is></c>| ?/>|></c>)'
)


def _xml_text(s: str) -> str:
    """Undo XML escaping; str.replace is ~10x faster than html.unescape for the usual five."""
    if "&#" in s:
        return html.unescape(s)
    return (
        s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
        .replace("&apos;", "'").replace("&amp;", "&")
    )  # fmt: skip


def _read_sheet_fast(slices: Iterable[str], sheet: RawSheet, shared: list[str]) -> bool:
    """Three C-level regex passes (formulas, numbers, other values) over each slice of the
    sheet XML (slices end at a ``</row>``, so no cell is cut); verified by counting.

    Returns False, leaving the sheet untouched, if any cell has a form the passes do not
    cover (array formulas, shared formulas other than copies down a column, rich inline
    text, unusual attributes) or the part is truncated.
    """
    cols_of = _ColIndex()
    parts: dict[str, list[np.ndarray]] = {"fr": [], "fc": [], "nr": [], "nc": [], "nv": []}
    f_texts: list[str] = []
    sharing = _SharedFormulas()
    found = expected = 0
    tail = ""

    def fail() -> bool:
        sheet.v_rows, sheet.v_cols, sheet.v_vals = [], [], []
        return False

    for text in slices:  # only one slice's match tuples are alive at a time
        if not expected and ":c" in text[:2000]:
            return fail()  # prefixed namespaces (<x:c>): ElementTree reads those
        if text.count("<f ") != text.count('<f t="shared" ') or "<f/>" in text:
            return fail()  # array formulas and other forms: let ElementTree judge
        expected += text.count("<c ") + text.count("<c>")
        tail = text[-64:]
        formulas = _F_CELL.findall(text)
        values = _V_CELL.findall(text)
        found += len(formulas) + len(values)
        if '<f t="shared" ' in text:
            copies = _S_CELL.findall(text)
            found += len(copies)
            if not sharing.add(copies, cols_of):
                return fail()
            del copies
        del text
        if formulas:
            letters, rows_s, texts = zip(*formulas, strict=True)
            del formulas
            parts["fr"].append(np.fromiter(map(int, rows_s), np.int64, len(rows_s)))
            parts["fc"].append(
                np.fromiter(map(cols_of.__getitem__, letters), np.int64, len(letters))
            )
            f_texts += ["=" + (_xml_text(f) if "&" in f else f) for f in texts]
            del texts
        if not values:
            continue
        numbers = [c for c in values if c[3] and c[2] in ("", "n")]
        if numbers:
            letters, rows_s, _, vals, _ = zip(*numbers, strict=True)
            parts["nr"].append(np.fromiter(map(int, rows_s), np.int64, len(rows_s)))
            parts["nc"].append(
                np.fromiter(map(cols_of.__getitem__, letters), np.int64, len(letters))
            )
            try:
                parts["nv"].append(np.fromiter(map(float, vals), np.float64, len(vals)))
            except ValueError:
                return fail()
        if len(numbers) == len(values):
            continue
        for letters, row_s, t, v, inline in values:
            if t in ("", "n") or not (v or inline or t == "inlineStr"):
                continue  # numbers done above; blanks hold nothing (an empty inline
                # string is the text "", as the ElementTree path reads it)
            sheet.v_rows.append(int(row_s))
            sheet.v_cols.append(cols_of[letters])
            if t == "inlineStr":
                sheet.v_vals.append(_unescape(inline))
            else:
                sheet.v_vals.append(_typed(t, v, shared, f"{sheet.name}!{letters}{row_s}"))
    runs = sharing.runs()
    if found != expected or not tail.rstrip().endswith("</worksheet>") or runs is None:
        return fail()  # a cell form the passes missed, or a truncated part
    sheet.shared = runs

    def cat(key: str, dtype: type) -> np.ndarray:
        return np.concatenate(parts[key]) if parts[key] else np.zeros(0, dtype)

    sheet.f_rows, sheet.f_cols, sheet.f_texts = cat("fr", np.int64), cat("fc", np.int64), f_texts
    sheet.n_rows, sheet.n_cols, sheet.n_vals = (
        cat("nr", np.int64),
        cat("nc", np.int64),
        cat("nv", float),
    )
    return True


def _slices(zf: zipfile.ZipFile, name: str) -> Iterator[str]:
    """A worksheet part as text in slices of about _SLICE characters, each ending just
    after a ``</row>`` (the last one at the part's end): the whole part is never in
    memory, and no cell is cut."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    rest = ""
    for block in read_part(zf, name, _SLICE):
        text = rest + decoder.decode(block)
        cut = text.rfind("</row>")
        if cut < 0:
            rest = text
            continue
        yield text[:cut + 6]
        rest = text[cut + 6:]
    rest += decoder.decode(b"", final=True)
    if rest:
        yield rest


class _SharedFormulas:
    """Shared formulas met so far in one sheet: each master's template and its rows."""

    def __init__(self) -> None:
        self.masters: dict[str, tuple[int, int, RowTemplate]] = {}  # si -> col, row, template
        self.rows: dict[str, list[np.ndarray]] = {}

    def add(self, cells: list[tuple[str, str, str, str]], cols_of: _ColIndex) -> bool:
        """Take one slice's shared cells. False when a copy is not below its master in the
        same column (Excel allows other shapes; the ElementTree path handles them) or a
        master cannot be tokenized."""
        by_si: dict[str, list[int]] = {}
        for letters, row_s, si, ftext in cells:
            col, row = cols_of[letters], int(row_s)
            if ftext:
                if si in self.masters:
                    return False  # one index, two masters
                t = RowTemplate.of(_xml_text(ftext) if "&" in ftext else ftext, row)
                if t is None:
                    return False
                self.masters[si] = (col, row, t)
            elif si not in self.masters or self.masters[si][0] != col \
                    or row <= self.masters[si][1]:
                return False
            by_si.setdefault(si, []).append(row)
        for si, rows in by_si.items():
            self.rows.setdefault(si, []).append(np.array(rows, np.int64))
        return True

    def runs(self) -> list[SharedRun] | None:
        """One SharedRun per shared formula; None when a copy would reach above row 1."""
        out = []
        for si, chunks in self.rows.items():
            col, origin, t = self.masters[si]
            rows = np.sort(np.concatenate(chunks))
            if int(rows[0]) != origin or origin + t.lowest_row() < 1:
                return None
            out.append(SharedRun(col, rows, t))
        return out


def _read_sheet_slow(data: bytes, sheet: RawSheet, shared: list[str]) -> None:
    """ElementTree pass handling every cell form, including Excel's shared formulas."""
    from openpyxl.formula.translate import Translator

    ns = f"{{{_NS_MAIN}}}"
    c_tag, row_tag = ns + "c", ns + "row"
    masters: dict[str, tuple[str, str]] = {}
    cur_row, cur_col = 0, 0
    import io

    for ev, el in ET.iterparse(io.BytesIO(data), events=("start", "end")):
        if ev == "start":
            if el.tag == row_tag:
                r = el.get("r")
                cur_row = int(r) if r else cur_row + 1
                cur_col = 0
            continue
        if el.tag != c_tag:
            if el.tag == row_tag:
                el.clear()
            continue
        ref = el.get("r")
        if ref:
            m = _REF.fullmatch(ref)
            if not m:
                raise WorkbookError(f"bad cell reference {ref!r} in sheet {sheet.name}")
            col, row = col_to_index(m.group(1)), int(m.group(2))
        else:
            col, row = cur_col + 1, cur_row
        cur_col = col
        where = f"{sheet.name}!{a1(row, col)}"
        t = el.get("t")
        f_el = el.find(ns + "f")
        formula = None
        if f_el is not None:
            ftext = f_el.text
            if f_el.get("t") == "shared":
                si = f_el.get("si", "")
                if ftext:
                    masters[si] = ("=" + ftext, a1(row, col))
                    formula = "=" + ftext
                elif si in masters:
                    src, origin = masters[si]
                    formula = Translator(src, origin=origin).translate_formula(a1(row, col))
                else:
                    raise WorkbookError(f"shared formula without its master in {where}")
            elif ftext:
                formula = "=" + ftext
        if formula is not None:
            sheet.f_rows.append(row)
            sheet.f_cols.append(col)
            sheet.f_texts.append(formula)
        elif t == "inlineStr":
            is_el = el.find(ns + "is")
            txt = "".join(x.text or "" for x in is_el.iter(ns + "t")) if is_el is not None else ""
            sheet.v_rows.append(row)
            sheet.v_cols.append(col)
            sheet.v_vals.append(_XESC.sub(lambda m: chr(int(m.group(1), 16)), txt))
        else:
            v_el = el.find(ns + "v")
            if v_el is not None and v_el.text is not None:
                sheet.v_rows.append(row)
                sheet.v_cols.append(col)
                sheet.v_vals.append(_typed(t, v_el.text, shared, where))
        el.clear()


def read_sheet_slow_for_tests(data: bytes, sheet: RawSheet) -> None:
    """The ElementTree path on its own (no shared strings), for tests that hold the fast
    path against it."""
    _read_sheet_slow(data, sheet, [])


def _resolve(base: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    parts = base.split("/")[:-1] + target.split("/")
    out: list[str] = []
    for p in parts:
        if p == "..":
            if out:
                out.pop()
        elif p and p != ".":
            out.append(p)
    return "/".join(out)


def read_workbook(source: str | os.PathLike[str]) -> RawWorkbook:
    """Read every worksheet of an xlsx file; any unreadable file is one WorkbookError.

    The package is checked against sheetgen.files.untrusted's budget before any part is read.
    """
    path = os.fspath(source)
    with open_package(path) as zf:
        return _read_zip(zf, path)


def _read_zip(zf: zipfile.ZipFile, path: str) -> RawWorkbook:
    names = set(zf.namelist())
    if "xl/workbook.xml" not in names:
        raise WorkbookError(f"{path} is not an xlsx workbook (no xl/workbook.xml)")
    rels_path = "xl/_rels/workbook.xml.rels"
    rel_targets: dict[str, str] = {}
    if rels_path in names:
        for rel in ET.fromstring(zf.read(rels_path)).iter(f"{{{_NS_PKG_REL}}}Relationship"):
            rel_targets[rel.get("Id", "")] = _resolve("xl/workbook.xml", rel.get("Target", ""))
    wb = ET.fromstring(zf.read("xl/workbook.xml"))
    shared_path = next(
        (t for t in rel_targets.values() if t.lower().endswith("sharedstrings.xml")),
        "xl/sharedStrings.xml",
    )
    shared = _read_shared_strings(zf, shared_path)
    sheets: list[RawSheet] = []
    sheet_order: list[str] = []
    for sh in wb.iter(f"{{{_NS_MAIN}}}sheet"):
        name = sh.get("name", "")
        sheet_order.append(name)
        target = rel_targets.get(sh.get(f"{{{_NS_REL}}}id", ""), "")
        if "worksheets/" not in target or target not in names:
            continue  # chartsheets, dialog sheets: no cells to evaluate
        sheet = RawSheet(name)
        if not _read_sheet_fast(_slices(zf, target), sheet, shared):
            _read_sheet_slow(b"".join(read_part(zf, target)), sheet, shared)
        sheets.append(sheet)
    global_names: dict[str, str] = {}
    local_names: dict[tuple[str, str], str] = {}
    for dn in wb.iter(f"{{{_NS_MAIN}}}definedName"):
        name, target = dn.get("name", ""), (dn.text or "").strip()
        if not name or name.startswith("_xlnm.") or not target:
            continue
        local = dn.get("localSheetId")
        if local is not None and local.isdigit() and int(local) < len(sheet_order):
            local_names[(sheet_order[int(local)], name.upper())] = target
        else:
            global_names[name] = target
    return RawWorkbook(sheets, global_names, local_names)
