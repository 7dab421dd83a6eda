# SPDX-License-Identifier: Apache-2.0
from typing import Any, Callable

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.term_reader import Header

class IngressSessionAppender:
    appended: int
    def __init__(self, agent: Any, on_other: Callable[[AtomicBuffer, int, int, Header], int],
                 sessions: dict[int, Any], open_state: Any, leader_role: Any, log_publisher: Any,
                 cluster_clock: Any, message_header: bytes, check_result: Callable[[int, Any], None]) -> None: ...
    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> int: ...
