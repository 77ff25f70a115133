"""What a new user sees first: `sheetgen` alone, `sheetgen --help`, `python -m sheetgen`, and
every option's help saying its default one way, `[default: ...]`."""

from __future__ import annotations

import re

import click
import pytest
from helpers import run, sheetgen_process

from sheetgen.cli import cli
from sheetgen.cli.common import DEFAULT_GPU_NAME
from sheetgen.inputs.presets import builtin_presets


def test_sheetgen_alone_shows_the_help_and_exits_0():
    result = run()
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ") and "Commands:" in result.output
    assert "Error" not in result.output and result.output == run("--help").output


def test_every_command_summary_is_whole():
    """click cuts a summary taken from the docstring at about 45 characters ("..."): each
    command says a short_help of its own that fits on the line."""
    listed = run("--help").output.split("Commands:\n", 1)[1].splitlines()
    assert len(listed) == len(cli.commands) >= 10
    for line in listed:
        name, summary = line.split(None, 1)
        assert summary == cli.commands[name].short_help, name
        assert not summary.endswith("...") and summary.endswith(".") and len(line) <= 80, line


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_default_is_written_one_way(name: str):
    """A default shows as click's `[default: ...]`, never also as "Default: ..." or
    "(default: ...)" in the option's own text."""
    command = cli.commands[name]
    for param in command.params:
        if isinstance(param, click.Option):
            assert not re.search(r"\bdefault\b", param.help or "", re.I), (name, param.name)
    text = run(name, "--help").output
    assert not re.search(r"Default:|\(default", text), text
    if any(isinstance(p, click.Option) and p.show_default for p in command.params):
        assert "[default: " in text


def test_the_gpu_default_in_the_help_is_the_shipped_default():
    assert builtin_presets().default == DEFAULT_GPU_NAME
    assert f"[default: {DEFAULT_GPU_NAME}]" in re.sub(r"\s+", " ", run("build", "--help").output)


def test_python_dash_m_sheetgen_is_the_console_script():
    """A real process: `python -m sheetgen` (sheetgen/__main__.py) starts the same CLI."""
    version = sheetgen_process("--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"sheetgen, version \S+\n", version.stdout)
    bare = sheetgen_process()
    assert bare.returncode == 0 and bare.stdout.startswith("Usage: ") and bare.stderr == ""
    wrong = sheetgen_process("no-such-command")
    assert wrong.returncode == 2 and wrong.stderr.startswith("Error: ")
