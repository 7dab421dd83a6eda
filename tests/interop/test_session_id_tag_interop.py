# SPDX-License-Identifier: Apache-2.0
"""session-id=tag:<n> on `aeronmd`: the tests of tests/driver/test_session_id_tag.py, run by our client on the
official driver, so both drivers are held to the same behaviour. Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from tests.driver.test_session_id_tag import (  # noqa: F401 - collected here, with the client on aeronmd
    test_an_unknown_tag_is_refused, test_publications_reuse_the_session_id_of_the_tagged_publication)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]
