# SPDX-License-Identifier: Apache-2.0
"""IPC and spy receive destinations on `aeronmd`: the tests of tests/driver/test_mds_ipc_spy_destinations.py run by
our client on the official driver, so both drivers are held to the same behaviour. Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from tests.driver.test_mds_ipc_spy_destinations import (  # noqa: F401 - collected here, with the client on aeronmd
    client_settings, events, test_an_ipc_destination_joins_publications_added_later_and_goes_with_its_subscription,
    test_ipc_spy_and_udp_destinations_feed_one_subscription)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture
def spy_removal_announced():
    return False            # aeronmd announces the removed spy destination's image with correlation id 0
