# SPDX-License-Identifier: Apache-2.0
"""Image: one publisher's stream as seen by one subscription, read by the compiled TermReader."""
from __future__ import annotations

from typing import TYPE_CHECKING

from aeron._core.term_reader import TermReader
from aeron.common.errors import IllegalStateError

if TYPE_CHECKING:
    from aeron._core.logbuffer import LogBuffers
    from aeron._core.atomic_buffer import AtomicBuffer
    from aeron.client.subscription import Subscription


class Image(TermReader):
    """``poll``, ``controlled_poll``, ``bounded_poll``, ``bounded_controlled_poll`` and ``block_poll`` are the
    TermReader's compiled loops; each fragment goes to ``handler(buffer, offset, length, header)`` and the
    subscriber position counter advances as the driver expects.

    Once the driver reports the image unavailable (or its subscription closes) the image is closed: polls
    return 0 and deliver nothing, while its memory stays mapped for the client's resource linger so that a
    poll already running on another thread finishes safely.
    """

    __slots__ = ("correlation_id", "session_id", "subscription_registration_id", "source_identity",
                 "subscriber_position_id", "join_position", "log_file_name", "_subscription", "_final_position",
                 "_final_end_of_stream")

    @classmethod
    def create(cls, subscription: Subscription, log: LogBuffers, values: AtomicBuffer,
               subscriber_position_id: int, correlation_id: int, session_id: int, source_identity: str,
               log_file_name: str) -> "Image":
        """The conductor's constructor (the compiled base takes the log and position arguments itself)."""
        offset = subscriber_position_id * 128
        join_position = values.get_i64_volatile(offset)
        self = cls(log, values, offset, join_position)
        self.correlation_id = correlation_id
        self.session_id = session_id
        self.subscription_registration_id = subscription.registration_id
        self.source_identity = source_identity
        self.subscriber_position_id = subscriber_position_id
        self.join_position = join_position
        self.log_file_name = log_file_name
        self._subscription = subscription
        self._final_position = join_position
        self._final_end_of_stream = False
        return self

    @property
    def subscription(self) -> Subscription:
        """The subscription this image belongs to."""
        return self._subscription

    @property
    def stream_id(self) -> int:
        """The stream id (the subscription's)."""
        return self._subscription.stream_id

    @property
    def is_closed(self) -> bool:        # type: ignore[override]
        """True once the image is out of service (unavailable or its subscription closed)."""
        return self.is_retired

    @property
    def position(self) -> int:          # type: ignore[override]
        """The subscriber position; after close, the last position reached."""
        if self.is_retired:
            return self._final_position
        return TermReader.position.__get__(self)       # type: ignore[attr-defined,no-any-return]

    @position.setter
    def position(self, new_position: int) -> None:
        """Skip ahead within the current term (32-aligned); IllegalStateError once the image is closed."""
        if self.is_retired:
            raise IllegalStateError("image is closed")
        TermReader.position.__set__(self, new_position)      # type: ignore[attr-defined]

    @property
    def is_end_of_stream(self) -> bool:                 # type: ignore[override]
        """True once the publisher ended the stream and this image consumed all of it; after close, the value
        at close (the log may be unmapped by then)."""
        if self.is_retired:
            return self._final_end_of_stream
        return TermReader.is_end_of_stream.__get__(self)      # type: ignore[attr-defined,no-any-return]

    def _retire(self) -> None:
        """Out of service now; the mapping is released later by the conductor (linger)."""
        if not self.is_retired:
            self._final_position = TermReader.position.__get__(self)    # type: ignore[attr-defined]
            self._final_end_of_stream = TermReader.is_end_of_stream.__get__(self)  # type: ignore[attr-defined]
            self.retire()

    def __repr__(self) -> str:
        """Session, stream, source, correlation id and state."""
        state = "closed" if self.is_retired else "open"
        return (f"<Image session={self.session_id} stream={self.stream_id} source={self.source_identity!r} "
                f"correlation={self.correlation_id} {state}>")

    def reject(self, reason: str) -> None:
        """Ask the driver to reject this image: its publisher is told ``reason`` (an error frame, seen by the
        publishing client's ``publication_error_frame_handler``) and disconnected; the image becomes unavailable
        (at once over IPC, after the image liveness timeout over UDP) and the publisher may reconnect later as a
        new image. Waits for the driver; raises RegistrationError when it refuses."""
        if self.is_retired:
            raise IllegalStateError("image is closed")
        self._subscription._conductor.reject_image(self, self.position, reason)

    def close(self) -> None:
        """Images belong to their subscription, which closes them; the conductor unmaps them later."""
        raise IllegalStateError("an Image is closed by its Subscription (or the driver), not directly")

    def _release(self) -> None:
        """Unmap (conductor only, after the linger)."""
        self._retire()
        TermReader.close(self)

    def __enter__(self) -> Image:
        """Return the image (a ``with`` block does not close it: its subscription does)."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing: an image is closed by its subscription."""
        return None
