"""Compile each group's formula once: parse it, substitute defined names, note what it reads.

Names are resolved to their compiled trees and shared, so a compiled formula is a DAG; its
size as evaluation would visit it is bounded (MAX_EXPANDED_NODES) before anything runs.
A function outside the registry raises Unsupported -- a WorkbookError naming the cell, or
in lenient mode a group left "not evaluated".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sheetgen.errors import WorkbookError

from .functions import (
    AREA_LIST_FUNCTIONS,
    ARITY,
    FUNCTIONS,
    PREFIX_AGGREGATES,
    Unsupported,
    is_moving_column,
)
from .grouping import Group
from .limits import MAX_EXPANDED_NODES, MAX_ROW, check_formula
from .parser import FormulaSyntaxError, Node, parse
from .tokenizer import OffGridError

_MAX_DEPTH = 20_000  # compiled tree depth: the evaluator recurses once or twice per level


class Compiler:
    """Compiles groups against one workbook's defined names (cached per sheet and name)."""

    def __init__(self, names: Mapping[str, str], local_names: Mapping[tuple[str, str], str],
                 lenient: bool) -> None:  # fmt: skip
        self.names = names
        self.local_names = local_names
        self.lenient = lenient
        self._name_cache: dict[tuple[str, str], Node] = {}

    def compile_group(self, g: Group) -> None:
        """Set g.ast, g.refs, g.moving and g.width (or g.skipped, leniently)."""
        where = g.label()
        try:
            check_formula(g.text, where)
            ast = parse(g.text, g.sheet, g.origin)
            g.ast = self._compile_node(ast, g.sheet, where)
            _check_expansion(g.ast, where)
        except FormulaSyntaxError as exc:
            if not self.lenient or isinstance(exc, OffGridError):
                raise WorkbookError(f"cannot parse formula in {where}: {exc}") from None
            g.skipped, g.ast = f"cannot parse formula: {exc}", ("num", 0.0)
        except Unsupported as exc:
            if not self.lenient:
                raise WorkbookError(f"{exc} in {where}") from None
            g.skipped, g.ast = str(exc), ("num", 0.0)
        except RecursionError:
            raise WorkbookError(f"the formula in {where} nests too deeply to "
                                "evaluate") from None
        if g.ast[0] == "bin" and g.ast[1] in ("+", "-"):
            g.ast = ("final", g.ast)  # Excel's near-zero rule applies to the last step
        g.refs = list(iter_refs(g.ast))
        g.moving = _needs_rowwise(g.ast)
        for r in g.refs:
            if r[0] == "range" and r[3] and r[6] and r[5] < MAX_ROW:
                g.width = max(g.width, (r[5] - r[2] + 1) * (r[7] - r[4] + 1))

    def _resolve_name(self, sheet: str, name: str, depth: int = 0) -> Node:
        key = (sheet, name)
        hit = self._name_cache.get(key)
        if hit is not None:
            return hit
        target = self.local_names.get((sheet, name))
        if target is None:
            target = next((t for n, t in self.names.items() if n.upper() == name), None)
        if target is None or depth > 10:
            node: Node = ("err", "#NAME?")
        else:
            try:
                check_formula(target, f"the defined name {name}")
                parsed = parse(target, sheet, 0)
                node = self._compile_node(parsed, sheet, "", depth + 1, absolute=True)
            except (FormulaSyntaxError, Unsupported):
                node = ("err", "#NAME?")
        self._name_cache[key] = node
        return node

    def _compile_node(self, node: Node, sheet: str, where: str, depth: int = 0,
                      absolute: bool = False) -> Node:  # fmt: skip
        tag = node[0]
        if tag == "name":
            return self._resolve_name(sheet, node[1], depth)
        if tag == "ref" and absolute:
            return ("ref", node[1], node[2], True, node[4])
        if tag == "range" and absolute:
            return ("range", node[1], node[2], True, node[4], node[5], True, node[7])
        if tag == "call":
            fname = node[1]
            if fname not in FUNCTIONS:
                raise Unsupported(f"unsupported function {fname}")
            raw, from_union = node[2], [False] * len(node[2])
            if fname in AREA_LIST_FUNCTIONS:  # SUM((A1:A3,B1)) is SUM(A1:A3,B1)
                raw, from_union = _spread_unions(raw)
            lo, hi = ARITY[fname]
            if not lo <= len(raw) <= hi:
                raise Unsupported(f"{fname} takes {lo} to {hi} arguments, got {len(raw)}")
            args = [self._compile_node(a, sheet, where, depth, absolute) for a in raw]
            if any(u and a[0] not in ("ref", "range", "err")
                   for a, u in zip(args, from_union, strict=True)):
                raise Unsupported("a union (a,b) of something other than references")
            return ("call", fname, args)
        if tag == "union":
            raise Unsupported("the union operator (A1:A3,B1) outside the arguments of "
                              + ", ".join(sorted(AREA_LIST_FUNCTIONS)))
        if tag == "isect":
            return intersect(self._compile_node(node[1], sheet, where, depth, absolute),
                             self._compile_node(node[2], sheet, where, depth, absolute))
        if tag == "bin":
            return ("bin", node[1], self._compile_node(node[2], sheet, where, depth, absolute),
                    self._compile_node(node[3], sheet, where, depth, absolute))  # fmt: skip
        if tag in ("neg", "pct"):
            return (tag, self._compile_node(node[1], sheet, where, depth, absolute))
        return node


