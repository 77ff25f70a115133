"""Field masks (``fields=...``): parse them, apply them to stored objects, filter replies;
and a fast deep copy for the JSON-shaped data the emulator stores."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any


def jcopy(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), much faster than deepcopy."""
    if isinstance(obj, dict):
        return {k: jcopy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [jcopy(v) for v in obj]
    return obj


def parse_fields(mask: str) -> list[str]:
    """``"a(b,c.d),e"`` -> ``["a.b", "a.c.d", "e"]`` (Google's field-mask shorthand)."""
    return list(_parse_fields(mask))


@functools.lru_cache(maxsize=256)
def _parse_fields(mask: str) -> tuple[str, ...]:
    out: list[str] = []

    def split_top(s: str) -> list[str]:
        items, depth, cur = [], 0, []
        for ch in s:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                items.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        items.append("".join(cur))
        return [i.strip() for i in items if i.strip()]

    for item in split_top(mask.replace(" ", "")):
        if "(" in item and item.endswith(")"):
            prefix, inner = item.split("(", 1)
            out.extend(f"{prefix}.{sub}" for sub in parse_fields(inner[:-1]))
        else:
            out.append(item)
    return tuple(out)


_MISSING = object()


def _get_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = jcopy(value)


def _del_path(obj: dict[str, Any], path: str) -> None:
    parts = path.split(".")
    stack = []
    for part in parts[:-1]:
        if part not in obj or not isinstance(obj[part], dict):
            return
        stack.append((obj, part))
        obj = obj[part]
    obj.pop(parts[-1], None)
    for parent, key in reversed(stack):  # prune emptied containers
        if not parent[key]:
            del parent[key]


def apply_mask(dst: dict[str, Any], src: Mapping[str, Any], fields: str) -> None:
    """Google's update semantics: listed fields are copied from src, or cleared if absent."""
    for path in parse_fields(fields):
        if path == "*":
            dst.clear()
            dst.update(jcopy(dict(src)))
            continue
        value = _get_path(src, path)
        if value is _MISSING:
            _del_path(dst, path)
        else:
            _set_path(dst, path, value)


@functools.lru_cache(maxsize=256)
def _split_fields(mask: str) -> tuple[tuple[str, ...], ...]:
    """parse_fields, each path split at its dots (a repeatCell applies one mask per cell)."""
    return tuple(tuple(path.split(".")) for path in _parse_fields(mask))


def apply_mask_shared(dst: dict[str, Any], src: Mapping[str, Any], fields: str) -> None:
    """apply_mask for stored cells, which are never mutated in place: dicts along each path
    are copied (not the whole cell), values are shared rather than deep-copied."""
    for parts in _split_fields(fields):
        if parts == ("*",):
            dst.clear()
            dst.update(src)
            continue
        value: Any = src
        for part in parts:
            if not (type(value) is dict or isinstance(value, Mapping)) or part not in value:
                value = _MISSING
                break
            value = value[part]
        if value is _MISSING:
            _del_path_shared(dst, list(parts))
            continue
        obj = dst
        for part in parts[:-1]:
            child = obj.get(part)
            child = dict(child) if isinstance(child, dict) else {}
            obj[part] = child
            obj = child
        obj[parts[-1]] = value


def _del_path_shared(dst: dict[str, Any], parts: list[str]) -> None:
    if len(parts) == 1:
        dst.pop(parts[0], None)
        return
    child = dst.get(parts[0])
    if not isinstance(child, dict):
        return
    child = dict(child)
    _del_path_shared(child, parts[1:])
    if child:
        dst[parts[0]] = child
    else:
        dst.pop(parts[0], None)


def filter_fields(obj: Any, mask: str) -> Any:
    """Partial response (``fields=`` query): keep only the listed paths, through lists."""
    paths = parse_fields(mask)
    if not paths or "*" in paths:
        return obj
    tree: dict[str, Any] = {}
    for p in paths:
        node = tree
        for part in p.split("."):
            node = node.setdefault(part, {})

    def walk(o: Any, t: dict[str, Any]) -> Any:
        if not t:
            return o
        if isinstance(o, list):
            return [walk(x, t) for x in o]
        if isinstance(o, dict):
            return {k: walk(o[k], sub) for k, sub in t.items() if k in o}
        return o

    return walk(obj, tree)
