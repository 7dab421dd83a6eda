# SPDX-License-Identifier: Apache-2.0
"""The test helpers' own behaviour that failure messages depend on."""
from __future__ import annotations

import pytest

from tests.support import wait_for


def test_wait_for_describes_the_state_at_the_timeout_not_at_the_start() -> None:
    state = {"phase": "start"}

    def predicate() -> bool:
        state["phase"] = "after a try"
        return False

    with pytest.raises(AssertionError, match=r"phase=after a try not met within 0.01 s"):
        wait_for(predicate, 0.01, what=lambda: f"phase={state['phase']}")


def test_wait_for_returns_the_predicates_result() -> None:
    assert wait_for(lambda: 7, 1.0, what=lambda: pytest.fail("described without a timeout")) == 7
