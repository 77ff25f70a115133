"""Order formula groups so each is evaluated after the groups it reads.

A group reads, per reference, one row interval of one column. Groups are indexed by the row
interval they cover in their column, so the groups a reference overlaps are found by
bisection. The strongly connected components of that graph come out dependencies first;
a component of several groups, or a group that (maybe) reads itself, is evaluated cell by
cell (cellwise.py), which finds true circular references.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from .grouping import Group


def read_intervals(g: Group) -> Iterator[tuple[str, int, int, int]]:
    """(SHEET, col, first row, last row) for each column a group's references can read."""
    lo_row, hi_row = int(g.rows[0]), int(g.rows[-1])
    for r in g.refs:
        sheet = r[1].upper()
        if r[0] == "ref":
            row = r[2] if r[3] else None
            lo, hi = (row, row) if row is not None else (lo_row + r[2], hi_row + r[2])
            yield sheet, r[4], lo, hi
        else:
            lo1 = r[2] if r[3] else lo_row + r[2]
            hi1 = r[2] if r[3] else hi_row + r[2]
            lo2 = r[5] if r[6] else lo_row + r[5]
            hi2 = r[5] if r[6] else hi_row + r[5]
            for c in range(r[4], min(r[7], 16384) + 1):
                yield sheet, c, min(lo1, lo2), max(hi1, hi2)


def reads_itself(g: Group) -> bool:
    """True if any reference of the group may read one of the group's own rows."""
    lo_g, hi_g = int(g.rows[0]), int(g.rows[-1])
    key = g.sheet.upper()
    return any(s == key and c == g.col and lo <= hi_g and hi >= lo_g
               for s, c, lo, hi in read_intervals(g))  # fmt: skip


def order_groups(groups: list[Group]) -> list[list[int]]:
    """Strongly connected components of the group graph (indices), dependencies first."""
    by_col: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for gid, g in enumerate(groups):
        by_col.setdefault((g.sheet.upper(), g.col), []).append(
            (int(g.rows[0]), int(g.rows[-1]), gid)
        )
    index: dict[tuple[str, int], tuple[list[int], list[tuple[int, int, int]], list[int]]] = {}
    for key, items in by_col.items():
        items.sort()
        prefix_hi, m = [], -1
        for _lo, hi, _ in items:
            m = max(m, hi)
            prefix_hi.append(m)
        index[key] = ([lo for lo, _, _ in items], items, prefix_hi)
    cols_with_groups = {k[1] for k in index}
    edges: list[list[int]] = []
    for g in groups:
        deps: set[int] = set()
        for sheet, col, lo, hi in read_intervals(g):
            if col not in cols_with_groups:
                continue
            entry = index.get((sheet, col))
            if entry is None:
                continue
            los, items, prefix_hi = entry
            j = bisect.bisect_right(los, hi) - 1
            while j >= 0 and prefix_hi[j] >= lo:
                if items[j][1] >= lo:
                    deps.add(items[j][2])
                j -= 1
        edges.append(sorted(deps))
    return tarjan(edges)


def tarjan(edges: list[list[int]]) -> list[list[int]]:
    """Iterative Tarjan: SCCs in an order where every SCC follows those it depends on."""
    n = len(edges)
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = True
            recurse = False
            for j in range(i, len(edges[v])):
                w = edges[v][j]
                if index[w] == -1:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if on[w]:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out
