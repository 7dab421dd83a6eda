# SPDX-License-Identifier: Apache-2.0
from typing import Any, Callable

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.term_reader import Header

CLUSTER_SCHEMA_ID: int
SESSION_MESSAGE_HEADER_TEMPLATE_ID: int
MESSAGE_HEADER_LENGTH: int
SESSION_HEADER_LENGTH: int

class LogEntryDispatcher:
    log_position: int
    cluster_time: int
    def __init__(self, on_session_message: Callable[[Any, int, AtomicBuffer, int, int, Header], Any],
                 sessions: dict[int, Any], on_event: Callable[[int, AtomicBuffer, int, int, Header], Any]) -> None: ...
    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> int: ...
    def clear(self) -> None: ...
    def on_message(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> int: ...

class EgressOffer:
    def __init__(self, agent: Any, dispatcher: LogEntryDispatcher, header: bytearray, leader_role: Any) -> None: ...
    def offer(self, cluster_session_id: int, publication: Any, buffer: Any, offset: int = 0,
              length: int = -1) -> int: ...
