# SPDX-License-Identifier: Apache-2.0
"""Interop tests run official Aeron C binaries from $AERON_C_BIN and skip cleanly without them. Here the ``client``
fixture of tests/conftest.py is our client on the official ``aeronmd``: the driver tests a module imports run against
the C driver."""
import os
import pathlib

import pytest

from tests import procs


@pytest.fixture(scope="session")
def aeron_c_bin() -> pathlib.Path:
    value = os.environ.get("AERON_C_BIN")
    if not value:
        pytest.skip("AERON_C_BIN is not set: official Aeron C binaries are not available")
    path = pathlib.Path(value)
    if not path.is_dir():
        pytest.skip(f"AERON_C_BIN={value} is not a directory")
    return path


@pytest.fixture
def official(aeron_c_bin):
    """Path of one official binary, skipping when that binary was not built."""
    def find(name: str) -> str:
        exe = aeron_c_bin / name
        if not os.access(exe, os.X_OK):
            pytest.skip(f"{name} not found in AERON_C_BIN={aeron_c_bin}")
        return str(exe)
    return find


@pytest.fixture
def aeronmd(official, shm_dir):
    """The official C driver running in its own directory (SHARED, backoff, as procs.start_aeronmd sets it up);
    yields that directory and stops the driver after the test."""
    aeron_dir = str(shm_dir / "aeronmd")
    proc = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        yield aeron_dir
    finally:
        procs.stop(proc)


@pytest.fixture
def aeron_dir(aeronmd):
    """Where the ``client`` fixture connects: ``aeronmd``."""
    return aeronmd
