# SPDX-License-Identifier: Apache-2.0
"""aeron.common.command against the layouts of aeron_control_protocol.h and the golden to-clients buffer."""
from __future__ import annotations

import errno
import gzip
import os
import struct

import pytest

from aeron.common import command as cmd
from aeron._core.atomic_buffer import AtomicBuffer
from aeron.common.errors import ErrorCode, InvalidArgumentError, MalformedMessageError

# cnc.dat section of the to-clients broadcast buffer (as in the golden C and Java cnc.dat files).
TO_CLIENTS_OFFSET = 1_049_472
TO_CLIENTS_LENGTH = 1_048_704


def layout(size: int, *fields: tuple[int, str, object]) -> bytes:
    """Bytes of ``size`` zeros with each (offset, struct format, value) placed at the reference table's offset."""
    out = bytearray(size)
    for offset, fmt, value in fields:
        struct.pack_into("<" + fmt, out, offset, value)
    return bytes(out)


# -- type ids (ControlProtocolEvents) ---------------------------------------------------------------------

def test_command_type_ids() -> None:
    expected = {
        "ADD_PUBLICATION": 0x01, "REMOVE_PUBLICATION": 0x02, "ADD_EXCLUSIVE_PUBLICATION": 0x03,
        "ADD_SUBSCRIPTION": 0x04, "REMOVE_SUBSCRIPTION": 0x05, "CLIENT_KEEPALIVE": 0x06, "ADD_DESTINATION": 0x07,
        "REMOVE_DESTINATION": 0x08, "ADD_COUNTER": 0x09, "REMOVE_COUNTER": 0x0A, "CLIENT_CLOSE": 0x0B,
        "ADD_RCV_DESTINATION": 0x0C, "REMOVE_RCV_DESTINATION": 0x0D, "TERMINATE_DRIVER": 0x0E,
        "ADD_STATIC_COUNTER": 0x0F, "REJECT_IMAGE": 0x10, "REMOVE_DESTINATION_BY_ID": 0x11,
        "GET_NEXT_AVAILABLE_SESSION_ID": 0x12,
    }
    assert {name: getattr(cmd, name) for name in expected} == expected
    assert cmd.COMMAND_NAMES == {v: k for k, v in expected.items()}
    assert set(cmd.COMMAND_CODECS) == set(expected.values())


def test_response_type_ids() -> None:
    expected = {
        "ON_ERROR": 0x0F01, "ON_AVAILABLE_IMAGE": 0x0F02, "ON_PUBLICATION_READY": 0x0F03,
        "ON_OPERATION_SUCCESS": 0x0F04, "ON_UNAVAILABLE_IMAGE": 0x0F05, "ON_EXCLUSIVE_PUBLICATION_READY": 0x0F06,
        "ON_SUBSCRIPTION_READY": 0x0F07, "ON_COUNTER_READY": 0x0F08, "ON_UNAVAILABLE_COUNTER": 0x0F09,
        "ON_CLIENT_TIMEOUT": 0x0F0A, "ON_STATIC_COUNTER": 0x0F0B, "ON_PUBLICATION_ERROR": 0x0F0C,
        "ON_NEXT_AVAILABLE_SESSION_ID": 0x0F0D,
    }
    assert {name: getattr(cmd, name) for name in expected} == expected
    assert cmd.RESPONSE_NAMES == {v: k for k, v in expected.items()}
    assert set(cmd.RESPONSE_CODECS) == set(expected.values())
    assert cmd.type_name(0x0F0C) == "ON_PUBLICATION_ERROR" and cmd.type_name(0x13) == "0x13"


# -- command layouts --------------------------------------------------------------------------------------

def test_publication_command_bytes() -> None:
    channel = "aeron:ipc?term-length=64k"
    message = cmd.PublicationCommand(8, 9, 77, channel)
    assert message.msg_type_id == cmd.ADD_PUBLICATION == message.TYPE_ID and not message.is_exclusive
    expected = layout(24, (0, "q", 8), (8, "q", 9), (16, "i", 77), (20, "i", len(channel))) + channel.encode()
    assert message.encode() == expected
    exclusive = cmd.PublicationCommand(8, 9, 77, channel, msg_type_id=cmd.ADD_EXCLUSIVE_PUBLICATION)
    assert exclusive.encode() == expected and exclusive.is_exclusive
    assert cmd.decode_command(cmd.ADD_EXCLUSIVE_PUBLICATION, expected) == exclusive
    assert cmd.PublicationCommand.decode(expected) == message


