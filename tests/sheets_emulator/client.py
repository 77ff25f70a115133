"""Route the production HTTP client (sheetgen.writers.google.client.RetryingHTTPClient) to the
emulator, so gspread and the retry loop run unchanged."""

from __future__ import annotations

from typing import Any

from sheetgen.writers.google.client import RetryingHTTPClient

from .constants import GOOGLE_API_PREFIXES


def make_http_client_class(base_url: str, base: type[RetryingHTTPClient] = RetryingHTTPClient
                           ) -> type[RetryingHTTPClient]:
    """A subclass of ``base`` that sends Google API URLs to ``base_url`` instead.

    The rewrite happens before ``base.request`` so the production retry loop runs unchanged.
    """

    class RoutedHTTPClient(base):  # type: ignore[valid-type,misc]
        def request(self, method: str, endpoint: str, *args: Any, **kwargs: Any) -> Any:
            for prefix in GOOGLE_API_PREFIXES:
                if endpoint.startswith(prefix):
                    endpoint = base_url + endpoint[len(prefix):]
                    break
            return super().request(method, endpoint, *args, **kwargs)

    RoutedHTTPClient.__name__ = f"Routed{base.__name__}"
    return RoutedHTTPClient
