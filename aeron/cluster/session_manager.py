# SPDX-License-Identifier: Apache-2.0
"""The consensus module's client sessions (Aeron's ``SessionManager`` and ``ClusterSessionProxy``).

A connect request arriving at a follower is answered with a REDIRECT to the members' ingress endpoints. At the
leader it becomes a pending session with the next session id (ids start at 1); it is rejected for a client of
another major protocol version or beyond the concurrent session limit, otherwise it waits for its egress
publication to connect and for the authenticator to decide; once authenticated, and when its egress has window,
its SessionOpenEvent is appended to the log and SessionEvent OK sent. Open sessions time out without ingress
activity (SessionCloseEvent TIMEOUT appended), and close on the client's request or a service's.

Appends the leader made but the cluster did not commit are undone by an election: a close goes back to CLOSING to
be appended again, and the next committed session id (what the snapshot records) moves only with the commit
position. Backup, heartbeat and standby snapshot requests get short-lived sessions of their own.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.codecs.cluster import CloseReason, EventCode
from aeron.archive.configuration import NULL_POSITION
from aeron.cluster.cluster_session import Action, ClusterSession, State, check_encoded_principal_length
from aeron.common.constants import INT64_MAX, NULL_VALUE

__all__ = ["ClusterSessionProxy", "SessionManager", "SESSION_INVALID_VERSION_MSG", "SESSION_LIMIT_MSG",
           "SESSION_REJECTED_MSG"]

SESSION_LIMIT_MSG = "concurrent session limit"
SESSION_REJECTED_MSG = "session failed authentication"
SESSION_INVALID_VERSION_MSG = "invalid client version"
CLIENT_PROTOCOL_MAJOR_VERSION = 0
CLIENT_PROTOCOL_SEMANTIC_VERSION = (0 << 16) | (3 << 8) | 0


def _version_string(version: int) -> str:
    return f"{(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}.{version & 0xFF}"


def _major(version: int) -> int:
    return (version >> 16) & 0xFF


class ClusterSessionProxy:
    """The :class:`aeron.common.security.SessionProxy` an authenticator decides through (one, re-pointed at each
    session asked about)."""

    __slots__ = ("_egress_publisher", "_session")

    def __init__(self, egress_publisher: Any) -> None:
        """Challenges go out through ``egress_publisher``."""
        self._egress_publisher = egress_publisher
        self._session: Any = None

    def session(self, cluster_session: ClusterSession) -> ClusterSessionProxy:
        """Point at ``cluster_session``; returns self."""
        self._session = cluster_session
        return self

    @property
    def session_id(self) -> int:
        """The session's id."""
        return int(self._session.id)

    def challenge(self, encoded_challenge: bytes) -> bool:
        """Send a Challenge; CHALLENGED when it went."""
        if self._egress_publisher.send_challenge(self._session, encoded_challenge):
            self._session.set_state(State.CHALLENGED, "challenged")
            return True
        return False

    def authenticate(self, encoded_principal: bytes | None) -> bool:
        """AUTHENTICATED with ``encoded_principal`` (ClusterError beyond 4 KiB)."""
        check_encoded_principal_length(encoded_principal)
        self._session.authenticate(encoded_principal)
        return True

    def reject(self) -> None:
        """REJECTED: AUTHENTICATION_REJECTED goes to the client."""
        self._session.reject(EventCode.AUTHENTICATION_REJECTED, SESSION_REJECTED_MSG, None)


