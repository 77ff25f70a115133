"""Talking to Google Sheets: credentials, spreadsheet keys, bounded retries, error messages.

Nothing here knows about sheet layout. The writer builds batchUpdate bodies; this module gets
an authorised :class:`gspread.Client`, opens the spreadsheet the user shared with us and turns
Google's failures into one-line :class:`~sheetgen.errors.SheetsError` messages that say what to
do. Credentials and tokens are never printed, logged or put into a message.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import gspread
import requests
from gspread.exceptions import APIError, SpreadsheetNotFound

from sheetgen.errors import SheetsError

__all__ = [
    "DEFAULT_TIMEOUT",
    "RETRY_STATUSES",
    "SCOPES",
    "RetryPolicy",
    "RetryingHTTPClient",
    "authorize",
    "describe_api_error",
    "load_service_account_info",
    "open_spreadsheet",
    "parse_spreadsheet_key",
    "service_account_email",
    "set_timeout",
]

#: Only the Sheets scope: sheetgen opens a spreadsheet by key and never lists, creates or
#: shares Drive files, so it asks for nothing from Drive.
SCOPES: tuple[str, ...] = ("https://www.googleapis.com/auth/spreadsheets",)

#: (connect, read) seconds. gspread's default is no timeout at all, so a stalled connection
#: would hang the CLI forever; a large batchUpdate can legitimately take tens of seconds.
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 120.0)

#: HTTP statuses worth retrying: quota (429) and transient server trouble.
RETRY_STATUSES: frozenset[int] = frozenset({429, 500, 502, 503, 504})

_SA_REQUIRED_FIELDS = ("client_email", "private_key", "token_uri")
_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{20,}$")
_URL_KEY_RES = (
    re.compile(r"/spreadsheets/(?:u/\d+/)?d/([A-Za-z0-9_-]+)"),
    re.compile(r"[?&#]key=([A-Za-z0-9_-]+)"),
)
_PUBLISHED_RE = re.compile(r"/spreadsheets/(?:u/\d+/)?d/e/")


# --------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """How hard :class:`RetryingHTTPClient` tries before giving up.

    Both caps apply: at most ``max_attempts`` requests, and no sleep that would end after
    ``max_elapsed`` seconds since the first attempt. ``sleep``/``clock`` are injectable so tests
    run in milliseconds.
    """

    max_attempts: int = 5
    max_elapsed: float = 60.0
    base_delay: float = 1.0
    max_delay: float = 32.0
    jitter: float = 0.5  # fraction of the delay added at random, spreads concurrent clients
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_elapsed)
        backoff = min(self.base_delay * (2 ** (attempt - 1)), self.max_delay)
        return backoff * (1.0 + self.jitter * random.random())


def _retry_after_seconds(response: requests.Response | None) -> float | None:
    """``Retry-After`` in seconds, or None (HTTP-date forms are ignored: Google sends seconds)."""
    if response is None:
        return None
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return float(value.strip())
    except ValueError:
        return None


def _short(text: str, limit: int = 200) -> str:
    """One line, bounded length: messages are shown on a single CLI line."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _api_reason(err: APIError) -> str:
    error = err.error if isinstance(err.error, Mapping) else {}
    status = error.get("status") or ""
    message = _short(error.get("message") or "")
    code = err.response.status_code if err.response is not None else err.code
    return f"HTTP {code} {status}: {message}".replace("  ", " ").rstrip(": ")


