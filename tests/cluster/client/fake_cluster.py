# SPDX-License-Identifier: Apache-2.0
"""A scripted stand-in for a cluster's members, on our embedded driver: each member subscribes to its own ingress
endpoint (UDP on 127.0.0.1), records what the client sends (decoded with the generated codecs) and answers with
whatever the test's ``respond(request, member)`` callback sends on that member's egress publication to the
client's response channel. So the client's connect, redirects, challenges, leader changes and session ends can be
checked against crafted answers, silence and errors, without a consensus module."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aeron._core.codecs import cluster as codecs
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from tests.support import free_port

INGRESS_STREAM_ID = 101
EGRESS_STREAM_ID = 102
SESSION_HEADER_LENGTH = 32
HEARTBEAT_TIMEOUT_NS = 3_000_000_000


@dataclass
class Request:
    """One ingress message as a member received it: ``name`` (SessionConnectRequest, SessionMessageHeader, ...),
    its fields, and the payload after the session header for a session message."""

    member_id: int
    name: str
    fields: dict[str, Any]
    payload: bytes = b""
    at: float = field(default_factory=time.monotonic)


_FIELDS = {
    "SessionConnectRequest": ("correlation_id", "response_stream_id", "version", "response_channel",
                              "encoded_credentials", "client_info"),
    "SessionMessageHeader": ("leadership_term_id", "cluster_session_id", "timestamp"),
    "SessionKeepAlive": ("leadership_term_id", "cluster_session_id"),
    "SessionCloseRequest": ("leadership_term_id", "cluster_session_id"),
    "ChallengeResponse": ("correlation_id", "cluster_session_id", "encoded_credentials"),
    "AdminRequest": ("leadership_term_id", "cluster_session_id", "correlation_id", "request_type", "payload"),
}
_DECODERS = {getattr(codecs, name + "Decoder").TEMPLATE_ID: (name, getattr(codecs, name + "Decoder"))
             for name in _FIELDS}


def encode(encoder_class: Any, fill: Callable[[Any], None], size: int = 4096) -> bytes:
    """One message (header and body) made by ``fill(encoder)``."""
    buffer = bytearray(size)
    encoder = encoder_class().wrap_and_apply_header(buffer, 0)
    fill(encoder)
    length = codecs.MESSAGE_HEADER_LENGTH + encoder.encoded_length
    encoder.release()
    return bytes(buffer[:length])


class FakeMember:
    """One member: its ingress subscription, and an egress publication to each response channel it was told of."""

    def __init__(self, cluster: "FakeCluster", member_id: int) -> None:
        self.cluster = cluster
        self.member_id = member_id
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.subscription = cluster.aeron.add_subscription(f"aeron:udp?endpoint={self.endpoint}", INGRESS_STREAM_ID)
        self.egress: Any = None
        self.response_channel: str | None = None
        self.outbox: list[bytes] = []
        self.assembler = FragmentAssembler(self._on_fragment)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        data = bytearray(buffer.get_bytes(offset, length))
        message_header = codecs.MessageHeaderDecoder().wrap(data, 0)
        template_id = message_header.template_id
        message_header.release()
        if template_id not in _DECODERS:
            self.cluster.requests.append(Request(self.member_id, f"template-{template_id}", {}))
            return
        name, decoder_class = _DECODERS[template_id]
        decoder = decoder_class().wrap_header(data, 0)
        fields = {f: getattr(decoder, f) for f in _FIELDS[name]}
        decoder.release()
        payload = bytes(data[SESSION_HEADER_LENGTH:]) if name == "SessionMessageHeader" else b""
        request = Request(self.member_id, name, fields, payload)
        if name == "SessionConnectRequest":
            self.attach_egress(fields["response_channel"], fields["response_stream_id"])
        if self.cluster.record or name != "SessionMessageHeader":
            self.cluster.requests.append(request)
        self.cluster.respond(request, self)

    def attach_egress(self, response_channel: str, stream_id: int = EGRESS_STREAM_ID) -> None:
        """Publish to the client's response channel (a new leader's egress); waits until connected."""
        if self.egress is not None and self.response_channel == response_channel:
            return
        if self.egress is not None:
            self.egress.close()
        self.response_channel = response_channel
        self.egress = self.cluster.aeron.add_exclusive_publication(response_channel, stream_id)
        deadline = time.monotonic() + 10
        while not self.egress.is_connected and time.monotonic() < deadline:
            time.sleep(0.001)

    def detach_egress(self) -> None:
        """Close the egress publication: the client's egress image goes away."""
        if self.egress is not None:
            self.egress.close()
            self.egress = None

    def close_ingress(self) -> None:
        """Stop listening: the client's ingress publication to this member is no longer connected."""
        self.subscription.close()

    # -- egress messages ----------------------------------------------------------------------------------------
    def send(self, message: bytes) -> None:
        """Queue ``message`` for the egress publication (sent by the member's thread)."""
        self.outbox.append(message)

    def session_event(self, cluster_session_id: int, correlation_id: int, code: int, detail: str = "",
                      leadership_term_id: int = 0, leader_member_id: int | None = None,
                      heartbeat_timeout_ns: int = HEARTBEAT_TIMEOUT_NS) -> None:
        def fill(e: Any) -> None:
            e.cluster_session_id = cluster_session_id
            e.correlation_id = correlation_id
            e.leadership_term_id = leadership_term_id
            e.leader_member_id = self.member_id if leader_member_id is None else leader_member_id
            e.code = code
            e.version = 0x300
            e.leader_heartbeat_timeout_ns = heartbeat_timeout_ns
            e.put_detail(detail)
        self.send(encode(codecs.SessionEventEncoder, fill))

    def new_leader_event(self, cluster_session_id: int, leadership_term_id: int, ingress_endpoints: str) -> None:
        def fill(e: Any) -> None:
            e.leadership_term_id = leadership_term_id
            e.cluster_session_id = cluster_session_id
            e.leader_member_id = self.member_id
            e.put_ingress_endpoints(ingress_endpoints)
        self.send(encode(codecs.NewLeaderEventEncoder, fill))

    def challenge(self, cluster_session_id: int, correlation_id: int, challenge: bytes) -> None:
        def fill(e: Any) -> None:
            e.correlation_id = correlation_id
            e.cluster_session_id = cluster_session_id
            e.put_encoded_challenge(challenge)
        self.send(encode(codecs.ChallengeEncoder, fill))

    def message(self, cluster_session_id: int, payload: bytes, timestamp: int = 0, leadership_term_id: int = 0) -> None:
        def fill(e: Any) -> None:
            e.leadership_term_id = leadership_term_id
            e.cluster_session_id = cluster_session_id
            e.timestamp = timestamp
        self.send(encode(codecs.SessionMessageHeaderEncoder, fill) + payload)

    def admin_response(self, cluster_session_id: int, correlation_id: int, code: int, message: str,
                       payload: bytes = b"") -> None:
        def fill(e: Any) -> None:
            e.cluster_session_id = cluster_session_id
            e.correlation_id = correlation_id
            e.request_type = codecs.AdminRequestType.SNAPSHOT
            e.response_code = code
            e.put_message(message)
            e.put_payload(payload)
        self.send(encode(codecs.AdminResponseEncoder, fill))

    def poll(self) -> int:
        work = 0 if self.subscription.is_closed else self.subscription.poll(self.assembler, 10)
        while self.outbox and self.egress is not None:
            if self.egress.offer(self.outbox[0]) > 0:
                self.outbox.pop(0)
                work += 1
            else:
                break
        return work


