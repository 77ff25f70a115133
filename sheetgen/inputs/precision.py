"""Per-operand storage precision: the bytes of A (activations), B (weights) and C (outputs).

The compute dtype (bf16, fp8, ...) picks the tensor-core peak; each operand is *stored* in a
precision of its own, which sets the bytes a matmul moves:

    bytes moved = a·m·k + w·k·n + o·m·n      (a, w, o: bytes per element of A, B and C)

"auto" gives each operand the storage the compute dtype implies (AUTO_STORAGE): the compute
dtype itself, except that fp8 and int8 GEMMs write bf16 outputs, as the libraries that serve
them do, and tf32 reads and writes fp32 (tf32 is a tensor-core mode over fp32 storage).

Sources for the choices:
- fp8 -> bf16 outputs: Transformer Engine's fp8 GEMM takes its output dtype separately
  (`fp8_gemm(..., out_dtype, ...)`, transformer_engine/pytorch/cpp_extensions/gemm.py,
  github.com/NVIDIA/TransformerEngine); te.Linear passes the activation dtype (bf16) there.
  DeepGEMM's kernel is named for it: `gemm_fp8_fp8_bf16_nt` (github.com/deepseek-ai/DeepGEMM).
- int8 -> bf16 outputs: W8A8 serving dequantizes in the GEMM epilogue; vLLM's
  `cutlass_scaled_mm(a, b, scale_a, scale_b, out_dtype)` computes
  `torch.mm(scale_a*a, scale_b*b).to(out_dtype)` with out_dtype bf16 or fp16
  (vllm/_custom_ops.py; csrc/quantization/cutlass_w8a8/, github.com/vllm-project/vllm);
  TensorRT-LLM's SmoothQuant GEMM likewise writes fp16/bf16.
- int32 outputs: raw cuBLASLt int8 GEMMs (CUBLAS_COMPUTE_32I, A and B CUDA_R_8I) write
  CUDA_R_32I (cuBLAS documentation, cublasLtMatmul, "Datatypes Supported",
  https://docs.nvidia.com/cuda/cublas/#cublasltmatmul): choose --output-dtype int32.
- int4 weights (W4A16: GPTQ/AWQ with bf16 activations): 0.5 B per element; their per-group
  scales and zeros (one fp16 pair per 128 weights: 0.03 B) are not counted.
- fp4 (E2M1): 0.5 B per element, block scales not counted. nvfp4: E2M1 elements plus one
  E4M3 scale per 16 elements = (16·4 + 8)/16 = 4.5 bits = 0.5625 B, scales counted (NVIDIA,
  "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025,
  https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/;
  cuBLAS CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3). The one fp32 per-tensor scale is not
  counted. Storage only: sheetgen has no fp4 compute peak yet, so fp4/nvfp4 model weights
  (or activations) stored in fp4 and computed in the chosen compute dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from sheetgen.errors import InputError

#: Bytes per element of each storage precision, in the order the dropdowns list them.
#: Binary fractions (0.5, 0.5625) keep every product exact in floating point.
STORAGE_BYTES: dict[str, float] = {
    "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int32": 4,
    "int4": 0.5, "fp4": 0.5, "nvfp4": 0.5625,
}
STORAGE_DTYPES: tuple[str, ...] = tuple(STORAGE_BYTES)
#: What each storage choice counts, for the GPU Specs sheet and `--help`.
STORAGE_NOTES: dict[str, str] = {
    "fp32": "also tf32's storage",
    "int32": "raw cuBLASLt int8 GEMM output",
    "int4": "group scales not counted",
    "fp4": "E2M1, block scales not counted",
    "nvfp4": "E2M1 + one E4M3 scale per 16 (counted)",
}
#: The choice that follows the compute dtype.
AUTO = "auto"
CHOICES: tuple[str, ...] = (AUTO, *STORAGE_DTYPES)


@dataclass(frozen=True)
class OperandStorage:
    """Storage precision of a matmul's three operands: A (m×k), B (k×n), C (m×n)."""

    activation: str
    weight: str
    output: str

    def bytes(self) -> tuple[float, float, float]:
        """(a, w, o): bytes per element of A, B and C."""
        return (STORAGE_BYTES[self.activation], STORAGE_BYTES[self.weight],
                STORAGE_BYTES[self.output])


#: "auto": the storage each compute dtype implies, as (A, B, C) (sources in the docstring).
AUTO_STORAGE: dict[str, OperandStorage] = {
    "fp32": OperandStorage("fp32", "fp32", "fp32"),
    "tf32": OperandStorage("fp32", "fp32", "fp32"),
    "bf16": OperandStorage("bf16", "bf16", "bf16"),
    "fp16": OperandStorage("fp16", "fp16", "fp16"),
    "fp8": OperandStorage("fp8", "fp8", "bf16"),
    "int8": OperandStorage("int8", "int8", "bf16"),
}
#: The three operands: (BuildConfig field / API keyword, CLI option, what it holds).
OPERANDS: tuple[tuple[str, str, str], ...] = (
    ("activation_dtype", "--activation-dtype", "A, the m×k activations"),
    ("weight_dtype", "--weight-dtype", "B, the k×n weights"),
    ("output_dtype", "--output-dtype", "C, the m×n outputs"),
)


def check_storage(value: str | None, option: str) -> str:
    """A storage choice normalised ("auto" for None), or an error naming the option."""
    if value is None:
        return AUTO
    v = str(value).strip().lower()
    if v not in CHOICES:
        raise InputError(f"{option}: unknown storage dtype {value!r}; choose one of: "
                         f"{', '.join(CHOICES)}")
    return v


def resolve(compute: str, activation: str = AUTO, weight: str = AUTO,
            output: str = AUTO) -> OperandStorage:
    """The storage each operand uses: its own choice, or the compute dtype's for "auto"."""
    auto = AUTO_STORAGE[compute]
    return OperandStorage(auto.activation if activation == AUTO else activation,
                          auto.weight if weight == AUTO else weight,
                          auto.output if output == AUTO else output)

