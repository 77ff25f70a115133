"""The vectorised column path must agree with cell-by-cell evaluation, formula by formula.

Random column formulas (seeded) over inputs mixing numbers, blanks, text, numeric text and
booleans; every cell is evaluated both ways and compared.
"""

from __future__ import annotations

import random
import re
import zipfile

import pytest
from evaluate_helpers import same, write_book

from sheetgen.evaluate import evaluate_workbook
from sheetgen.evaluate.workbook import _evaluate

FIRST, LAST = 2, 61
INPUT_POOL = [1, 2.5, -3, 0, 7, 1e6, None, None, "abc", "12", True, False, "", 0.125]


def _ref(rng: random.Random, cols: list[str], r: int) -> str:
    col = rng.choice(cols)
    kind = rng.random()
    if kind < 0.6:
        return f"{col}{r}"
    if kind < 0.8:
        return f"{col}{r - 1}"
    return f"${col}${FIRST + rng.randrange(5)}"


def _expr(rng: random.Random, cols: list[str], r: int, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.25:
        leaf = rng.random()
        if leaf < 0.65:
            return _ref(rng, cols, r)
        if leaf < 0.85:
            return rng.choice(["2", "0.5", "10", "1E+3", "0"])
        return rng.choice(['"x"', '""', "TRUE", '"7"'])
    sub = lambda: _expr(rng, cols, r, depth - 1)  # noqa: E731
    rng_col = f"${rng.choice(cols[:2])}${FIRST}:${rng.choice(cols[:2])}${LAST}"
    forms = [
        lambda: (
            f"({sub()}{rng.choice(['+', '-', '*', '/', '^', '&', '=', '<', '>=', '<>'])}{sub()})"
        ),
        lambda: f"-{sub()}",
        lambda: f"IF({sub()},{sub()},{sub()})",
        lambda: f"IFERROR({sub()},{sub()})",
        lambda: (
            f"{rng.choice(['MAX', 'MIN', 'SUM', 'AVERAGE', 'COUNT', 'COUNTA'])}({sub()},{sub()})"
        ),
        lambda: f"{rng.choice(['SUM', 'MAX', 'COUNT', 'COUNTBLANK'])}({rng_col})",
        lambda: f"SUM(A${FIRST}:A{r})",
        lambda: f"{rng.choice(['AND', 'OR'])}({sub()},{sub()})",
        lambda: f"NOT({sub()})",
        lambda: f"{rng.choice(['ROUND', 'ROUNDUP', 'ROUNDDOWN', 'MOD'])}({sub()},{sub()})",
        lambda: f"{rng.choice(['INT', 'ABS', 'LOG10', 'ISNUMBER', 'ISBLANK', 'ISTEXT'])}({sub()})",
        lambda: f"SUMPRODUCT(($A${FIRST}:$A${LAST}={_ref(rng, cols, r)})*$B${FIRST}:$B${LAST})",
        lambda: f"MATCH({sub()},$A${FIRST}:$A${LAST},0)",
        lambda: f"INDEX($A${FIRST}:$B${LAST},1+MOD(INT({sub()}),70),{rng.choice(['1', '2'])})",
        lambda: f"VLOOKUP({sub()},$A${FIRST}:$B${LAST},2,FALSE)",
    ]
    return rng.choice(forms)()


def _random_book(tmp_path, seed: int):
    rng = random.Random(seed)
    cells: dict[str, object] = {"A1": "hdr", "B1": 3}
    for r in range(FIRST, LAST + 1):
        cells[f"A{r}"] = rng.choice(INPUT_POOL)
        cells[f"B{r}"] = rng.choice(INPUT_POOL)
    cols = ["A", "B"]
    templates = {}
    for col in "CDEFGH":
        depth = rng.randrange(1, 4)
        templates[col] = [_expr(random.Random(seed * 100 + ord(col)), cols, 99, depth)]
        cols.append(col)
    for r in range(FIRST, LAST + 1):
        for col, (tpl,) in templates.items():
            # shift the row-99 template to row r: relative refs 99 -> r, 98 -> r-1
            f = re.sub(r"(?<=[A-Z])(98|99)\b", lambda m, r=r: str(r - 99 + int(m.group())), tpl)
            cells[f"{col}{r}"] = "=" + f
    return write_book(tmp_path / f"rand{seed}.xlsx", {"S": cells}), templates


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_equals_per_cell(tmp_path, seed):
    path, _ = _random_book(tmp_path, seed)
    fast = _evaluate(path, vectorize=True)
    slow = _evaluate(path, vectorize=False)
    assert fast._engine.groups and len(fast._engine.groups) <= 6 * 3  # column runs, not cells
    for sheet, cell in fast.formula_cells():
        a, b = fast.value(sheet, cell), slow.value(sheet, cell)
        assert same(a, b), (cell, fast.formula(sheet, cell), a, b)


def test_shared_formulas_are_expanded(tmp_path):
    cells = {f"A{r}": r for r in range(1, 7)}
    cells.update({f"B{r}": f"=A{r}*2+$A$1" for r in range(1, 7)})
    path = write_book(tmp_path / "plain.xlsx", {"S": cells})
    shared = tmp_path / "shared.xlsx"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(shared, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("sheet1.xml"):
                text = data.decode()
                text = text.replace(
                    "<f>A1*2+$A$1</f>", '<f t="shared" ref="B1:B6" si="0">A1*2+$A$1</f>'
                )
                text = re.sub(r"<f>A[2-6]\*2\+\$A\$1</f>", '<f t="shared" si="0"/>', text)
                assert text.count("shared") == 6
                data = text.encode()
            dst.writestr(item, data)
    ev = evaluate_workbook(shared)
    assert [ev.value("S", f"B{r}") for r in range(1, 7)] == [2.0 * r + 1 for r in range(1, 7)]
    assert ev.formula("S", "B4") == "=A4*2+$A$1"


def test_growing_and_moving_ranges(tmp_path):
    cells: dict[str, object] = {}
    for r in range(1, 101):
        cells[f"A{r}"] = (r * 37) % 11
        cells[f"B{r}"] = f"=SUM(A$1:A{r})"
        cells[f"C{r}"] = f"=MAX(A$1:A{r})-MIN(A$1:A{r})"
        cells[f"D{r}"] = f"=AVERAGE(A{max(1, r - 2)}:A{r})" if r > 2 else "=A1"
    ev = evaluate_workbook(write_book(tmp_path / "g.xlsx", {"S": cells}))
    a = [(r * 37) % 11 for r in range(1, 101)]
    for r in (1, 5, 50, 100):
        assert ev.value("S", f"B{r}") == sum(a[:r])
        assert ev.value("S", f"C{r}") == max(a[:r]) - min(a[:r])
    assert ev.value("S", "D10") == pytest.approx(sum(a[7:10]) / 3)


def test_running_totals_stay_vectorised(tmp_path):
    cells: dict[str, object] = {}
    n = 3000
    for r in range(1, n + 1):
        cells[f"A{r}"] = "skip" if r % 100 == 0 else float(r % 7)
        cells[f"B{r}"] = f"=SUM(A$1:A{r})/COUNT(A$1:A{r})+MAX(A$1:A{r})"
        cells[f"C{r}"] = f"=SUM(A{max(1, r - 4)}:A{r})" if r > 4 else "=0"
    fast = _evaluate(write_book(tmp_path / "rt.xlsx", {"S": cells}), vectorize=True)
    groups = fast._engine.groups
    assert len(groups) <= 4 and not any(g.moving for g in groups)
    vals = [0.0 if r % 100 == 0 else float(r % 7) for r in range(1, n + 1)]
    nums = [v for r, v in zip(range(1, n + 1), vals, strict=True) if r % 100]
    last = fast.value("S", f"B{n}")
    assert last == pytest.approx(sum(nums) / len(nums) + 6.0, rel=1e-12)
    assert fast.value("S", "C50") == sum(vals[45:50])


def test_interleaved_runs_and_forward_references(tmp_path):
    cells: dict[str, object] = {}
    for r in range(1, 121):
        cells[f"A{r}"] = float(r)
        # alternating formulas in one column: two non-contiguous runs
        cells[f"B{r}"] = f"=A{r}*2" if r % 2 else f'=A{r}&"-"&A{r - 1}'
        # reads the next row of its own column: a chain evaluated cell by cell, last row first
        cells[f"C{r}"] = f"=C{r + 1}+A{r}" if r < 120 else "=A120"
        # every third row is an input, the rest formulas reading another sheet
        cells[f"D{r}"] = -1.0 if r % 3 == 0 else f"=Other!A{r}+D$3"
    other = {f"A{r}": r * 10 for r in range(1, 121)}
    path = write_book(tmp_path / "i.xlsx", {"S": cells, "Other": other})
    fast, slow = _evaluate(path, vectorize=True), _evaluate(path, vectorize=False)
    for sheet, cell in fast.formula_cells():
        assert same(fast.value(sheet, cell), slow.value(sheet, cell)), cell
    assert fast.value("S", "B3") == 6.0 and fast.value("S", "B4") == "4-3"
    assert fast.value("S", "C1") == sum(range(1, 121))
    assert fast.value("S", "D7") == 69.0