def test_remove_publication_bytes_and_legacy_form() -> None:
    message = cmd.RemovePublicationCommand(8, 15, 9, cmd.REMOVE_PUBLICATION_FLAG_REVOKE)
    expected = layout(32, (0, "q", 8), (8, "q", 15), (16, "q", 9), (24, "Q", 1))
    assert message.encode() == expected and message.revoke
    assert cmd.decode_command(cmd.REMOVE_PUBLICATION, expected) == message
    legacy = cmd.decode_command(cmd.REMOVE_PUBLICATION, expected[:24])
    assert legacy == cmd.RemovePublicationCommand(8, 15, 9) and not legacy.revoke
    assert cmd.RemovePublicationCommand(8, 15, 9, 2**64 - 1).encode()[24:] == b"\xff" * 8


def test_subscription_command_bytes() -> None:
    message = cmd.SubscriptionCommand(8, 10, -1, 77, "aeron:ipc")
    expected = layout(32, (0, "q", 8), (8, "q", 10), (16, "q", -1), (24, "i", 77), (28, "i", 9)) + b"aeron:ipc"
    assert message.encode() == expected
    assert cmd.decode_command(cmd.ADD_SUBSCRIPTION, expected) == message


@pytest.mark.parametrize("type_id", [cmd.REMOVE_SUBSCRIPTION, cmd.REMOVE_COUNTER])
def test_remove_command_bytes(type_id: int) -> None:
    message = cmd.RemoveCommand(8, 16, 99999, msg_type_id=type_id)
    expected = layout(24, (0, "q", 8), (8, "q", 16), (16, "q", 99999))
    assert message.encode() == expected
    assert cmd.decode_command(type_id, expected) == message and message.TYPE_ID == type_id


@pytest.mark.parametrize("type_id", [cmd.CLIENT_KEEPALIVE, cmd.CLIENT_CLOSE])
def test_correlated_command_bytes(type_id: int) -> None:
    message = cmd.CorrelatedCommand(8, -1, msg_type_id=type_id)
    assert message.encode() == layout(16, (0, "q", 8), (8, "q", -1))
    assert cmd.decode_command(type_id, message.encode()) == message


@pytest.mark.parametrize("type_id", [cmd.ADD_DESTINATION, cmd.REMOVE_DESTINATION, cmd.ADD_RCV_DESTINATION,
                                     cmd.REMOVE_RCV_DESTINATION])
def test_destination_command_bytes(type_id: int) -> None:
    channel = "aeron:udp?endpoint=localhost:20121"
    message = cmd.DestinationCommand(8, 20, 4, channel, msg_type_id=type_id)
    expected = layout(28, (0, "q", 8), (8, "q", 20), (16, "q", 4), (24, "i", len(channel))) + channel.encode()
    assert message.encode() == expected
    assert cmd.decode_command(type_id, expected) == message


def test_destination_by_id_bytes() -> None:
    message = cmd.DestinationByIdCommand(8, 21, 4, 20)
    assert message.encode() == layout(32, (0, "q", 8), (8, "q", 21), (16, "q", 4), (24, "q", 20))
    assert cmd.decode_command(cmd.REMOVE_DESTINATION_BY_ID, message.encode()) == message
    assert message.registration_id == 4


