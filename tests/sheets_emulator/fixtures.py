"""Test keys and the pytest fixtures (re-exported by tests/conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from sheetgen.writers.google.client import authorize

from .constants import SA_EMAIL
from .server import SheetsEmulator


@dataclass(frozen=True)
class KeyPair:
    """An RSA key pair made at test time (no key material is stored in the repository)."""

    private_pem: str
    public_key: Any


#: RSA size of the test keys. Google's service-account keys are 2048-bit, but every
#: `authorize` has google-auth parse the key, and that parse checks the key's primes: 50 ms
#: at 2048 bits, 7 ms at 1024, on each of the suite's hundreds of clients and CLI runs. The
#: code paths (PEM parse, RS256 JWT signing, the emulator's signature check) do not depend
#: on the size, and a test key guards nothing.
TEST_KEY_BITS = 1024


def generate_test_key() -> KeyPair:
    """A fresh RSA key pair (TEST_KEY_BITS), PEM (PKCS#8) private half as service-account
    JSON wants."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=TEST_KEY_BITS)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return KeyPair(pem, key.public_key())


#: Retry policy for tests: real backoff code, millisecond delays.
FAST_RETRY = {"base_delay": 0.01, "max_delay": 0.05, "max_elapsed": 5.0, "jitter": 0.1}
#: Client timeout for tests (connect, read), with room for a loaded machine: the emulator
#: evaluates every pushed formula before it answers, which took over 2 s on a busy 2-core CI.
TEST_TIMEOUT = (5.0, 30.0)
#: The timeout a test that injects a "timeout" fault sets on its client: below the
#: emulator's timeout_fault_seconds, so the fault is a read timeout and not a slow answer.
FAULT_TIMEOUT = (2.0, 4.0)


@pytest.fixture(scope="session")
def sa_key() -> KeyPair:
    """The service account's key pair (session-wide: RSA generation costs ~50 ms)."""
    return generate_test_key()


@pytest.fixture
def sheets_emulator() -> Iterator[SheetsEmulator]:
    """A running emulator; stopped after the test."""
    emu = SheetsEmulator().start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def service_account_file(tmp_path: Path, sheets_emulator: SheetsEmulator, sa_key: KeyPair
                         ) -> Path:
    """A service-account JSON key for SA_EMAIL whose token_uri is the emulator (registered)."""
    sheets_emulator.register_service_account(SA_EMAIL, sa_key.public_key)
    path = tmp_path / "service_account.json"
    path.write_text(json.dumps(sheets_emulator.service_account_info(sa_key.private_pem)))
    return path


@pytest.fixture
def gsheets_client(service_account_file: Path, sheets_emulator: SheetsEmulator) -> Any:
    """A real gspread client authorised with the test key, routed to the emulator, fast retries.

    ``client.http_client.policy`` can be replaced per test (``dataclasses.replace``).
    """
    return authorize(service_account_file,
                     http_client=sheets_emulator.http_client_class(**FAST_RETRY),
                     timeout=TEST_TIMEOUT)
