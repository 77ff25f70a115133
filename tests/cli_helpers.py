"""Assertions shared by the CLI tests: what a user error must look like."""

from __future__ import annotations

from typing import Any


def one_line_error(result: Any, *needles: str) -> str:
    """A click result that failed as a user error: exit 2, one `Error:` line naming each of
    `needles`, no traceback. Returns the line."""
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]