def test_counter_command_bytes_key_padded_to_four() -> None:
    key, label = b"\x01\x02\x03\x04\x05", "my-counter: test"
    message = cmd.CounterCommand(8, 11, 1001, key, label)
    # key length 5 -> label length at 24 + align(5, 4) = 32, label at 36; total 28 + 8 + 16.
    expected = layout(36, (0, "q", 8), (8, "q", 11), (16, "i", 1001), (20, "i", 5), (24, "5s", key),
                      (32, "i", len(label))) + label.encode()
    encoded = message.encode()
    assert encoded == expected and len(encoded) == 28 + 8 + len(label)
    assert encoded[29:32] == b"\0\0\0"
    assert cmd.decode_command(cmd.ADD_COUNTER, expected) == message
    # An 8-byte key needs no padding.
    eight = cmd.CounterCommand(8, 11, 1001, bytearray(range(8)), label)
    assert eight.key == bytes(range(8)) and len(eight.encode()) == 28 + 8 + len(label)


def test_static_counter_command_bytes() -> None:
    key = b"abc"
    message = cmd.StaticCounterCommand(8, 12, 424242, 1002, key, "static")
    expected = layout(40, (0, "q", 8), (8, "q", 12), (16, "q", 424242), (24, "i", 1002), (28, "i", 3),
                      (32, "3s", key), (36, "i", 6)) + b"static"
    assert message.encode() == expected
    assert cmd.decode_command(cmd.ADD_STATIC_COUNTER, expected) == message
    empty = cmd.StaticCounterCommand(8, 12, 424242, 1002, b"", "static")
    assert empty.encode() == layout(36, (0, "q", 8), (8, "q", 12), (16, "q", 424242), (24, "i", 1002),
                                    (28, "i", 0), (32, "i", 6)) + b"static"


def test_terminate_driver_bytes() -> None:
    message = cmd.TerminateDriverCommand(3, -1, b"tok")
    assert message.encode() == layout(20, (0, "q", 3), (8, "q", -1), (16, "i", 3)) + b"tok"
    assert cmd.decode_command(cmd.TERMINATE_DRIVER, message.encode()) == message
    assert cmd.TerminateDriverCommand(3, -1).encode() == layout(20, (0, "q", 3), (8, "q", -1))


def test_reject_image_bytes_with_c_client_nul() -> None:
    message = cmd.RejectImageCommand(8, 30, 5, 4096, "no")
    expected = layout(36, (0, "q", 8), (8, "q", 30), (16, "q", 5), (24, "q", 4096), (32, "i", 2)) + b"no"
    # A NUL follows the reason, not counted, as the C client writes it: total >= 40 for the C driver.
    assert message.encode() == expected + b"\0"
    assert cmd.decode_command(cmd.REJECT_IMAGE, expected) == message            # Java form, no NUL
    assert cmd.decode_command(cmd.REJECT_IMAGE, expected + b"\0") == message


def test_next_session_id_command_bytes() -> None:
    message = cmd.NextSessionIdCommand(8, 13, 77)
    assert message.encode() == layout(20, (0, "q", 8), (8, "q", 13), (16, "i", 77))
    assert cmd.decode_command(cmd.GET_NEXT_AVAILABLE_SESSION_ID, message.encode()) == message
    assert cmd.NextAvailableSessionIdCommand is cmd.NextSessionIdCommand


# -- response layouts -------------------------------------------------------------------------------------

def test_error_response_bytes() -> None:
    text = "(-5) unknown counter\n[x, y:1] z\n"
    message = cmd.ErrorResponse(16, ErrorCode.UNKNOWN_COUNTER, text)
    expected = layout(16, (0, "q", 16), (8, "i", 5), (12, "i", len(text))) + text.encode()
    assert message.encode() == expected
    decoded = cmd.decode_response(cmd.ON_ERROR, expected)
    assert decoded == message and decoded.code is ErrorCode.UNKNOWN_COUNTER
    assert decoded.offending_command_correlation_id == 16
    assert cmd.ErrorResponse(1, 99, "").code is ErrorCode.UNKNOWN_CODE_VALUE


@pytest.mark.parametrize("type_id", [cmd.ON_PUBLICATION_READY, cmd.ON_EXCLUSIVE_PUBLICATION_READY])
def test_publication_ready_bytes(type_id: int) -> None:
    log = "/dev/shm/aeron/publications/9.logbuffer"
    message = cmd.PublicationReady(type_id, 9, 9, 772663191, 77, 55, -1, log)
    expected = layout(36, (0, "q", 9), (8, "q", 9), (16, "i", 772663191), (20, "i", 77), (24, "i", 55),
                      (28, "i", -1), (32, "i", len(log))) + log.encode()
    assert message.encode() == expected and message.TYPE_ID == type_id
    assert message.is_exclusive == (type_id == cmd.ON_EXCLUSIVE_PUBLICATION_READY)
    assert cmd.decode_response(type_id, expected) == message
    assert cmd.PublicationBuffersReady is cmd.PublicationReady