class RetryingHTTPClient(gspread.HTTPClient):
    """gspread HTTP client with a bounded retry on 429/5xx, connection errors and timeouts.

    Why not gspread's ``BackOffHTTPClient``: it never gives up and ignores ``Retry-After``.
    Retrying ``spreadsheets.batchUpdate`` is safe when Google answered with an error, because a
    batchUpdate is atomic (all requests apply or none do). When the *response* was lost (dropped
    connection, read timeout) the batch may have applied; a retry then fails cleanly (e.g. a
    duplicate addSheet title is a 400) rather than applying twice.

    Configure with :meth:`with_policy` (a subclass, because gspread instantiates the class
    itself) or by assigning ``policy`` on an instance.
    """

    policy: ClassVar[RetryPolicy] = RetryPolicy()

    def __init__(self, auth: Any, session: requests.Session | None = None) -> None:
        super().__init__(auth, session)
        self.policy = type(self).policy  # instance copy, replaceable per client
        self.timeout = DEFAULT_TIMEOUT
        self.attempts_log: list[str] = []  # reasons of retried failures, newest last

    @classmethod
    def with_policy(cls, **changes: Any) -> type[RetryingHTTPClient]:
        """A subclass whose policy is ``cls.policy`` with ``changes`` applied."""
        policy = replace(cls.policy, **changes)
        return type(f"{cls.__name__}WithPolicy", (cls,), {"policy": policy})

    def request(
        self,
        method: str,
        endpoint: str,
        params: MutableMapping[str, Any] | None = None,
        data: bytes | None = None,
        json: Mapping[str, Any] | None = None,
        files: Any = None,
        headers: MutableMapping[str, str] | None = None,
    ) -> requests.Response:
        policy = self.policy
        start = policy.clock()
        attempt = 0
        while True:
            attempt += 1
            status: int | None = None
            try:
                return super().request(
                    method, endpoint, params=params, data=data, json=json, files=files,
                    headers=headers,
                )
            except APIError as err:
                status = err.response.status_code if err.response is not None else err.code
                if status not in RETRY_STATUSES:
                    raise
                reason = _api_reason(err)
                retry_after = _retry_after_seconds(err.response)
                last: BaseException = err
            except (requests.ConnectionError, requests.Timeout) as err:
                reason = f"{type(err).__name__}: {_short(str(err), 160)}"
                retry_after = None
                last = err
            except Exception as err:
                mapped = _map_auth_exception(err)
                if mapped is None:
                    raise
                raise mapped from None
            self.attempts_log.append(reason)
            elapsed = policy.clock() - start
            wait = policy.delay(attempt, retry_after)
            if attempt >= policy.max_attempts or elapsed + wait > policy.max_elapsed:
                raise _give_up(status, attempt, elapsed, reason) from last
            policy.sleep(wait)


def _give_up(status: int | None, attempts: int, elapsed: float, reason: str) -> SheetsError:
    tries = f"after {attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.0f} s"
    if status == 429:
        return SheetsError(
            f"Google Sheets API quota exceeded {tries}: {reason}. The limit is about 60 write "
            "requests per minute per user; wait a minute and run again."
        )
    if status is None:
        return SheetsError(f"Could not reach the Google Sheets API {tries}: {reason}")
    return SheetsError(f"Google Sheets API kept failing {tries}: {reason}")


def _map_auth_exception(err: Exception) -> SheetsError | None:
    """google-auth failures while fetching a token, as one line without any key material."""
    try:
        from google.auth import exceptions as gae
    except ImportError:  # pragma: no cover - google-auth is a dependency
        return None
    if isinstance(err, gae.RefreshError) and getattr(err, "retryable", False):
        # google-auth marks 5xx/408/429 answers (and "server_error", "internal_failure",
        # "temporarily_unavailable") retryable, after retrying them itself: Google's side.
        return SheetsError(
            "Google's token service failed: it answered the sign-in with a server error, "
            "also when retried. This is on Google's side, not the key file; try again in a "
            "few minutes (status: https://www.google.com/appsstatus)."
        )
    if isinstance(err, gae.RefreshError):
        code = ""
        args = err.args
        if len(args) > 1 and isinstance(args[1], Mapping):
            code = str(args[1].get("error") or "")
            desc = str(args[1].get("error_description") or "")
            code = _short(f"{code}: {desc}" if desc else code, 120)
        detail = f" ({code})" if code else ""
        return SheetsError(
            f"Google rejected the service-account credentials{detail}. Check that the key "
            "file is current (not deleted or rotated in the Cloud console) and try again."
        )
    if isinstance(err, gae.TransportError):
        return SheetsError(
            "Could not reach Google's token endpoint to authenticate: "
            f"{_short(type(err).__name__)}. Check the network connection."
        )
    return None


# --------------------------------------------------------------------------- credentials


#: A service-account JSON key is about 2.3 KB; anything far larger is not one (/dev/zero).
MAX_KEY_FILE_BYTES = 1_000_000


