# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import shutil
import uuid

import pytest

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent
# Golden data from official Aeron, see tests/data/golden/README.md.
GOLDEN = PROJECT_ROOT / "tests" / "data" / "golden"


@pytest.fixture(scope="session")
def golden_dir() -> pathlib.Path:
    if not GOLDEN.is_dir():
        pytest.fail(f"golden data missing from the checkout: {GOLDEN}")
    return GOLDEN


@pytest.fixture
def shm_dir():
    """A fresh directory under /dev/shm, removed after the test."""
    base = pathlib.Path("/dev/shm") if os.path.isdir("/dev/shm") else pathlib.Path("/tmp")
    path = base / f"aeron-py-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
