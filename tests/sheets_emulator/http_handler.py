"""The HTTP layer: parse each request, log it, apply an injected fault, dispatch it to the
emulator and send its JSON reply (or drop the connection, for a fault)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from .errors import HTTPReply, google_error
from .state import LoggedRequest

if TYPE_CHECKING:
    from .server import SheetsEmulator


class RequestHandler(BaseHTTPRequestHandler):
    """Requests on one connection, answered by ``emulator`` (set by SheetsEmulator.start)."""

    emulator: SheetsEmulator
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # keep-alive + Nagle/delayed ACK costs ~40 ms a request

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        emu = self.emulator
        split = urlsplit(self.path)
        raw_path = split.path
        query = parse_qs(split.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        entry = LoggedRequest(method, unquote(raw_path), query, None)
        ctype = self.headers.get("Content-Type", "")
        if raw_path == "/token":
            form = parse_qs(raw.decode("utf-8", "replace"))
            entry.body = {"grant_type": form.get("grant_type", [""])[0]}  # never the assertion
        elif raw:
            try:
                entry.body = json.loads(raw) if "json" in ctype or raw[:1] in b"{[" else raw
            except ValueError:
                entry.body = raw
        with emu._lock:
            emu.requests.append(entry)

        fault = emu._take_fault(method, unquote(raw_path))
        if fault is not None:
            entry.fault = fault.kind
            if fault.kind in ("drop", "timeout"):
                if fault.kind == "timeout":
                    time.sleep(emu.timeout_fault_seconds)
                self._drop()
                return
            if fault.kind == "status":
                entry.status = fault.status
                body = fault.body if fault.body is not None else google_error(fault.status)
                self._send(fault.status, body, fault.headers)
                return

        try:
            if raw_path == "/token" and method == "POST":
                status, body = emu.handle_token(parse_qs(raw.decode("utf-8", "replace")))
                headers: dict[str, str] = {}
            else:
                if raw and isinstance(entry.body, bytes):
                    raise HTTPReply(400, google_error(400, "Invalid JSON payload received."))
                status, body = emu.route(method, raw_path, query, entry.body, self.headers,
                                         raw)
                headers = {}
        except HTTPReply as reply:
            status, body, headers = reply.status, reply.body, reply.headers
        entry.status = status
        if fault is not None and fault.kind == "drop_after":
            self._drop()
            return
        self._send(status, body, headers)

    def _send(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        self.send_response(status, phrase)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
