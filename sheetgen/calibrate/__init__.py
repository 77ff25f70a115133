"""Calibrating the refined roofline to measured matmul times (`sheetgen calibrate`).

    data.py     measured times from CSV/xlsx (the grader's header and unit recognition)
    fit.py      the model (the workbook's quantities + sheetgen.model.refined), the robust fit,
                the held-out comparison with and without wave quantization
    report.py   one calibration: per-row errors, JSON, the text report, the fitted preset
    threads.py  one BLAS thread while fitting (threadpoolctl): the same result, far faster
"""

from __future__ import annotations