def echo_respond(request: Request, member: FakeMember) -> None:
    """The default script: the leader accepts a connect (session ids from 1 up), a follower redirects to the
    leader; session messages are echoed back to their session; nothing else is answered."""
    cluster = member.cluster
    if request.name == "SessionConnectRequest":
        if member.member_id == cluster.leader_id:
            session_id = cluster.next_session_id()
            member.session_event(session_id, request.fields["correlation_id"], codecs.EventCode.OK,
                                 leadership_term_id=cluster.leadership_term_id)
        else:
            member.session_event(-1, request.fields["correlation_id"], codecs.EventCode.REDIRECT,
                                 cluster.ingress_endpoints(), leadership_term_id=cluster.leadership_term_id,
                                 leader_member_id=cluster.leader_id)
    elif request.name == "SessionMessageHeader":
        member.message(request.fields["cluster_session_id"], request.payload, timestamp=123,
                       leadership_term_id=request.fields["leadership_term_id"])


class FakeCluster:
    """``member_count`` members on a thread of their own; ``respond`` answers each request (see
    :func:`echo_respond`); ``requests`` keeps them all."""

    def __init__(self, aeron_dir: str, member_count: int = 1, respond: Callable[[Request, FakeMember], None] =
                 echo_respond, leader_id: int = 0, leadership_term_id: int = 0, record: bool = True) -> None:
        self.record = record            # keep session messages in ``requests`` (not when measuring allocations)
        self.aeron = Aeron.connect(AeronContext(aeron_dir))
        self.respond = respond
        self.leader_id = leader_id
        self.leadership_term_id = leadership_term_id
        self.requests: list[Request] = []
        self._session_id = 0
        self.members = [FakeMember(self, i) for i in range(member_count)]
        self._lock = threading.Lock()
        self._calls: list[tuple[Callable[[], Any], list[Any], threading.Event]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-cluster", daemon=True)
        self._thread.start()

    def ingress_endpoints(self, members: list[int] | None = None) -> str:
        """``id=endpoint,...`` of all members (or of ``members``)."""
        chosen = self.members if members is None else [self.members[i] for i in members]
        return ",".join(f"{m.member_id}={m.endpoint}" for m in chosen)

    def next_session_id(self) -> int:
        self._session_id += 1
        return self._session_id

    def call(self, action: Callable[[], Any]) -> Any:
        """Run ``action`` on the members' thread (their publications are used from it alone) and return its
        result."""
        done = threading.Event()
        result: list[Any] = []
        with self._lock:
            self._calls.append((action, result, done))
        if not done.wait(15):
            raise AssertionError("fake cluster thread did not run the call")
        if result and isinstance(result[0], BaseException):
            raise result[0]
        return result[0] if result else None

    def _run(self) -> None:
        while not self._stop.is_set():
            work = 0
            with self._lock:
                calls, self._calls = self._calls, []
            for action, result, done in calls:
                try:
                    result.append(action())
                except BaseException as exc:       # noqa: BLE001 - handed to the caller
                    result.append(exc)
                done.set()
                work += 1
            for member in self.members:
                work += member.poll()
            if not work:
                time.sleep(0.0005)

    def of(self, name: str, member_id: int | None = None) -> list[Request]:
        return [r for r in list(self.requests) if r.name == name and (member_id is None or r.member_id == member_id)]

    def wait_for(self, name: str, count: int = 1, member_id: int | None = None, timeout_s: float = 10.0,
                 poll: Callable[[], Any] | None = None) -> list[Request]:
        """The requests named ``name`` once there are ``count`` of them, calling ``poll`` (the client's egress
        poll) meanwhile."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.of(name, member_id)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} {name} not received within {timeout_s} s: {self.requests}")
            if poll is not None:
                poll()
            time.sleep(0.001)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.aeron.close()
