# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the clustered service container tests: the client tests' embedded driver and a client on it, the
archive tests' archiving driver and a client on it, and a helper that encodes cluster protocol messages (log
entries, control messages) as the consensus module would."""
from __future__ import annotations

from typing import Any

from tests.archive.test_server import aeron, archiving_driver  # noqa: F401 (the archive tests' fixtures)
from tests.client.conftest import client_settings, driver_settings, errors  # noqa: F401 (the client tests' presets)


def encode(encoder_class: Any, var: dict[str, Any] | None = None, payload: bytes = b"", **fields: Any) -> bytes:
    """One message: header, block ``fields``, var-data ``var`` (in schema order), then ``payload``."""
    var = var or {}
    buffer = bytearray(8 + encoder_class.BLOCK_LENGTH + sum(4 + len(v) for v in var.values()))
    encoder = encoder_class().wrap_and_apply_header(buffer, 0)
    for name, value in fields.items():
        setattr(encoder, name, value)
    for name, value in var.items():
        getattr(encoder, f"put_{name}")(value)
    length = 8 + encoder.encoded_length
    encoder.release()
    return bytes(buffer[:length]) + payload
