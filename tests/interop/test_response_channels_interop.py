# SPDX-License-Identifier: Apache-2.0
"""Response channels across drivers: the tests of tests/driver/test_response_channels.py with the server's driver
`aeronmd` and the other ours, the other way round, and both `aeronmd` (so the expectations, error texts included,
hold for the official driver). Our client drives each. Needs AERON_C_BIN."""
from __future__ import annotations

import contextlib

import pytest

from aeron import Aeron, Context, MediaDriver
from tests import procs
from tests.driver.test_response_channels import (  # noqa: F401 - collected here with this module's clients fixture
    test_a_response_subscription_mismatching_the_endpoint_is_refused, test_each_client_gets_its_own_responses,
    test_response_correlation_id_is_a_publication_matching_criterion, test_response_publication_errors,
    test_response_publication_connects_to_the_response_subscription_only)
from tests.driver.udp_helpers import driver_context

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture(params=[("aeronmd", "ours"), ("ours", "aeronmd"), ("aeronmd", "aeronmd")],
                ids=["server-aeronmd", "server-ours", "all-aeronmd"])
def clients(request, official, shm_dir):
    """(server client, client on the server's driver, client on the other driver)."""
    with contextlib.ExitStack() as stack:
        dirs = []
        for n, kind in enumerate(request.param):
            aeron_dir = str(shm_dir / f"{kind}-{n}")
            if kind == "ours":
                stack.enter_context(MediaDriver.launch(driver_context(aeron_dir=aeron_dir)))
            else:
                stack.callback(procs.stop, procs.start_aeronmd(official("aeronmd"), aeron_dir))
            dirs.append(aeron_dir)
        yield (stack.enter_context(Aeron.connect(Context(dirs[0]))),
               stack.enter_context(Aeron.connect(Context(dirs[0]))),
               stack.enter_context(Aeron.connect(Context(dirs[1]))))
