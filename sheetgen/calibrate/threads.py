"""One BLAS thread while fitting.

scipy's least_squares (method "trf") takes an SVD of the rows × parameters Jacobian on each
iteration. OpenBLAS splits even so thin a matrix across every core, and where the cores are
busy (a test run, a laptop doing anything else) its threads wait on each other: an SVD of
1,908 × 8 took 7.1 ms with two threads on a shared two-core machine and 0.23 ms with one, and
the fit of NVIDIA's 1,900-row tables spent most of its time there. The thread count changes no
result (the fitted values and errors on every table of benchmarks/data were the same to the
last bit with one thread and with two).

The count is set through OpenBLAS's own C API, `openblas_set_num_threads` (documented in
OpenBLAS's README, https://github.com/OpenMathLib/OpenBLAS#setting-the-number-of-threads-at-runtime),
under the names the numpy and scipy wheels' bundled copies export it with (scipy_openblas_...,
...64_), on each OpenBLAS the process has loaded, and restored afterwards. It is a
process-wide setting: another thread's BLAS calls during a fit run on one thread too. Where
the libraries cannot be found (not Linux, or another BLAS: MKL, Accelerate) nothing changes.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: (prefix, suffix) of the set/get functions in OpenBLAS builds: plain, and the numpy/scipy
#: wheels' scipy_openblas (32-bit integers) and scipy_openblas64_ (64-bit integers)
NAMES = (("openblas", ""), ("scipy_openblas", ""), ("scipy_openblas", "64_"))


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries this process has loaded (Linux: /proc/self/maps)."""
    try:
        lines = Path("/proc/self/maps").read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    paths = {parts[5] for line in lines if len(parts := line.split(maxsplit=5)) == 6}
    return sorted(p for p in paths if "openblas" in Path(p).name.lower())


@functools.cache
def blas_controls() -> tuple[tuple[Callable[[], int], Callable[[int], None]], ...]:
    """(get, set) of each loaded OpenBLAS's thread count (looked up once, after scipy loads)."""
    out = []
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for prefix, suffix in NAMES:
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                out.append((get, set_))
                break
    return tuple(out)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every loaded OpenBLAS on one thread; restore the counts after."""
    controls = blas_controls()
    before = [get() for get, _ in controls]
    try:
        for _, set_ in controls:
            set_(1)
        yield
    finally:
        for (_, set_), n in zip(controls, before, strict=True):
            set_(n)
