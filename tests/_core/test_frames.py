# SPDX-License-Identifier: Apache-2.0
"""frames: the golden C-driver datagrams validate and decode to the capture's decoding, our encoders rebuild the
captured control frames byte for byte, captured DATA rebuilds the subscriber's image term, and every invalid
shape maps to its FRAME_INVALID_* code (aeron_udp_protocol.h)."""
import gzip
import json
import struct

import pytest

from aeron._core import frames as f
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.term_scanner import TermRebuilder
from aeron.common.errors import MalformedFrameError, MalformedMessageError, OutOfBoundsError

RUNS = ["unicast", "unicast-loss-rttm", "multicast"]
TYPE_CODES = {"PAD": 0, "DATA": 1, "NAK": 2, "SM": 3, "ERR": 4, "SETUP": 5, "RTTM": 6, "RES": 7, "RSP_SETUP": 11}
HEADER = struct.Struct("<iBBhiiiiq")
TERM_LENGTH = 65536


def _datagrams(golden_dir, run):
    return json.loads((golden_dir / "frames" / run / "datagrams.json").read_text())["datagrams"]


def _log(golden_dir, run, side):
    sub = "subscriber-driver/images/3.logbuffer.gz" if side == "image" else "publisher-driver/publications/2.logbuffer.gz"
    return gzip.decompress((golden_dir / "logbuffers" / f"udp-{run}" / sub).read_bytes())


def test_constants_match_the_reference_tables():
    assert (f.HDR_TYPE_PAD, f.HDR_TYPE_DATA, f.HDR_TYPE_NAK, f.HDR_TYPE_SM, f.HDR_TYPE_ERR, f.HDR_TYPE_SETUP,
            f.HDR_TYPE_RTTM, f.HDR_TYPE_RES, f.HDR_TYPE_RSP_SETUP, f.HDR_TYPE_EXT) == \
        (0, 1, 2, 3, 4, 5, 6, 7, 0x0B, 0xFFFF)
    assert (f.DATA_HEADER_LENGTH, f.SETUP_HEADER_LENGTH, f.SM_HEADER_LENGTH, f.SM_WITH_GROUP_TAG_LENGTH,
            f.NAK_HEADER_LENGTH, f.RTTM_HEADER_LENGTH, f.ERR_HEADER_LENGTH, f.RSP_SETUP_HEADER_LENGTH,
            f.RES_MIN_LENGTH, f.ERR_MAX_ERROR_MESSAGE_LENGTH) == (32, 40, 36, 44, 28, 40, 40, 20, 22, 1023)
    assert (f.SM_SEND_SETUP_FLAG, f.SM_EOS_FLAG, f.SETUP_SEND_RESPONSE_FLAG, f.SETUP_GROUP_FLAG, f.RTTM_REPLY_FLAG,
            f.ERR_HAS_GROUP_TAG_FLAG, f.EOS_FLAG, f.REVOKED_FLAG, f.UNFRAGMENTED) == \
        (0x80, 0x40, 0x80, 0x40, 0x80, 0x08, 0x20, 0x10, 0xC0)
    assert sorted(f.FRAME_INVALID_REASONS) == list(range(-9, 0))


def _expected_fields(frame):
    """The json decoding of one frame, renamed to our tuple fields."""
    out = {k: v for k, v in frame.items() if k not in ("type", "heartbeat", "eos", "payload_ascii", "payload_length")}
    out["flags"] = int(frame["flags"], 16)
    out["type"] = TYPE_CODES[frame["type"]]
    return out


@pytest.mark.parametrize("run", RUNS)
def test_every_golden_datagram_validates_and_decodes_as_captured(golden_dir, run):
    seen = set()
    for datagram in _datagrams(golden_dir, run):
        raw = bytes.fromhex(datagram["hex"])
        assert len(raw) == datagram["length"]
        expected = datagram["frames"]
        assert f.validate_frame(raw) == TYPE_CODES[expected[0]["type"]], datagram["index"]
        decoded = f.decode_datagram(raw)
        assert len(decoded) == len(expected)
        for got, want in zip(decoded, expected):
            for name, value in _expected_fields(want).items():
                assert getattr(got, name) == value, (datagram["index"], name)
            seen.add(want["type"])
            if want["type"] == "DATA":
                assert got.is_heartbeat == want.get("heartbeat", False)
                assert bool(got.flags & f.EOS_FLAG) == want.get("eos", False)
                assert bytes(got.payload) == want.get("payload_ascii", "").encode()
            if want["type"] == "SM":
                assert got.group_tag is None
        assert f.decode_frame(raw) == decoded[0]
    assert seen >= {"SETUP", "SM", "DATA"}
    if run == "unicast-loss-rttm":
        assert seen >= {"NAK", "RTTM"}


