"""`python -m sheetgen.measure OUT.csv`: the measure command without click (NumPy and, for
--device cuda, PyTorch are all it needs). Same options as `sheetgen measure`."""

from __future__ import annotations

import argparse
import sys

from sheetgen.errors import SheetgenError
from sheetgen.measure import run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sheetgen.measure",
                                description="Time matmuls on this device and write a CSV "
                                            "that `sheetgen calibrate` reads.")
    p.add_argument("out", help="the CSV to write (m,k,n,dtype,device,time_s,...)")
    p.add_argument("--device", default="cpu", help="cpu (NumPy) or cuda (PyTorch)")
    p.add_argument("--shapes", help="CSV with m, k, n columns (default: the built-in sweep)")
    p.add_argument("--dtype", help="comma list or 'all' (default: fp32 on CPU, bf16,fp8 on GPU)")
    p.add_argument("--max-seconds", type=float, default=run.DEFAULT_MAX_SECONDS,
                   help="time budget for the whole run")
    p.add_argument("--repeats", type=int, default=run.DEFAULT_REPEATS,
                   help="timed calls per shape (median, min, max)")
    p.add_argument("--preset-out", help="also write the measured device as a preset TOML")
    p.add_argument("--name", help="the preset's name (default: '<device> (measured)')")
    p.add_argument("--force", action="store_true", help="overwrite existing outputs")
    return p


def read_shapes_arg(path: str | None) -> list[tuple[int, int, int]] | None:
    if path is None:
        return None
    from sheetgen.inputs.shapes import read_shapes

    return [(s.m, s.k, s.n) for s in read_shapes(path)]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result = run.run(args.out, device=args.device, shapes=read_shapes_arg(args.shapes),
                         dtype=args.dtype, max_seconds=args.max_seconds, repeats=args.repeats,
                         preset_out=args.preset_out, name=args.name, force=args.force,
                         show_progress=sys.stderr.isatty())
    except SheetgenError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"wrote {args.out}: {result.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