def load_service_account_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a service-account JSON key; every failure is one SheetsError line."""
    p = Path(path).expanduser()
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_KEY_FILE_BYTES + 1)
        if len(raw) > MAX_KEY_FILE_BYTES:
            raise SheetsError(f"Service-account key file {p} is larger than "
                              f"{MAX_KEY_FILE_BYTES // 1000} KB; a key file is about 2 KB")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise SheetsError(f"Service-account key file not found: {p}") from None
    except IsADirectoryError:
        raise SheetsError(f"Service-account key path is a directory, not a file: {p}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SheetsError(
            f"Cannot read service-account key file {p}: {type(err).__name__}"
        ) from None
    try:
        info = json.loads(text)
    except json.JSONDecodeError as err:
        # Position only: the exception text could quote a fragment of the file.
        raise SheetsError(
            f"Service-account key file {p} is not valid JSON (line {err.lineno}, "
            f"column {err.colno}); download a new JSON key from the Cloud console."
        ) from None
    return _check_service_account_info(info, str(p))


def _check_service_account_info(info: Any, where: str) -> dict[str, Any]:
    if not isinstance(info, dict):
        raise SheetsError(f"{where} is not a service-account key (expected a JSON object).")
    kind = info.get("type")
    if kind != "service_account":
        hint = ""
        if kind == "authorized_user":
            hint = (
                " It holds user OAuth credentials; authorise with gspread yourself and pass "
                "the client instead."
            )
        shown = repr(kind) if isinstance(kind, str) else "missing"
        raise SheetsError(
            f"{where} is not a service-account key (type is {shown}, expected "
            f"'service_account').{hint}"
        )
    missing = [f for f in _SA_REQUIRED_FIELDS if not isinstance(info.get(f), str) or not info[f]]
    if missing:
        raise SheetsError(
            f"{where} is not a complete service-account key: missing {', '.join(missing)}."
        )
    return info


def _credentials_from_info(info: Mapping[str, Any], where: str) -> Any:
    from google.oauth2 import service_account

    try:
        return service_account.Credentials.from_service_account_info(
            dict(info), scopes=list(SCOPES)
        )
    except Exception:
        # Never include the exception text: parsers may echo part of the key.
        raise SheetsError(
            f"The private key in {where} cannot be parsed; download a new JSON key for the "
            "service account."
        ) from None


def authorize(
    credentials: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    client: gspread.Client | None = None,
    http_client: type[gspread.HTTPClient] | None = None,
    timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
) -> gspread.Client:
    """An authorised gspread client with bounded retries and a request timeout.

    ``client``: an already authorised client (Colab: ``google.colab.auth`` then
    ``gspread.authorize(creds)``); its session and credentials are reused as they are, wrapped in
    a new client whose HTTP client retries. Otherwise ``credentials`` is a service-account JSON
    key (path, or its parsed dict), defaulting to ``$GOOGLE_APPLICATION_CREDENTIALS``.
    ``http_client`` overrides the HTTP client class (tests route it to an emulator).
    """
    cls = http_client or RetryingHTTPClient
    if client is not None:
        old = client.http_client
        if http_client is None and isinstance(old, RetryingHTTPClient):
            return client
        new = gspread.Client(auth=None, session=old.session, http_client=cls)  # type: ignore[arg-type]
        if hasattr(old, "auth"):
            new.http_client.auth = old.auth
        if timeout is not None:
            new.set_timeout(timeout)
        return new

    if credentials is None:
        env = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        if not env:
            raise SheetsError(
                "No Google credentials: pass a service-account JSON key file or set "
                "GOOGLE_APPLICATION_CREDENTIALS to its path."
            )
        credentials = env
    if isinstance(credentials, Mapping):
        where = "the service-account info"
        info = _check_service_account_info(dict(credentials), where)
    else:
        where = str(Path(credentials).expanduser())
        info = load_service_account_info(credentials)
    creds = _credentials_from_info(info, where)
    gc = gspread.Client(auth=creds, http_client=cls)
    gc.set_timeout(timeout)
    return gc


def set_timeout(client: gspread.Client, timeout: float | tuple[float, float] | None) -> None:
    """Set the per-request timeout (seconds, or (connect, read)); None means wait forever."""
    client.set_timeout(timeout)


def service_account_email(client: gspread.Client) -> str | None:
    """The service account's email when the client uses one (for "share it with ..." hints)."""
    auth = getattr(client.http_client, "auth", None)
    email = getattr(auth, "service_account_email", None)
    return email if isinstance(email, str) and "@" in email else None


def _project(client: gspread.Client) -> str | None:
    auth = getattr(client.http_client, "auth", None)
    project = getattr(auth, "project_id", None)
    return project if isinstance(project, str) and project else None


# --------------------------------------------------------------------------- keys and opening


