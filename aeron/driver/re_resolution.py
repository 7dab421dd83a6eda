# SPDX-License-Identifier: Apache-2.0
"""Re-resolution of the names in unicast send channels (aeron_send_channel_endpoint_check_for_re_resolution,
aeron_driver_conductor_on_re_resolve_endpoint, aeron_driver_sender_on_resolution_change).

A unicast publication names its endpoint once, when its channel is parsed. If the name then moves (a driver
restarted on another host, a DNS record changed), the receivers go silent; so every re-resolution check interval
(``aeron.driver.reresolution.check.interval``, 1 s) each unicast send endpoint that has heard no status message
for 5 s has its endpoint name resolved again, and when the address changed the sender is told to send there,
counting one ``Resolution changes``. An address literal needs no resolving and is skipped.

Not done here, unlike the C driver: the endpoints of manual multi-destination-cast destinations and the control
addresses of receive destinations are not re-resolved.
"""
from __future__ import annotations

import ipaddress
from typing import Any

from aeron._core import counters as ctr
from aeron.driver.name_resolver import NameResolutionError, resolve_host_and_port
from aeron.driver.send_channel_endpoint import DESTINATION_TIMEOUT_NS
from aeron.driver.udp_channel import CONTROL_MODE_RESPONSE


def _names_a_host(endpoint: str) -> bool:
    host = endpoint[1:endpoint.find("]")] if endpoint.startswith("[") else endpoint.rpartition(":")[0]
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return True
    return False


def _on_resolution_change(endpoint: Any, address: tuple, resolution_changes: Any) -> None:
    # runs on the sender thread: the sender owns what the endpoint sends to
    endpoint.remote = address
    resolution_changes.increment_ordered()


class ReResolution:
    """Conductor side of re-resolution. ``do_work(now_ns)`` once per conductor duty cycle."""

    def __init__(self, network: Any, resolver: Any, system: dict[int, Any], interval_ns: int,
                 log_error: Any) -> None:
        self._network = network
        self._resolver = resolver
        self._resolution_changes = system[ctr.RESOLUTION_CHANGES]
        self._interval_ns = interval_ns
        self._log_error = log_error
        self._deadline_ns = 0
        # when each endpoint was first seen here: a new endpoint has had no time to hear a status message yet
        self._first_seen_ns: dict[int, int] = {}

    def do_work(self, now_ns: int) -> int:
        if self._interval_ns <= 0 or now_ns < self._deadline_ns:
            return 0
        self._deadline_ns = now_ns + self._interval_ns
        work = 0
        seen: dict[int, int] = {}
        for endpoint in list(self._network.send_endpoints.values()):
            first_seen = seen[id(endpoint)] = self._first_seen_ns.get(id(endpoint), now_ns)
            channel = endpoint.udp_channel
            name = channel.uri.get("endpoint")
            if channel.is_multicast or channel.is_multi_destination or name is None or \
                    channel.control_mode == CONTROL_MODE_RESPONSE or endpoint.sender_released or \
                    not _names_a_host(name):
                continue
            if now_ns <= max(endpoint.time_of_last_sm_ns, first_seen) + DESTINATION_TIMEOUT_NS:
                continue
            work += 1
            try:
                family, address = resolve_host_and_port(self._resolver, name, "endpoint", True)
            except NameResolutionError as exc:
                self._log_error(exc.code, f"{exc}\naddress re-resolution failed", exc.os_errno, True)
                continue
            current = endpoint.remote
            if family == channel.family and (current is None or address[:2] != current[:2]):
                self._network.sender_proxy.offer((_on_resolution_change, endpoint, address, self._resolution_changes))
        self._first_seen_ns = seen
        return work