def test_image_ready_bytes_log_file_padded() -> None:
    log, source = "/dev/shm/aeron/images/5.logbuffer", "127.0.0.1:37154"      # 33 chars -> padded to 36
    message = cmd.ImageReady(5, 772663190, 1001, 2, 61, log, source)
    expected = (layout(32, (0, "q", 5), (8, "i", 772663190), (12, "i", 1001), (16, "q", 2), (24, "i", 61),
                       (28, "i", 33)) + log.encode() + b"\0\0\0" + struct.pack("<i", 15) + source.encode())
    assert message.encode() == expected and len(expected) == 36 + 36 + 15
    assert cmd.decode_response(cmd.ON_AVAILABLE_IMAGE, expected) == message
    assert cmd.ImageBuffersReady is cmd.ImageReady


def test_operation_success_client_timeout_bytes() -> None:
    assert cmd.OperationSucceeded(15).encode() == layout(8, (0, "q", 15))
    assert cmd.ClientTimeout(1).encode() == layout(8, (0, "q", 1))
    assert cmd.decode_response(cmd.ON_OPERATION_SUCCESS, layout(8, (0, "q", 15))) == cmd.OperationSucceeded(15)
    assert cmd.decode_response(cmd.ON_CLIENT_TIMEOUT, layout(8, (0, "q", 1))) == cmd.ClientTimeout(1)


def test_image_unavailable_bytes() -> None:
    channel = "aeron:udp?endpoint=localhost:20121"
    message = cmd.ImageUnavailable(5, 2, 1001, channel)
    expected = layout(24, (0, "q", 5), (8, "q", 2), (16, "i", 1001), (20, "i", len(channel))) + channel.encode()
    assert message.encode() == expected
    assert cmd.decode_response(cmd.ON_UNAVAILABLE_IMAGE, expected) == message
    assert cmd.ImageMessage is cmd.ImageUnavailable


@pytest.mark.parametrize("type_id, factory", [
    (cmd.ON_SUBSCRIPTION_READY, lambda: cmd.SubscriptionReady(2, 46)),
    (cmd.ON_COUNTER_READY, lambda: cmd.CounterUpdate(cmd.ON_COUNTER_READY, 2, 46)),
    (cmd.ON_UNAVAILABLE_COUNTER, lambda: cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, 2, 46)),
    (cmd.ON_STATIC_COUNTER, lambda: cmd.StaticCounterReply(2, 46)),
    (cmd.ON_NEXT_AVAILABLE_SESSION_ID, lambda: cmd.NextSessionIdReply(2, 46)),
])
def test_twelve_byte_responses(type_id: int, factory) -> None:
    message = factory()
    expected = layout(12, (0, "q", 2), (8, "i", 46))
    assert message.encode() == expected and message.TYPE_ID == type_id
    assert cmd.decode_response(type_id, expected) == message


def test_publication_error_frame_bytes() -> None:
    message = cmd.PublicationErrorFrame(4, 20, -7, 1001, 123456789, -1, cmd.ADDRESS_TYPE_IPV4, 40602,
                                        bytes([127, 0, 0, 1]), ErrorCode.IMAGE_REJECTED, "rejected")
    expected = layout(68, (0, "q", 4), (8, "q", 20), (16, "i", -7), (20, "i", 1001), (24, "q", 123456789),
                      (32, "q", -1), (40, "h", 1), (42, "H", 40602), (44, "4s", bytes([127, 0, 0, 1])),
                      (60, "i", 13), (64, "i", 8)) + b"rejected"
    assert message.encode() == expected and len(message.source_address) == 16
    decoded = cmd.decode_response(cmd.ON_PUBLICATION_ERROR, expected)
    assert decoded == message and str(decoded.source_ip) == "127.0.0.1"
    v6 = cmd.PublicationErrorFrame(4, 20, -7, 1001, 1, 2, cmd.ADDRESS_TYPE_IPV6, 1, b"\0" * 15 + b"\1", 13, "")
    assert str(v6.source_ip) == "::1"
    assert cmd.PublicationErrorFrame(4, 20, -7, 1001, 1, 2, 0, 1, b"", 13, "").source_ip is None


