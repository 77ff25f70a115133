"""`sheetgen models`: the bundled transformer configs and where their numbers come from."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import click

from sheetgen.cli.common import UserError, cli, user_errors
from sheetgen.core import defaults


@cli.command(short_help="List the bundled model configs (for --model).")
@click.option("--sources", is_flag=True, help="Also give each config's source in full.")
def models(sources: bool) -> None:
    """List the bundled model configs (for --model), one line each, with their source.

    \b
    Example:
      sheetgen models
      sheetgen build llama.xlsx --model llama-3.1-70b --gpu "H100 SXM" --tp 4
    """
    from sheetgen.inputs.model_config import bundled, load_bundled
    from sheetgen.model.transformer import kv_per_token, parameters

    with user_errors():
        rows = []
        for name, raw in bundled().items():
            cfg = load_bundled(name)
            kind = (f"MoE {cfg.experts}x top-{cfg.top_k}" if cfg.moe
                    else "gated MLP" if cfg.gated else "plain MLP")
            rows.append((name, f"{parameters(cfg) / 1e9:.2f}B",
                         f"{cfg.layers}L h{cfg.hidden} {cfg.heads}/{cfg.kv_heads} heads",
                         kind, f"KV {kv_per_token(cfg, 2) / 1024:.0f} KiB/token bf16",
                         raw["_source"]))
    width = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:5], width, strict=True))
                   + f"  {r[5]['repo']}")
        if sources:
            click.echo(f"    config: {r[5]['file']} ({r[5]['revision']})")
            click.echo(f"    checked: {r[5]['checked']}")
    click.echo("Parameters counted from the config; --model-config PATH reads your own "
               "config.json (nothing is downloaded).")


#: --model and the workload options, as the API's keyword names
_OPTIONS = [
    click.option("--model", "xf_model", metavar="NAME",
                 help="Add the Transformer sheet for a bundled model (`sheetgen models`)."),
    click.option("--model-config", "xf_model_config", metavar="PATH",
                 type=click.Path(dir_okay=False),
                 help="... or for a Hugging Face config.json read from PATH (never fetched)."),
    click.option("--batch", "xf_batch", type=int, help="Sequences served together [1]."),
    click.option("--prompt-tokens", "xf_prompt_tokens", type=int,
                 help="Prompt tokens per sequence [512]."),
    click.option("--generate", "xf_generate", type=int,
                 help="Generated tokens per sequence [128]."),
    click.option("--tp", "xf_tp", type=int, help="Tensor-parallel GPUs for the model [1]."),
    click.option("--kv-dtype", "xf_kv_dtype", help="KV-cache dtype [--dtype]."),
    click.option("--embedding-dtype", "xf_embedding_dtype",
                 help="Embedding table and lm_head [the weight dtype]."),
    click.option("--reserve", "xf_reserve", type=float,
                 help="Share of GPU memory left unused (context, NCCL, workspaces) [0.10]."),
    click.option("--allreduce", "xf_allreduce",
                 type=click.Choice(defaults.ALLREDUCES),
                 help="TP all-reduce algorithm [auto: the fastest per phase]."),
    click.option("--attention-dtype", "xf_attention_dtype",
                 help="dtype attention runs in, realistic estimate [auto: --dtype, fp16 under "
                      "fp8/int8]."),
    click.option("--attention-eff", "xf_attention_eff", type=float,
                 help="Flash attention's share of that dtype's peak [0.35: FlashAttention-2 "
                      "on H100]."),
    click.option("--prefill-chunk", "xf_prefill_chunk", type=int,
                 help="Chunked prefill: prompt tokens per step [0: the whole prompt]."),
    click.option("--layer-kernels", "xf_layer_kernels", type=int,
                 help="Kernels per layer, each paying the launch floor [9: a fused build "
                      "(vLLM); 15: an unfused TensorRT-LLM v0.5 llama build]."),
    click.option("--attention-quantize", "xf_attention_quantize",
                 type=click.Choice(["yes", "no"]),
                 callback=lambda _ctx, _param, v: None if v is None else v == "yes",
                 help="fp8: the attention output is quantized by a kernel of its own (one more "
                      "kernel per layer; TensorRT-LLM v0.5's FP8 engines) [no]."),
]
_KEYS = ("model", "model_config", "batch", "prompt_tokens", "generate", "tp", "weight_dtype",
         "activation_dtype", "output_dtype", "kv_dtype", "embedding_dtype", "reserve",
         "allreduce", "attention_dtype", "attention_eff", "prefill_chunk",
         "layer_kernels", "attention_quantize")


#: Workbook-wide options (sheetgen.cli.common's --activation-dtype, --weight-dtype,
#: --output-dtype, every sheet's operand storage) the Transformer sheet reads too; "auto"
#: leaves the sheet's own default.
_SHARED = ("weight_dtype", "activation_dtype", "output_dtype")


def _pull(kw: dict[str, Any]) -> dict[str, Any]:
    got = {k: kw.pop("xf_" + k) if k not in _SHARED else None for k in _KEYS}
    if got["model"] and got["model_config"]:
        raise UserError("give --model or --model-config, not both")
    if not (got["model"] or got["model_config"]):
        extra = [k for k in _KEYS if got[k] is not None]
        if extra:
            raise UserError(f"--{extra[0].replace('_', '-')} needs --model or --model-config")
        return {}
    for k in _SHARED:
        got[k] = None if kw.get(k) in (None, "auto") else kw[k]
    return got


def _inputs(got: dict[str, Any]) -> Any:
    from sheetgen.inputs.model_config import load_bundled, read_config
    from sheetgen.sheets.transformer import TransformerInputs

    model = load_bundled(got["model"]) if got["model"] else read_config(got["model_config"])
    workload = {k: v for k, v in got.items() if k not in ("model", "model_config", *_SHARED)
                and v is not None}  # the shared options reach every sheet by themselves
    return TransformerInputs(model, **workload)


def transformer_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--model/--model-config and the workload options: they arrive at `command` as one
    `transformer` keyword (a TransformerInputs, or nothing without a model)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kw: Any) -> Any:
        got = _pull(kw)
        if got:
            with user_errors():
                kw["transformer"] = _inputs(got)
        return command(*args, **kw)

    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def api_options(got: dict[str, Any]) -> dict[str, Any]:
    """The workload options as sheetgen.transformer takes them."""
    return {k: v for k, v in got.items() if k not in ("model", "model_config")
            and v is not None}


def transformer_view(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`show`/`plot` with --model: the transformer's op rows instead of the Matmul table."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(*args: Any, **kw: Any) -> Any:
            got = _pull(kw)
            if not got:
                return command(*args, **kw)
            from sheetgen.api import transformer

            config = got["model"] or got["model_config"]
            opts = {k: v for k, v in kw.items() if k in ("compute_eff", "memory_eff",
                                                          "link_eff", "launch_overhead")}
            with user_errors():
                frame = transformer(config, gpu=kw.get("gpu"), gpu_file=kw.get("gpu_file"),
                                    dtype=kw.get("dtype", "bf16"), **api_options(got), **opts)
                if kind == "plot":
                    from sheetgen.writers.plot import check_plot_path, plot_roofline

                    out = kw["out"]
                    check_plot_path(out, kw.get("force", False))
                    points = frame[frame["flops"] > 0]  # memory-only rows have no intensity
                    points.attrs = frame.attrs
                    plot_roofline(points, path=out, force=kw.get("force", False))
                    click.echo(f"wrote {out}")
                    return None
            if kw.get("as_json"):
                click.echo(json.dumps(transformer_json(frame), indent=2))
            else:
                for line in transformer_lines(frame):
                    click.echo(line)
            return None

        for option in reversed(_OPTIONS):
            wrapper = option(wrapper)
        return wrapper

    return decorate


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def transformer_json(frame: Any) -> dict[str, Any]:
    rows = [{k: _plain(v) for k, v in r.items()} for r in frame.to_dict("records")]
    for r in rows:
        for k, v in r.items():
            if isinstance(v, float) and v != v:
                r[k] = None
    return {"model": frame.attrs["model"], "gpu": {k: _plain(v) for k, v in
                                                   frame.attrs["gpu"].items()},
            "summary": {k: _plain(v) for k, v in frame.attrs["summary"].items()},
            "assumptions": frame.attrs["assumptions"], "rows": rows}


def transformer_lines(frame: Any) -> list[str]:
    """`show --model`: the op rows per phase, then the totals."""
    from sheetgen.core.units import seconds, si

    g, s = frame.attrs["gpu"], frame.attrs["summary"]
    lines = [click.style(f"{frame.attrs['model']} on {g['gpu']}, {g['dtype']}", bold=True)]
    head = f"{'phase':<8} {'operation':<52} {'m':>8} {'k':>8} {'n':>8} {'FLOP/B':>8} " \
           f"{'regime':<14} {'bound':>9} {'realistic':>9}"
    lines.append(head)
    for r in frame.to_dict("records"):
        dims = ["-" if v != v else f"{v:.4g}" for v in (r["m"], r["k"], r["n"])]
        lines.append(f"{r['phase']:<8} {r['op']:<52} {dims[0]:>8} {dims[1]:>8} {dims[2]:>8} "
                     f"{r['intensity']:>8.3g} {r['regime']:<14} {seconds(r['time']):>9} "
                     f"{seconds(r['realistic_time']):>9}")
    lines.append(
        f"TTFT {seconds(s['ttft'])} (bound {seconds(s['ttft_bound'])}); TPOT "
        f"{seconds(s['tpot'])} (bound {seconds(s['tpot_bound'])}); "
        f"{s['tokens_per_s']:.4g} tokens/s; weights {si(s['weights_bytes'], 'B')}/GPU, KV "
        f"{si(s['kv_bytes_per_token'], 'B')}/token; memory {si(s['memory_per_gpu'], 'B')}/GPU, "
        f"{'fits' if s['fits'] else 'does not fit'}; max batch {s['max_batch']:.0f}; critical "
        f"batch {s['critical_batch']:.4g}")
    lines += [f"assumed: {a}" for a in frame.attrs["assumptions"]]
    return lines
