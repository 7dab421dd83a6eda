# SPDX-License-Identifier: Apache-2.0
"""Channel timestamps across drivers: the tests of tests/driver/test_udp_timestamps.py with the publication on one
driver and the subscription on the other (`aeronmd` → ours, ours → `aeronmd`), and both on `aeronmd` so the
expectations themselves are checked against the official driver. Our client drives each. Needs AERON_C_BIN."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context, MediaDriver
from tests import procs
from tests.driver.test_udp_timestamps import (  # noqa: F401 - collected here with this module's pair fixture
    test_an_endpoint_shared_with_other_timestamp_offsets_is_refused, test_no_timestamps_without_the_options,
    test_overlapping_offsets_are_refused, test_receive_timestamps_only_stamp_the_first_fragment_of_a_message,
    test_send_timestamp_in_the_reserved_value_and_receive_timestamps_in_the_payload)
from tests.driver.udp_helpers import driver_context

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture(params=[("aeronmd", "ours"), ("ours", "aeronmd"), ("aeronmd", "aeronmd")],
                ids=["aeronmd-to-ours", "ours-to-aeronmd", "aeronmd-to-aeronmd"])
def pair(request, official, shm_dir):
    """(publishing client, subscribing client) on the drivers named by the parameter."""
    with contextlib.ExitStack() as stack:
        dirs = {}
        for side in set(request.param):
            aeron_dir = str(shm_dir / side)
            if side == "ours":
                stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=aeron_dir)))
            else:
                stack.callback(procs.stop, procs.start_aeronmd(official("aeronmd"), aeron_dir))
            dirs[side] = stack.enter_context(Aeron.connect(Context(aeron_dir)))
        yield dirs[request.param[0]], dirs[request.param[1]]