# -- golden: the to-clients buffer of a live C aeronmd -------------------------------------------------------

def _golden_records(path) -> tuple[bytes, list[tuple[int, int, int]]]:
    data = gzip.decompress(path.read_bytes())
    section = data[TO_CLIENTS_OFFSET:TO_CLIENTS_OFFSET + TO_CLIENTS_LENGTH]
    records = []
    for offset in (0, 24, 48, 72, 168):
        length, type_id = struct.unpack_from("<ii", section, offset)
        records.append((offset, length, type_id))
    return section, records


@pytest.mark.parametrize("folder, log_dir, session_id", [
    ("c-aeronmd-ipc", "/dev/shm/golden-c-ipc", -1382497356),
    ("java-mediadriver-ipc", "/dev/shm/golden-j-ipc", 1492258850),
])
def test_golden_to_clients_records(golden_dir, folder: str, log_dir: str, session_id: int) -> None:
    section, records = _golden_records(golden_dir / "cnc" / folder / "cnc.dat.gz")
    log = f"{log_dir}/publications/4.logbuffer"
    expected = [
        cmd.CounterUpdate(cmd.ON_COUNTER_READY, 1, 46),
        cmd.SubscriptionReady(2, -1),
        cmd.CounterUpdate(cmd.ON_COUNTER_READY, 3, 49),
        cmd.PublicationReady(cmd.ON_PUBLICATION_READY, 4, 4, session_id, 1001, 48, -1, log),
        cmd.ImageReady(4, session_id, 1001, 2, 50, log, "aeron:ipc"),
    ]
    assert [(length, type_id) for _, length, type_id in records] == [
        (20, 0x0F08), (20, 0x0F07), (20, 0x0F08), (90, 0x0F03), (101, 0x0F02)]
    for (offset, length, type_id), want in zip(records, expected):
        payload = section[offset + 8:offset + length]
        # decoded in place from the whole section (offset + length), never reading the next record
        decoded = cmd.decode_response(type_id, section, offset + 8, length - 8)
        assert decoded == want
        encoded = decoded.encode()
        assert len(encoded) == length - 8
        if type_id == cmd.ON_AVAILABLE_IMAGE and folder.startswith("java"):
            # The Java driver leaves stale bytes ("ff") in the log file name's alignment padding; we write zeros.
            pad = slice(32 + len(log), 32 + ((len(log) + 3) & ~3))
            assert payload[pad] == b"ff" and encoded[pad] == b"\0\0"
            payload = payload[:pad.start] + b"\0\0" + payload[pad.stop:]
        assert encoded == payload