def _spread_unions(args: list[Node]) -> tuple[list[Node], list[bool]]:
    """A function's arguments with each union (nested ones too) replaced by its parts, and
    which of them came from a union."""
    out: list[Node] = []
    flags: list[bool] = []
    todo = [(a, False) for a in reversed(args)]
    while todo:
        a, inside = todo.pop()
        if a[0] == "union":
            todo.extend((p, True) for p in reversed(a[1]))
        else:
            out.append(a)
            flags.append(inside)
    return out, flags


def _row_bounds(node: Node) -> tuple[str, int, bool, int, int, bool, int]:
    if node[0] == "ref":
        _, sheet, row, absolute, col = node
        return sheet, row, absolute, col, row, absolute, col
    if node[0] == "range":
        return node[1:]  # type: ignore[return-value]
    raise Unsupported("an intersection (space) of something other than two references")


def intersect(a: Node, b: Node) -> Node:
    """The intersection operator folded into one reference: `C2:C11 C5:D6` is C5:C6, a single
    cell a ref, no common cell #NULL! (Excel). Row numbers are offsets from the formula's row
    unless absolute, so two bounds compare only when both are absolute or both relative; a
    mix (the overlap would move with the row) is not supported."""
    if a[0] == "err":
        return a
    if b[0] == "err":
        return b
    sa, ra1, fa1, ca1, ra2, fa2, ca2 = _row_bounds(a)
    sb, rb1, fb1, cb1, rb2, fb2, cb2 = _row_bounds(b)
    if sa.upper() != sb.upper():
        raise Unsupported("an intersection of references on different sheets")
    if len({fa1, fa2, fb1, fb2}) != 1:
        raise Unsupported("an intersection of absolute and relative rows (write both with $ "
                          "or both without)")
    r1, r2, c1, c2 = max(ra1, rb1), min(ra2, rb2), max(ca1, cb1), min(ca2, cb2)
    if r1 > r2 or c1 > c2:
        return ("err", "#NULL!")
    if r1 == r2 and c1 == c2:
        return ("ref", sa, r1, fa1, c1)
    return ("range", sa, r1, fa1, c1, r2, fa1, c2)


def _check_expansion(ast: Node, where: str) -> None:
    """Refuse a formula whose defined names fan out (each name's tree is shared, so the
    compiled formula is a DAG; count its nodes as evaluation would visit them)."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    todo: list[tuple[Node, bool]] = [(ast, False)]
    while todo:  # iterative post-order, memoised by node identity
        node, done = todo.pop()
        key = id(node)
        if key in sizes:
            continue
        kids = _children(node)
        if not done:
            todo.append((node, True))
            todo.extend((k, False) for k in kids if id(k) not in sizes)
            continue
        sizes[key] = 1 + sum(sizes[id(k)] for k in kids)
        depths[key] = 1 + max((depths[id(k)] for k in kids), default=0)
        if sizes[key] > MAX_EXPANDED_NODES:
            raise WorkbookError(
                f"the formula in {where} expands to more than {MAX_EXPANDED_NODES:,} terms "
                "once its defined names are substituted (names that use names many times)")
        if depths[key] > _MAX_DEPTH:
            raise WorkbookError(f"the formula in {where} nests more than {_MAX_DEPTH} levels "
                                "deep once its defined names are substituted")


def _children(node: Node) -> list[Node]:
    tag = node[0]
    if tag == "call":
        return list(node[2])
    if tag == "bin":
        return [node[2], node[3]]
    if tag in ("neg", "pct", "final"):
        return [node[1]]
    return []


def _needs_rowwise(node: Node) -> bool:
    """True if a moving range appears where only a single row can make it concrete."""
    tag = node[0]
    if tag == "range":
        return not (node[3] and node[6])
    if tag == "call":
        prefix_ok = node[1] in PREFIX_AGGREGATES
        return any(not (prefix_ok and is_moving_column(a)) and _needs_rowwise(a) for a in node[2])
    if tag == "bin":
        return _needs_rowwise(node[2]) or _needs_rowwise(node[3])
    if tag in ("neg", "pct", "final"):
        return _needs_rowwise(node[1])
    return False


def iter_refs(node: Node) -> Iterator[Node]:
    """Every ref/range node, left to right (iterative: operator chains can be deep)."""
    todo = [node]
    while todo:
        n = todo.pop()
        tag = n[0]
        if tag in ("ref", "range"):
            yield n
        elif tag == "call":
            todo.extend(reversed(n[2]))
        elif tag == "bin":
            todo.append(n[3])
            todo.append(n[2])
        elif tag in ("neg", "pct", "final"):
            todo.append(n[1])