@pytest.mark.parametrize("run", RUNS)
def test_golden_counts_match_the_readme(golden_dir, run):
    counts = {}
    for datagram in _datagrams(golden_dir, run):
        for frame in f.decode_datagram(bytes.fromhex(datagram["hex"])):
            if frame.type == f.HDR_TYPE_DATA:
                key = ("EOS-HB" if frame.flags & f.EOS_FLAG else "HB") if frame.is_heartbeat else "DATA"
            elif frame.type == f.HDR_TYPE_RTTM:
                key = "RTTM-REQ" if frame.flags & f.RTTM_REPLY_FLAG else "RTTM-REPLY"
            elif frame.type == f.HDR_TYPE_SM:
                key = "SM-EOS" if frame.flags & f.SM_EOS_FLAG else "SM"
            else:
                key = f.type_name(frame.type)
            counts[key] = counts.get(key, 0) + 1
    expected = {
        "unicast": {"SETUP": 1, "SM": 52, "SM-EOS": 5, "DATA": 5, "HB": 90, "EOS-HB": 20},
        "unicast-loss-rttm": {"SETUP": 1, "SM": 60, "SM-EOS": 5, "DATA": 6, "HB": 90, "EOS-HB": 20, "NAK": 3,
                              "RTTM-REQ": 12, "RTTM-REPLY": 12},
        "multicast": {"SETUP": 1, "SM": 52, "SM-EOS": 5, "DATA": 5, "HB": 90, "EOS-HB": 30},
    }[run]
    assert counts == expected


def _encode_like(frame, buffer, offset):
    kind = frame["type"]
    flags = int(frame["flags"], 16)
    if kind == "SETUP":
        return f.encode_setup(buffer, offset, frame["session_id"], frame["stream_id"], frame["initial_term_id"],
                              frame["active_term_id"], frame["term_offset"], frame["term_length"], frame["mtu"],
                              frame["ttl"], flags=flags)
    if kind == "SM":
        return f.encode_status_message(buffer, offset, frame["session_id"], frame["stream_id"],
                                       frame["consumption_term_id"], frame["consumption_term_offset"],
                                       frame["receiver_window"], frame["receiver_id"], flags=flags)
    if kind == "NAK":
        return f.encode_nak(buffer, offset, frame["session_id"], frame["stream_id"], frame["term_id"],
                            frame["term_offset"], frame["length"])
    if kind == "RTTM":
        return f.encode_rttm(buffer, offset, frame["session_id"], frame["stream_id"], frame["echo_timestamp"],
                             frame["reception_delta"], frame["receiver_id"], flags=flags)
    if kind == "DATA" and frame.get("heartbeat"):
        return f.encode_heartbeat(buffer, offset, frame["session_id"], frame["stream_id"], frame["term_id"],
                                  frame["term_offset"], flags=flags)
    return None


@pytest.mark.parametrize("run", RUNS)
def test_encoders_reproduce_the_captured_control_frames_byte_for_byte(golden_dir, run):
    done = {}
    for datagram in _datagrams(golden_dir, run):
        frame = datagram["frames"][0]
        buffer = bytearray(b"\xAA" * 80)
        length = _encode_like(frame, buffer, 7)
        if length is None:
            continue
        raw = bytes.fromhex(datagram["hex"])
        assert length == len(raw)
        assert bytes(buffer[7:7 + length]) == raw, datagram["index"]
        assert buffer[:7] == b"\xAA" * 7 and buffer[7 + length:] == b"\xAA" * (80 - 7 - length)  # nothing else
        done[frame["type"]] = done.get(frame["type"], 0) + 1
    assert done["SETUP"] == 1
    assert done["SM"] == (65 if run == "unicast-loss-rttm" else 57)
    assert done["DATA"] == (120 if run == "multicast" else 110)                 # every heartbeat, EOS ones too
    if run == "unicast-loss-rttm":
        assert done["NAK"] == 3 and done["RTTM"] == 24


