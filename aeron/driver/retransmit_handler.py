# SPDX-License-Identifier: Apache-2.0
"""RetransmitHandler: which NAKed ranges a sender resends, when, and which duplicate NAKs it ignores
(aeron_retransmit_handler.c)."""
from __future__ import annotations

from collections.abc import Callable

INACTIVE, DELAYED, LINGERING = 0, 1, 2
DEFAULT_DELAY_NS = 0
DEFAULT_LINGER_NS = 10_000_000


class _Action:
    __slots__ = ("state", "term_id", "term_offset", "length", "expiry_ns")

    def __init__(self) -> None:
        self.state = INACTIVE
        self.term_id = 0
        self.term_offset = 0
        self.length = 0
        self.expiry_ns = 0


class RetransmitHandler:
    """``on_nak`` starts (or suppresses) a retransmit; ``process_timeouts`` runs delayed ones and frees lingering
    ones. ``resend(term_id, term_offset, length)`` is the publication's resend. Unicast uses one action."""

    def __init__(self, resend: Callable[[int, int, int], None], max_retransmits: int = 1,
                 delay_ns: int = DEFAULT_DELAY_NS, linger_ns: int = DEFAULT_LINGER_NS,
                 on_overflow: Callable[[], None] | None = None) -> None:
        self._resend = resend
        self._actions = [_Action() for _ in range(max(1, max_retransmits))]
        self._delay_ns = delay_ns
        self._linger_ns = linger_ns
        self._on_overflow = on_overflow

    def on_nak(self, term_id: int, term_offset: int, length: int, term_length: int, now_ns: int,
               max_length: Callable[[int, int], int]) -> bool:
        """Returns True when a retransmit was started or scheduled."""
        if length <= 0 or term_offset < 0 or term_offset > term_length - 32:
            return False
        free = None
        for action in self._actions:
            if action.state != INACTIVE:
                if action.term_id == term_id and action.term_offset <= term_offset < action.term_offset + action.length:
                    return False          # already being resent, or resent a moment ago (linger)
            elif free is None:
                free = action
        if free is None:
            if len(self._actions) == 1:
                free = self._actions[0]   # unicast: the single action is reused
            else:
                if self._on_overflow is not None:
                    self._on_overflow()
                return False
        free.term_id = term_id
        free.term_offset = term_offset
        free.length = max_length(term_offset, length)
        if self._delay_ns == 0:
            self._resend(term_id, term_offset, free.length)
            free.state, free.expiry_ns = LINGERING, now_ns + self._linger_ns
        else:
            free.state, free.expiry_ns = DELAYED, now_ns + self._delay_ns
        return True

    @property
    def compiled_eligible(self) -> bool:
        """Unicast's one action with no delay: what SendPass.on_nak does in compiled code (set_fast_retransmit)."""
        return len(self._actions) == 1 and self._delay_ns == 0

    @property
    def linger_ns(self) -> int:
        return self._linger_ns

    def next_deadline_ns(self, far_ns: int) -> int:
        """When ``process_timeouts`` next has something to do (a delayed resend, a linger over); ``far_ns`` when
        nothing is pending."""
        deadline = far_ns
        for action in self._actions:
            if action.state != INACTIVE and action.expiry_ns < deadline:
                deadline = action.expiry_ns + 1         # strictly past expiry
        return deadline

    def process_timeouts(self, now_ns: int) -> int:
        work = 0
        for action in self._actions:
            # strictly past expiry, as aeron_retransmit_handler_process_timeouts
            if action.state == DELAYED and now_ns > action.expiry_ns:
                self._resend(action.term_id, action.term_offset, action.length)
                action.state, action.expiry_ns = LINGERING, now_ns + self._linger_ns
                work += 1
            elif action.state == LINGERING and now_ns > action.expiry_ns:
                action.state = INACTIVE
        return work
