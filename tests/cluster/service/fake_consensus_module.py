# SPDX-License-Identifier: Apache-2.0
"""A consensus module played by the test, for the clustered service container alone: it publishes the counters a
consensus module does (commit position, recovery state), talks the control protocol (streams 104 and 105) and
writes the log as a leader does, an exclusive IPC publication whose position the test commits by hand.

A test that restarts the container closes the old one with :func:`close_container` before it makes the next consensus
module, and each consensus module checks the acks as Aeron's does: see there why."""
from __future__ import annotations

import struct
from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.counters import DRIVER_HEARTBEAT_TYPE_ID, NULL_COUNTER_ID
from aeron.client import FragmentAssembler
from aeron.cluster.service.cluster import Role
from aeron.cluster.service.cluster_counters import CLUSTER_COMMIT_POSITION_TYPE_ID
from aeron.cluster.service.recovery_state import RecoveryState
from tests.cluster.service.conftest import encode
from tests.support import wait_for

CONTROL = "aeron:ipc?term-length=128k"
MAX_POSITION = 2 ** 63 - 1
DECODERS = {codecs.ServiceAckDecoder.TEMPLATE_ID: codecs.ServiceAckDecoder,
            codecs.ScheduleTimerDecoder.TEMPLATE_ID: codecs.ScheduleTimerDecoder,
            codecs.CancelTimerDecoder.TEMPLATE_ID: codecs.CancelTimerDecoder,
            codecs.CloseSessionDecoder.TEMPLATE_ID: codecs.CloseSessionDecoder,
            codecs.SessionMessageHeaderDecoder.TEMPLATE_ID: codecs.SessionMessageHeaderDecoder}
FIELDS = {codecs.ServiceAckDecoder.TEMPLATE_ID: ("log_position", "timestamp", "ack_id", "relevant_id", "service_id"),
          codecs.ScheduleTimerDecoder.TEMPLATE_ID: ("correlation_id", "deadline"),
          codecs.CancelTimerDecoder.TEMPLATE_ID: ("correlation_id",),
          codecs.CloseSessionDecoder.TEMPLATE_ID: ("cluster_session_id",),
          codecs.SessionMessageHeaderDecoder.TEMPLATE_ID: ("leadership_term_id", "cluster_session_id", "timestamp")}
NAMES = {codecs.ServiceAckDecoder.TEMPLATE_ID: "ack", codecs.ScheduleTimerDecoder.TEMPLATE_ID: "schedule",
         codecs.CancelTimerDecoder.TEMPLATE_ID: "cancel", codecs.CloseSessionDecoder.TEMPLATE_ID: "close",
         codecs.SessionMessageHeaderDecoder.TEMPLATE_ID: "message"}


