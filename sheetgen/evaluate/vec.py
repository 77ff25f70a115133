"""Vec: a block of cell values evaluated for many rows at once, plus coercion helpers.

Shapes are always 2-D: (n, 1) one value per row, (1, 1) one value for all rows, (1, m) a fixed
range, (n, m) a per-row array (e.g. ``$A$6:$A$77=A6`` inside SUMPRODUCT). NumPy broadcasting
then does the row/array bookkeeping. ``kind`` is an int when uniform (the common, fast case)
or an int8 array; ``num`` holds numbers (EMPTY 0, BOOL 0/1, STR/ERR NaN); ``obj`` holds the
str / ExcelError payloads and is None when there are none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .values import BOOL, EMPTY, ERR, NUM, NUM_ERR, STR, VALUE, ExcelError, text_to_number


class Vec:
    """Values for a group of rows; see the module docstring for the layout."""

    __slots__ = ("anchor", "dims", "is_ref", "kind", "nominal", "num", "obj")

    def __init__(
        self,
        kind: int | np.ndarray,
        num: np.ndarray,
        obj: np.ndarray | None = None,
        is_ref: bool = False,
        dims: tuple[int, int] | None = None,
    ) -> None:
        self.kind = kind
        self.num = num
        self.obj = obj
        self.is_ref = is_ref
        self.dims = dims
        self.anchor: tuple[str, int, int] | None = None  # (sheet, row, col) of a range's corner
        self.nominal: tuple[int, int] | None = None  # a clipped range's written (h, w)

    @property
    def shape(self) -> tuple[int, int]:
        return self.num.shape  # type: ignore[return-value]

    def kinds(self) -> np.ndarray:
        """Kind codes as an array of this Vec's shape."""
        if isinstance(self.kind, int):
            return np.full(self.num.shape, self.kind, dtype=np.int8)
        return np.broadcast_to(self.kind, self.num.shape)

    def objs(self) -> np.ndarray:
        """Payload array of this Vec's shape (None where no payload)."""
        if self.obj is None:
            return np.full(self.num.shape, None, dtype=object)
        return np.broadcast_to(self.obj, self.num.shape)

    def has(self, k: int) -> bool:
        if isinstance(self.kind, int):
            return self.kind == k
        return bool((self.kind == k).any())

    def only(self, *kinds: int) -> bool:
        """True if every element has one of the given kinds."""
        if isinstance(self.kind, int):
            return self.kind in kinds
        return bool(np.isin(self.kind, kinds).all())

    def uniform(self) -> int | None:
        """The single kind of every element, or None if mixed."""
        if isinstance(self.kind, int):
            return self.kind
        if self.kind.size == 0:
            return EMPTY
        first = int(self.kind.flat[0])
        return first if bool((self.kind == first).all()) else None


def const(value: Any) -> Vec:
    """A (1, 1) Vec for a Python value."""
    one = np.zeros((1, 1))
    if value is None:
        return Vec(EMPTY, one)
    if isinstance(value, bool):
        return Vec(BOOL, one + float(value))
    if isinstance(value, int | float):
        return Vec(NUM, one + float(value))
    obj = np.empty((1, 1), dtype=object)
    obj[0, 0] = value
    one[0, 0] = np.nan
    if isinstance(value, ExcelError):
        return Vec(ERR, one, obj)
    return Vec(STR, one, obj)


def array_vec(rows: tuple[tuple[Any, ...], ...]) -> Vec:
    """A (1, h*w) Vec with dims (h, w) for an array constant's rows."""
    h, w = len(rows), len(rows[0])
    cells = [const(x) for row in rows for x in row]
    kind = np.array([[c.kind for c in cells]], dtype=np.int8)
    num = np.array([[float(c.num[0, 0]) for c in cells]])
    obj = None
    if any(c.obj is not None for c in cells):
        obj = np.empty((1, h * w), dtype=object)
        obj[0, :] = [None if c.obj is None else c.obj[0, 0] for c in cells]
    return Vec(kind, num, obj, dims=(h, w))


def error_vec(err: ExcelError, shape: tuple[int, int] = (1, 1)) -> Vec:
    """Every element the same error."""
    return Vec(ERR, np.full(shape, np.nan), np.full(shape, err, dtype=object))


