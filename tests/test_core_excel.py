"""core/excel.py's predicates and ROUND, one definition each, against a table of edge cases
worked out from Excel's documented behaviour (ISNUMBER/ISBLANK: Microsoft's "IS functions",
https://support.microsoft.com/en-us/office/is-functions-0f2d7971-6019-40a0-a171-f2d869135665;
ROUND halves away from zero: https://support.microsoft.com/en-us/office/round-function-c018c5d8-40fb-4053-90b1-b3e7f61a213c)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sheetgen.core.excel import (
    ExcelError,
    excel_round,
    is_blank,
    is_number,
    looks_blank,
    number_mask,
    round_to,
)


@pytest.mark.parametrize(("value", "expected"), [
    (0, True), (1.5, True), (-3, True), (np.int64(7), True), (np.float32(0.5), True),
    (True, False), (False, False), (np.bool_(True), False),  # ISNUMBER(TRUE) is FALSE
    (math.nan, False), (math.inf, False), (-math.inf, False), (np.float64("nan"), False),
    ("4096", False), ("", False), (None, False), (ExcelError("#N/A"), False),
])
def test_is_number(value, expected):
    assert is_number(value) is expected


@pytest.mark.parametrize("column", [
    [1.0, "", 3, np.float64(2), np.int32(4), ""],  # plain numbers and "": NumPy's path
    [1.0, "", math.inf, -math.inf, math.nan],  # still NumPy's: not finite is no number
    [2.0, True, "", np.bool_(False)],  # booleans: per cell, never 1 or 0
    [None, "x", ExcelError("#DIV/0!"), 5, np.float32(0.5)],
    [], ["", ""],
])
def test_number_mask_is_is_number_for_every_element(column):
    """The one vectorised ISNUMBER (the model's guarded columns) says what is_number says."""
    arr = np.empty(len(column), dtype=object)
    arr[:] = column
    assert number_mask(arr).tolist() == [is_number(v) for v in column]
    square = np.empty((2, 2), dtype=object)
    square[:] = [[1.0, ""], [True, math.nan]]
    assert number_mask(square).tolist() == [[True, False], [False, False]]
    assert number_mask(np.asarray(3.0)).item() is True and number_mask("").item() is False


@pytest.mark.parametrize(("value", "expected"), [
    (None, True), (math.nan, True), (np.float64("nan"), True),  # an empty cell
    ("", False), (" ", False), (0, False), (False, False),  # ISBLANK("") is FALSE
    (ExcelError("#N/A"), False),
])
def test_is_blank(value, expected):
    assert is_blank(value) is expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, True), ("", True), ("   ", True), ("\t", True),
    ("x", False), (0, False), (math.nan, False),
])
def test_looks_blank(value, expected):
    assert looks_blank(value) is expected


@pytest.mark.parametrize(("x", "digits", "expected"), [
    (2.5, 0, 3.0), (-2.5, 0, -3.0), (0.5, 0, 1.0), (1.4999, 0, 1.0),  # halves away from 0
    (2.675, 2, 2.68),  # 2.67499999999999982... in binary; Excel gives 2.68
    (1.005, 2, 1.01),  # 1.00499999999999989...; Excel gives 1.01
    (1234.5678, -2, 1200.0), (1250, -2, 1300.0), (-1250, -2, -1300.0),
    (0.0, 3, 0.0), (123.456, 1, 123.5),
])
def test_round_as_excel(x, digits, expected):
    assert excel_round(x, digits) == expected


def test_roundup_and_rounddown_and_arrays():
    assert round_to(3.2, 0, "ROUNDUP") == 4.0
    assert round_to(-3.2, 0, "ROUNDUP") == -4.0  # away from zero
    assert round_to(3.9, 0, "ROUNDDOWN") == 3.0
    assert round_to(-3.9, 0, "ROUNDDOWN") == -3.0  # towards zero
    assert round_to(0.3 / 0.1, 0, "ROUNDDOWN") == 3.0  # 2.9999999999999996 in binary
    np.testing.assert_array_equal(round_to(np.array([2.5, -0.5, 1.25]), 1),
                                  [2.5, -0.5, 1.3])
    with pytest.raises(ValueError):
        round_to(1.0, 0, "BANKERS")
