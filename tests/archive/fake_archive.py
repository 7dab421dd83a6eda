# SPDX-License-Identifier: Apache-2.0
"""A scripted stand-in for an archive, on our embedded driver: it reads control requests (decoded with the
generated codecs) and answers with whatever the test's ``respond(request, reply)`` callback sends, so client
behaviour can be checked against crafted answers, silence and errors without a real archive."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from aeron._core.codecs import archive as codecs
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.client.aeron import Aeron
from aeron.client.context import Context as AeronContext
from aeron.common.channel_uri import ChannelUri

CONTROL_STREAM_ID = 10
RESPONSE_STREAM_ID = 20


class Reply:
    """Encodes answers on the response publication of the session that sent the request."""

    def __init__(self, fake: "FakeArchive") -> None:
        self.fake = fake

    def _send(self, encoder_class: Any, fill: Callable[[Any], None]) -> None:
        buf = bytearray(4096)
        e = encoder_class().wrap_and_apply_header(buf, 0)
        fill(e)
        self.fake.send(bytes(buf[:codecs.MESSAGE_HEADER_LENGTH + e.encoded_length]))

    def response(self, correlation_id: int, relevant_id: int = 0, code: int = codecs.ControlResponseCode.OK,
                 message: str = "", control_session_id: int | None = None, version: int = 0x010C00) -> None:
        def fill(e: Any) -> None:
            e.control_session_id = self.fake.control_session_id if control_session_id is None else control_session_id
            e.correlation_id = correlation_id
            e.relevant_id = relevant_id
            e.code = code
            e.version = version
            e.put_error_message(message)
        self._send(codecs.ControlResponseEncoder, fill)

    def challenge(self, correlation_id: int, challenge: bytes) -> None:
        def fill(e: Any) -> None:
            e.control_session_id = self.fake.control_session_id
            e.correlation_id = correlation_id
            e.version = 0x010C00
            e.put_encoded_challenge(challenge)
        self._send(codecs.ChallengeEncoder, fill)

    def signal(self, correlation_id: int, recording_id: int, signal: int, position: int = 0,
               subscription_id: int = -1) -> None:
        def fill(e: Any) -> None:
            e.control_session_id = self.fake.control_session_id
            e.correlation_id = correlation_id
            e.recording_id = recording_id
            e.subscription_id = subscription_id
            e.position = position
            e.signal = signal
        self._send(codecs.RecordingSignalEventEncoder, fill)

    def descriptor(self, correlation_id: int, recording_id: int, channel: str = "aeron:udp?endpoint=x:1") -> None:
        def fill(e: Any) -> None:
            e.control_session_id = self.fake.control_session_id
            e.correlation_id = correlation_id
            e.recording_id = recording_id
            e.start_timestamp = 1
            e.stop_timestamp = 2
            e.start_position = 0
            e.stop_position = 4096
            e.initial_term_id = 7
            e.segment_file_length = 1 << 20
            e.term_buffer_length = 65536
            e.mtu_length = 1408
            e.session_id = 99
            e.stream_id = 1001
            e.put_stripped_channel(channel)
            e.put_original_channel(channel + "|alias=a")
            e.put_source_identity("src" * 800)     # a descriptor longer than the MTU: arrives fragmented
        self._send(codecs.RecordingDescriptorEncoder, fill)

    def subscription_descriptor(self, correlation_id: int, subscription_id: int) -> None:
        def fill(e: Any) -> None:
            e.control_session_id = self.fake.control_session_id
            e.correlation_id = correlation_id
            e.subscription_id = subscription_id
            e.stream_id = 1001
            e.put_stripped_channel("aeron:ipc")
        self._send(codecs.RecordingSubscriptionDescriptorEncoder, fill)


def default_respond(request: Any, reply: Reply) -> None:
    """Accept the connect, answer ArchiveId with 4242, ignore KeepAlive/Close, answer everything else OK(0)."""
    name = type(request).__name__
    if name == "AuthConnectRequestDecoder":
        reply.response(request.correlation_id, reply.fake.control_session_id)
    elif name == "ArchiveIdRequestDecoder":
        reply.response(request.correlation_id, 4242)
    elif name in ("KeepAliveRequestDecoder", "CloseSessionRequestDecoder"):
        pass
    else:
        reply.response(request.correlation_id, 0)


class FakeArchive:
    """Serves the control stream ``aeron:ipc`` (stream 10) of ``aeron_dir`` on a thread; ``respond`` answers each
    request (called with the decoder, copied fields readable, and a :class:`Reply`). ``requests`` keeps them."""

    def __init__(self, aeron_dir: str, respond: Callable[[Any, Reply], None] = default_respond,
                 control_session_id: int = 777) -> None:
        self.aeron = Aeron.connect(AeronContext(aeron_dir))
        self.control_session_id = control_session_id
        self.respond = respond
        self.requests: list[Any] = []
        self.subscription = self.aeron.add_subscription("aeron:ipc", CONTROL_STREAM_ID)
        self.publication: Any = None
        self._outbox: list[bytes] = []
        self._stop = threading.Event()
        self._assembler = FragmentAssembler(self._on_fragment)
        self._thread = threading.Thread(target=self._run, name="fake-archive", daemon=True)
        self._thread.start()

    def send(self, message: bytes) -> None:
        self._outbox.append(message)

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        data = bytearray(buffer.get_bytes(offset, length))
        template_id = codecs.MessageHeaderDecoder().wrap(data, 0).template_id
        decoder = codecs.TEMPLATES[template_id][1]().wrap_header(data, 0)
        self.requests.append(decoder)
        if template_id == codecs.AuthConnectRequestDecoder.TEMPLATE_ID and self.publication is None:
            channel = ChannelUri.parse(decoder.response_channel)
            self.publication = self.aeron.add_exclusive_publication(str(channel), decoder.response_stream_id)
            deadline = time.monotonic() + 5
            while not self.publication.is_connected and time.monotonic() < deadline:
                time.sleep(0.001)
        self.respond(decoder, Reply(self))

    def _run(self) -> None:
        while not self._stop.is_set():
            work = self.subscription.poll(self._assembler, 10)
            while self._outbox and self.publication is not None:
                message = self._outbox[0]
                if self.publication.offer(message) > 0:
                    self._outbox.pop(0)
                    work += 1
                else:
                    break
            if not work:
                time.sleep(0.0005)

    def of(self, name: str) -> list[Any]:
        return [r for r in self.requests if type(r).__name__ == name + "Decoder"]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.aeron.close()