class FakeConsensusModule:
    """The counters, control channel and log of a consensus module, driven by the test."""

    def __init__(self, client: Any, cluster_id: int = 0, leadership_term_id: int = -1, log_position: int = 0,
                 timestamp: int = 0, snapshot_recording_ids: tuple[int, ...] = ()) -> None:
        self.client = client
        self.cluster_id = cluster_id
        self.commit_position = client.add_counter(CLUSTER_COMMIT_POSITION_TYPE_ID,
                                                  f"Cluster commit-pos: - clusterId={cluster_id}",
                                                  struct.pack("<i", cluster_id))
        self.recovery_state = RecoveryState.allocate(client, leadership_term_id, log_position, timestamp, cluster_id,
                                                     *snapshot_recording_ids)
        self.to_services = client.add_exclusive_publication(CONTROL, 104)
        self.from_services = client.add_subscription(CONTROL, 105)
        self.log = client.add_exclusive_publication("aeron:ipc?term-length=64k|alias=log", 100)
        self.received: list[tuple] = []
        self.next_ack_ids: dict[int, int] = {}          # service id -> the ack id due next from it
        self._assembler = FragmentAssembler(self._on_message)

    def close(self) -> None:
        for resource in (self.log, self.from_services, self.to_services, self.recovery_state, self.commit_position):
            resource.close()

    def _on_message(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        template_id = buffer.get_i16(offset + 2) & 0xFFFF
        decoder = DECODERS[template_id]().wrap_header(buffer, offset, offset + length)
        values = tuple(getattr(decoder, name) for name in FIELDS[template_id])
        decoder.release()
        if template_id == codecs.ServiceAckDecoder.TEMPLATE_ID:
            self._check_ack(*values)
        payload = buffer.get_bytes(offset + 32, length - 32) if template_id == 1 else None
        self.received.append((NAMES[template_id], *values) + ((payload,) if payload is not None else ()))

    def _check_ack(self, log_position: int, timestamp: int, ack_id: int, relevant_id: int, service_id: int) -> None:
        # a service's acks come 0, 1, 2, ... to a consensus module that started with it; Aeron's
        # ConsensusModuleAgent.captureServiceAck and ServiceAck.hasReached refuse any other as invalid
        due = self.next_ack_ids.get(service_id, 0)
        if ack_id != due:
            raise AssertionError(f"ack {ack_id} from service {service_id} where ack {due} was due (logPosition="
                                 f"{log_position} relevantId={relevant_id}): one a closed container sent to the "
                                 f"consensus module before this one? (see close_container)")
        self.next_ack_ids[service_id] = due + 1

    def poll(self) -> int:
        return int(self.from_services.poll(self._assembler, 10))

    def await_received(self, kind: str, count: int = 1, timeout_s: float = 10.0) -> list[tuple]:
        """Poll until ``count`` messages of ``kind`` arrived; returns them all."""
        def matching() -> list[tuple]:
            self.poll()
            found = [m for m in self.received if m[0] == kind]
            return found if len(found) >= count else []
        return wait_for(matching, timeout_s, what=f"{count} {kind}")

    def send(self, message: bytes) -> None:
        wait_for(lambda: self.to_services.offer(message) > 0, what="control message sent")

    def join_log(self, role: Role = Role.LEADER, log_position: int = 0, max_log_position: int = MAX_POSITION,
                 member_id: int = 0, is_startup: bool = True) -> None:
        self.send(encode(codecs.JoinLogEncoder, {"log_channel": "aeron:ipc?term-length=64k"},
                         log_position=log_position, max_log_position=max_log_position, member_id=member_id,
                         log_session_id=self.log.session_id, log_stream_id=100,
                         is_startup=codecs.BooleanType.TRUE if is_startup else codecs.BooleanType.FALSE,
                         role=role, is_standby=codecs.BooleanType.FALSE))

    def start_service(self, role: Role = Role.LEADER, **join: int) -> None:
        """The service's start: its first ack, then a JoinLog and the ack of the join."""
        self.await_received("ack")
        self.join_log(role, **join)
        self.await_received("ack", 2)

    def terminate_at(self, log_position: int, ack_required: bool = True) -> None:
        self.send(encode(codecs.ServiceTerminationPositionEncoder, log_position=log_position,
                         ack_required=codecs.BooleanType.TRUE if ack_required else codecs.BooleanType.FALSE))

    def request_ack(self, log_position: int) -> None:
        self.send(encode(codecs.RequestServiceAckEncoder, log_position=log_position))

    def append(self, message: bytes, commit: bool = True) -> int:
        """Append a log entry (and commit it); returns the log position after it."""
        position = wait_for(lambda: max(self.log.offer(message), 0), what="log append")
        if commit:
            self.commit_position.set_ordered(position)
        return int(position)

    def new_leadership_term(self, leadership_term_id: int = 0, timestamp: int = 1000, app_version: int = 1,
                            time_unit: int = codecs.ClusterTimeUnit.MILLIS) -> int:
        return self.append(encode(codecs.NewLeadershipTermEventEncoder, leadership_term_id=leadership_term_id,
                                  log_position=self.log.position + 96, timestamp=timestamp, term_base_log_position=0,
                                  leader_member_id=0, log_session_id=self.log.session_id, time_unit=time_unit,
                                  app_version=app_version))

    def session_open(self, cluster_session_id: int, response_channel: str = "aeron:ipc", response_stream_id: int = 102,
                     timestamp: int = 1001, principal: bytes = b"") -> int:
        return self.append(encode(codecs.SessionOpenEventEncoder,
                                  {"response_channel": response_channel, "encoded_principal": principal},
                                  leadership_term_id=0, correlation_id=7, cluster_session_id=cluster_session_id,
                                  timestamp=timestamp, response_stream_id=response_stream_id))

    def session_message(self, cluster_session_id: int, payload: bytes, timestamp: int = 1002,
                        commit: bool = True) -> int:
        return self.append(encode(codecs.SessionMessageHeaderEncoder, payload=payload, leadership_term_id=0,
                                  cluster_session_id=cluster_session_id, timestamp=timestamp), commit)

    def timer_event(self, correlation_id: int, timestamp: int = 1003) -> int:
        return self.append(encode(codecs.TimerEventEncoder, leadership_term_id=0, correlation_id=correlation_id,
                                  timestamp=timestamp))

    def session_close(self, cluster_session_id: int, reason: int = codecs.CloseReason.CLIENT_ACTION,
                      timestamp: int = 1004) -> int:
        return self.append(encode(codecs.SessionCloseEventEncoder, leadership_term_id=0,
                                  cluster_session_id=cluster_session_id, timestamp=timestamp, close_reason=reason))

    def cluster_action(self, action: int, flags: int = 0, timestamp: int = 1005) -> int:
        # the entry carries the position after itself, as the leader computes it (a 72-byte frame, aligned to 96)
        return self.append(encode(codecs.ClusterActionRequestEncoder, leadership_term_id=0,
                                  log_position=self.log.position + 96, timestamp=timestamp, action=action,
                                  flags=flags))


def close_container(client: Any, container: Any, timeout_s: float = 10.0) -> None:
    """Close ``container`` and wait until the driver has released its Aeron client (its heartbeat counter freed), as
    it has when a member restarts.

    Until then (the driver releases a client that said goodbye at its next timer tick: ``aeron.timer.interval``, a
    second by default) the container's control publication to the consensus module stays ACTIVE in the driver: the
    next container would share it, and the next consensus module's subscription would join it at its consumer
    position, which the driver refreshes only in its duty cycle (``aeron_ipc_publication_update_pub_pos_and_lmt``)
    and so may lag what the last subscription read (by several acks on a loaded machine), or hold acks nobody read:
    that consensus module would take the old container's acks for its own. Once the client is released and the old
    consensus module's subscription closed, the publication is drained and takes no new subscription
    (``aeron_ipc_publication_is_accepting_subscriptions``)."""
    client_id = container.context.aeron.client_id
    container.close()
    counters = client.counters_reader
    wait_for(lambda: counters.find_by_type_id_and_registration_id(DRIVER_HEARTBEAT_TYPE_ID, client_id)
             == NULL_COUNTER_ID, timeout_s, what=f"the driver released the container's client {client_id}")
