# SPDX-License-Identifier: Apache-2.0
"""Our archive client against our archive server: the whole client suite of tests/archive/client_suite.py (which
tests/interop/test_archive_client_java.py runs against the official Java archive), here with our
ArchivingMediaDriver in this process, set up as the Java one is there."""
import os
import pathlib
import shutil
import uuid

import pytest

from tests.archive.archives import our_archive
from tests.archive.client_suite import *  # noqa: F401,F403 - the shared tests run here against our archive


@pytest.fixture(scope="module")
def our_base():
    base = pathlib.Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"aeron-py-parc-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def archive(our_base):
    with our_archive(our_base, "src", 4711) as handle:
        yield handle


@pytest.fixture(scope="module")
def second_archive(our_base):
    with our_archive(our_base, "dst", 4712) as handle:
        yield handle
