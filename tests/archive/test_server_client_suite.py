# SPDX-License-Identifier: Apache-2.0
"""Our archive client against our archive server: the whole client suite of tests/archive/client_suite.py (which
tests/interop/test_archive_client_java.py runs against the official Java archive), here with our
ArchivingMediaDriver in this process, set up as the Java one is there."""

import pytest

from tests.archive.archives import our_archive, scratch_dir
from tests.archive.client_suite import *  # noqa: F401,F403 - the shared tests run here against our archive


@pytest.fixture(scope="module")
def our_base():
    with scratch_dir("parc") as path:
        yield path


@pytest.fixture(scope="module")
def archive(our_base):
    with our_archive(our_base, "src", 4711) as handle:
        yield handle


@pytest.fixture(scope="module")
def second_archive(our_base):
    with our_archive(our_base, "dst", 4712) as handle:
        yield handle