@pytest.mark.parametrize("run", RUNS)
def test_captured_data_rebuilds_the_subscribers_image_term(golden_dir, run):
    term = AtomicBuffer(bytearray(TERM_LENGTH))
    inserted = dropped = 0
    for datagram in _datagrams(golden_dir, run):
        if datagram["direction"] != "pub->sub":
            continue
        raw = bytes.fromhex(datagram["hex"])
        if f.validate_frame(raw) != f.HDR_TYPE_DATA:
            continue
        first = f.decode_frame(raw)
        if datagram.get("dropped_by_receiver_fixed_loss_interceptor"):
            dropped += 1
            continue
        if first.is_heartbeat:
            continue
        inserted += TermRebuilder.insert(term, first.term_offset, raw)
    image = _log(golden_dir, run, "image")
    assert bytes(term.view()) == image[:TERM_LENGTH]
    assert image[:TERM_LENGTH] == _log(golden_dir, run, "publication")[:TERM_LENGTH]
    assert inserted == 5
    assert dropped == (3 if run == "unicast-loss-rttm" else 0)


def test_a_batched_datagram_decodes_frame_by_frame(golden_dir):
    # the publication term's first 320 bytes are exactly what a sender batches into one datagram
    batch = _log(golden_dir, "unicast", "publication")[:320]
    assert f.validate_frame(batch) == f.HDR_TYPE_DATA
    frames = f.decode_datagram(batch)
    assert [fr.term_offset for fr in frames] == [0, 64, 128, 192, 256]
    assert [bytes(fr.payload) for fr in frames] == [f"Hello World! {i}".encode() for i in range(5)]
    assert {(fr.frame_length, fr.flags, fr.session_id, fr.stream_id, fr.term_id) for fr in frames} == \
        {(46, 0xC0, -1814757439, 1001, 1569665970)}
    # a PAD is sent as its header only and ends the datagram, whatever length it describes
    pad = bytearray(32)
    HEADER.pack_into(pad, 0, TERM_LENGTH - 320, 0, 0xC0, 0, 320, -1814757439, 1001, 1569665970, 0)
    frames = f.decode_datagram(batch + pad)
    assert len(frames) == 6 and frames[-1].type == f.HDR_TYPE_PAD and frames[-1].frame_length == TERM_LENGTH - 320
    # frames at an offset inside a larger buffer, payload views point into the caller's buffer
    holder = bytearray(b"x" * 16) + bytearray(batch)
    frames = f.decode_datagram(holder, 16, 320)
    holder[16 + 32] = ord("J")
    assert bytes(frames[0].payload) == b"Jello World! 0"


@pytest.mark.parametrize("mutate, reason", [
    (lambda b: b[:48], f.FRAME_INVALID_ALIGNMENT),                       # cut mid-slot
    (lambda b: b + b"\0" * 32, None),                                    # trailing zero slot: walked, refused
    (lambda b: b[:64] + _frame(128 + 64, 46), None),                     # term offset not contiguous
])
def test_malformed_batches_are_refused_by_decode_datagram(golden_dir, mutate, reason):
    batch = _log(golden_dir, "unicast", "publication")[:128]
    bad = mutate(batch)
    if reason is not None:
        assert f.validate_frame(bad) == reason
    with pytest.raises(MalformedFrameError):
        f.decode_datagram(bad)


def _frame(term_offset, frame_length, frame_type=1):
    out = bytearray((max(frame_length, 32) + 31) & ~31)
    HEADER.pack_into(out, 0, frame_length, 0, 0xC0, frame_type, term_offset, 1, 2, 3, 0)
    return bytes(out)


def _setup(**fields):
    values = dict(flags=0, term_offset=0, session_id=1, stream_id=2, initial_term_id=3, active_term_id=3,
                  term_length=65536, mtu=1408, ttl=0)
    values.update(fields)
    buffer = bytearray(40)
    f.encode_setup(buffer, 0, values["session_id"], values["stream_id"], values["initial_term_id"],
                   values["active_term_id"], values["term_offset"], values["term_length"], values["mtu"],
                   values["ttl"], flags=values["flags"])
    return bytes(buffer)


