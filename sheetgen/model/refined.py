"""The refined matmul time: a launch floor plus tile/wave quantization on top of the roofline.

Pure NumPy functions, the one Python reference for the refined-time quantities (the workbook's
formulas, the reference model and `calibrate`'s fit all use these):

    tiles      = ceil(m / tile_m) · ceil(n / tile_n)      output tiles of the kernel
    waves      = ceil(tiles / sms)                        a partial last wave costs a whole one
    wave_eff   = tiles / (waves · sms)                    share of SM slots doing work
    quantized  = compute_time / wave_eff                  compute time with idle SMs counted
    overlap    = (1 + (min(c, m) / max(c, m))^p)^(1/p)     p ≥ 1; 1 (a hard max) when p = 0
    refined    = floor + max(c, m) · overlap              c: quantized or compute_time, m: memory

Without an SM count (a preset from a datasheet may leave it out) waves, wave_eff and quantized
are "n/a" and the refined time uses the plain compute time, waves off whatever the switch.

The overlap factor makes the max smooth: (c^p + m^p)^(1/p), the p-norm of the two times, is
max(c, m)·overlap. p = 1 adds them (compute and memory traffic never overlap), a large p
approaches the pure roofline's max (they overlap perfectly); 0 means that hard max exactly.
A kernel near the ridge is slower than either roof alone, which a hard max cannot show.

Tile and wave quantization follows NVIDIA's "Matrix Multiplication Background User's Guide"
(docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication). Real
libraries pick tiles and split-K per shape, so quantization is a switch whose value must be
shown by held-out error, never assumed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.core import defaults
from sheetgen.core.excel import is_number


def tiles(m: Any, n: Any, tile_m: Any, tile_n: Any) -> Any:
    """Output tiles of an m×n result cut into tile_m×tile_n blocks."""
    return np.ceil(np.asarray(m, dtype=float) / tile_m) * np.ceil(np.asarray(n, dtype=float)
                                                                  / tile_n)


def waves(tiles_: Any, sms: Any) -> Any:
    """Waves of thread blocks: one tile per SM per wave, the last wave rounded up."""
    return np.ceil(np.asarray(tiles_, dtype=float) / sms)


def wave_efficiency(tiles_: Any, waves_: Any, sms: Any) -> Any:
    """The fraction of SM slots over all waves that hold a tile (1.0 = no quantization loss)."""
    return np.asarray(tiles_, dtype=float) / (np.asarray(waves_, dtype=float) * sms)


def quantized_compute_time(compute_time: Any, wave_eff: Any) -> Any:
    """Compute time when the idle SMs of the last wave are paid for."""
    return np.asarray(compute_time, dtype=float) / wave_eff


def waves_on(switch: Any) -> bool:
    """The wave-quantization switch as the sheet reads it: the text "on" (any case) or True."""
    if isinstance(switch, bool | np.bool_):
        return bool(switch)
    return str(switch).lower() == "on"


#: What the wave cells show for a GPU whose preset gives no SM count (a datasheet rarely
#: does): the waves cannot be counted, so the refined time keeps waves off and says why.
NO_SMS = "n/a"
NO_SMS_NOTE = defaults.NO_SMS_NOTE


def sms_known(sms: Any) -> bool:
    """Whether the SM count is a number, as ISNUMBER tests it (not "n/a", not a boolean)."""
    return is_number(sms)


def chosen_compute_time(compute_time: Any, quantized: Any, switch: Any, sms: Any = 1) -> Any:
    """The compute time the refined time uses: quantized when waves are on and the GPU has
    an SM count, else plain (the roofline's, with no wave penalty)."""
    quantize = waves_on(switch) and sms_known(sms)
    return np.asarray(quantized if quantize else compute_time, dtype=float)


#: An overlap exponent below this is the hard max (the pure roofline's perfect overlap).
MIN_OVERLAP_EXPONENT = 1.0


def overlap_factor(compute_time: Any, memory_time: Any, exponent: Any) -> Any:
    """(1 + (faster/slower)^p)^(1/p): how much the p-norm of the two times exceeds the slower
    one (1 for p = 0, the hard max; up to 2 for p = 1, the sum)."""
    c, m = np.asarray(compute_time, dtype=float), np.asarray(memory_time, dtype=float)
    slow, fast = np.maximum(c, m), np.minimum(c, m)
    p = np.asarray(exponent, dtype=float)
    smooth = p >= MIN_OVERLAP_EXPONENT
    safe_p = np.where(smooth, p, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(slow > 0, fast / np.where(slow > 0, slow, 1.0), 0.0)
        factor = (1.0 + ratio ** safe_p) ** (1.0 / safe_p)
    return np.where(smooth, factor, 1.0)


def refined_time(floor: Any, compute_time: Any, memory_time: Any, overlap: Any = 0.0) -> Any:
    """Launch floor plus the p-norm of compute (quantized or not) and memory time (the slower
    of the two when the overlap exponent is 0)."""
    slower = np.maximum(compute_time, memory_time)
    return floor + slower * overlap_factor(compute_time, memory_time, overlap)
