"""Pratt parser from tokens to a small tuple AST in relative (row-shift invariant) form.

AST nodes are tuples, tag first, so one compiled form serves every row of a column run:
    ("num", float) ("str", s) ("bool", b) ("err", code) ("missing",)
    ("ref", sheet, row, row_abs, col)                 row is an offset unless row_abs
    ("range", sheet, r1, r1_abs, c1, r2, r2_abs, c2)  same convention for r1 and r2
    ("name", NAME) ("neg", x) ("pct", x) ("bin", op, a, b) ("call", FNAME, [args])
    ("array", ((v, ...), ...))  an array constant {1,2;3,4}, rows of Python values
    ("final", ("bin", op, a, b))  set by the engine on a formula whose last step is + or -
    ("isect", a, b)  the intersection of two references (A1:C3 B2:D4), and
    ("union", [a, b, ...])  the union (A1:A3,B1) written in parentheses: the compiler turns
    both into plain references and argument lists (sheetgen.evaluate.compiler)
Sheet is always a concrete sheet name (the formula's own sheet when not written).
"""

from __future__ import annotations

from typing import Any

from .tokenizer import MAX_ROW, FormulaSyntaxError, RefSpec, Token, tokenize
from .values import ExcelError

Node = tuple[Any, ...]

# Excel precedence: comparison < & < + - < * / < ^ < unary minus < %
_BINARY = {
    "=": 1, "<>": 1, "<": 1, "<=": 1, ">": 1, ">=": 1,
    "&": 2, "+": 3, "-": 3, "*": 4, "/": 4, "^": 5,
}  # fmt: skip
_UNARY_BP = 6
_PERCENT_BP = 7
_INTERSECT_BP = 8  # the reference operators bind tightest: -A1:B2 B1 is -(A1:B2 B1)


def ref_node(spec: RefSpec, own_sheet: str, row: int) -> Node:
    """Turn a RefSpec seen in a formula at `row` into a relative AST node."""
    sheet = spec.sheet if spec.sheet is not None else own_sheet
    r1 = spec.r1 if spec.r1_abs else spec.r1 - row
    if not spec.is_range:
        return ("ref", sheet, r1, spec.r1_abs, spec.c1)
    r2 = spec.r2 if spec.r2_abs else spec.r2 - row
    return ("range", sheet, r1, spec.r1_abs, spec.c1, r2, spec.r2_abs, spec.c2)


class _Parser:
    def __init__(self, tokens: list[Token], sheet: str, row: int) -> None:
        self.toks = tokens
        self.i = 0
        self.sheet = sheet
        self.row = row

    def peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise FormulaSyntaxError("formula ends too early")
        self.i += 1
        return tok

    def _at(self, op: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.value == op

    def expect(self, op: str) -> None:
        tok = self.next()
        if tok.kind != "op" or tok.value != op:
            raise FormulaSyntaxError(f"expected {op!r} but found {tok.text!r}")

    def expr(self, min_bp: int = 0) -> Node:
        left = self.prefix()
        while True:
            tok = self.peek()
            if tok is None or tok.kind != "op":
                break
            op = tok.value
            if op == " ":
                if min_bp >= _INTERSECT_BP:
                    break
                self.i += 1
                left = ("isect", left, self.expr(_INTERSECT_BP))
                continue
            if op == "%":
                if min_bp > _PERCENT_BP:
                    break
                self.i += 1
                left = ("pct", left)
                continue
            bp = _BINARY.get(op)  # type: ignore[arg-type]
            if bp is None or bp <= min_bp:
                break
            self.i += 1
            right = self.expr(bp)  # all binary operators are left-associative in Excel
            left = ("bin", op, left, right)
        return left

    def prefix(self) -> Node:
        tok = self.next()
        k = tok.kind
        if k == "num":
            return ("num", tok.value)
        if k == "str":
            return ("str", tok.value)
        if k == "bool":
            return ("bool", tok.value)
        if k == "err":
            return ("err", tok.value)
        if k == "ref":
            return ref_node(tok.value, self.sheet, self.row)  # type: ignore[arg-type]
        if k == "name":
            return ("name", str(tok.value).upper())
        if k == "func":
            return self.call(str(tok.value))
        if k == "op":
            if tok.value == "(":
                inner = self.expr()
                if not self._at(","):
                    self.expect(")")
                    return inner
                parts = [inner]  # (A1:A3,B1): a comma inside parentheses is the union
                while self._at(","):
                    self.i += 1
                    parts.append(self.expr())
                self.expect(")")
                return ("union", parts)
            if tok.value == "-":
                return ("neg", self.expr(_UNARY_BP - 1))
            if tok.value == "+":
                return self.expr(_UNARY_BP - 1)
            if tok.value == "{":
                return self.array()
        raise FormulaSyntaxError(f"unexpected {tok.text!r}")

    def array(self) -> Node:
        """An array constant: numbers, text, booleans and errors; ',' columns, ';' rows."""
        rows: list[list[Any]] = [[]]
        while True:
            tok = self.next()
            sign = 1.0
            if tok.kind == "op" and tok.value in ("-", "+"):
                sign = -1.0 if tok.value == "-" else 1.0
                tok = self.next()
                if tok.kind != "num":
                    raise FormulaSyntaxError("expected a number after the sign in {...}")
            if tok.kind == "num":
                rows[-1].append(sign * float(tok.value))  # type: ignore[arg-type]
            elif tok.kind in ("str", "bool"):
                rows[-1].append(tok.value)
            elif tok.kind == "err":
                rows[-1].append(ExcelError(str(tok.value)))
            else:
                raise FormulaSyntaxError(f"an array constant holds constants, not {tok.text!r}")
            tok = self.next()
            if tok.kind == "op" and tok.value == "}":
                break
            if tok.kind == "op" and tok.value == ";":
                rows.append([])
            elif not (tok.kind == "op" and tok.value == ","):
                raise FormulaSyntaxError(f"expected ',' ';' or '}}' but found {tok.text!r}")
        if len({len(r) for r in rows}) != 1:
            raise FormulaSyntaxError("the rows of an array constant differ in length")
        return ("array", tuple(tuple(r) for r in rows))

    def call(self, name: str) -> Node:
        args: list[Node] = []
        tok = self.peek()
        if tok is not None and tok.kind == "op" and tok.value == ")":
            self.i += 1
            return ("call", name, args)
        while True:
            tok = self.peek()
            if tok is not None and tok.kind == "op" and tok.value in (",", ")"):
                args.append(("missing",))
            else:
                args.append(self.expr())
            tok = self.next()
            if tok.kind == "op" and tok.value == ")":
                return ("call", name, args)
            if not (tok.kind == "op" and tok.value == ","):
                raise FormulaSyntaxError(f"expected ',' or ')' but found {tok.text!r}")


def parse(formula: str, sheet: str, row: int) -> Node:
    """Parse '=...' text written in `sheet` at `row` into a relative AST."""
    text = formula[1:] if formula.startswith("=") else formula
    tokens, _ = tokenize(text)
    if not tokens:
        raise FormulaSyntaxError("empty formula")
    p = _Parser(tokens, sheet, row)
    node = p.expr()
    if p.peek() is not None:
        raise FormulaSyntaxError(f"unexpected {p.peek().text!r}")  # type: ignore[union-attr]
    return node


__all__ = ["MAX_ROW", "FormulaSyntaxError", "Node", "parse", "ref_node"]
