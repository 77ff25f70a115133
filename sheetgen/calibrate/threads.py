"""One BLAS thread while fitting.

scipy's least_squares (method "trf") takes an SVD of the rows × parameters Jacobian on each
iteration. OpenBLAS splits even so thin a matrix across every core, and where the cores are
busy (a test run, a laptop doing anything else) its threads wait on each other: an SVD of
1,908 × 8 took 7.1 ms with two threads on a shared two-core machine and 0.23 ms with one, and
the fit of NVIDIA's 1,900-row tables spent most of its time there. The thread count changes no
result (the fitted values and errors on every table of benchmarks/data were the same to the
last bit with one thread and with two).

threadpoolctl (https://github.com/joblib/threadpoolctl) limits every BLAS the process has
loaded (OpenBLAS, MKL, BLIS) for the block and restores it after. The limit is process-wide:
another thread's BLAS calls during a fit run on one thread too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every loaded BLAS on one thread; restore the counts after."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