def _sm(window=1000, term_offset=64, extra=b""):
    buffer = bytearray(36)
    f.encode_status_message(buffer, 0, 1, 2, 3, term_offset, window, 99)
    return bytes(buffer) + extra


def _nak(term_offset=0, length=64):
    buffer = bytearray(28)
    f.encode_nak(buffer, 0, 1, 2, 3, term_offset, length)
    return bytes(buffer)


def _err(text=b"no", error_length=None, frame_length=None):
    buffer = bytearray(40 + len(text))
    f.encode_error(buffer, 0, 1, 2, 3, 13, text)
    if error_length is not None:
        struct.pack_into("<i", buffer, 36, error_length)
    if frame_length is not None:
        struct.pack_into("<i", buffer, 0, frame_length)
    return bytes(buffer)


def _with(raw, fmt, offset, value):
    out = bytearray(raw)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


HOSTILE = [
    ("empty", b"", f.FRAME_INVALID_TOO_SHORT),
    ("seven bytes", b"\x08\0\0\0\0\0\x03", f.FRAME_INVALID_TOO_SHORT),
    ("version 1", _with(_sm(), "<B", 4, 1), f.FRAME_INVALID_VERSION),
    ("negative length", _with(_sm(), "<i", 0, -36), f.FRAME_INVALID_NEGATIVE_LENGTH),
    ("type 8 (ATS)", _with(_sm(), "<H", 6, 8), f.FRAME_INVALID_TYPE),
    ("type EXT", _with(_sm(), "<H", 6, 0xFFFF), f.FRAME_INVALID_TYPE),
    ("type 0x0C", _with(_sm(), "<H", 6, 0x0C), f.FRAME_INVALID_TYPE),
    ("data of 16", _frame(0, 46)[:16], f.FRAME_INVALID_SHORT_FOR_TYPE),
    ("data of 48", _frame(0, 46)[:48], f.FRAME_INVALID_ALIGNMENT),
    ("data frame longer than datagram", _frame(0, 46)[:32], f.FRAME_INVALID_LENGTH),
    ("data frame length 8", _with(_frame(0, 46), "<i", 0, 8), f.FRAME_INVALID_LENGTH),
    ("heartbeat in 64 bytes", _with(_frame(0, 46), "<i", 0, 0), f.FRAME_INVALID_LENGTH),
    ("pad shorter than a header", _frame(0, 16, 0)[:32], f.FRAME_INVALID_LENGTH),
    ("data negative term offset", _with(_frame(0, 46), "<i", 8, -64), f.FRAME_INVALID_TERM_OFFSET),
    ("data unaligned term offset", _with(_frame(0, 46), "<i", 8, 40), f.FRAME_INVALID_TERM_OFFSET),
    ("setup of 39", _setup()[:39], f.FRAME_INVALID_SHORT_FOR_TYPE),
    ("setup frame length 41", _with(_setup(), "<i", 0, 41), f.FRAME_INVALID_LENGTH),
    ("setup frame length 20", _with(_setup(), "<i", 0, 20), f.FRAME_INVALID_LENGTH),
    ("setup term length 3000", _setup(term_length=3000), f.FRAME_INVALID_FIELD),
    ("setup term length 32 KiB", _setup(term_length=32768), f.FRAME_INVALID_FIELD),
    ("setup term length 2 GiB-ish", _setup(term_length=-(2 ** 31)), f.FRAME_INVALID_FIELD),
    ("setup mtu 1400", _setup(mtu=1400), f.FRAME_INVALID_FIELD),
    ("setup mtu 65536", _setup(mtu=65536), f.FRAME_INVALID_FIELD),
    ("setup unaligned offset", _setup(term_offset=33), f.FRAME_INVALID_TERM_OFFSET),
    ("setup offset past term", _setup(term_offset=65536), f.FRAME_INVALID_TERM_OFFSET),
    ("sm of 35", _sm()[:35], f.FRAME_INVALID_SHORT_FOR_TYPE),
    ("sm negative window", _sm(window=-1), f.FRAME_INVALID_FIELD),
    ("sm unaligned offset", _sm(term_offset=65), f.FRAME_INVALID_TERM_OFFSET),
    ("sm negative offset", _sm(term_offset=-32), f.FRAME_INVALID_TERM_OFFSET),
    ("nak of 27", _nak()[:27], f.FRAME_INVALID_SHORT_FOR_TYPE),
    ("nak negative length", _nak(length=-1), f.FRAME_INVALID_FIELD),
    ("nak unaligned offset", _nak(term_offset=1), f.FRAME_INVALID_TERM_OFFSET),
    ("rttm of 39", _with(_setup(), "<H", 6, 6)[:39], f.FRAME_INVALID_SHORT_FOR_TYPE),
    ("err text past frame", _err(error_length=3), f.FRAME_INVALID_FIELD),
    ("err negative text", _err(error_length=-1), f.FRAME_INVALID_FIELD),
    ("err frame past datagram", _err(frame_length=43), f.FRAME_INVALID_LENGTH),
    ("rsp setup of 19", _with(_nak(), "<H", 6, 0x0B)[:19], f.FRAME_INVALID_SHORT_FOR_TYPE),
    ("res of 21", _with(b"\x15\0\0\0\0\0\x07\0" + b"\0" * 13, "<i", 0, 21), f.FRAME_INVALID_SHORT_FOR_TYPE),
]