def test_golden_decoded_from_atomic_buffer(golden_dir) -> None:
    section, records = _golden_records(golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz")
    buffer = AtomicBuffer(bytearray(section[:512]))
    offset, length, type_id = records[4]
    image = cmd.decode_response(type_id, buffer, offset + 8, length - 8)
    assert image.source_identity == "aeron:ipc" and image.subscriber_position_id == 50
    assert buffer.export_count == 0                 # the decoder released its view
    buffer.close()


def test_transcript_record_lengths() -> None:
    """Record lengths a live aeronmd broadcast: 8-byte header + our encoded payload."""
    assert len(cmd.CounterUpdate(cmd.ON_COUNTER_READY, 1, 48).encode()) + 8 == 20
    assert len(cmd.SubscriptionReady(2, 46).encode()) + 8 == 20
    assert len(cmd.ImageUnavailable(5, 2, 1001, "aeron:udp?endpoint=localhost:20121").encode()) + 8 == 66
    assert len(cmd.ClientTimeout(1).encode()) + 8 == 16
    assert len(cmd.OperationSucceeded(15).encode()) + 8 == 16
    # @160 len=95: 36 + align(log, 4) + source '127.0.0.1:37154' (15): a 33..36-char image log path
    for log_length in range(33, 37):
        image = cmd.ImageReady(5, 772663190, 1001, 2, 61, "x" * log_length, "127.0.0.1:37154")
        assert len(image.encode()) + 8 == 95
    # @72 len=84: 36 + 40-char log path
    assert len(cmd.PublicationReady(cmd.ON_PUBLICATION_READY, 4, 4, 1, 1001, 52, 49, "y" * 40).encode()) + 8 == 84


# -- malformed input -----------------------------------------------------------------------------------------

SAMPLES = [
    (cmd.ADD_PUBLICATION, cmd.PublicationCommand(1, 2, 3, "aeron:ipc")),
    (cmd.REMOVE_PUBLICATION, cmd.RemovePublicationCommand(1, 2, 3)),
    (cmd.ADD_SUBSCRIPTION, cmd.SubscriptionCommand(1, 2, -1, 3, "aeron:ipc")),
    (cmd.REMOVE_COUNTER, cmd.RemoveCommand(1, 2, 3, msg_type_id=cmd.REMOVE_COUNTER)),
    (cmd.CLIENT_CLOSE, cmd.CorrelatedCommand(1, -1, msg_type_id=cmd.CLIENT_CLOSE)),
    (cmd.ADD_DESTINATION, cmd.DestinationCommand(1, 2, 3, "aeron:udp?endpoint=x:1")),
    (cmd.REMOVE_DESTINATION_BY_ID, cmd.DestinationByIdCommand(1, 2, 3, 4)),
    (cmd.ADD_COUNTER, cmd.CounterCommand(1, 2, 1001, b"k", "label")),
    (cmd.ADD_STATIC_COUNTER, cmd.StaticCounterCommand(1, 2, 3, 1002, b"key12", "label")),
    (cmd.TERMINATE_DRIVER, cmd.TerminateDriverCommand(1, 2, b"t")),
    (cmd.REJECT_IMAGE, cmd.RejectImageCommand(1, 2, 3, 4, "why")),
    (cmd.GET_NEXT_AVAILABLE_SESSION_ID, cmd.NextSessionIdCommand(1, 2, 3)),
    (cmd.ON_ERROR, cmd.ErrorResponse(1, 1, "bad")),
    (cmd.ON_AVAILABLE_IMAGE, cmd.ImageReady(1, 2, 3, 4, 5, "log", "aeron:ipc")),
    (cmd.ON_PUBLICATION_READY, cmd.PublicationReady(cmd.ON_PUBLICATION_READY, 1, 2, 3, 4, 5, -1, "log")),
    (cmd.ON_OPERATION_SUCCESS, cmd.OperationSucceeded(1)),
    (cmd.ON_UNAVAILABLE_IMAGE, cmd.ImageUnavailable(1, 2, 3, "aeron:ipc")),
    (cmd.ON_SUBSCRIPTION_READY, cmd.SubscriptionReady(1, -1)),
    (cmd.ON_UNAVAILABLE_COUNTER, cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, 1, 2)),
    (cmd.ON_CLIENT_TIMEOUT, cmd.ClientTimeout(1)),
    (cmd.ON_STATIC_COUNTER, cmd.StaticCounterReply(1, 2)),
    (cmd.ON_PUBLICATION_ERROR, cmd.PublicationErrorFrame(1, 2, 3, 4, 5, 6, 1, 7, b"\x7f\0\0\1", 13, "x")),
    (cmd.ON_NEXT_AVAILABLE_SESSION_ID, cmd.NextSessionIdReply(1, 2)),
]


def _decode(type_id: int, buffer, offset: int = 0, length: int = -1):
    if type_id in cmd.COMMAND_CODECS:
        return cmd.decode_command(type_id, buffer, offset, length)
    return cmd.decode_response(type_id, buffer, offset, length)


