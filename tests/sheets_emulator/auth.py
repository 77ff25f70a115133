"""The OAuth token endpoint (JWT-bearer grants signed by registered service-account keys)
and the access checks every API request passes: bearer token, scopes, sharing, API
enabled."""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from .constants import GOOGLE_TOKEN_AUDIENCE, READ_SCOPES, SHEETS_SCOPES
from .errors import HTTPReply, google_error
from .state import StoredSpreadsheet


class AuthMixin:
    """Token grants and access checks of SheetsEmulator (which holds the state they use)."""

    _accounts: dict[str, Any]  # email -> RSA public key
    _tokens: dict[str, tuple[str, set[str], float]]  # token -> (email, scopes, expiry)
    _lock: Any
    project_number: str
    spreadsheets: dict[str, StoredSpreadsheet]

    def handle_token(self, form: Mapping[str, list[str]]) -> tuple[int, Any]:
        def bad(desc: str) -> tuple[int, Any]:
            return 400, {"error": "invalid_grant", "error_description": desc}

        if form.get("grant_type", [""])[0] != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return 400, {"error": "unsupported_grant_type",
                         "error_description": "Invalid grant_type."}
        assertion = form.get("assertion", [""])[0]
        try:
            h64, p64, s64 = assertion.split(".")
            header = json.loads(_b64d(h64))
            claims = json.loads(_b64d(p64))
            signature = _b64d(s64)
        except Exception:
            return bad("Invalid JWT: malformed.")
        if header.get("alg") != "RS256":
            return bad("Invalid JWT: unsupported algorithm.")
        key = self._accounts.get(str(claims.get("iss", "")).lower())
        if key is None:
            return bad("Invalid grant: account not found")
        try:
            key.verify(signature, f"{h64}.{p64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return bad("Invalid JWT Signature.")
        now = time.time()
        if claims.get("aud") != GOOGLE_TOKEN_AUDIENCE:
            return bad("Invalid JWT: audience.")
        if not (claims.get("iat", 0) - 300 <= now <= claims.get("exp", 0) + 300):
            return bad("Invalid JWT: Token must be a short-lived token and in a reasonable "
                       "timeframe.")
        token = "ya29.emu-" + secrets.token_urlsafe(24)
        scopes = set(str(claims.get("scope", "")).split())
        with self._lock:
            self._tokens[token] = (str(claims["iss"]).lower(), scopes, now + 3600)
        return 200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}

    # API ------------------------------------------------------------------
    def authenticate(self, authorization: str | None) -> tuple[str, set[str]]:
        if not authorization or not authorization.startswith("Bearer "):
            raise HTTPReply(401, google_error(401))
        entry = self._tokens.get(authorization[7:].strip())
        if entry is None or entry[2] < time.time():
            raise HTTPReply(401, google_error(
                401, "Request had invalid authentication credentials. Expected OAuth 2 access "
                "token, login cookie or other valid authentication credential."))
        return entry[0], entry[1]

    def disabled_error(self) -> dict[str, Any]:
        n = self.project_number
        url = f"https://console.developers.google.com/apis/api/sheets.googleapis.com/overview?project={n}"
        return google_error(
            403,
            f"Google Sheets API has not been used in project {n} before or it is disabled. "
            f"Enable it by visiting {url} then retry. If you enabled this API recently, wait a "
            "few minutes for the action to propagate to our systems and retry.",
            "PERMISSION_DENIED",
            [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED",
              "domain": "googleapis.com",
              "metadata": {"service": "sheets.googleapis.com", "consumer": f"projects/{n}",
                           "activationUrl": url}}],
        )

    def access(self, key: str, email: str, scopes: set[str], write: bool) -> StoredSpreadsheet:
        if not (scopes & (SHEETS_SCOPES if write else READ_SCOPES)):
            raise HTTPReply(403, google_error(
                403, "Request had insufficient authentication scopes.", "PERMISSION_DENIED",
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                  "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT", "domain": "googleapis.com"}]))
        ss = self.spreadsheets.get(key)
        if ss is None:
            raise HTTPReply(404, google_error(404))
        role = ss.shared_with.get(email) or ss.shared_with.get("*")
        if role is None or (write and role != "writer"):
            raise HTTPReply(403, google_error(403))
        return ss


def _b64d(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
