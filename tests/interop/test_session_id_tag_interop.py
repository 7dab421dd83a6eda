# SPDX-License-Identifier: Apache-2.0
"""session-id=tag:<n> on `aeronmd`: the tests of tests/driver/test_session_id_tag.py, run by our client on the
official driver, so both drivers are held to the same behaviour. Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from aeron import Aeron, Context
from tests import procs
from tests.driver.test_session_id_tag import (  # noqa: F401 - collected here with this module's client fixture
    test_an_unknown_tag_is_refused, test_publications_reuse_the_session_id_of_the_tagged_publication)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture
def client(official, shm_dir):
    aeron_dir = str(shm_dir / "aeronmd")
    proc = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        with Aeron.connect(Context(aeron_dir)) as aeron:
            yield aeron
    finally:
        procs.stop(proc)