@pytest.mark.parametrize("type_id, message", SAMPLES, ids=[cmd.type_name(t) for t, _ in SAMPLES])
def test_every_truncation_is_malformed(type_id: int, message) -> None:
    encoded = message.encode()
    minimum = 24 if type_id == cmd.REMOVE_PUBLICATION else len(encoded) - (type_id == cmd.REJECT_IMAGE)
    assert _decode(type_id, encoded[:minimum]) == message
    padded = b"\xee" * 5 + encoded + b"\xee" * 64      # bytes beyond the given length exist but must not be read
    for cut in range(minimum):
        with pytest.raises(MalformedMessageError) as info:
            _decode(type_id, padded, 5, cut)
        assert info.value.type_id == type_id and info.value.error_code is ErrorCode.MALFORMED_COMMAND
        assert 5 <= info.value.offset <= 5 + len(encoded)      # the field that did not fit


def test_too_short_fixed_part_message() -> None:
    with pytest.raises(MalformedMessageError, match=r"ADD_PUBLICATION: too short: length=16 < 24") as info:
        cmd.decode_command(cmd.ADD_PUBLICATION, struct.pack("<qq", 1, 2))
    assert info.value.offset == 0 and isinstance(info.value, ValueError)


def test_negative_and_overlong_string_lengths() -> None:
    base = struct.pack("<qqi", 1, 2, 3)
    with pytest.raises(MalformedMessageError, match="negative channel length -1") as info:
        cmd.decode_command(cmd.ADD_PUBLICATION, b"\0" * 4 + base + struct.pack("<i", -1), 4)
    assert info.value.offset == 4 + 20
    with pytest.raises(MalformedMessageError, match="runs past the end"):
        cmd.decode_command(cmd.ADD_PUBLICATION, base + struct.pack("<i", 10) + b"aeron:ipc")
    with pytest.raises(MalformedMessageError, match="runs past the end"):
        cmd.decode_command(cmd.ADD_PUBLICATION, base + struct.pack("<i", 2**31 - 1) + b"x" * 64)
    # a counter key length that swallows the label length field
    counter = struct.pack("<qqii", 1, 2, 1001, 8) + b"k" * 8
    with pytest.raises(MalformedMessageError, match="too short"):
        cmd.decode_command(cmd.ADD_COUNTER, counter)
    image = struct.pack("<qiiqii", 1, 2, 3, 4, 5, -4)
    with pytest.raises(MalformedMessageError, match="negative log file name length"):
        cmd.decode_response(cmd.ON_AVAILABLE_IMAGE, image + b"\0" * 8)


def test_offset_and_length_outside_buffer() -> None:
    encoded = cmd.OperationSucceeded(7).encode()
    for offset, length in ((-1, 8), (0, 9), (9, -1), (4, 8), (0, -2)):
        with pytest.raises(MalformedMessageError, match="outside a buffer"):
            cmd.decode_response(cmd.ON_OPERATION_SUCCESS, encoded, offset, length)
    assert cmd.OperationSucceeded.decode(b"\0" * 3 + encoded, 3) == cmd.OperationSucceeded(7)


def test_unknown_types() -> None:
    with pytest.raises(MalformedMessageError, match=r"^command=19 unknown$") as info:
        cmd.decode_command(0x13, b"\0" * 64, 8, 16)
    assert (info.value.type_id, info.value.offset, info.value.error_code) == (
        0x13, 8, ErrorCode.UNKNOWN_COMMAND_TYPE_ID)
    with pytest.raises(MalformedMessageError, match="unknown"):
        cmd.decode_command(cmd.ON_ERROR, b"\0" * 64)
    with pytest.raises(MalformedMessageError, match="unknown"):
        cmd.decode_response(cmd.ADD_PUBLICATION, b"\0" * 64)


def test_non_byte_buffers() -> None:
    import array
    encoded = cmd.CounterUpdate(cmd.ON_COUNTER_READY, 5, 6).encode() + b"\0" * 4
    words = array.array("i", encoded)
    assert cmd.decode_response(cmd.ON_COUNTER_READY, words, 0, 12) == cmd.CounterUpdate(cmd.ON_COUNTER_READY, 5, 6)
    assert cmd.decode_response(cmd.ON_COUNTER_READY, memoryview(encoded)[0:12]).counter_id == 6


