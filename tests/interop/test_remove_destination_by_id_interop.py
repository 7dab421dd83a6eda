# SPDX-License-Identifier: Apache-2.0
"""REMOVE_DESTINATION_BY_ID on `aeronmd`: the removal test of tests/driver/test_remove_destination_by_id.py with the
publication on the official driver (our client sends the command), the subscribers on ours. (Not the refusals: the C
driver drops a refused REMOVE_DESTINATION_BY_ID without answering, so its client times out; ours answers the error,
as the Java driver.) Needs AERON_C_BIN."""
from __future__ import annotations

import pytest

from tests.driver.test_remove_destination_by_id import (  # noqa: F401 - collected here, the publisher on aeronmd
    publisher, subscribers, test_a_destination_removed_by_id_gets_nothing_more)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]
