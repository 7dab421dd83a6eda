# SPDX-License-Identifier: Apache-2.0
from collections.abc import Sequence

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import AtomicCounter
from aeron._core.udp_transport import UdpTransport

class SendPass:
    @property
    def count(self) -> int: ...
    def set_publications(
        self, entries: Sequence[tuple[Sequence[AtomicBuffer], AtomicCounter, AtomicCounter, int, int]]) -> None: ...
    def sent(self, index: int) -> int: ...
    def send(self, transport: UdpTransport, address: tuple) -> int: ...
