# SPDX-License-Identifier: Apache-2.0
import os
import pathlib
import shutil
import uuid

import pytest

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent
# shared/ sits beside the project (and beside CI's fresh clone).
SHARED = pathlib.Path(os.environ.get("AERON_PY_SHARED", PROJECT_ROOT.parent / "shared"))
GOLDEN = SHARED / "golden"
REFERENCE = SHARED / "reference"


@pytest.fixture(scope="session")
def golden_dir() -> pathlib.Path:
    if not GOLDEN.is_dir():
        pytest.fail(f"golden data not found at {GOLDEN}; set AERON_PY_SHARED to the shared/ folder")
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
