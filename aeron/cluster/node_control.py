# SPDX-License-Identifier: Apache-2.0
"""``NodeControl``: the node control toggle (counter type 233), through which an operator asks a node's consensus
module to replicate a standby snapshot or validate its recording log against its archive."""
from __future__ import annotations

import enum

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import CountersReader
from aeron.cluster.cluster_control import CounterValue, ToggleStateMethods, find_control_toggle
from aeron.cluster.service.cluster_counters import NODE_CONTROL_TOGGLE_TYPE_ID

__all__ = ["CONTROL_TOGGLE_TYPE_ID", "ToggleState", "find_node_control_toggle"]

CONTROL_TOGGLE_TYPE_ID = NODE_CONTROL_TOGGLE_TYPE_ID


class ToggleState(ToggleStateMethods, enum.IntEnum):
    """``NodeControl.ToggleState``."""

    INACTIVE = 0
    NEUTRAL = 1
    REPLICATE_STANDBY_SNAPSHOT = 2
    VALIDATE_RECORDING_LOG = 3


def find_node_control_toggle(counters: CountersReader, values: AtomicBuffer, cluster_id: int) -> CounterValue | None:
    """The node control toggle of ``cluster_id``, or None."""
    return find_control_toggle(counters, values, cluster_id, CONTROL_TOGGLE_TYPE_ID)
