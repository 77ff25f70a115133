"""Timing matmuls on the local device: the measurements `sheetgen calibrate` fits the model to.

Runs where only NumPy (and, for GPUs, PyTorch) is installed, so one script can go to a bare
GPU machine: nothing here imports pandas, xlsxwriter, openpyxl or click, and
`python -m sheetgen.measure OUT.csv` is the same command as `sheetgen measure OUT.csv`.

    timing.py   the CPU (NumPy) and CUDA (PyTorch) backends: warm-up, repeats, CUDA events,
                L2 flush; the device's achievable peak and copy bandwidth
    sweep.py    which shapes to time (the built-in sweep or --shapes), the time budget and
                the progress bar
    csvio.py    the CSV (metadata as `#` lines, then the columns) and the device preset
    run.py      the command itself, shared by both entry points
"""

from __future__ import annotations
