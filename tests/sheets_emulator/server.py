"""SheetsEmulator: the Sheets API v4 and OAuth token endpoint served on 127.0.0.1, with the
test-facing API (make spreadsheets, share, inject faults, count requests, read cells)."""

from __future__ import annotations

import copy
import re
import secrets
import threading
from collections.abc import Mapping, Sequence
from http.server import ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import unquote

import sheets_discovery

from sheetgen.writers.google.client import RetryingHTTPClient

from .a1 import a1, parse_a1
from .auth import AuthMixin
from .batch_update import BatchUpdateMixin
from .client import make_http_client_class
from .compute import engine_compute
from .constants import PROJECT_ID, PROJECT_NUMBER, SA_EMAIL
from .errors import Fault, HTTPReply, google_error
from .http_handler import RequestHandler
from .masks import filter_fields, jcopy
from .state import (
    CellKey,
    ComputeHook,
    LoggedRequest,
    Sheet,
    Snapshot,
    StoredSpreadsheet,
    gridrange_a1,
)
from .values import typed_value
from .values_api import ValuesMixin


class SheetsEmulator(AuthMixin, BatchUpdateMixin, ValuesMixin):
    """In-process Sheets API v4 + OAuth token endpoint on 127.0.0.1 (see module docstring).

    Attributes tests use: ``base_url``, ``token_url``, ``requests`` (the log), ``api_enabled``,
    ``compute`` (the formula hook), ``timeout_fault_seconds``, ``formula_render_quotes_text``.

    ``compute`` defaults to `engine_compute`, so a formula cell reads back calculated, as at
    Google; a test may swap in its own hook (e.g. to make Google disagree on one cell). With
    ``compute=None`` a request for a formula's value fails loudly (HTTP 501): Google never
    answers a formula cell with nothing, and neither may the emulator.
    """

    def __init__(self, compute: ComputeHook | None = engine_compute) -> None:
        self.spreadsheets: dict[str, StoredSpreadsheet] = {}
        self.requests: list[LoggedRequest] = []
        self.compute: ComputeHook | None = compute
        self.api_enabled = True
        self.project_number = PROJECT_NUMBER
        self.timeout_fault_seconds = 5.0
        #: False (default, like Google as far as we can tell): FORMULA render returns a text
        #: cell's text as is, so text "=x" and formula =x look the same there; only
        #: spreadsheets.get (includeGridData) tells stringValue from formulaValue. True: such
        #: text comes back with a leading apostrophe (its user-entered form).
        self.formula_render_quotes_text = False
        #: Every request body is validated against Google's discovery document
        #: (tests/sheets_discovery.py) before it is applied: how many were, and what failed.
        self.validated_bodies = 0
        self.schema_errors: list[str] = []
        self._faults: list[tuple[re.Pattern[str], str | None, list[Fault]]] = []
        self._accounts: dict[str, Any] = {}  # email -> RSA public key
        self._tokens: dict[str, tuple[str, set[str], float]] = {}  # token -> (email, scopes, exp)
        self._lock = threading.RLock()
        #: per (spreadsheet, revision, hook): a hook swapped in later is never served stale
        self._compute_cache: dict[tuple[str, int, ComputeHook], Mapping[CellKey, Any]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> SheetsEmulator:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        emu = self

        class Handler(RequestHandler):
            emulator = emu

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="sheets-emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; in-flight "timeout" faults are abandoned (daemon threads)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SheetsEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "emulator not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def token_url(self) -> str:
        return self.base_url + "/token"

    # ------------------------------------------------------------------ test-facing API
    def register_service_account(self, email: str, public_key: Any) -> None:
        """Trust JWT grants from ``email`` signed by the private half of ``public_key``."""
        with self._lock:
            self._accounts[email.lower()] = public_key

    def service_account_info(self, private_key_pem: str, email: str = SA_EMAIL,
                             project_id: str = PROJECT_ID) -> dict[str, Any]:
        """A service-account key dict whose token_uri points at this emulator."""
        return {
            "type": "service_account",
            "project_id": project_id,
            "private_key_id": secrets.token_hex(20),
            "private_key": private_key_pem,
            "client_email": email,
            "client_id": "100000000000000000000",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_url,
            "universe_domain": "googleapis.com",
        }

    def create_spreadsheet(
        self,
        key: str,
        sheets: Sequence[str | Mapping[str, Any]] = ("Sheet1",),
        shared_with: Sequence[str] | Mapping[str, str] = (),
        title: str = "Untitled spreadsheet",
    ) -> StoredSpreadsheet:
        """Make a spreadsheet as a user would, shared (Editor) with ``shared_with`` emails.

        ``sheets`` items are titles or sheet property dicts (``{"title":..,
        "gridProperties": {"rowCount":..}}``); sheet ids are 0, 1, 2, ...
        """
        props = []
        for i, s in enumerate(sheets):
            p = {"title": s} if isinstance(s, str) else copy.deepcopy(dict(s))
            p.setdefault("sheetId", i)
            p.setdefault("index", i)
            p.setdefault("sheetType", "GRID")
            grid = p.setdefault("gridProperties", {})
            grid.setdefault("rowCount", 1000)
            grid.setdefault("columnCount", 26)
            props.append(p)
        share = (dict(shared_with) if isinstance(shared_with, Mapping)
                 else dict.fromkeys(shared_with, "writer"))
        ss = StoredSpreadsheet(
            id=key,
            properties={"title": title, "locale": "en_US", "autoRecalc": "ON_CHANGE",
                        "timeZone": "Etc/GMT"},
            sheets=[Sheet(p) for p in props],
            shared_with={k.lower(): v for k, v in share.items()},
        )
        with self._lock:
            self.spreadsheets[key] = ss
        return ss

    def share(self, key: str, email: str, role: str = "writer") -> None:
        """Share an existing spreadsheet with ``email`` (role "writer" or "reader")."""
        with self._lock:
            self.spreadsheets[key].shared_with[email.lower()] = role

    def inject(self, path_regex: str, responses: Sequence[int | str | Mapping[str, Any]],
               method: str | None = None) -> None:
        """Queue faults for requests whose path matches ``path_regex`` (``re.search``).

        Items: a status code (Google-shaped body), ``{"status": 429, "headers": {...},
        "body": {...}}``, ``"drop"`` (close without answering), ``"drop_after"`` (apply, then
        close: a lost response), ``"timeout"`` (answer nothing for timeout_fault_seconds).
        Consumed in order, one per matching request, before the request is applied.
        """
        faults = []
        for r in responses:
            if isinstance(r, int):
                faults.append(Fault("status", r))
            elif isinstance(r, str):
                if r not in ("drop", "drop_after", "timeout"):
                    raise ValueError(f"unknown fault {r!r}")
                faults.append(Fault(r))
            else:
                faults.append(Fault("status", int(r["status"]), dict(r.get("headers", {})),
                                    r.get("body")))
        with self._lock:
            self._faults.append((re.compile(path_regex), method and method.upper(), faults))

    def revoke_tokens(self) -> None:
        """Expire every issued access token (clients must refresh on the 401)."""
        with self._lock:
            self._tokens.clear()

    def count(self, method: str | None = None, path_regex: str = "", status: int | None = None
              ) -> int:
        """How many logged requests match (e.g. ``count("POST", r":batchUpdate$")``)."""
        rx = re.compile(path_regex)
        return sum(
            1 for r in list(self.requests)
            if (method is None or r.method == method.upper()) and rx.search(r.path)
            and (status is None or r.status == status)
        )

    def snapshot(self, key: str) -> Snapshot:
        """The compute hook's view of a spreadsheet."""
        with self._lock:
            ss = self.spreadsheets[key]
            return self._snapshot(ss)

    def cell(self, key: str, sheet: str, ref: str) -> dict[str, Any] | None:
        """Stored CellData at ``sheet!ref`` (typed userEnteredValue, format, validation)."""
        rng = parse_a1(ref)
        with self._lock:
            c = self.spreadsheets[key].sheet(title=sheet).cells.get((rng.r0 or 0, rng.c0 or 0))
            return copy.deepcopy(c)

    def http_client_class(self, **policy: Any) -> type[RetryingHTTPClient]:
        """RetryingHTTPClient (with ``policy`` changes) routed to this emulator."""
        base = RetryingHTTPClient.with_policy(**policy) if policy else RetryingHTTPClient
        return make_http_client_class(self.base_url, base)

    # ------------------------------------------------------------------ internals
    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for rx, m, faults in self._faults:
                if faults and (m is None or m == method) and rx.search(path):
                    return faults.pop(0)
        return None

    def _snapshot(self, ss: StoredSpreadsheet) -> Snapshot:
        sheets = {
            s.title: {a1(r, c): jcopy(cd["userEnteredValue"])
                      for (r, c), cd in sorted(s.cells.items()) if "userEnteredValue" in cd}
            for s in ss.sheets
        }
        names = {n["name"]: gridrange_a1(ss, n["range"]) for n in ss.named_ranges}
        grids = {s.title: (s.rows, s.cols) for s in ss.sheets}
        return Snapshot(ss.id, sheets, names, grids)

    def _computed(self, ss: StoredSpreadsheet) -> Mapping[CellKey, Any]:
        """Every formula cell's calculated value (cached per revision and hook). Called only when a
        formula cell's value is asked for, so a hook-less emulator still serves formulas,
        text and numbers."""
        if self.compute is None:
            raise HTTPReply(501, google_error(
                501, "emulator: a formula cell's calculated value was asked for, but the "
                "emulator has no compute hook (compute=None); Google always calculates"))
        k = (ss.id, ss.revision, self.compute)
        if k not in self._compute_cache:
            self._compute_cache[k] = dict(self.compute(self._snapshot(ss)))
        return self._compute_cache[k]

    def route(self, method: str, raw_path: str, query: dict[str, list[str]], body: Any,
              headers: Mapping[str, str], raw: bytes | None = None) -> tuple[int, Any]:
        """Dispatch one API request (after faults and logging set-up); `raw`: the JSON text
        `body` was parsed from."""
        m = re.fullmatch(r"/v4/spreadsheets/([^/:]+)(.*)", raw_path)
        if not m:
            raise HTTPReply(404, google_error(404, f"Method not found: {raw_path}"))
        key, rest = unquote(m.group(1)), m.group(2)
        write = method in ("POST", "PUT")
        email, scopes = self.authenticate(headers.get("Authorization"))
        if not self.api_enabled:
            raise HTTPReply(403, self.disabled_error())
        with self._lock:
            ss = self.access(key, email, scopes, write)
            self._validate(method, rest, query, body, raw)
            if method == "GET" and rest == "":
                return 200, self.get_spreadsheet(ss, query)
            if method == "POST" and rest == ":batchUpdate":
                return 200, self.batch_update(ss, body)
            if method == "GET" and rest == "/values:batchGet":
                return 200, self.values_batch_get(ss, query)
            if method == "POST" and rest == "/values:batchUpdate":
                return 200, self.values_batch_update(ss, body)
            if method == "POST" and rest == "/values:batchClear":
                return 200, self.values_clear(ss, (body or {}).get("ranges", []))
            vm = re.fullmatch(r"/values/([^:/]+)(:clear)?", rest)
            if vm:
                rng = unquote(vm.group(1))
                if method == "GET" and not vm.group(2):
                    return 200, self.values_get(ss, rng, query)
                if method == "PUT" and not vm.group(2):
                    opt = query.get("valueInputOption", [""])[0]
                    return 200, self.values_update(ss, rng, body or {}, opt)
                if method == "POST" and vm.group(2):
                    return 200, self.values_clear(ss, [rng])
        raise HTTPReply(404, google_error(404, f"Method not found: {method} {raw_path}"))

    #: request body schema per (method, path after the key), from the discovery document
    BODY_SCHEMAS: ClassVar[dict[tuple[str, str], str]] = {
        ("POST", ":batchUpdate"): "BatchUpdateSpreadsheetRequest",
        ("POST", "/values:batchUpdate"): "BatchUpdateValuesRequest",
        ("POST", "/values:batchClear"): "BatchClearValuesRequest",
        ("PUT", "/values"): "ValueRange",
    }

    def _validate(self, method: str, rest: str, query: Mapping[str, list[str]], body: Any,
                  raw: bytes | None = None) -> None:
        """400 for a body (or a `fields` mask) that Google's published schema refuses."""
        errors: list[str] = []
        if method == "GET" and rest == "":  # spreadsheets.get: a partial Spreadsheet
            for mask in query.get("fields", []):
                errors += sheets_discovery.validate_query_fields(mask, "Spreadsheet")
        path = "/values" if re.fullmatch(r"/values/[^:/]+", rest) else rest
        schema = self.BODY_SCHEMAS.get((method, path))
        if schema is not None and body is not None:
            self.validated_bodies += 1
            errors += sheets_discovery.validate_once(body, schema, raw)
        if errors:
            self.schema_errors += errors
            raise HTTPReply(400, google_error(400, errors[0]))

    # spreadsheets.get ------------------------------------------------------
    def get_spreadsheet(self, ss: StoredSpreadsheet, query: Mapping[str, list[str]]
                        ) -> dict[str, Any]:
        grid = query.get("includeGridData", ["false"])[0].lower() == "true"
        sheets = []
        for s in ss.sheets:
            out: dict[str, Any] = {"properties": copy.deepcopy(s.properties)}
            if s.merges:
                out["merges"] = copy.deepcopy(s.merges)
            if s.conditional_formats:
                out["conditionalFormats"] = copy.deepcopy(s.conditional_formats)
            if s.protected_ranges:
                out["protectedRanges"] = copy.deepcopy(s.protected_ranges)
            if s.charts:
                out["charts"] = copy.deepcopy(s.charts)
            if grid:
                out["data"] = [self._grid_data(ss, s)]
            sheets.append(out)
        doc: dict[str, Any] = {
            "spreadsheetId": ss.id,
            "properties": copy.deepcopy(ss.properties),
            "sheets": sheets,
            "spreadsheetUrl": f"https://docs.google.com/spreadsheets/d/{ss.id}/edit",
        }
        if ss.named_ranges:
            doc["namedRanges"] = copy.deepcopy(ss.named_ranges)
        if "fields" in query:
            doc = filter_fields(doc, query["fields"][0])
        return doc

    def _grid_data(self, ss: StoredSpreadsheet, s: Sheet) -> dict[str, Any]:
        nrows = max((r for r, _ in s.cells), default=-1) + 1
        ncols = max((c for _, c in s.cells), default=-1) + 1
        rows = []
        for r in range(nrows):
            values = []
            for c in range(ncols):
                cd = jcopy(s.cells.get((r, c), {}))
                uev = cd.get("userEnteredValue")
                if uev is not None:
                    if "formulaValue" in uev:
                        v = self._computed(ss).get((s.title, a1(r, c)))
                        if v is not None:
                            cd["effectiveValue"] = typed_value(v)
                    else:
                        cd["effectiveValue"] = jcopy(uev)
                values.append(cd)
            while values and not values[-1]:
                values.pop()
            rows.append({"values": values} if values else {})
        data: dict[str, Any] = {"rowData": rows}
        if s.row_meta:
            data["rowMetadata"] = [s.row_meta.get(i, {}) for i in range(max(s.row_meta) + 1)]
        if s.col_meta:
            data["columnMetadata"] = [s.col_meta.get(i, {}) for i in range(max(s.col_meta) + 1)]
        return data
