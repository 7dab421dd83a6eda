# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the sample tests: our driver as its own process, as a user starts it for the samples."""
import pytest

from tests import procs


@pytest.fixture
def driver_dir(request, shm_dir):
    """The directory of our driver running in its own process (tests.procs.start_our_driver), with the arguments of
    the module's or test's ``driver_args`` mark (``pytest.mark.driver_args("aeron.term.buffer.length=64k")``)."""
    mark = request.node.get_closest_marker("driver_args")
    aeron_dir = str(shm_dir / "driver")
    driver = procs.start_our_driver(aeron_dir, *(mark.args if mark else ()))
    try:
        yield aeron_dir
    finally:
        procs.stop(driver)
