"""Writing GPU presets as TOML that `--gpu-file` loads (measure's device preset, calibrate's
fitted preset). The standard library reads TOML but does not write it; presets are flat
enough that a few lines do: strings, numbers, booleans and the inline peak_flops table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sheetgen.atomic import atomic_write
from sheetgen.errors import OutputError


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a preset figure must be finite, got {value!r}")
        return repr(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)  # JSON escapes are valid TOML


def preset_text(gpus: Sequence[Mapping[str, Any]], header: Sequence[str] = ()) -> str:
    """A preset document: `# header` lines, then one [[gpu]] table per mapping (in order)."""
    lines = [f"# {h}" for h in header]
    if gpus:
        lines.append(f"default = {_value(gpus[0]['name'])}")
    for gpu in gpus:
        lines += ["", "[[gpu]]"]
        lines += [f"{key} = {_value(value)}" for key, value in gpu.items()]
    return "\n".join(lines) + "\n"


def check_preset_path(path: str | Path, force: bool) -> Path:
    """The destination, after refusing directories, missing folders and existing files."""
    out = Path(path)
    if out.is_dir():
        raise OutputError(f"{out} is a directory; give a file name such as {out / 'gpu.toml'}")
    if out.suffix.lower() != ".toml":
        raise OutputError(f"{out}: the preset file name must end in .toml")
    if out.exists() and not force:
        raise OutputError(f"{out} already exists; pass --force to overwrite it")
    if not out.parent.exists():
        raise OutputError(f"{out.parent} does not exist")
    return out


def write_preset(path: str | Path, gpus: Sequence[Mapping[str, Any]],
                 header: Sequence[str] = (), force: bool = False) -> Path:
    """Write the presets atomically; an existing file needs force."""
    out = check_preset_path(path, force)
    with atomic_write(out) as tmp:
        tmp.write_text(preset_text(gpus, header), encoding="utf-8")
    return out
