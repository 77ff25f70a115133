"""Cell values as the Sheets API takes and gives them: USER_ENTERED and RAW input parsing,
typed effective values, and numbers as FORMATTED_VALUE renders them."""

from __future__ import annotations

import re
from typing import Any


def plain_number(x: float | int) -> float | int:
    """Google writes integral numbers without a fraction."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


_NUMBER_RE = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d*)?([eE][+-]?\d+)?$")


def parse_user_entered(value: Any) -> dict[str, Any] | None:
    """A value as the Sheets UI would take it (USER_ENTERED); None clears the cell."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int | float):
        return {"numberValue": value}
    text = str(value)
    if text == "":
        return None
    if text.startswith("'"):
        return {"stringValue": text[1:]}
    if text.startswith("=") and len(text) > 1:
        return {"formulaValue": text}
    if text.upper() in ("TRUE", "FALSE"):
        return {"boolValue": text.upper() == "TRUE"}
    body = text.strip()
    pct = body.endswith("%")
    if pct:
        body = body[:-1]
    if body and any(ch.isdigit() for ch in body) and _NUMBER_RE.match(body):
        number = float(body.replace(",", ""))
        return {"numberValue": plain_number(number / 100 if pct else number)}
    return {"stringValue": text}


def parse_raw(value: Any) -> dict[str, Any] | None:
    """RAW input: strings stay strings (``"=1+2"`` is text), numbers and booleans as they are."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int | float):
        return {"numberValue": value}
    text = str(value)
    return None if text == "" else {"stringValue": text}


def typed_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int | float):
        return {"numberValue": v}
    return {"stringValue": str(v)}


def fmt_number(v: float) -> str:
    n = plain_number(v)
    return str(n) if isinstance(n, int) else repr(float(n))