def parse_spreadsheet_key(url_or_key: str) -> str:
    """The spreadsheet key from a Sheets URL (``.../spreadsheets/d/KEY/edit#gid=0``) or a key."""
    text = str(url_or_key).strip() if url_or_key is not None else ""
    shown = repr(_short(str(url_or_key), 120))
    if _PUBLISHED_RE.search(text):
        raise SheetsError(
            f"{shown} is a 'published to the web' link, which the API cannot open; use the "
            "spreadsheet's edit URL (https://docs.google.com/spreadsheets/d/KEY/edit)."
        )
    if "/" in text or "?" in text or "#" in text:
        for regex in _URL_KEY_RES:
            m = regex.search(text)
            if m and _KEY_RE.match(m.group(1)):
                return m.group(1)
    elif _KEY_RE.match(text):
        return text
    raise SheetsError(
        f"Not a Google Sheets URL or spreadsheet key: {shown} (expected "
        "https://docs.google.com/spreadsheets/d/KEY/edit or the KEY itself)."
    )


def describe_api_error(
    err: APIError,
    *,
    key: str | None = None,
    email: str | None = None,
    project: str | None = None,
) -> SheetsError:
    """Turn a gspread APIError into a one-line SheetsError that says what to do."""
    error = err.error if isinstance(err.error, Mapping) else {}
    code = err.response.status_code if err.response is not None else err.code
    message = str(error.get("message") or "")
    status = str(error.get("status") or "")
    reasons = {
        str(d.get("reason"))
        for d in error.get("details") or []
        if isinstance(d, Mapping) and d.get("reason")
    }
    reasons |= {
        str(e.get("reason")) for e in error.get("errors") or [] if isinstance(e, Mapping)
    }
    what = f"Spreadsheet {key}" if key else "The spreadsheet"

    disabled = (
        "SERVICE_DISABLED" in reasons
        or "accessNotConfigured" in reasons
        or "has not been used in project" in message
        or "accessNotConfigured" in message
    )
    if code == 403 and disabled:
        m = re.search(r"project[s]?[ /:]+([A-Za-z0-9-]+)", message)
        for d in error.get("details") or []:
            meta = d.get("metadata") if isinstance(d, Mapping) else None
            consumer = str(meta.get("consumer", "")) if isinstance(meta, Mapping) else ""
            if consumer.startswith("projects/"):
                project = consumer.split("/", 1)[1]
        if project is None and m:
            project = m.group(1)
        p = project or "of the service account"
        url = "https://console.cloud.google.com/apis/library/sheets.googleapis.com"
        if project:
            url += f"?project={project}"
        return SheetsError(
            f"Google Sheets API is not enabled for project {p}: enable it at {url} , wait a "
            "minute, and try again."
        )
    if code in (403, 404):
        return _not_shared(key, email)
    if code == 401:
        return SheetsError(
            "Google rejected the credentials (HTTP 401 UNAUTHENTICATED); check the "
            "service-account key file or sign in again."
        )
    if code == 429:
        return SheetsError(
            f"Google Sheets API quota exceeded: {_short(message)}. Wait a minute and run again."
        )
    return SheetsError(f"Google Sheets API error ({what}): HTTP {code} {status}: {_short(message)}")


def open_spreadsheet(client: gspread.Client, url_or_key: str) -> gspread.Spreadsheet:
    """Open a spreadsheet the user shared with us, by URL or key, with actionable errors.

    Service accounts cannot create files (they have no Drive storage), so the flow is always:
    the user creates a sheet, shares it with the service account, and passes its URL.
    """
    key = parse_spreadsheet_key(url_or_key)
    try:
        return client.open_by_key(key)
    except (SpreadsheetNotFound, PermissionError) as exc:
        # gspread wraps 404/403 and keeps the APIError as the cause.
        cause = exc.__cause__
        if isinstance(cause, APIError):
            raise describe_api_error(
                cause, key=key, email=service_account_email(client), project=_project(client)
            ) from None
        raise _not_shared(key, service_account_email(client)) from None
    except APIError as err:
        raise describe_api_error(
            err, key=key, email=service_account_email(client), project=_project(client)
        ) from None
    except Exception as err:
        mapped = _map_auth_exception(err)
        if mapped is None:
            raise
        raise mapped from None


def _not_shared(key: str | None, email: str | None) -> SheetsError:
    """The 403/404 message: with a service account both mean "share it with me"."""
    what = f"Spreadsheet {key}" if key else "The spreadsheet"
    who = email or "the service account's email (client_email in the key file)"
    return SheetsError(
        f"{what} not found or not shared with the service account. Share it (Editor) with "
        f"{who} and try again."
    )