class ErrAcc:
    """Collects per-element errors; the first error recorded at a position wins."""

    __slots__ = ("mask", "obj", "shape")

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.mask: np.ndarray | None = None
        self.obj: np.ndarray | None = None

    def add(self, mask: np.ndarray | None, err: Any) -> None:
        if mask is None:
            return
        mask = np.broadcast_to(mask, self.shape)
        if not mask.any():
            return
        if self.mask is None:
            self.mask = np.zeros(self.shape, dtype=bool)
            self.obj = np.full(self.shape, None, dtype=object)
        new = mask & ~self.mask
        assert self.obj is not None
        if isinstance(err, ExcelError):
            self.obj[new] = err
        else:
            self.obj[new] = np.broadcast_to(err, self.shape)[new]
        self.mask |= new

    def add_vec_errors(self, v: Vec) -> None:
        """Record the error elements of v."""
        if v.has(ERR):
            self.add(v.kinds() == ERR, v.objs())

    def finish(self, num: np.ndarray, kind: int = NUM) -> Vec:
        num = np.broadcast_to(num, self.shape)
        if self.mask is None:
            return Vec(kind, num)
        k = np.where(self.mask, np.int8(ERR), np.int8(kind))
        return Vec(k, np.where(self.mask, np.nan, num), self.obj)


def to_number(v: Vec, acc: ErrAcc) -> np.ndarray:
    """Numbers for arithmetic: empty 0, bools 0/1, numeric text parsed; errors into acc."""
    k = v.kind
    if isinstance(k, int) and k in (NUM, BOOL, EMPTY):
        return v.num
    if not isinstance(k, int) and not (v.has(STR) or v.has(ERR)):
        return v.num
    kinds = v.kinds()
    acc.add(kinds == ERR, v.objs())
    str_mask = kinds == STR
    if not str_mask.any():
        return v.num
    num = np.array(np.broadcast_to(v.num, kinds.shape), dtype=float)
    bad = np.zeros(kinds.shape, dtype=bool)
    objs = v.objs()
    for idx in zip(*np.nonzero(str_mask), strict=True):
        x = text_to_number(objs[idx])
        if x is None:
            bad[idx] = True
        else:
            num[idx] = x
    acc.add(bad, VALUE)
    return num


def finite_check(num: np.ndarray, acc: ErrAcc) -> None:
    """Overflow / invalid results become #NUM! (Excel never holds inf or NaN)."""
    bad = ~np.isfinite(num)
    if bad.any():
        acc.add(bad, NUM_ERR)


def to_bool(v: Vec, acc: ErrAcc) -> np.ndarray:
    """Logical value: numbers !=0, bools, empty FALSE, "TRUE"/"FALSE" text; else #VALUE!."""
    k = v.kind
    if isinstance(k, int) and k in (NUM, BOOL, EMPTY):
        return v.num != 0
    kinds = v.kinds()
    acc.add(kinds == ERR, v.objs())
    out = np.array(np.broadcast_to(v.num, kinds.shape) != 0)
    str_mask = kinds == STR
    if str_mask.any():
        objs = v.objs()
        bad = np.zeros(kinds.shape, dtype=bool)
        for idx in zip(*np.nonzero(str_mask), strict=True):
            s = str(objs[idx]).upper()
            if s == "TRUE":
                out[idx] = True
            elif s == "FALSE":
                out[idx] = False
            else:
                bad[idx] = True
        acc.add(bad, VALUE)
    return out


def select(cond: np.ndarray, a: Vec, b: Vec) -> Vec:
    """Element-wise cond ? a : b with broadcasting (both sides already computed)."""
    shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
    num = np.where(cond, a.num, b.num)
    if isinstance(a.kind, int) and isinstance(b.kind, int) and a.kind == b.kind:
        kind: int | np.ndarray = a.kind
    else:
        kind = np.where(cond, a.kind, b.kind).astype(np.int8)
    obj = None
    if a.obj is not None or b.obj is not None:
        obj = np.where(cond, a.objs() if a.obj is not None else None,
                       b.objs() if b.obj is not None else None)  # fmt: skip
    is_ref: bool | np.ndarray = a.is_ref  # type: ignore[assignment]
    if not (isinstance(a.is_ref, bool) and isinstance(b.is_ref, bool) and a.is_ref == b.is_ref):
        is_ref = np.broadcast_to(np.where(cond, a.is_ref, b.is_ref), shape)
    return Vec(kind, np.broadcast_to(num, shape), obj, is_ref=is_ref)  # type: ignore[arg-type]


def concat_rows(parts: list[Vec]) -> Vec:
    """Stack per-row results (each (1, m)) into one (n, m) Vec."""
    width = max(p.shape[1] for p in parts)
    nums = np.concatenate([np.broadcast_to(p.num, (1, width)) for p in parts])
    kinds = np.concatenate([np.broadcast_to(p.kinds(), (1, width)) for p in parts])
    obj = None
    if any(p.obj is not None for p in parts):
        obj = np.concatenate([np.broadcast_to(p.objs(), (1, width)) for p in parts])
    return Vec(kinds.astype(np.int8), nums, obj)
