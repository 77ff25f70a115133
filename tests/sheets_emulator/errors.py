"""How the emulator answers when something goes wrong: Google-shaped JSON error bodies, the
400 a handler raises (Invalid), an HTTP reply raised from anywhere (HTTPReply), and the
faults a test injects (Fault)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .constants import PROJECT_NUMBER


class Invalid(Exception):
    """A request Google would reject with 400 INVALID_ARGUMENT."""


@dataclass
class Fault:
    """An injected response: a status (with headers/body), "drop", "drop_after" or "timeout"."""

    kind: str  # "status" | "drop" | "drop_after" | "timeout"
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


DEFAULT_ERROR_BODIES = {
    400: ("Invalid request.", "INVALID_ARGUMENT"),
    401: (
        "Request is missing required authentication credential. Expected OAuth 2 access "
        "token, login cookie or other valid authentication credential.",
        "UNAUTHENTICATED",
    ),
    403: ("The caller does not have permission", "PERMISSION_DENIED"),
    404: ("Requested entity was not found.", "NOT_FOUND"),
    429: (
        "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per "
        "minute per user' of service 'sheets.googleapis.com' for consumer "
        f"'project_number:{PROJECT_NUMBER}'.",
        "RESOURCE_EXHAUSTED",
    ),
    500: ("Internal error encountered.", "INTERNAL"),
    502: ("Bad Gateway", "UNAVAILABLE"),
    503: ("The service is currently unavailable.", "UNAVAILABLE"),
    504: ("Deadline exceeded.", "DEADLINE_EXCEEDED"),
}


def google_error(code: int, message: str | None = None, status: str | None = None,
                 details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Google's JSON error body ``{"error": {"code", "message", "status"[, "details"]}}``."""
    dmsg, dstatus = DEFAULT_ERROR_BODIES.get(code, ("Error.", "UNKNOWN"))
    err: dict[str, Any] = {"code": code, "message": message or dmsg, "status": status or dstatus}
    if details:
        err["details"] = details
    if code == 429 and not details:
        err["details"] = [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
            "metadata": {"service": "sheets.googleapis.com",
                         "consumer": f"projects/{PROJECT_NUMBER}"},
        }]
    return {"error": err}


class HTTPReply(Exception):
    """Raised inside handlers to answer with a status and a JSON body."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
