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

from sheetgen.files.atomic import atomic_write, check_destination


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
    """A preset document: `# header` lines, then one [[gpu]] table per mapping (in order);
    a None figure is left out (with its source)."""
    lines = [f"# {h}" for h in header]
    if gpus:
        lines.append(f"default = {_value(gpus[0]['name'])}")
    for gpu in gpus:
        # TOML has no null: a figure left out (None, an unknown sm_count) stays out, with
        # its source, so the file loads back to the same preset
        absent = {key for key, value in gpu.items() if value is None}
        lines += ["", "[[gpu]]"]
        lines += [f"{key} = {_value(value)}" for key, value in gpu.items()
                  if key not in absent and key.removesuffix("_source") not in absent]
    return "\n".join(lines) + "\n"


def check_preset_path(path: str | Path, force: bool) -> Path:
    """The destination, after refusing directories, missing folders and existing files."""
    return check_destination(path, force, suffixes=(".toml",), example="gpu.toml",
                             kind="preset")


def write_preset(path: str | Path, gpus: Sequence[Mapping[str, Any]],
                 header: Sequence[str] = (), force: bool = False) -> Path:
    """Write the presets atomically; an existing file needs force."""
    out = check_preset_path(path, force)
    with atomic_write(out, replace=force) as tmp:
        tmp.write_text(preset_text(gpus, header), encoding="utf-8")
    return out