@pytest.mark.parametrize("raw, reason", [(r, c) for _, r, c in HOSTILE], ids=[n for n, _, _ in HOSTILE])
def test_each_invalid_shape_has_its_reason_and_decode_raises(raw, reason):
    assert f.validate_frame(raw) == reason
    with pytest.raises(MalformedFrameError) as info:
        f.decode_frame(raw)
    assert info.value.reason == reason
    assert isinstance(info.value, MalformedMessageError) and isinstance(info.value, ValueError)
    with pytest.raises(MalformedFrameError):
        f.decode_datagram(raw)


def test_valid_shapes_at_the_edges():
    assert f.validate_frame(_frame(0, 32)) == f.HDR_TYPE_DATA                  # empty payload
    assert f.validate_frame(_frame(65504, 32)) == f.HDR_TYPE_DATA
    assert f.validate_frame(_frame(64, TERM_LENGTH, 0)[:32]) == f.HDR_TYPE_PAD  # PAD longer than its datagram
    assert f.validate_frame(_setup(term_length=2 ** 30, mtu=65504, term_offset=2 ** 30 - 32)) == f.HDR_TYPE_SETUP
    assert f.validate_frame(_setup(mtu=32, flags=0xC0)) == f.HDR_TYPE_SETUP
    assert f.validate_frame(_sm(window=0, extra=b"\0" * 4)) == f.HDR_TYPE_SM    # longer datagram than frame: ok
    assert f.validate_frame(_nak(length=0)) == f.HDR_TYPE_NAK
    assert f.validate_frame(_err(b"x" * 1023)) == f.HDR_TYPE_ERR
    res = b"\x16\0\0\0\0\0\x07\0" + b"\0" * 14
    assert f.validate_frame(res) == f.HDR_TYPE_RES
    assert f.decode_frame(res).entries.tobytes() == b"\0" * 14


def test_sm_group_tag_only_at_exactly_44_bytes():
    buffer = bytearray(48)
    assert f.encode_status_message(buffer, 0, 1, 2, 3, 64, 4096, -5, group_tag=-77, flags=f.SM_SEND_SETUP_FLAG) == 44
    assert bytes(buffer[:44]) == struct.pack("<iBBhiiiiiqq", 44, 0, 0x80, 3, 1, 2, 3, 64, 4096, -5, -77)
    assert f.decode_frame(buffer, 0, 44).group_tag == -77
    struct.pack_into("<i", buffer, 0, 48)                                      # other extra lengths: no tag
    assert f.decode_frame(buffer, 0, 48).group_tag is None


