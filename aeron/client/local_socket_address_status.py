# SPDX-License-Identifier: Apache-2.0
"""The addresses a channel's sockets are bound to, read from the driver's local-sockaddr counters (Aeron
``LocalSocketAddressStatus``; reference counters: type 14).

When a send or receive channel endpoint binds, the driver allocates one counter of type 14 per socket, labelled
``snd-local-sockaddr: <status counter id> <address>`` (or ``rcv-``), keyed by the channel status counter id
(int32), the address length (int32) and the address in ASCII; its value is ACTIVE while the socket is bound.
The counter is freed when the endpoint closes. A wildcard port (``endpoint=host:0``) shows here as the port the
kernel chose. Per call, not per message: a plain scan of the counters metadata.
"""
from __future__ import annotations

from aeron._core.counters import (CHANNEL_ENDPOINT_STATUS_ACTIVE, DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID,
                                  RECORD_ALLOCATED, RECORD_UNUSED, CountersReader, local_sockaddr_key_decode)


def _scan(reader: CountersReader, channel_status: int, channel_status_id: int, first_only: bool) -> list[str]:
    if channel_status != CHANNEL_ENDPOINT_STATUS_ACTIVE:
        return []
    found: list[str] = []
    for counter_id in range(reader.max_counter_id + 1):
        state = reader.get_counter_state(counter_id)
        if state == RECORD_UNUSED:
            break                       # allocation is dense from 0: nothing lies past the first unused record
        if state != RECORD_ALLOCATED:
            continue
        if reader.get_counter_type_id(counter_id) != DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID:
            continue
        status_id, address = local_sockaddr_key_decode(reader.get_counter_key(counter_id))
        if status_id != channel_status_id or reader.get_counter_value(counter_id) != CHANNEL_ENDPOINT_STATUS_ACTIVE:
            continue
        if first_only:
            # the first counter of the channel decides, as upstream: an empty address means "not yet known"
            return [address] if address else []
        if address:
            found.append(address)
    return found


def find_addresses(reader: CountersReader, channel_status: int, channel_status_id: int) -> list[str]:
    """The bound addresses (``host:port``) of the channel whose status counter is ``channel_status_id``; empty
    unless ``channel_status`` is ACTIVE."""
    return _scan(reader, channel_status, channel_status_id, first_only=False)


def find_address(reader: CountersReader, channel_status: int, channel_status_id: int) -> str | None:
    """The first bound address of the channel, or None (not ACTIVE, not bound yet, or no socket: IPC)."""
    found = _scan(reader, channel_status, channel_status_id, first_only=True)
    return found[0] if found else None


def find_number_of_addresses_by_registration_id(reader: CountersReader, registration_id: int) -> int:
    """How many sockets the channel registered as ``registration_id`` still has bound (Aeron
    ``LocalSocketAddressStatus.findNumberOfAddressesByRegistrationId``): zero once its endpoint closed."""
    found = 0
    for counter_id in range(reader.max_counter_id + 1):
        state = reader.get_counter_state(counter_id)
        if state == RECORD_UNUSED:
            break
        if state == RECORD_ALLOCATED and \
                reader.get_counter_type_id(counter_id) == DRIVER_LOCAL_SOCKET_ADDRESS_STATUS_TYPE_ID and \
                reader.get_counter_registration_id(counter_id) == registration_id:
            found += 1
    return found
