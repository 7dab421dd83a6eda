# SPDX-License-Identifier: Apache-2.0
"""Our archive client against the official Java ArchivingMediaDriver (driver and archive in one JVM; needs
AERON_JAVA_CP, skips cleanly without it): the whole client suite of tests/archive/client_suite.py."""

import pytest

from tests.archive.archives import java_classpath, scratch_dir, start_java_archive, stop_archive
from tests.archive.client_suite import *  # noqa: F401,F403 - the shared tests run here against Java


@pytest.fixture(scope="module")
def java_base():
    java_classpath()
    with scratch_dir("jarc") as path:
        yield path


@pytest.fixture(scope="module")
def archive(java_base):
    handle = start_java_archive(java_base, "src", archive_id=4711)
    try:
        yield handle
    finally:
        stop_archive(handle)


@pytest.fixture(scope="module")
def second_archive(java_base):
    handle = start_java_archive(java_base, "dst", archive_id=4712)
    try:
        yield handle
    finally:
        stop_archive(handle)