class SessionManager:
    """Sessions of a consensus module: pending, rejected, redirected and open ones."""

    def __init__(self, active_members: Any, member_id: int, cluster_clock: Any, egress_publisher: Any, aeron: Any,
                 session_timeout_ns: int, error_handler: Any, timed_out_counter: Any, error_log: Any,
                 accept_standby_snapshots: bool, standby_snapshot_counter: Any, authenticator: Any,
                 authorisation_service: Any, recording_log: Any, log_publisher: Any, consensus_publisher: Any,
                 commit_position_counter_id: int, cluster_id: int, max_concurrent_sessions: int, service_count: int,
                 standby_snapshot_notification_processing_delay_ns: int = 0) -> None:
        """The collaborators, as Aeron's constructor takes them (``error_log(exception)`` records a rejection)."""
        self.active_members = active_members
        self.member_id = member_id
        self.cluster_clock = cluster_clock
        self.egress_publisher = egress_publisher
        self.aeron = aeron
        self.session_timeout_ns = session_timeout_ns
        self.error_handler = error_handler
        self.timed_out_counter = timed_out_counter
        self.error_log = error_log
        self.accept_standby_snapshots = accept_standby_snapshots
        self.standby_snapshot_counter = standby_snapshot_counter
        self.authenticator = authenticator
        self.authorisation_service = authorisation_service
        self.recording_log = recording_log
        self.log_publisher = log_publisher
        self.consensus_publisher = consensus_publisher
        self.commit_position_counter_id = commit_position_counter_id
        self.cluster_id = cluster_id
        self.max_concurrent_sessions = max_concurrent_sessions
        self.service_count = service_count
        self.standby_snapshot_notification_processing_delay_ns = standby_snapshot_notification_processing_delay_ns
        self._session_proxy = ClusterSessionProxy(egress_publisher)
        self._session_by_id: dict[int, ClusterSession] = {}
        self.sessions: list[ClusterSession] = []             # open and closing, in id order
        self.pending_user_sessions: list[ClusterSession] = []
        self.rejected_user_sessions: list[ClusterSession] = []
        self.redirect_user_sessions: list[ClusterSession] = []
        self.pending_backup_sessions: list[ClusterSession] = []
        self.rejected_backup_sessions: list[ClusterSession] = []
        self._uncommitted_closed_sessions: deque[ClusterSession] = deque()
        self._pending_standby_snapshot_notifications: deque[list[Any]] = deque()
        self._delayed_standby_snapshot_notifications: deque[tuple[int, list[Any]]] = deque()
        self._uncommitted_next_committed_session_ids: deque[tuple[int, int]] = deque()
        self.next_session_id = 1
        self.next_committed_session_id = 1

    # -- lookup ---------------------------------------------------------------------------------------------

    @property
    def session_by_id(self) -> dict[int, ClusterSession]:
        """The open and closing sessions by id (the one map, for the compiled ingress path to look them up)."""
        return self._session_by_id

    def find_by_session_id(self, cluster_session_id: int) -> ClusterSession | None:
        """The open or closing session with this id."""
        return self._session_by_id.get(cluster_session_id)

    def find_all(self) -> Iterable[ClusterSession]:
        """The open and closing sessions."""
        return self.sessions

    def close_session(self, session: ClusterSession) -> None:
        """Remove ``session`` and close it."""
        self._session_by_id.pop(session.id, None)
        for i in range(len(self.sessions) - 1, -1, -1):
            if self.sessions[i].id == session.id:
                del self.sessions[i]
                break
        session.close(self.aeron, self.error_handler, "closed")

    # -- ingress --------------------------------------------------------------------------------------------

    def on_session_connect(self, correlation_id: int, response_stream_id: int, version: int, response_channel: str,
                           encoded_credentials: bytes, client_info: str, image: Any, role: int,
                           ingress_endpoints: str | None) -> None:
        """A SessionConnectRequest arrived through ``image``; ``role`` is this member's (Cluster.Role code)."""
        is_leader = role == 2
        cluster_session_id = NULL_VALUE
        if is_leader:
            cluster_session_id = self.next_session_id
            self.next_session_id += 1
        session = ClusterSession(self.member_id, cluster_session_id, response_stream_id, response_channel,
                                 _session_info(client_info, image))
        session.async_connect(self.aeron, self.cluster_id)
        now_ns = self.cluster_clock.time_nanos()
        session.last_activity_ns(now_ns, correlation_id)
        if not is_leader:
            session.redirect(ingress_endpoints or "")
            self.redirect_user_sessions.append(session)
        elif _major(version) != CLIENT_PROTOCOL_MAJOR_VERSION:
            detail = (f"{SESSION_INVALID_VERSION_MSG} {_version_string(version)}, cluster is "
                      f"{_version_string(CLIENT_PROTOCOL_SEMANTIC_VERSION)}")
            session.reject(EventCode.ERROR, detail, self.error_log)
            self.rejected_user_sessions.append(session)
        elif len(self.pending_user_sessions) + len(self.sessions) >= self.max_concurrent_sessions:
            session.reject(EventCode.ERROR, SESSION_LIMIT_MSG, self.error_log)
            self.rejected_user_sessions.append(session)
        else:
            session.link_ingress_image(image)
            self.authenticator.on_connect_request(session.id, bytes(encoded_credentials), now_ns // 1_000_000)
            self.pending_user_sessions.append(session)

    def on_session_close(self, leadership_term_id: int, cluster_session_id: int) -> None:
        """The client asked to close: append SessionCloseEvent CLIENT_ACTION and remove the session."""
        session = self._session_by_id.get(cluster_session_id)
        if session is not None and session.is_open():
            session.closing(CloseReason.CLIENT_ACTION)
            session.disconnect(self.aeron, self.error_handler)
            timestamp = self.cluster_clock.time()
            if self.log_publisher.append_session_close(self.member_id, session, leadership_term_id, timestamp):
                session.closed_log_position = self.log_publisher.position()
                self._uncommitted_closed_sessions.append(session)
                self.close_session(session)

    def on_backup_query(self, correlation_id: int, response_stream_id: int, version: int, log_position: int,
                        response_channel: str, encoded_credentials: bytes, image: Any) -> None:
        """A ClusterBackup asked for the recording log and snapshots."""
        self._on_backup_action(Action.BACKUP, None if log_position == NULL_VALUE else log_position, correlation_id,
                               response_stream_id, version, response_channel, encoded_credentials, image)

    def on_heartbeat_request(self, correlation_id: int, response_stream_id: int, response_channel: str,
                             encoded_credentials: bytes, image: Any) -> None:
        """A backup or standby probes liveness."""
        self._on_backup_action(Action.HEARTBEAT, None, correlation_id, response_stream_id,
                               CLIENT_PROTOCOL_SEMANTIC_VERSION, response_channel, encoded_credentials, image)

    def on_standby_snapshot(self, correlation_id: int, version: int, entries: list[Any], response_stream_id: int,
                            response_channel: str, encoded_credentials: bytes, image: Any) -> None:
        """A standby announced snapshots it took."""
        self._on_backup_action(Action.STANDBY_SNAPSHOT, entries, correlation_id, response_stream_id, version,
                               response_channel, encoded_credentials, image)

    def _on_backup_action(self, action: Action, request_input: Any, correlation_id: int, response_stream_id: int,
                          version: int, response_channel: str, encoded_credentials: bytes, image: Any) -> None:
        session = ClusterSession(self.member_id, NULL_VALUE, response_stream_id, response_channel,
                                 _session_info(action.name, image))
        now_ns = self.cluster_clock.time_nanos()
        session.action = action
        session.async_connect(self.aeron, self.cluster_id)
        session.last_activity_ns(now_ns, correlation_id)
        session.request_input = request_input
        if _major(version) == CLIENT_PROTOCOL_MAJOR_VERSION:
            self.authenticator.on_connect_request(session.id, bytes(encoded_credentials), now_ns // 1_000_000)
            self.pending_backup_sessions.append(session)
        else:
            detail = (f"{SESSION_INVALID_VERSION_MSG} {_version_string(version)}, cluster="
                      f"{_version_string(CLIENT_PROTOCOL_SEMANTIC_VERSION)}")
            session.reject(EventCode.ERROR, detail, self.error_log)
            self.rejected_backup_sessions.append(session)

    def on_challenge_response_for_backup_session(self, correlation_id: int, cluster_session_id: int,
                                                 encoded_credentials: bytes) -> None:
        """A backup answered a challenge."""
        self._on_challenge_response(self.pending_backup_sessions, correlation_id, cluster_session_id,
                                    encoded_credentials)

    def on_challenge_response_for_user_session(self, correlation_id: int, cluster_session_id: int,
                                               encoded_credentials: bytes) -> None:
        """A client answered a challenge."""
        self._on_challenge_response(self.pending_user_sessions, correlation_id, cluster_session_id,
                                    encoded_credentials)

    def _on_challenge_response(self, pending: list[ClusterSession], correlation_id: int, cluster_session_id: int,
                               encoded_credentials: bytes) -> None:
        for i in range(len(pending) - 1, -1, -1):
            session = pending[i]
            if session.id == cluster_session_id and session.state is State.CHALLENGED:
                now_ns = self.cluster_clock.time_nanos()
                session.last_activity_ns(now_ns, correlation_id)
                self.authenticator.on_challenge_response(cluster_session_id, bytes(encoded_credentials),
                                                         now_ns // 1_000_000)
                break

    # -- from the services and the log ---------------------------------------------------------------------

    def on_service_close_session(self, cluster_session_id: int, is_active_leader: bool, leadership_term_id: int) -> None:
        """A service closed a session: the active leader appends SessionCloseEvent SERVICE_ACTION and tells the
        client; elsewhere the session is CLOSING (the log will close it)."""
        session = self._session_by_id.get(cluster_session_id)
        if session is None:
            return
        session.closing(CloseReason.SERVICE_ACTION)
        if is_active_leader:
            timestamp = self.cluster_clock.time()
            if self.log_publisher.append_session_close(self.member_id, session, leadership_term_id, timestamp):
                self.egress_publisher.send_event(session, leadership_term_id, self.member_id, EventCode.CLOSED,
                                                 CloseReason.SERVICE_ACTION.name)
                session.closed_log_position = self.log_publisher.position()
                self._uncommitted_closed_sessions.append(session)
                self.close_session(session)

    def on_replay_session_open(self, log_position: int, correlation_id: int, cluster_session_id: int, timestamp: int,
                               response_stream_id: int, response_channel: str) -> None:
        """A SessionOpenEvent read from the log (follower, or replay)."""
        session = ClusterSession(self.member_id, cluster_session_id, response_stream_id, response_channel,
                                 response_channel)
        session.open(log_position)
        session.last_activity_ns(self.cluster_clock.convert_to_nanos(timestamp), correlation_id)
        self._add_session(session)
        if cluster_session_id >= self.next_session_id:
            self.next_session_id = cluster_session_id + 1
        if cluster_session_id >= self.next_committed_session_id:
            self.next_committed_session_id = cluster_session_id + 1

    def on_replay_session_close(self, cluster_session_id: int, close_reason: int) -> None:
        """A SessionCloseEvent read from the log."""
        session = self._session_by_id.get(cluster_session_id)
        if session is not None:
            session.closing(close_reason)
            self.close_session(session)

    def on_load_cluster_session(self, cluster_session_id: int, correlation_id: int, opened_position: int,
                                time_of_last_activity: int, close_reason: int, response_stream_id: int,
                                response_channel: str) -> None:
        """A ClusterSession entry of the snapshot."""
        session = ClusterSession(self.member_id, cluster_session_id, response_stream_id, response_channel,
                                 response_channel)
        session.load_snapshot_state(correlation_id, opened_position, time_of_last_activity, close_reason)
        self._add_session(session)
        if cluster_session_id >= self.next_session_id:
            self.next_session_id = cluster_session_id + 1
            self.next_committed_session_id = self.next_session_id

    def load_next_session_id(self, next_session_id: int) -> None:
        """The snapshot's next session id."""
        self.next_session_id = next_session_id
        self.next_committed_session_id = next_session_id

    # -- duty cycle -----------------------------------------------------------------------------------------

    def process_all_pending_sessions(self, now_ns: int, leader_member_id: int, leadership_term_id: int) -> int:
        """Leader: move pending user and backup sessions on."""
        work = self.process_pending_sessions(self.pending_user_sessions, self.rejected_user_sessions, now_ns,
                                             leader_member_id, leadership_term_id)
        work += self.process_pending_sessions(self.pending_backup_sessions, self.rejected_backup_sessions, now_ns,
                                              leader_member_id, leadership_term_id)
        return work

    def process_pending_backup_sessions(self, now_ns: int, leader_member_id: int, leadership_term_id: int) -> int:
        """Follower: move pending backup sessions on."""
        return self.process_pending_sessions(self.pending_backup_sessions, self.rejected_backup_sessions, now_ns,
                                             leader_member_id, leadership_term_id)

    def process_pending_sessions(self, pending: list[ClusterSession], rejected: list[ClusterSession], now_ns: int,
                                 leader_member_id: int, leadership_term_id: int) -> int:
        """Connect, authenticate and open (or answer) the pending sessions."""
        work = 0
        aeron = self.aeron
        for i in range(len(pending) - 1, -1, -1):
            session = pending[i]
            if session.state is State.INVALID:
                _remove(pending, i)
                session.close(aeron, self.error_handler, "invalid session")
                continue
            if now_ns > session.time_of_last_activity_ns + self.session_timeout_ns and session.state is not State.INIT:
                _remove(pending, i)
                session.close(aeron, self.error_handler, "session timed out")
                self.timed_out_counter.increment_ordered()
                continue
            if session.state in (State.INIT, State.CONNECTING, State.CONNECTED):
                if session.is_response_publication_connected(aeron, now_ns):
                    session.set_state(State.CONNECTED, "connected")
                    self.authenticator.on_connected_session(self._session_proxy.session(session),
                                                            self.cluster_clock.time_millis())
            if session.state is State.CHALLENGED:
                if session.is_response_publication_connected(aeron, now_ns):
                    self.authenticator.on_challenged_session(self._session_proxy.session(session),
                                                             self.cluster_clock.time_millis())
            if session.state is State.AUTHENTICATED:
                work += self._on_authenticated(pending, i, session, now_ns, leader_member_id, leadership_term_id)
            elif session.state is State.REJECTED:
                _remove(pending, i)
                rejected.append(session)
        return work

    def _on_authenticated(self, pending: list[ClusterSession], i: int, session: ClusterSession, now_ns: int,
                          leader_member_id: int, leadership_term_id: int) -> int:
        action = session.action
        if action is Action.CLIENT:
            if session.append_session_to_log_and_send_open(self.log_publisher, self.egress_publisher,
                                                           leadership_term_id, self.member_id, now_ns,
                                                           self.cluster_clock.time()):
                self._uncommitted_next_committed_session_ids.append((self.log_publisher.position(), session.id + 1))
                _remove(pending, i)
                self._add_session(session)
                return 1
            return 0
        if action is Action.BACKUP:
            if not self.authorisation_service.is_authorised(codecs.SCHEMA_ID, codecs.BackupQueryDecoder.TEMPLATE_ID,
                                                            None, session.encoded_principal):
                session.reject(EventCode.AUTHENTICATION_REJECTED, "Not authorised for BackupQuery", self.error_log)
                return 0
            log_position = INT64_MAX if session.request_input is None else session.request_input
            entry = self.recording_log.find_last_term()
            if entry is not None and self.consensus_publisher.backup_response(
                    session, self.commit_position_counter_id, leader_member_id, self.member_id, entry,
                    _encode_members(self.active_members),
                    self.recording_log.find_snapshot_at_or_before_or_lowest(log_position, self.service_count)):
                _remove(pending, i)
                session.close(self.aeron, self.error_handler, "done")
                return 1
            return 0
        if action is Action.HEARTBEAT:
            if not self.authorisation_service.is_authorised(codecs.SCHEMA_ID,
                                                            codecs.HeartbeatRequestDecoder.TEMPLATE_ID, None,
                                                            session.encoded_principal):
                session.reject(EventCode.AUTHENTICATION_REJECTED, "Not authorised for Heartbeat", self.error_log)
                return 0
            if self.consensus_publisher.heartbeat_response(session):
                _remove(pending, i)
                session.close(self.aeron, self.error_handler, "done")
                return 1
            return 0
        # STANDBY_SNAPSHOT
        if not self.accept_standby_snapshots:
            session.reject(EventCode.ERROR, "Not configured to accept StandbySnapshot", self.error_log)
            return 0
        if not self.authorisation_service.is_authorised(codecs.SCHEMA_ID, codecs.StandbySnapshotDecoder.TEMPLATE_ID,
                                                        None, session.encoded_principal):
            session.reject(EventCode.AUTHENTICATION_REJECTED, "Not authorised for StandbySnapshot", self.error_log)
            return 0
        self._pending_standby_snapshot_notifications.append(session.request_input)
        _remove(pending, i)
        session.close(self.aeron, self.error_handler, "done")
        return 1

    def process_pending_standby_snapshot_notifications(self, commit_position: int, now_ns: int) -> int:
        """Record standby snapshots in the recording log once the commit position passed them."""
        work = 0
        pending = self._pending_standby_snapshot_notifications
        for entries in list(pending):
            if not entries:
                pending.remove(entries)
                continue
            if entries[0].log_position > commit_position:
                continue
            if self.standby_snapshot_notification_processing_delay_ns > 0:
                self._delayed_standby_snapshot_notifications.append(
                    (now_ns + self.standby_snapshot_notification_processing_delay_ns, entries))
            else:
                self._append_standby_snapshot(entries)
            pending.remove(entries)
            work += 1
        delayed = self._delayed_standby_snapshot_notifications
        while delayed and now_ns - delayed[0][0] >= 0:
            self._append_standby_snapshot(delayed.popleft()[1])
            work += 1
        return work

    def _append_standby_snapshot(self, entries: list[Any]) -> None:
        for e in entries:
            self.recording_log.append_standby_snapshot(e.recording_id, e.leadership_term_id, e.term_base_log_position,
                                                       e.log_position, e.timestamp, e.service_id, e.archive_endpoint)
        if self.standby_snapshot_counter is not None:
            self.standby_snapshot_counter.increment()

    def check_sessions(self, now_ns: int, leadership_term_id: int, leader_member_id: int,
                       ingress_endpoints: str | None) -> int:
        """Leader: time out idle sessions, append the closes of closing ones, and send owed open or new-leader
        events."""
        work = 0
        sessions = self.sessions
        for i in range(len(sessions) - 1, -1, -1):
            session = sessions[i]
            if now_ns > session.time_of_last_activity_ns + self.session_timeout_ns:
                state = session.state
                if state is State.OPEN:
                    session.closing(CloseReason.TIMEOUT)
                    if self._append_close(session, leadership_term_id):
                        self.timed_out_counter.increment_ordered()
                        self.close_session(session)
                    work += 1
                elif state is State.CLOSING:
                    if self._append_close(session, leadership_term_id):
                        if session.close_reason == CloseReason.TIMEOUT:
                            self.timed_out_counter.increment_ordered()
                        self.close_session(session)
                        work += 1
                else:
                    self.close_session(session)
                    work += 1
            elif session.has_open_event_pending:
                work += session.send_session_open_event(self.egress_publisher, leadership_term_id, self.member_id)
            elif session.has_new_leader_event_pending:
                work += self._send_new_leader_event(session, leadership_term_id, leader_member_id,
                                                    ingress_endpoints or "")
        return work

    def _append_close(self, session: ClusterSession, leadership_term_id: int) -> bool:
        timestamp = self.cluster_clock.time()
        if self.log_publisher.append_session_close(self.member_id, session, leadership_term_id, timestamp):
            self.egress_publisher.send_event(session, leadership_term_id, self.member_id, EventCode.CLOSED,
                                             CloseReason(session.close_reason).name)
            session.closed_log_position = self.log_publisher.position()
            self._uncommitted_closed_sessions.append(session)
            return True
        return False

    def prepare_sessions_for_new_term(self, is_startup: bool) -> None:
        """A new leader's sessions: after a cold start each open one times out (its client connected to a cluster
        that no longer exists); otherwise each reconnects its egress and owes its client a NewLeaderEvent."""
        if is_startup:
            for session in self.sessions:
                if session.state is State.OPEN:
                    session.closing(CloseReason.TIMEOUT)
            return
        for session in self.sessions:
            if session.state is State.OPEN:
                session.connect(self.error_handler, self.aeron, self.cluster_id)
        now_ns = self.cluster_clock.time_nanos()
        for session in self.sessions:
            if session.state is State.OPEN:
                session.time_of_last_activity_ns = now_ns
                session.has_new_leader_event_pending = True

    def send_redirects(self, leadership_term_id: int, leader_member_id: int, now_ns: int) -> int:
        """Answer redirected connects once their egress connects."""
        return self._send_for_all(self.redirect_user_sessions, leadership_term_id, leader_member_id, now_ns)

    def send_rejections(self, leadership_term_id: int, leader_member_id: int, now_ns: int) -> int:
        """Answer rejected connects and backup requests once their egress connects."""
        return self._send_for_all(self.rejected_user_sessions, leadership_term_id, leader_member_id, now_ns) + \
            self._send_for_all(self.rejected_backup_sessions, leadership_term_id, leader_member_id, now_ns)

    def _send_for_all(self, sessions: list[ClusterSession], leadership_term_id: int, leader_member_id: int,
                      now_ns: int) -> int:
        work = 0
        aeron = self.aeron
        for i in range(len(sessions) - 1, -1, -1):
            session = sessions[i]
            event_code = session.event_code
            if session.is_response_publication_connected(aeron, now_ns) and self.egress_publisher.send_event(
                    session, leadership_term_id, leader_member_id, event_code, session.response_detail or ""):
                _remove(sessions, i)
                session.close(aeron, self.error_handler, event_code.name if event_code is not None else "")
                work += 1
            elif session.has_timed_out(now_ns, self.session_timeout_ns):
                _remove(sessions, i)
                session.close(aeron, self.error_handler, "session timed out")
                work += 1
            elif session.state is State.INVALID:
                _remove(sessions, i)
                session.close(aeron, self.error_handler, "invalid")
                work += 1
        return work

    def clear_sessions_after(self, log_position: int, leadership_term_id: int) -> None:
        """An election discards the log after ``log_position``: sessions opened there, and pending ones, are
        closed ("election")."""
        for i in range(len(self.sessions) - 1, -1, -1):
            session = self.sessions[i]
            if session.opened_log_position > log_position:
                self.egress_publisher.send_event(session, leadership_term_id, self.member_id, EventCode.CLOSED,
                                                 "election")
                self.close_session(session)
        for session in self.pending_user_sessions:
            self.egress_publisher.send_event(session, leadership_term_id, self.member_id, EventCode.CLOSED, "election")
            session.close(self.aeron, self.error_handler, "election")
        self.pending_user_sessions.clear()

    def disconnect_sessions(self) -> None:
        """Drop every open session's egress and ingress link (a new term reconnects them)."""
        for session in self.sessions:
            session.unlink_ingress_image()
            session.disconnect(self.aeron, self.error_handler)

    def close_sessions(self, error_handler: Any = None) -> None:
        """Close every session (the node terminates)."""
        for session in list(self._session_by_id.values()):
            session.close(self.aeron, error_handler or self.error_handler, "Cluster node terminated")

    def sweep_uncommitted_sessions(self, commit_position: int) -> None:
        """The commit position moved: closes and session ids it passed are final."""
        closed = self._uncommitted_closed_sessions
        while closed and closed[0].closed_log_position <= commit_position:
            closed.popleft()
        ids = self._uncommitted_next_committed_session_ids
        while ids and ids[0][0] <= commit_position:
            self.next_committed_session_id = max(self.next_committed_session_id, ids.popleft()[1])

    def restore_uncommitted_sessions(self, commit_position: int) -> None:
        """An election rolled back the log to ``commit_position``: closes after it are undone (CLOSING again) and
        the session ids allocated after it are not committed."""
        closed = self._uncommitted_closed_sessions
        while closed:
            session = closed.popleft()
            if session.closed_log_position > commit_position:
                session.closed_log_position = NULL_POSITION
                session.set_state(State.CLOSING, "uncommitted session")
                self._add_session(session)
        ids = self._uncommitted_next_committed_session_ids
        while ids and ids[0][0] <= commit_position:
            self.next_committed_session_id = max(self.next_committed_session_id, ids.popleft()[1])
        ids.clear()

    def update_time_of_last_activity(self) -> None:
        """Every session was active now (after a snapshot, which stalls ingress)."""
        now_ns = self.cluster_clock.time_nanos()
        for session in self.sessions:
            session.time_of_last_activity_ns = now_ns

    def snapshot_sessions(self, snapshot_taker: Any) -> None:
        """A ClusterSession entry for each open or closing session, in id order."""
        for session in self.sessions:
            if session.state in (State.OPEN, State.CLOSING):
                snapshot_taker.snapshot_session(session)

    def timeout_on_unavailable_image(self, image_correlation_id: int) -> None:
        """An ingress image went away: its open sessions are CLOSING with TIMEOUT."""
        for session in self.sessions:
            if session.ingress_image_correlation_id == image_correlation_id and session.is_open():
                session.closing(CloseReason.TIMEOUT)

    def _add_session(self, session: ClusterSession) -> None:
        self._session_by_id[session.id] = session
        sessions = self.sessions
        add_index = len(sessions)
        for i in range(len(sessions) - 1, -1, -1):
            if sessions[i].id < session.id:
                add_index = i + 1
                break
        if add_index == len(sessions):
            sessions.append(session)
        else:
            sessions.insert(add_index, session)

    def _send_new_leader_event(self, session: ClusterSession, leadership_term_id: int, leader_member_id: int,
                               ingress_endpoints: str) -> int:
        if self.egress_publisher.new_leader(session, leadership_term_id, leader_member_id, ingress_endpoints):
            session.has_new_leader_event_pending = False
            return 1
        return 0


def _remove(items: list[Any], i: int) -> None:
    # ArrayListUtil.fastUnorderedRemove: the last element takes the removed one's place
    last = items.pop()
    if i < len(items):
        items[i] = last


def _session_info(client_info: str | None, image: Any) -> str:
    if image is None:
        image_info = "sourceIdentity=null sessionId=0"
    else:
        image_info = f"sourceIdentity={image.source_identity} sessionId={image.session_id}"
    return f"{client_info} {image_info}" if client_info else image_info


def _encode_members(members: Any) -> str:
    return "|".join(f"{m.id},{m.endpoints}" for m in members)

