# SPDX-License-Identifier: Apache-2.0
"""A debug log of the cluster's state changes, off unless ``AERON_EVENT_CLUSTER_LOG`` names a file (the role of
Aeron's ``aeron.event.cluster.log`` with its Java agent): each process appends a line per event, stamped with
``time.monotonic_ns()`` (CLOCK_MONOTONIC, comparable across the processes of one machine), its pid and who logged
it. The consensus module logs its election's state changes, its role and state changes; the cluster client logs
its state changes and the new leaders it is told of. Lines are written whole with one ``write`` to a file opened
for appending, so the processes of a cluster can share one file:

    AERON_EVENT_CLUSTER_LOG=/tmp/failover.log python -m aeron.cluster ...

It is for timing an election or a failover by hand; nothing per message is logged, and when unset each call
costs one test of a module global. With ``AERON_EVENT_CLUSTER_STEPS=true`` as well (``STEPS``), the steps of a
message's way through the cluster are logged too, one line per duty cycle that took one (a leader's ingress poll, a
follower's log poll and its AppendPosition, the leader's receipt of it, the commit and the services' wake-up, a
service's log poll): for timing a round trip by hand (perf/cluster_rtt_steps.py); it costs a line per step, so no
throughput figure is measured with it.
"""
from __future__ import annotations

import os
import time

__all__ = ["ENABLED", "STEPS", "log_event"]

_PATH = os.environ.get("AERON_EVENT_CLUSTER_LOG") or None
ENABLED = _PATH is not None
STEPS = ENABLED and os.environ.get("AERON_EVENT_CLUSTER_STEPS", "").strip().lower() in ("1", "true")
_fd = -1


def log_event(who: str, event: str, detail: str = "") -> None:
    """Append ``<monotonic ns> <pid> <who> <event> <detail>`` to the event log (nothing when it is off)."""
    global _fd
    if _PATH is None:
        return
    if _fd < 0:
        _fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, f"{time.monotonic_ns()} {os.getpid()} {who} {event} {detail}\n".encode())
