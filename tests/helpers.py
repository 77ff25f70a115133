"""Helpers shared by the test files: run the CLI in process or as a real process, what a user
error must look like, and the reference model's scalars."""

from __future__ import annotations

import atexit
import contextlib
import copyreg
import hashlib
import importlib.util
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import openpyxl
from click.testing import CliRunner, Result
from openpyxl.worksheet.dimensions import DimensionHolder
from openpyxl.worksheet.table import TableList

from sheetgen.api import build_workbook
from sheetgen.assemble import BuildConfig, input_values, sheet_specs
from sheetgen.cli import cli
from sheetgen.inputs.shapes import Shape
from sheetgen.model.reference import ModelResult, Registry, evaluate


def load_script(path: Path) -> ModuleType:
    """A script that is no package module (benchmarks/*.py, docs/render.py), imported from its
    file under its stem's name, so tests can call its functions."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def process_folder(prefix: str) -> Path:
    """A temporary folder that lasts as long as this test process (the files a cached plan
    or build writes once for several tests and a LibreOffice job), removed at its exit."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def preset_toml(name: str, peaks: str, bandwidth: float, *fields: str) -> str:
    """A user's one-GPU preset file (as `--gpu-file` reads it): `peaks` the inline table's
    body ("bf16 = 400e12"), datasheet link and memory figures, then `fields` line by line."""
    return "\n".join((
        "", "[[gpu]]", f'name = "{name}"', f"peak_flops = {{ {peaks} }}",
        f"hbm_bandwidth = {bandwidth:g}", "memory_bytes = 48e9", "link_bandwidth = 100e9",
        "link_latency = 8e-6", "host_bandwidth = 31.5e9", *fields, ""))


def run(*args: str, color: bool = False, cwd: Path | None = None) -> Result:
    """`sheetgen ARGS` in process, in folder `cwd` if given (no interpreter start-up: most
    CLI tests need no real process). The result has exit_code, output, stdout and stderr.
    An unexpected exception propagates with its traceback rather than becoming a non-zero
    exit code a test could mistake for a handled error."""
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        return CliRunner().invoke(cli, list(args), catch_exceptions=False, color=color)


def sheetgen_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                     timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`sheetgen ARGS` as a real process, through `python -m sheetgen` with this interpreter
    (the one whose sheetgen is under test): for what only a process shows (exit status,
    signals, start-up, separate stdout and stderr of a real run)."""
    return subprocess.run([sys.executable, "-m", "sheetgen", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=timeout, check=False)


def one_line_error(result: Result | subprocess.CompletedProcess[str] | str, *needles: str) -> str:
    """A user error as the CLI must report it: exit status 2, exactly one `Error:` line (naming
    each of `needles`), no traceback. `result` is a CliRunner result, a finished process (its
    stderr is read) or the text alone (then the exit status is the caller's to check).
    Returns the line."""
    if isinstance(result, Result):
        assert result.exit_code == 2, result.output
        text = result.output
    elif isinstance(result, subprocess.CompletedProcess):
        assert result.returncode == 2, (result.stdout, result.stderr)
        text = result.stderr
    else:
        text = result
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), text
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


#: the reference model of each set of build options, made once per test process
_MODELS: dict[str, ModelResult] = {}


def model(**options: Any) -> ModelResult:
    """The reference model (SI) for one 1×1×1 shape, no spare rows and the given build
    options: what `sheetgen.plan(...).model` holds, without placing the workbook's cells and
    formulas (a third of the CPU), made once per set of options. Read it, do not change it."""
    key = repr(sorted(options.items()))
    if key not in _MODELS:
        cfg = BuildConfig(shapes=[Shape(1, 1, 1)], spare_rows=0, **options).resolved()
        _MODELS[key] = evaluate(Registry(sheet_specs(cfg.layout())), input_values(cfg))
    return _MODELS[key]


def table_values(plan: Any, table: str) -> dict[str, Any]:
    """A planned table's reference values by column name (in the sheet's own units)."""
    return {c.name: c.values for c in plan.table(table).columns}


def scalars(**options: Any) -> dict[str, Any]:
    """The reference model's single-value quantities (Pipeline, Parallelism, What-if ...) for
    one 1×1×1 shape and the given build options (a copy, the test's own)."""
    return dict(model(**options).scalars)


_BUILT: dict[str, tuple[Path, int]] = {}


def built_workbook(out: str | Path, **options: Any) -> tuple[Path, int]:
    """`sheetgen.api.build_workbook(out, **options)` for tests that only read the workbook:
    each set of options is built once per test process and then copied, since a dozen test
    files read the same default workbook and a build takes seconds."""
    out = Path(out)
    key = repr(sorted(options.items()))
    if out.exists() or "progress_factory" in options:  # what build_workbook itself must do
        return build_workbook(out, **options)
    if key not in _BUILT:
        _BUILT[key] = build_workbook(process_folder("sheetgen-built-") / "built.xlsx",
                                     **options)
    source, rows = _BUILT[key]
    shutil.copyfile(source, out)
    return out, rows


#: parsed workbooks by content digest, pickled (about 12 MB each for the default workbook)
_PARSED: dict[bytes, bytes] = {}
#: the most kept at once per test process: the memory stays bounded
_PARSED_MAX = 24


def _dimension_holder(worksheet: Any, reference: str, factory: Any) -> DimensionHolder:
    return DimensionHolder(worksheet, reference, factory)


# Two openpyxl containers that pickle's defaults copy wrongly (load_workbook's copies):
# - DimensionHolder (row and column sizes) is a defaultdict whose constructor takes the
#   worksheet first, so defaultdict's reduction loses its factory;
# - TableList overrides items() to give (name, range) pairs.
# tests/test_openpyxl_compat.py holds a copy, saved, to what a fresh load saves.
copyreg.pickle(DimensionHolder, lambda d: (_dimension_holder,
                                           (d.worksheet, d.reference, d.default_factory),
                                           d.__dict__, None, iter(d.items())))
copyreg.pickle(TableList, lambda tables: (TableList, (), None, None,
                                          iter(dict.items(tables))))


def load_workbook(path: str | Path) -> openpyxl.Workbook:
    """`openpyxl.load_workbook(path)` (formulas, styles and all), parsed once per test process
    for each content and copied after that: a load of the default workbook takes 1.0 s (with
    the session's template translator, openpyxl_fast; 2.2 s without), a copy (pickle) 0.35 s.
    Every call returns a workbook of its own, to read or edit and save. Options such as
    read_only or data_only go to openpyxl itself."""
    data = Path(path).read_bytes()
    key = hashlib.sha256(data).digest()
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = pickle.dumps(openpyxl.load_workbook(path),
                                    protocol=pickle.HIGHEST_PROTOCOL)
    return pickle.loads(_PARSED[key])