# -- encode-side validation ----------------------------------------------------------------------------------

def test_encode_rejects_bad_fields() -> None:
    with pytest.raises(InvalidArgumentError, match="out of range"):
        cmd.OperationSucceeded(2**63).encode()
    with pytest.raises(InvalidArgumentError, match="out of range"):
        cmd.PublicationCommand(1, 2, 2**31, "aeron:ipc").encode()
    with pytest.raises(InvalidArgumentError, match="not ASCII"):
        cmd.PublicationCommand(1, 2, 3, "aeron:ipc?alias=\u20ac").encode()
    with pytest.raises(InvalidArgumentError, match="bytes-like"):
        cmd.CounterCommand(1, 2, 3, "key", "label")             # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="bytes-like"):
        cmd.TerminateDriverCommand(1, 2, 5)                     # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="longer than 16"):
        cmd.PublicationErrorFrame(1, 2, 3, 4, 5, 6, 2, 7, b"\0" * 17, 13, "")
    with pytest.raises(InvalidArgumentError, match="cannot carry"):
        cmd.PublicationCommand(1, 2, 3, "aeron:ipc", msg_type_id=cmd.ADD_SUBSCRIPTION)
    with pytest.raises(InvalidArgumentError, match="cannot carry"):
        cmd.CounterUpdate(cmd.ON_ERROR, 1, 2)
    with pytest.raises(InvalidArgumentError, match="does not carry"):
        cmd.CounterUpdate.decode(b"\0" * 12, msg_type_id=cmd.ON_STATIC_COUNTER)


def test_latin1_bytes_round_trip() -> None:
    raw = struct.pack("<qqii", 1, 2, 3, 3) + b"\xe9\x00\xff"
    decoded = cmd.decode_command(cmd.ADD_PUBLICATION, raw)
    assert decoded.channel == "\xe9\x00\xff" and decoded.encode() == raw


def test_messages_are_frozen_and_hashable() -> None:
    message = cmd.CounterCommand(1, 2, 3, bytearray(b"k"), "l")
    with pytest.raises(AttributeError):
        message.label = "x"                                     # type: ignore[misc]
    assert hash(message) == hash(cmd.CounterCommand(1, 2, 3, b"k", "l"))


# -- error text -------------------------------------------------------------------------------------------

def test_format_driver_error_matches_c_driver_text() -> None:
    text = cmd.format_driver_error(
        ErrorCode.INVALID_CHANNEL, "invalid URI scheme or transport: aeron:bogus", function="aeron_uri_parse",
        filename="aeron_uri.c", line=318,
        context=[("aeron_driver_conductor_on_add_network_publication", "aeron_driver_conductor.c", 4663, "")])
    assert text == ("(-1) invalid channel\n"
                    "[aeron_uri_parse, aeron_uri.c:318] invalid URI scheme or transport: aeron:bogus\n"
                    "[aeron_driver_conductor_on_add_network_publication, aeron_driver_conductor.c:4663] \n")


def test_format_driver_error_defaults_and_os_errno() -> None:
    text = cmd.format_driver_error(ErrorCode.UNKNOWN_COMMAND_TYPE_ID, "command=19 unknown")
    first, second, end = text.split("\n")
    assert first == "(-6) unknown command type id" and end == ""
    assert second.startswith("[test_format_driver_error_defaults_and_os_errno, test_command.py:")
    assert second.endswith("] command=19 unknown")
    storage = cmd.format_driver_error(ErrorCode.STORAGE_SPACE, "no room", os_errno=errno.ENOSPC, function="f",
                                      filename="g.c", line=1)
    assert storage == f"({errno.ENOSPC}) {os.strerror(errno.ENOSPC)}\n[f, g.c:1] no room\n"
    assert cmd.error_code_description(ErrorCode.MALFORMED_COMMAND) == "malformed command"
    assert cmd.error_code_description(ErrorCode.GENERIC_ERROR) == "generic error, see message"
    assert cmd.error_code_description(1000) == "unknown error code"
    assert cmd.format_driver_error(1000, "m", function="f", filename="g", line=2).startswith(
        "(-1000) unknown error code\n")
