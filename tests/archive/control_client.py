# SPDX-License-Identifier: Apache-2.0
"""A raw archive control client for the server tests, built from the generated codecs: it sends any request of the
schema with the fields given, and collects every decoded message the archive sends back."""
from __future__ import annotations

import itertools
import time
from typing import Any

from aeron._core.codecs import archive as codecs
from aeron._core.fragment_assembler import FragmentAssembler

PROTOCOL_VERSION = (1 << 16) | (12 << 8)

_correlation = itertools.count(1000)


class Message:
    """A decoded message: template name plus its fields (var data decoded as well)."""

    def __init__(self, name: str, fields: dict[str, Any]) -> None:
        self.name = name
        self.__dict__.update(fields)
        self.fields = fields

    def __repr__(self) -> str:
        return f"<{self.name} {self.fields}>"


def decode(data: bytes) -> Message:
    """Decode one message with the generated decoder of its template."""
    header = codecs.MessageHeaderDecoder().wrap(data, 0)
    encoder_cls, decoder_cls = codecs.TEMPLATES[header.template_id]
    d = decoder_cls().wrap_header(data, 0)
    fields = {}
    for name in dir(decoder_cls):
        if name.startswith("_") or name.isupper() or name in ("wrap", "wrap_header", "offset", "encoded_length",
                                                                "acting_block_length", "acting_version"):
            continue
        if name.endswith("_length") and hasattr(decoder_cls, name[:-7]):
            continue
        fields[name] = getattr(d, name)
    return Message(decoder_cls.__name__[:-7], fields)


def encode(encoder_cls: type, **fields: Any) -> bytes:
    """Encode a request: fixed fields as attributes, var fields (``put_<name>``) in schema order."""
    buf = bytearray(64 * 1024)
    enc = encoder_cls().wrap_and_apply_header(buf, 0)
    var_order = [name[4:] for name in _put_methods(encoder_cls)]
    for name, value in fields.items():
        if name not in var_order and (name != "correlation_id" or hasattr(encoder_cls, name)):
            setattr(enc, name, value)
    for name in var_order:
        getattr(enc, "put_" + name)(fields.get(name, b""))
    return bytes(buf[:8 + enc.encoded_length])


def _put_methods(encoder_cls: type) -> list[str]:
    # schema order: the generated class defines them in order; sort by source position via __dict__ order
    return [name for name in encoder_cls.__dict__ if name.startswith("put_")]


class ControlClient:
    """Connects to an archive over ``request_channel``/``stream`` with responses on ``response_channel``."""

    def __init__(self, aeron: Any, request_channel: str, request_stream_id: int, response_channel: str,
                 response_stream_id: int, timeout_s: float = 10.0) -> None:
        self.aeron = aeron
        self.timeout_s = timeout_s
        self.subscription = aeron.add_subscription(response_channel, response_stream_id)
        if "control-mode=response" in response_channel:     # the request names its response subscription
            request_channel += f"|response-correlation-id={self.subscription.registration_id}"
        self.publication = aeron.add_exclusive_publication(request_channel, request_stream_id)
        self.response_channel = response_channel
        self.response_stream_id = response_stream_id
        self.messages: list[Message] = []
        self._assembler = FragmentAssembler(self._on_fragment)
        self.control_session_id = -1
        self._wait(lambda: self.publication.is_connected, "request publication connected")

    def _on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> None:
        self.messages.append(decode(buffer.get_bytes(offset, length)))

    def _wait(self, predicate: Any, what: str, timeout_s: float | None = None) -> Any:
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not met; messages: {self.messages[-5:]}")
            if self.subscription.poll(self._assembler, 10) == 0:
                time.sleep(0.001)

    def offer(self, data: bytes) -> None:
        self._wait(lambda: self.publication.offer(data) > 0, "request offered")

    def connect(self, credentials: bytes = b"", version: int = PROTOCOL_VERSION, client_info: str = "") -> Message:
        """AuthConnect; returns the first answer (OK, ERROR or Challenge)."""
        correlation_id = next(_correlation)
        self.offer(encode(codecs.AuthConnectRequestEncoder, correlation_id=correlation_id,
                          response_stream_id=self.response_stream_id, version=version,
                          response_channel=self.response_channel, encoded_credentials=credentials,
                          client_info=client_info))
        message = self.wait_response(correlation_id)
        if message.name == "ControlResponse" and message.code == codecs.ControlResponseCode.OK:
            self.control_session_id = message.control_session_id
            self.offer(encode(codecs.KeepAliveRequestEncoder, control_session_id=self.control_session_id,
                              correlation_id=-1))
        return message

    def wait_response(self, correlation_id: int, name: str | None = None, timeout_s: float | None = None) -> Message:
        """The first message with this correlation id (and template name), removed from the list."""
        def find() -> Message | None:
            for i, m in enumerate(self.messages):
                if getattr(m, "correlation_id", None) == correlation_id and (name is None or m.name == name):
                    return self.messages.pop(i)
            return None
        return self._wait(find, f"message for correlation {correlation_id}", timeout_s)

    def wait_signal(self, signal: int, recording_id: int | None = None, timeout_s: float | None = None) -> Message:
        """The first RecordingSignalEvent with this signal (and recording id)."""
        def find() -> Message | None:
            for i, m in enumerate(self.messages):
                if m.name == "RecordingSignalEvent" and m.signal == signal and (
                        recording_id is None or m.recording_id == recording_id):
                    return self.messages.pop(i)
            return None
        return self._wait(find, f"signal {signal}", timeout_s)

    def request(self, encoder_cls: type, **fields: Any) -> int:
        """Send a request of this session; returns its correlation id."""
        correlation_id = fields.pop("correlation_id", None)
        if correlation_id is None:
            correlation_id = next(_correlation)
        self.offer(encode(encoder_cls, control_session_id=fields.pop("control_session_id", self.control_session_id),
                          correlation_id=correlation_id, **fields))
        return correlation_id

    def call(self, encoder_cls: type, **fields: Any) -> Message:
        """Send a request and wait for its ControlResponse."""
        return self.wait_response(self.request(encoder_cls, **fields), "ControlResponse")

    def ok(self, encoder_cls: type, **fields: Any) -> int:
        """Send a request, expect OK, return the relevant id."""
        response = self.call(encoder_cls, **fields)
        assert response.code == codecs.ControlResponseCode.OK, response
        return response.relevant_id

    def list_recordings(self, encoder_cls: type = codecs.ListRecordingsRequestEncoder, **fields: Any) -> list[Message]:
        """Send a listing; collect descriptors until the count or the ending response."""
        correlation_id = self.request(encoder_cls, **fields)
        count = fields.get("record_count", 1)
        found: list[Message] = []

        def done() -> bool:
            for m in list(self.messages):
                if getattr(m, "correlation_id", None) == correlation_id:
                    self.messages.remove(m)
                    if m.name == "ControlResponse":
                        found.append(m)
                        return True
                    found.append(m)
            return len([m for m in found if m.name == "RecordingDescriptor"]) >= count
        self._wait(done, "listing")
        return found

    def close(self) -> None:
        self.publication.close()
        self.subscription.close()
