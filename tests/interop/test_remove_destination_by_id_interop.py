# SPDX-License-Identifier: Apache-2.0
"""REMOVE_DESTINATION_BY_ID on `aeronmd`: the removal test of tests/driver/test_remove_destination_by_id.py with the
publication on the official driver (our client sends the command), the subscribers on ours. (Not the refusals: the C
driver drops a refused REMOVE_DESTINATION_BY_ID without answering, so its client times out; ours answers the error,
as the Java driver.) Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from aeron import Aeron, Context
from tests import procs
from tests.driver.test_remove_destination_by_id import (  # noqa: F401 - collected with this module's publisher
    subscribers, test_a_destination_removed_by_id_gets_nothing_more)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture
def publisher(official, shm_dir):
    aeron_dir = str(shm_dir / "aeronmd")
    proc = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        with Aeron.connect(Context(aeron_dir)) as client:
            yield client
    finally:
        procs.stop(proc)
