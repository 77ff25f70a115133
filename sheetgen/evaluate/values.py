"""Excel value model: error values and kind codes (Excel's text of a number is
core.excel.number_to_text).

Cells are stored column-wise as (kind, number, object) triples so that whole columns can be
evaluated with NumPy; the kind codes below say how to read each triple.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache
from typing import Any

from sheetgen.core.excel import ExcelError

EMPTY, NUM, STR, BOOL, ERR = 0, 1, 2, 3, 4

class NotEvaluated(ExcelError):
    """A cell the evaluator could not compute (lenient grading only); `why` says why."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        super().__init__("#N/A")
        self.why = why

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NotEvaluated) and other.why == self.why

    def __hash__(self) -> int:
        return hash(("NotEvaluated", self.why))

    def __repr__(self) -> str:
        return f"NotEvaluated({self.why!r})"

    def __str__(self) -> str:
        return f"not evaluated: {self.why}"


DIV0 = ExcelError("#DIV/0!")
VALUE = ExcelError("#VALUE!")
NA = ExcelError("#N/A")
NAME = ExcelError("#NAME?")
REF = ExcelError("#REF!")
NUM_ERR = ExcelError("#NUM!")




# Excel's documented sort order for text: symbols (in this order), then digits, then letters,
# case-insensitive ("Sort data in a range or table", support.microsoft.com). Apostrophe and
# hyphen, which Excel's sort mostly ignores, sit at the end of the symbols here.
_SYMBOLS = " !\"#$%&()*,./:;?@[\\]^_`{|}~+<=>'-"
_ORDER = {**{ord(c): chr(1 + i) for i, c in enumerate(_SYMBOLS)},
          **{ord(c): chr(0x40 + i) for i, c in enumerate("0123456789")},
          **{ord(c): chr(0x50 + i) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}}


def text_key(s: str) -> str:
    """A string whose code-point order is Excel's text comparison order."""
    return s.lower().translate(_ORDER)


def to_python(kind: int, num: float, obj: Any) -> Any:
    """Turn one stored (kind, num, obj) triple into the public value."""
    if kind == NUM:
        return float(num)
    if kind == EMPTY:
        return None
    if kind == BOOL:
        return bool(num)
    return obj



# --- text read as a number (en-US), as Excel does in arithmetic and VALUE -----------------
_NUMBER = re.compile(
    r"^(?P<sign>[-+]?)(?P<cur>\$?)(?P<sign2>[-+]?)"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)"
    r"(?P<exp>[eE][-+]?\d+)?\s*(?P<pct>%?)$")
_TIME = r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}(?:\.\d+)?))?\s*(?P<ampm>[AaPp][Mm])?"
_ISO_DATE = re.compile(r"^(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?:[ T]" + _TIME + ")?$")
_US_DATE = re.compile(r"^(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})(?: " + _TIME + ")?$")
_TIME_ONLY = re.compile("^" + _TIME + "$")
_EPOCH = date(1899, 12, 30)  # serial 1 = 1900-01-01 for every date after February 1900


def _time_fraction(m: re.Match[str]) -> float | None:
    if m.group("h") is None:
        return 0.0
    h, mi = int(m.group("h")), int(m.group("mi"))
    sec = float(m.group("s") or 0)
    ampm = (m.group("ampm") or "").upper()
    if ampm:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if ampm == "PM" else 0)
    if mi > 59 or sec >= 60:
        return None
    return (h * 3600 + mi * 60 + sec) / 86400


@lru_cache(maxsize=65536)
def text_to_number(s: str) -> float | None:
    """The number Excel (en-US) reads from text in arithmetic, or None (#VALUE!).

    Accepts "4096", " 1e3 ", "$12", "(5)", "1,000", "50%", "$-5", dates "2024-01-01",
    "2024/1/1", "1/15/2024" (as serial day numbers), and times "12:30", "3:00 PM".
    """
    t = s.strip()
    if not t:
        return None
    neg = t.startswith("(") and t.endswith(")")
    if neg:
        t = t[1:-1].strip()
    m = _NUMBER.match(t)
    if m is not None:
        if m.group("sign") and m.group("sign2"):
            return None
        x = float(m.group("num").replace(",", "") + (m.group("exp") or ""))
        if m.group("pct"):
            x /= 100.0
        if "-" in (m.group("sign"), m.group("sign2")):
            x = -x
        return -x if neg else x
    if neg:
        return None
    for pattern in (_ISO_DATE, _US_DATE):
        m = pattern.match(t)
        if m is not None:
            try:
                day = (date(int(m.group("y")), int(m.group("m")), int(m.group("d"))) - _EPOCH).days
            except ValueError:
                return None
            frac = _time_fraction(m)
            return None if frac is None else day + frac
    m = _TIME_ONLY.match(t)
    if m is not None:
        return _time_fraction(m)
    return None
