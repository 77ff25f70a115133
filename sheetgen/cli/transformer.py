"""`sheetgen models`: the bundled transformer configs and where their numbers come from."""

from __future__ import annotations

import click

from sheetgen.cli.common import cli, user_errors


@cli.command()
@click.option("--sources", is_flag=True, help="Also give each config's source in full.")
def models(sources: bool) -> None:
    """List the bundled model configs (for --model), one line each, with their source.

    \b
    Example:
      sheetgen models
      sheetgen build llama.xlsx --model llama-3.1-70b --gpu "H100 SXM" --tp 4
    """
    from sheetgen.inputs.model_config import bundled, load_bundled
    from sheetgen.transformer_reference import kv_per_token, parameters

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
