# SPDX-License-Identifier: Apache-2.0
"""Properties of aeron.common.command: round trips for every message type, truncation and garbage only ever raise
MalformedMessageError."""
from __future__ import annotations

import struct

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from aeron.common import command as cmd
from aeron.common.errors import MalformedMessageError

SETTINGS = settings(max_examples=150, deadline=None)

i16 = st.integers(-(2**15), 2**15 - 1)
u16 = st.integers(0, 2**16 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
u64 = st.integers(0, 2**64 - 1)
text = st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=80)
latin1 = st.text(st.characters(min_codepoint=0, max_codepoint=0xFF), max_size=40)
blob = st.binary(max_size=120)


def multi(kind, type_ids, *fields, first: bool):
    """Strategy for a class whose message type is a field (first positional for responses, keyword for
    commands)."""
    if first:
        return st.builds(kind, st.sampled_from(type_ids), *fields)
    return st.builds(lambda t, *args: kind(*args, msg_type_id=t), st.sampled_from(type_ids), *fields)


COMMANDS = st.one_of(
    multi(cmd.PublicationCommand, (cmd.ADD_PUBLICATION, cmd.ADD_EXCLUSIVE_PUBLICATION), i64, i64, i32, latin1,
          first=False),
    st.builds(cmd.RemovePublicationCommand, i64, i64, i64, u64),
    st.builds(cmd.SubscriptionCommand, i64, i64, i64, i32, text),
    multi(cmd.RemoveCommand, (cmd.REMOVE_SUBSCRIPTION, cmd.REMOVE_COUNTER), i64, i64, i64, first=False),
    multi(cmd.CorrelatedCommand, (cmd.CLIENT_KEEPALIVE, cmd.CLIENT_CLOSE), i64, i64, first=False),
    multi(cmd.DestinationCommand, (cmd.ADD_DESTINATION, cmd.REMOVE_DESTINATION, cmd.ADD_RCV_DESTINATION,
                                   cmd.REMOVE_RCV_DESTINATION), i64, i64, i64, text, first=False),
    st.builds(cmd.DestinationByIdCommand, i64, i64, i64, i64),
    st.builds(cmd.CounterCommand, i64, i64, i32, blob, text),
    st.builds(cmd.StaticCounterCommand, i64, i64, i64, i32, blob, latin1),
    st.builds(cmd.TerminateDriverCommand, i64, i64, blob),
    st.builds(cmd.RejectImageCommand, i64, i64, i64, i64, text),
    st.builds(cmd.NextSessionIdCommand, i64, i64, i32),
)

RESPONSES = st.one_of(
    st.builds(cmd.ErrorResponse, i64, i32, text),
    st.builds(cmd.ImageReady, i64, i32, i32, i64, i32, text, latin1),
    multi(cmd.PublicationReady, (cmd.ON_PUBLICATION_READY, cmd.ON_EXCLUSIVE_PUBLICATION_READY),
          i64, i64, i32, i32, i32, i32, text, first=True),
    st.builds(cmd.OperationSucceeded, i64),
    st.builds(cmd.ImageUnavailable, i64, i64, i32, text),
    st.builds(cmd.SubscriptionReady, i64, i32),
    multi(cmd.CounterUpdate, (cmd.ON_COUNTER_READY, cmd.ON_UNAVAILABLE_COUNTER), i64, i32, first=True),
    st.builds(cmd.ClientTimeout, i64),
    st.builds(cmd.StaticCounterReply, i64, i32),
    st.builds(cmd.PublicationErrorFrame, i64, i64, i32, i32, i64, i64, i16, u16, st.binary(max_size=16), i32,
              text),
    st.builds(cmd.NextSessionIdReply, i64, i32),
)

MESSAGES = st.one_of(COMMANDS, RESPONSES)


def decode(type_id: int, buffer, offset: int = 0, length: int = -1):
    if type_id in cmd.COMMAND_CODECS:
        return cmd.decode_command(type_id, buffer, offset, length)
    return cmd.decode_response(type_id, buffer, offset, length)


@SETTINGS
@given(MESSAGES, st.binary(max_size=16), st.binary(max_size=16))
def test_round_trip_inside_a_larger_buffer(message, before: bytes, after: bytes) -> None:
    encoded = message.encode()
    buffer = bytearray(before + encoded + after)
    decoded = decode(message.TYPE_ID, buffer, len(before), len(encoded))
    assert decoded == message and decoded.TYPE_ID == message.TYPE_ID == message.msg_type_id
    assert decoded.encode() == encoded
    assert type(message).decode(memoryview(bytes(encoded)), msg_type_id=message.TYPE_ID) == message


@SETTINGS
@given(MESSAGES, st.data())
def test_any_truncation_raises_malformed(message, data) -> None:
    encoded = message.encode()
    # The shortest accepted form: REMOVE_PUBLICATION's legacy 24 bytes, REJECT_IMAGE without the C NUL.
    if message.TYPE_ID == cmd.REMOVE_PUBLICATION:
        shortest = 24
    elif message.TYPE_ID == cmd.REJECT_IMAGE:
        shortest = len(encoded) - 1
    else:
        shortest = len(encoded)
    cut = data.draw(st.integers(0, shortest - 1), label="cut")
    with pytest.raises(MalformedMessageError) as info:
        decode(message.TYPE_ID, encoded, 0, cut)        # the rest of the encoding is there but out of bounds
    assert info.value.type_id == message.TYPE_ID


TYPE_IDS = st.one_of(st.integers(0, 0x14), st.integers(0x0F00, 0x0F0F), i32)


@SETTINGS
@given(TYPE_IDS, st.binary(max_size=200), st.data())
def test_garbage_only_raises_malformed(type_id: int, garbage: bytes, data) -> None:
    offset = data.draw(st.integers(-2, len(garbage) + 2), label="offset")
    length = data.draw(st.integers(-2, len(garbage) + 2), label="length")
    for decoder in (cmd.decode_command, cmd.decode_response):
        try:
            message = decoder(type_id, garbage, offset, length)
        except MalformedMessageError:
            continue
        assert message.TYPE_ID == type_id
        # Whatever decoded re-encodes to a prefix-compatible message that decodes to itself.
        assert decode(type_id, message.encode()) == message


@SETTINGS
@given(st.sampled_from(sorted(cmd.COMMAND_CODECS) + sorted(cmd.RESPONSE_CODECS)), i32, st.binary(max_size=96))
def test_hostile_string_lengths(type_id: int, declared: int, tail: bytes) -> None:
    """Every length field overwritten with any int32: decode fails cleanly or yields a self-consistent message."""
    codec = (cmd.COMMAND_CODECS | cmd.RESPONSE_CODECS)[type_id]
    payload = bytearray(b"\0" * codec.MIN_LENGTH + tail)
    for position in range(0, codec.MIN_LENGTH - 3, 4):
        buffer = bytearray(payload)
        struct.pack_into("<i", buffer, position, declared)
        try:
            message = decode(type_id, buffer)
        except MalformedMessageError:
            continue
        assert decode(type_id, message.encode()) == message
