# SPDX-License-Identifier: Apache-2.0
"""A client's session as the consensus module keeps it (Aeron's ``ClusterSession``), and the short-lived sessions
of backup, heartbeat and standby queries.

``State``: INIT → CONNECTING → CONNECTED → (CHALLENGED) → AUTHENTICATED → OPEN → CLOSING → CLOSED, plus REJECTED
and INVALID. The session owns a concurrent publication to the client's response channel (egress), added without
waiting, and a ``cluster-session`` counter (type 241, key clusterId and clusterSessionId) that names its client.
"""
from __future__ import annotations

import enum
import struct
from typing import Any

from aeron._core.codecs.cluster import CloseReason, EventCode
from aeron._core.term_appender import NOT_CONNECTED
from aeron.archive.configuration import NULL_POSITION
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import Category, ClusterError, ErrorCode, RegistrationError

__all__ = ["Action", "ClusterSession", "State", "CLUSTER_SESSION_TYPE_ID", "MAX_ENCODED_PRINCIPAL_LENGTH"]

NULL_PRINCIPAL = b""
MAX_ENCODED_PRINCIPAL_LENGTH = 4 * 1024
MAX_ENCODED_MEMBERSHIP_QUERY_LENGTH = 4 * 1024
CLUSTER_SESSION_TYPE_ID = 241
CLUSTER_ID_LABEL_SUFFIX = " - clusterId="
_COUNTER_LENGTH = 128
_REFERENCE_ID_OFFSET = 24           # in a counter's values record: value, registration id, owner id, reference id


class State(enum.Enum):
    """``ClusterSession.State``."""

    INIT = 0
    CONNECTING = 1
    CONNECTED = 2
    CHALLENGED = 3
    AUTHENTICATED = 4
    REJECTED = 5
    OPEN = 6
    CLOSING = 7
    INVALID = 8
    CLOSED = 9


class Action(enum.Enum):
    """What a session is for: a client, or a backup, heartbeat or standby snapshot request."""

    CLIENT = 0
    BACKUP = 1
    HEARTBEAT = 2
    STANDBY_SNAPSHOT = 3


def check_encoded_principal_length(encoded_principal: bytes | None) -> None:
    """ClusterError when a principal is longer than 4 KiB."""
    if encoded_principal is not None and len(encoded_principal) > MAX_ENCODED_PRINCIPAL_LENGTH:
        raise ClusterError(f"encoded principal max length {MAX_ENCODED_PRINCIPAL_LENGTH} exceeded: "
                           f"length={len(encoded_principal)}")


