# SPDX-License-Identifier: Apache-2.0
"""What every part of the driver's conductor side shares, kept low so nothing above needs an import cycle
(Aeron's aeron_driver_common.h): the refused-command error, the resource lifecycle states, small int helpers."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron.common.channel_uri import IPC_CHANNEL as CHANNEL_URI_IPC_CHANNEL
from aeron.common.errors import AeronError

IPC_CHANNEL = CHANNEL_URI_IPC_CHANNEL  # source identity of IPC and spy images

# lifecycle of publications and images (AERON_IPC_PUBLICATION_STATE_*, AERON_PUBLICATION_IMAGE_STATE_*)
ACTIVE, DRAINING, LINGER, DONE = "ACTIVE", "DRAINING", "LINGER", "DONE"


class CommandError(AeronError):
    """A command the driver refuses: answered with ON_ERROR(code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


def wrap32(value: int) -> int:
    """``value`` as a signed 32-bit int, wrapping as C's int32_t arithmetic does."""
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def check_managed_resources(resources: list, now_ns: int, now_ms: int, conductor: Any,
                            delete: Callable[[Any], None]) -> int:
    """One timer tick over a list of resources (aeron_driver_conductor_on_check_managed_resources): each runs
    its ``on_time_event``; one that has reached its end of life leaves the list and ``delete`` frees it. Walks
    the list in place, without copying it. Returns the work done."""
    work = 0
    i = 0
    while i < len(resources):
        resource = resources[i]
        work += resource.on_time_event(now_ns, now_ms, conductor)
        if resource.has_reached_end_of_life():
            del resources[i]
            delete(resource)
        else:
            i += 1
    return work
