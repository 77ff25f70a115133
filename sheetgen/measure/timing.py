"""The timing backends: NumPy on the CPU, PyTorch on a CUDA GPU.

Methodology follows the MAMF finder of the ml-engineering book (stas00/ml-engineering,
compute/accelerator/benchmarks/mamf-finder.py) and NVIDIA's CUDA best practices:

- warm up first (library initialisation, kernel selection, clocks);
- on the GPU time each repeat with a pair of CUDA events and synchronize once at the end;
  before every repeat, overwrite a buffer twice the size of L2 so the operands come from HBM
  (a cold cache, which is what the roofline's memory term assumes);
- repeat several times and keep the median, with the minimum and maximum beside it.

On the CPU the operands stay cached between repeats (a matmul that fits in L2/L3 can beat the
DRAM roof; `calibrate` flags such rows instead of fitting them).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from sheetgen.errors import InputError

DEVICES = ("cpu", "cuda")
WARMUP = 2  # untimed calls before the repeats
L2_FLUSH_FACTOR = 2  # the flush buffer is this many times the L2 size
FP8_MULTIPLE = 16  # torch._scaled_mm needs every dimension to be a multiple of 16


@dataclass(frozen=True)
class Timing:
    """Seconds per call over `repeats` timed calls."""

    median: float
    minimum: float
    maximum: float
    repeats: int

    @classmethod
    def of(cls, samples: list[float]) -> Timing:
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


class Backend:
    """What measure needs from a device: its dtypes, metadata and timed operations."""

    device: str = ""
    name: str = ""

    def dtypes(self) -> list[str]:
        raise NotImplementedError

    def default_dtypes(self) -> list[str]:
        raise NotImplementedError

    def metadata(self) -> dict[str, str]:
        raise NotImplementedError

    def skip_reason(self, m: int, k: int, n: int, dtype: str) -> str | None:
        """Why a shape cannot be timed in a dtype (None when it can)."""
        return None

    def time_matmul(self, m: int, k: int, n: int, dtype: str, repeats: int) -> Timing:
        raise NotImplementedError

    def time_copy(self, nbytes: int, repeats: int) -> Timing:
        raise NotImplementedError

    def memory_bytes(self) -> float:
        raise NotImplementedError

    def sm_count(self) -> int:
        raise NotImplementedError


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _blas() -> str:
    """The BLAS NumPy links (numpy >= 1.25 describes its build as a dict)."""
    try:
        config = np.show_config(mode="dicts")  # type: ignore[call-arg]
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older NumPy: not worth failing a measurement over
        return "unknown"


class CpuBackend(Backend):
    """NumPy matmuls on the CPU: always available."""

    device = "cpu"

    def __init__(self) -> None:
        self.name = _cpu_model()
        self._rng = np.random.default_rng(0)

    def dtypes(self) -> list[str]:
        return ["fp32"]

    def default_dtypes(self) -> list[str]:
        return ["fp32"]

    def metadata(self) -> dict[str, str]:
        try:
            threads = len(os.sched_getaffinity(0))
        except AttributeError:
            threads = os.cpu_count() or 1
        env = {v: os.environ[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS") if v in os.environ}
        try:
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())  # others sharing the cores
        except OSError:
            load = "unknown"
        return {"device_name": self.name, "device": "cpu", "cpu_threads": str(threads),
                "load_average_1_5_15min": load,
                "thread_env": " ".join(f"{k}={v}" for k, v in env.items()) or "unset",
                "numpy": np.__version__, "blas": _blas(),
                "python": platform.python_version(), "platform": platform.platform(),
                "date": _now()}

    def _operand(self, rows: int, cols: int) -> np.ndarray:
        return self._rng.standard_normal((rows, cols), dtype=np.float32)

    def time_matmul(self, m: int, k: int, n: int, dtype: str, repeats: int) -> Timing:
        a, b = self._operand(m, k), self._operand(k, n)
        c = np.empty((m, n), dtype=np.float32)
        return _time_host(lambda: np.matmul(a, b, out=c), repeats)

    def time_copy(self, nbytes: int, repeats: int) -> Timing:
        src = np.ones(max(nbytes // 4, 1), dtype=np.float32)
        dst = np.empty_like(src)
        return _time_host(lambda: np.copyto(dst, src), repeats)

    def memory_bytes(self) -> float:
        try:
            return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return 1.0

    def sm_count(self) -> int:
        return int(self.metadata()["cpu_threads"])


def _time_host(call: Callable[[], Any], repeats: int) -> Timing:
    for _ in range(WARMUP):
        call()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return Timing.of(samples)


#: sheetgen dtype -> the torch dtype name measured under it.
_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32",
                 "fp8": "float8_e4m3fn"}


class CudaBackend(Backend):
    """PyTorch matmuls on the first CUDA device (optional extra `measure`)."""

    device = "cuda"

    def __init__(self) -> None:
        try:
            import torch
        except ImportError:
            raise InputError("--device cuda needs PyTorch, which is not installed: "
                             "pip install 'sheetgen[measure]' (or a CUDA build of torch)") from None
        if not torch.cuda.is_available():
            raise InputError(f"--device cuda: PyTorch {torch.__version__} sees no CUDA GPU "
                             f"(CUDA build: {torch.version.cuda or 'none'}); use --device cpu")
        self.torch = torch
        self.dev = torch.device("cuda", 0)
        self.props = torch.cuda.get_device_properties(0)
        self.name = self.props.name
        l2 = int(getattr(self.props, "L2_cache_size", 0) or 50 * 2**20)
        self._flush = torch.empty(L2_FLUSH_FACTOR * l2 // 4, dtype=torch.int32, device=self.dev)
        self._gen = torch.Generator(device=self.dev).manual_seed(0)

    @property
    def capability(self) -> tuple[int, int]:
        return (self.props.major, self.props.minor)

    def dtypes(self) -> list[str]:
        have = ["fp16", "fp32"]
        if self.capability >= (8, 0):
            have[:0] = ["bf16"]
            have.append("tf32")  # tensor-core fp32 inputs on Ampere and later
        if self.capability >= (8, 9) and hasattr(self.torch, "_scaled_mm"):
            have.append("fp8")
        return have

    def default_dtypes(self) -> list[str]:
        return [d for d in ("bf16", "fp8") if d in self.dtypes()] or ["fp16"]

    def metadata(self) -> dict[str, str]:
        torch = self.torch
        meta = {"device_name": self.name, "device": "cuda",
                "compute_capability": f"{self.props.major}.{self.props.minor}",
                "sm_count": str(self.props.multi_processor_count),
                "memory_bytes": str(self.props.total_memory),
                "torch": torch.__version__, "cuda_runtime": str(torch.version.cuda),
                "cudnn": str(torch.backends.cudnn.version()),
                "l2_flush_bytes": str(self._flush.numel() * 4),
                "python": platform.python_version(), "date": _now()}
        meta.update(_nvidia_smi())
        return meta

    def skip_reason(self, m: int, k: int, n: int, dtype: str) -> str | None:
        if dtype == "fp8" and any(d % FP8_MULTIPLE for d in (m, k, n)):
            return f"fp8 needs dimensions that are multiples of {FP8_MULTIPLE}"
        return None

    def _operands(self, m: int, k: int, n: int, dtype: str) -> Callable[[], Any]:
        torch = self.torch
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        if dtype == "fp8":
            a = torch.randn(m, k, device=self.dev, generator=self._gen).to(torch.float8_e4m3fn)
            # _scaled_mm wants its second operand column-major: the transpose of a row-major
            b = torch.randn(n, k, device=self.dev, generator=self._gen).to(
                torch.float8_e4m3fn).t()
            one = torch.tensor(1.0, device=self.dev)
            return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                            out_dtype=torch.bfloat16)
        tdtype = getattr(torch, _TORCH_DTYPES[dtype])
        a = torch.randn(m, k, device=self.dev, dtype=tdtype, generator=self._gen)
        b = torch.randn(k, n, device=self.dev, dtype=tdtype, generator=self._gen)
        c = torch.empty(m, n, device=self.dev, dtype=tdtype)
        return lambda: torch.matmul(a, b, out=c)

    def _time_device(self, call: Callable[[], Any], repeats: int) -> Timing:
        torch = self.torch
        for _ in range(WARMUP):
            call()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(repeats)]
        torch.cuda.synchronize()
        for start, end in events:
            self._flush.zero_()  # evict the operands from L2: a cold cache every repeat
            start.record()
            call()
            end.record()
        torch.cuda.synchronize()
        return Timing.of([s.elapsed_time(e) * 1e-3 for s, e in events])  # ms -> s

    def time_matmul(self, m: int, k: int, n: int, dtype: str, repeats: int) -> Timing:
        return self._time_device(self._operands(m, k, n, dtype), repeats)

    def time_copy(self, nbytes: int, repeats: int) -> Timing:
        src = self.torch.ones(max(nbytes // 4, 1), dtype=self.torch.float32, device=self.dev)
        dst = self.torch.empty_like(src)
        return self._time_device(lambda: dst.copy_(src), repeats)

    def memory_bytes(self) -> float:
        return float(self.props.total_memory)

    def sm_count(self) -> int:
        return int(self.props.multi_processor_count)


def _nvidia_smi() -> dict[str, str]:
    """Driver version and clocks where nvidia-smi can tell them (empty otherwise)."""
    fields = ("driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "power.limit")
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}",
                              "--format=csv,noheader", "--id=0"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.split(",")]
    if len(values) != len(fields):
        return {}
    return {f.replace(".", "_"): v for f, v in zip(fields, values, strict=True)}


def backend(device: str) -> Backend:
    """The backend for a --device name, or a one-line error."""
    d = device.strip().lower()
    if d == "cpu":
        return CpuBackend()
    if d in ("cuda", "gpu"):
        return CudaBackend()
    raise InputError(f"unknown device {device!r}; choose one of: {', '.join(DEVICES)}")