class ClusterSession:
    """One session: its response publication, its state and what the log knows of it."""

    def __init__(self, cluster_member_id: int, session_id: int, response_stream_id: int, response_channel: str,
                 session_info: str) -> None:
        """A new session in INIT."""
        self.id = session_id
        self.cluster_member_id = cluster_member_id
        self.response_stream_id = response_stream_id
        self.response_channel = response_channel
        self.session_info = session_info
        self.has_new_leader_event_pending = False
        self.has_open_event_pending = True
        self.correlation_id = 0
        self.opened_log_position = NULL_POSITION
        self.closed_log_position = NULL_POSITION
        self.time_of_last_activity_ns = 0
        self.ingress_image_correlation_id = NULL_VALUE
        self._response_publication_id = NULL_VALUE
        self._counter_registration_id = NULL_VALUE
        self.response_publication: Any = None
        self.counter: Any = None
        self.state = State.INIT
        self.response_detail: str | None = None
        self.event_code: EventCode | None = None
        self.close_reason: int = CloseReason.NULL_VAL
        self.encoded_principal: bytes = NULL_PRINCIPAL
        self.action = Action.CLIENT
        self.request_input: Any = None

    # -- lifecycle ------------------------------------------------------------------------------------------

    def set_state(self, new_state: State, reason: str = "") -> None:
        """Move to ``new_state`` (``reason`` is for the event log)."""
        self.state = new_state

    def close(self, aeron: Any, error_handler: Any, reason: str) -> None:
        """Release the publication and counter; CLOSED."""
        self.disconnect(aeron, error_handler)
        self.set_state(State.CLOSED, reason)

    def is_open(self) -> bool:
        """OPEN."""
        return self.state is State.OPEN

    def load_snapshot_state(self, correlation_id: int, opened_log_position: int, time_of_last_activity_ns: int,
                            close_reason: int) -> None:
        """State from a snapshot: OPEN, or CLOSING when it carries a close reason."""
        self.opened_log_position = opened_log_position
        self.time_of_last_activity_ns = time_of_last_activity_ns
        self.correlation_id = correlation_id
        self.close_reason = close_reason
        if close_reason != CloseReason.NULL_VAL:
            self.set_state(State.CLOSING, CloseReason(close_reason).name)
        else:
            self.set_state(State.OPEN, f"openedLogPosition={opened_log_position}")

    def closing(self, close_reason: int) -> None:
        """CLOSING for ``close_reason`` (its close is to be appended); no open or new-leader event is owed."""
        self.close_reason = close_reason
        self.has_open_event_pending = False
        self.has_new_leader_event_pending = False
        self.time_of_last_activity_ns = 0
        self.set_state(State.CLOSING, CloseReason(close_reason).name)

    def reset_close_reason(self) -> None:
        """Forget a close that was rolled back."""
        self.closed_log_position = NULL_POSITION
        self.close_reason = CloseReason.NULL_VAL

    def authenticate(self, encoded_principal: bytes | None) -> None:
        """AUTHENTICATED with ``encoded_principal`` (kept unless None)."""
        if encoded_principal is not None:
            self.encoded_principal = bytes(encoded_principal)
        self.set_state(State.AUTHENTICATED, "authenticated")

    def open(self, opened_log_position: int) -> None:
        """OPEN: its SessionOpenEvent is in the log, ending at ``opened_log_position``."""
        self.opened_log_position = opened_log_position
        self.set_state(State.OPEN, f"openedLogPosition={opened_log_position}")

    def reject(self, code: EventCode, response_detail: str, error_log: Any = None) -> None:
        """REJECTED: the client is to get SessionEvent ``code`` with ``response_detail``."""
        self.event_code = code
        self.response_detail = response_detail
        self.set_state(State.REJECTED, f"{code.name}: {response_detail}" if response_detail else code.name)
        if error_log is not None:
            error_log(ClusterError(f"{code.name} {response_detail}, clusterMemberId={self.cluster_member_id}, "
                                   f"id={self.id}"))

    def redirect(self, ingress_endpoints: str) -> None:
        """A follower's answer: SessionEvent REDIRECT with the members' ingress endpoints."""
        self.event_code = EventCode.REDIRECT
        self.response_detail = ingress_endpoints

    def last_activity_ns(self, time_ns: int, correlation_id: int) -> None:
        """Activity at ``time_ns`` by the request ``correlation_id``."""
        self.time_of_last_activity_ns = time_ns
        self.correlation_id = correlation_id

    def has_timed_out(self, now_ns: int, session_timeout_ns: int) -> bool:
        """No activity for the session timeout (never in INIT)."""
        return self.state is not State.INIT and self.time_of_last_activity_ns + session_timeout_ns < now_ns

    def link_ingress_image(self, image: Any) -> None:
        """Remember the ingress image the client's messages come through (the first one)."""
        if self.ingress_image_correlation_id == NULL_VALUE and image is not None:
            self.ingress_image_correlation_id = image.correlation_id

    def unlink_ingress_image(self) -> None:
        """Forget the ingress image."""
        self.ingress_image_correlation_id = NULL_VALUE

    # -- the response publication and counter -----------------------------------------------------------------

    def async_connect(self, aeron: Any, cluster_id: int) -> None:
        """Ask for the session counter and the response publication, without waiting."""
        self._counter_registration_id = self._add_session_counter(aeron, cluster_id)
        self._response_publication_id = aeron.async_add_publication(self.response_channel, self.response_stream_id)

    def connect(self, error_handler: Any, aeron: Any, cluster_id: int) -> None:
        """Add the response publication now (a new leader's sessions); a refusal is reported as a warning."""
        if self.response_publication is not None:
            raise ClusterError("response publication already added")
        self._counter_registration_id = self._add_session_counter(aeron, cluster_id)
        try:
            self.response_publication = aeron.add_publication(self.response_channel, self.response_stream_id)
        except RegistrationError as ex:
            error_handler(ClusterError(f"failed to connect session response publication: {ex}",
                                       category=Category.WARN))

    def disconnect(self, aeron: Any, error_handler: Any) -> None:
        """Remove the response publication and counter (asked for or added)."""
        if self._response_publication_id != NULL_VALUE:
            aeron.async_remove_publication(self._response_publication_id)
            self._response_publication_id = NULL_VALUE
        else:
            publication, self.response_publication = self.response_publication, None
            if publication is not None:
                try:
                    publication.close()
                except Exception as ex:     # noqa: BLE001 - reported as CloseHelper.close(errorHandler, ...)
                    error_handler(ex)
        if self._counter_registration_id != NULL_VALUE:
            aeron.async_remove_counter(self._counter_registration_id)
            self._counter_registration_id = NULL_VALUE
        else:
            counter, self.counter = self.counter, None
            if counter is not None:
                try:
                    counter.close()
                except Exception as ex:     # noqa: BLE001
                    error_handler(ex)

    def is_response_publication_connected(self, aeron: Any, now_ns: int) -> bool:
        """Pick up the response publication once the driver answered (CONNECTING; asked again when the driver was
        only temporarily unable), then whether it is connected. Our client's ``get_publication`` is None while
        the add is pending, where Aeron's asks ``isCommandActive`` first."""
        if self.response_publication is None and self._response_publication_id != NULL_VALUE:
            try:
                publication = aeron.get_publication(self._response_publication_id)
            except RegistrationError as ex:
                if ex.error_code == ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE:
                    self._response_publication_id = aeron.async_add_publication(self.response_channel,
                                                                               self.response_stream_id)
                    return False
                self._response_publication_id = NULL_VALUE
                self.set_state(State.INVALID, f"response publication refused: {ex}")
                raise
            if publication is None:
                return False
            self.response_publication = publication
            self._response_publication_id = NULL_VALUE
            self.time_of_last_activity_ns = now_ns
            self.set_state(State.CONNECTING, "connecting")
        self._pick_up_counter(aeron)
        return self.response_publication is not None and bool(self.response_publication.is_connected)

    def _pick_up_counter(self, aeron: Any) -> None:
        # the session counter refers to the response publication and holds the session id
        if self.counter is None and self._counter_registration_id != NULL_VALUE and \
                self.response_publication is not None:
            try:
                counter = aeron.get_counter(self._counter_registration_id)
            except RegistrationError:
                self._counter_registration_id = NULL_VALUE
                return
            if counter is not None:
                self.counter = counter
                self._counter_registration_id = NULL_VALUE
                _set_reference_id(aeron, counter.counter_id, self.response_publication.registration_id)
                counter.set_ordered(self.id)

    def offer(self, buffer: Any, offset: int, length: int) -> int:
        """Offer on the response publication (NOT_CONNECTED without one)."""
        publication = self.response_publication
        if publication is None:
            return NOT_CONNECTED
        return int(publication.offer(buffer, offset, length))

    def append_session_to_log_and_send_open(self, log_publisher: Any, egress_publisher: Any, leadership_term_id: int,
                                            member_id: int, now_ns: int, cluster_timestamp: int) -> bool:
        """Leader: append SessionOpenEvent when the response publication has window, then OPEN and SessionEvent
        OK (without waiting for the commit); whether it was appended."""
        publication = self.response_publication
        if publication.position_limit - publication.position > 0:      # Aeron's Publication.availableWindow
            position = log_publisher.append_session_open(self, leadership_term_id, cluster_timestamp)
            if position > 0:
                self.open(position)
                self.time_of_last_activity_ns = now_ns
                self.send_session_open_event(egress_publisher, leadership_term_id, member_id)
                return True
        return False

    def send_session_open_event(self, egress_publisher: Any, leadership_term_id: int, member_id: int) -> int:
        """SessionEvent OK to the client; 1 when sent."""
        if egress_publisher.send_event(self, leadership_term_id, member_id, EventCode.OK, ""):
            self.has_open_event_pending = False
            return 1
        return 0

    def _add_session_counter(self, aeron: Any, cluster_id: int) -> int:
        key = struct.pack("<iq", cluster_id, self.id)
        label = f"cluster-session: {self.session_info}{CLUSTER_ID_LABEL_SUFFIX}{cluster_id}"
        return int(aeron.async_add_counter(CLUSTER_SESSION_TYPE_ID, _truncate_label(label), key))

    def __repr__(self) -> str:
        """Id, state and channel."""
        return (f"ClusterSession{{id={self.id}, clusterMemberId={self.cluster_member_id}, "
                f"responseStreamId={self.response_stream_id}, responseChannel='{self.response_channel}', "
                f"state={self.state.name}, action={self.action.name}}}")


def _truncate_label(label: str) -> str:
    # a counter label holds 380 bytes
    encoded = label.encode("utf-8")
    return label if len(encoded) <= 380 else encoded[:380].decode("utf-8", "ignore")


def _set_reference_id(aeron: Any, counter_id: int, reference_id: int) -> None:
    # Aeron's AeronCounters.setReferenceId: the counter refers to the session's response publication
    values = aeron.counters_reader.values_buffer
    values.put_i64(counter_id * _COUNTER_LENGTH + _REFERENCE_ID_OFFSET, reference_id)