def test_error_frame_layout_and_round_trip():
    buffer = bytearray(1100)
    n = f.encode_error(buffer, 4, -1, 1001, 123456789, 13, "image rejected: nope", group_tag=None)
    assert n == 40 + 20
    assert bytes(buffer[4:4 + n]) == struct.pack("<iBBhiiqqii", 60, 0, 0, 4, -1, 1001, 123456789, -1, 13, 20) + \
        b"image rejected: nope"
    frame = f.decode_frame(buffer, 4, n)
    assert (frame.type, frame.error_code, frame.error_length, frame.error_message, frame.group_tag) == \
        (f.HDR_TYPE_ERR, 13, 20, "image rejected: nope", -1)
    n = f.encode_error(buffer, 0, 1, 2, 3, 14, "é" * 2000, group_tag=9)
    assert n == 40 + 1023 and buffer[5] == f.ERR_HAS_GROUP_TAG_FLAG
    frame = f.decode_frame(buffer, 0, n)
    assert (frame.group_tag, frame.error_message) == (9, "?" * 1023)


def test_response_setup_layout():
    buffer = bytearray(20)
    assert f.encode_response_setup(buffer, 0, -3, 10, 77) == 20
    assert bytes(buffer) == struct.pack("<iBBhiii", 20, 0, 0, 0x0B, -3, 10, 77)
    frame = f.decode_frame(buffer)
    assert (frame.session_id, frame.stream_id, frame.response_session_id) == (-3, 10, 77)


def test_heartbeat_flags_and_eos():
    buffer = bytearray(32)
    f.encode_heartbeat(buffer, 0, 5, 6, 7, 320, flags=0xE0)
    assert bytes(buffer) == HEADER.pack(0, 0, 0xE0, 1, 320, 5, 6, 7, 0)
    frame = f.decode_frame(buffer)
    assert frame.is_heartbeat and frame.flags & f.EOS_FLAG and bytes(frame.payload) == b""


def test_encoders_and_decoders_check_the_buffer_edges():
    with pytest.raises(OutOfBoundsError):
        f.encode_setup(bytearray(39), 0, 1, 2, 3, 3, 0, 65536)
    with pytest.raises(OutOfBoundsError):
        f.encode_nak(bytearray(64), 37, 1, 2, 3, 0, 0)
    with pytest.raises(OutOfBoundsError):
        f.encode_rttm(bytearray(64), -1, 1, 2, 3, 0, 0)
    with pytest.raises(BufferError):
        f.encode_nak(b"\0" * 64, 0, 1, 2, 3, 0, 0)                             # read-only
    with pytest.raises(OutOfBoundsError):
        f.validate_frame(b"\0" * 10, 5, 6)
    with pytest.raises(OutOfBoundsError):
        f.decode_frame(b"\0" * 10, -1)
    with pytest.raises(OutOfBoundsError):
        f.decode_datagram(b"\0" * 10, 11)
    assert f.validate_frame(_sm(), 0, 8) == f.FRAME_INVALID_SHORT_FOR_TYPE       # length bounds the check
    buffer = AtomicBuffer(bytearray(64))
    assert f.encode_nak(buffer, 8, 1, 2, 3, 64, 32) == 28                       # any writable buffer
    assert f.decode_frame(buffer, 8, 28).length == 32


def test_decode_data_header_reads_what_decode_frame_reads(golden_dir):
    for run in RUNS:
        for datagram in _datagrams(golden_dir, run):
            raw = bytes.fromhex(datagram["hex"])
            if f.validate_frame(raw) not in (f.HDR_TYPE_DATA, f.HDR_TYPE_PAD):
                continue
            frame = f.decode_frame(raw)
            assert f.decode_data_header(raw) == (frame.frame_length, frame.flags, frame.term_offset, frame.session_id,
                                                 frame.stream_id, frame.term_id)
    batch = bytearray(96) + _frame(64, 46)                                      # a header at an offset
    assert f.decode_data_header(batch, 96) == (46, 0xC0, 64, 1, 2, 3)
    assert f.decode_data_header(_with(_frame(0, 46), "<i", 8, -64)) == (46, 0xC0, -64, 1, 2, 3)   # no checks
    with pytest.raises(OutOfBoundsError):
        f.decode_data_header(b"\0" * 31)
    with pytest.raises(OutOfBoundsError):
        f.decode_data_header(b"\0" * 64, 40)
