"""Rules that keep the test suite runnable the two ways it is run (plain `pytest FILE` and
`python -m pytest -n auto`) and fast: the tests' helpers import by bare name, and LibreOffice
is reached only through the session's shared run or a marked test."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_test_imports_the_tests_folder_as_a_package():
    """`from tests.helpers import ...` works only with the repository on sys.path (python -m
    pytest), not with plain pytest: the helpers import by bare name (pythonpath = tests)."""
    bad = [f"{p.name}:{i}" for p in sorted(TESTS.glob("*.py"))
           for i, line in enumerate(p.read_text("utf-8").splitlines(), start=1)
           if re.match(r"\s*(from|import) tests(\.|\b)", line)]
    assert bad == []


def test_a_libreoffice_job_is_read_only_by_marked_tests():
    """Every module that registers a LibreOffice job marks the tests that read it."""
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text("utf-8")
        if "@libreoffice_job(" in text:
            assert "@needs_libreoffice" in text or "pytestmark = needs_libreoffice" in text, (
                path.name)


def test_no_test_module_imports_another_modules_private_names():
    """The project's rule for its own modules holds in the tests too: what one test file
    shares with another (a hand model, a reader) is a public name, or lives in a helper."""
    import ast

    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                    node.module.split(".")[0] in {p.stem for p in TESTS.glob("*.py")}):
                bad += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_")]
    assert bad == []
