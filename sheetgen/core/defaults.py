"""Default option values, in a module with no heavy imports.

The CLI shows these in `--help`; keeping them here (rather than in the sheet modules, which
import NumPy) lets `sheetgen --help` start without NumPy or pandas.
"""

from __future__ import annotations

DEFAULT_LAYERS = 72
#: the pipeline's m, k, n: an 8192-wide model with a 4x inner layer and 4096 tokens
DEFAULT_M, DEFAULT_K, DEFAULT_N = 4096, 8192, 32768
DEFAULT_GPUS = 2
DEFAULT_MICRO_BATCHES = "auto"  # PP's best M; a whole number overrides it
DEFAULT_TIE_MARGIN = 0.05  # PP and TP closer than 5 % tie (the roofline's own error)
#: The TP all-reduce algorithms (Parallelism and Transformer sheets, --tp-allreduce and
#: --allreduce): auto, the fastest of ring (NCCL's), one-shot and two-shot (direct peer access)
ALLREDUCES = ("auto", "ring", "one-shot", "two-shot")
DEFAULT_PRACTICE_SEED = 2026
#: What-if base shape: memory-bound on an A100 in bf16, a few doublings from the ridge
DEFAULT_WHATIF_SHAPE = (128, 4096, 4096)
DEFAULT_SPARE_ROWS = 200
#: `sheetgen measure`: the time budget of a sweep and the timed repeats per shape
DEFAULT_MEASURE_SECONDS = 60.0
DEFAULT_MEASURE_REPEATS = 10
#: `sheetgen calibrate --repeat`: a second timing of a shape repeats the first when the two
#: lie within this factor either way. aiconfigurator's twin tables (one collector and
#: framework version on a B200 in an HGX board and in a GB200 rack, a B300 and a GB300) agree
#: to a median ratio of 0.99-1.05, their middle halves within 12 % of 1; beyond 1.5x a timing
#: did not repeat (docs/measuring.md).
REPEAT_FACTOR = 1.5
#: What the refined time says of itself when the GPU preset gives no SM count (no waves).
NO_SMS_NOTE = "waves off: preset has no SM count"
#: What --compute-eff, --memory-eff and --link-eff take for the GPU preset's measured figure
#: (the Inputs sheet's "Suggested (measured)" column) instead of a fraction.
MEASURED = "measured"
