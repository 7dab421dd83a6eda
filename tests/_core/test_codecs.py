# SPDX-License-Identifier: Apache-2.0
"""The generated SBE codecs (aeron._core.codecs): regenerating changes nothing, every message of every schema
round-trips (groups included), older versions read as null, hostile lengths raise MalformedMessageError, and the
golden Java catalog decodes. Repeating groups and the cluster's golden files: test_codecs_groups.py."""
import gzip
import pathlib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeron._core.codecs import archive, archive_mark, cluster, cluster_mark, cluster_node_state
from aeron.common.errors import IllegalStateError, MalformedMessageError, OutOfBoundsError

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "archive" / "archive-dir"

sys.path.insert(0, str(ROOT / "codegen"))
import sbe_codegen  # noqa: E402

SCHEMAS = {module: sbe_codegen.parse(ROOT / "codegen" / "schemas" / xml) for xml, module in sbe_codegen.SCHEMAS.items()}
MODULES = {"archive": archive, "archive_mark": archive_mark, "cluster": cluster, "cluster_mark": cluster_mark,
           "cluster_node_state": cluster_node_state}
MESSAGES = [(mod, m) for mod, schema in SCHEMAS.items() for m in schema.messages]


def test_regenerating_changes_nothing():
    result = subprocess.run([sys.executable, str(ROOT / "codegen" / "sbe_codegen.py"), "--check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_copies_are_the_ones_the_generator_reads():
    for name in sbe_codegen.SCHEMAS:
        assert (ROOT / "codegen" / "schemas" / name).is_file()


def _value_for(field, i):
    lo, hi = sbe_codegen.PRIMITIVES[field.primitive][3:5]
    return max(lo, min(hi, (i + 1) * 1_000_003 - 17 if hi > 2 ** 20 else i + 1))


def _fill(enc, fields, groups, var_data, depth):
    # every field, two entries per group (nested ones too), every variable-length field; returns what was written
    written = {}
    for i, f in enumerate(f for f in fields if f.name != "reserved"):
        setattr(enc, f.name, _value_for(f, i + depth))
        written[f.name] = _value_for(f, i + depth)
    for g in groups:
        group = getattr(enc, g.name + "_count")(2)
        entries = []
        for k in range(2):
            group.next()
            entries.append(_fill(group, g.fields, g.groups, g.var_data, depth + 10 * (k + 1)))
        written[g.name] = entries
    for i, v in enumerate(var_data):
        value = ("x" * (i + 3 + depth)) if v.ascii else bytes(range(i + 2 + depth))
        getattr(enc, "put_" + v.name)(value)
        written[v.name] = value
    return written


def _check(dec, fields, groups, var_data, written):
    for f in fields:
        if f.name != "reserved":
            assert getattr(dec, f.name) == written[f.name], f.name
    for g in groups:
        group = getattr(dec, g.name)
        assert group.count == 2 and group.acting_block_length == g.block_length
        for entry, expected in zip(group, written[g.name], strict=True):
            _check(entry, g.fields, g.groups, g.var_data, expected)
    for v in var_data:
        assert getattr(dec, v.name) == written[v.name]
        assert getattr(dec, v.name + "_length") == len(written[v.name])


@pytest.mark.parametrize("module,message", MESSAGES, ids=lambda v: getattr(v, "name", v))
def test_every_message_round_trips(module, message):
    mod = MODULES[module]
    enc = getattr(mod, message.class_name + "Encoder")()
    dec = getattr(mod, message.class_name + "Decoder")()
    buf = bytearray(4096)
    enc.wrap_and_apply_header(buf, 16)
    written = _fill(enc, message.fields, message.groups, message.var_data, 0)
    end = 16 + mod.MESSAGE_HEADER_LENGTH + enc.encoded_length
    dec.wrap_header(buf, 16, end)
    assert dec.acting_block_length == message.block_length == enc.BLOCK_LENGTH
    assert dec.acting_version == mod.SCHEMA_VERSION
    assert dec.encoded_length == enc.encoded_length
    _check(dec, message.fields, message.groups, message.var_data, written)


def test_header_names_template_schema_and_version():
    buf = bytearray(128)
    archive.StopReplayRequestEncoder().wrap_and_apply_header(buf, 0)
    hdr = archive.MessageHeaderDecoder().wrap(buf, 0)
    assert (hdr.block_length, hdr.template_id, hdr.schema_id, hdr.version) == (24, 7, 101, archive.SCHEMA_VERSION)
    with pytest.raises(MalformedMessageError, match="expected ReplayRequest"):
        archive.ReplayRequestDecoder().wrap_header(buf, 0)


def test_layouts_match_the_reference_offsets():
    # aeron-archive-codecs.xml: a few fields at their schema offsets and block lengths
    assert archive.ControlResponseEncoder.BLOCK_LENGTH == 32
    assert archive.ReplayRequestEncoder.BLOCK_LENGTH == 56
    assert archive.BoundedReplayRequestEncoder.BLOCK_LENGTH == 60
    assert archive.RecordingDescriptorEncoder.BLOCK_LENGTH == 80
    assert archive.ReplicateRequest2Encoder.BLOCK_LENGTH == 68
    assert archive_mark.MarkFileHeaderEncoder.BLOCK_LENGTH == 128
    buf = bytearray(64)
    enc = archive.RecordingDescriptorHeaderEncoder().wrap(buf, 0)
    enc.checksum = 0x11223344
    assert buf[8:12] == (0x11223344).to_bytes(4, "little")
    mark = archive_mark.MarkFileHeaderEncoder().wrap(bytearray(256), 0)
    mark.archive_id = 5
    mark.activity_timestamp = 7
    view = memoryview(mark_buf := bytearray(256))
    m2 = archive_mark.MarkFileHeaderEncoder().wrap(view, 0)
    m2.archive_id = 0x0102030405060708
    m2.activity_timestamp = 9
    assert mark_buf[56:64] == (0x0102030405060708).to_bytes(8, "little")
    assert mark_buf[8:16] == (9).to_bytes(8, "little")


def test_field_newer_than_the_acting_version_reads_null():
    buf = bytearray(256)
    enc = archive.ReplayRequestEncoder().wrap(buf, 0)
    enc.replay_token = 42
    enc.file_io_max_length = 4096
    # a version-6 sender's block ends before fileIoMaxLength (since 7) and replayToken (since 10)
    v6 = bytes(buf[:44]) + bytes(4)   # block then an empty replayChannel
    dec = archive.ReplayRequestDecoder().wrap(v6, 0, 44, 6, 48)
    assert dec.file_io_max_length == archive.ReplayRequestDecoder.FILE_IO_MAX_LENGTH_NULL_VALUE == -(2 ** 31)
    assert dec.replay_token == archive.ReplayRequestDecoder.REPLAY_TOKEN_NULL_VALUE == -(2 ** 63)
    # a field the acting version has but the acting block is too short for also reads null
    dec = archive.ReplayRequestDecoder().wrap(v6, 0, 44, 14, 48)
    assert dec.replay_token == -(2 ** 63)
    # a var-data field newer than the acting version is absent, not read from the bytes after the block
    buf2 = bytearray(256)
    auth = archive.AuthConnectRequestEncoder().wrap(buf2, 0)
    auth.put_response_channel("aeron:ipc").put_encoded_credentials(b"").put_client_info("me")
    old = archive.AuthConnectRequestDecoder().wrap(buf2, 0, 16, 11, 16 + 13 + 4)
    assert old.response_channel == "aeron:ipc" and old.client_info == "" and old.client_info_length == 0


def test_optional_version_uses_its_declared_null():
    dec = archive.ControlResponseDecoder().wrap(bytearray(64), 0, 28, 3, 32)
    assert dec.version == 0 == archive.ControlResponseDecoder.VERSION_NULL_VALUE


def test_var_data_written_out_of_order_is_refused_and_skipped_ones_are_empty():
    buf = bytearray(256)
    enc = archive.AuthConnectRequestEncoder().wrap(buf, 0)
    enc.put_client_info("info")
    with pytest.raises(IllegalStateError):
        enc.put_response_channel("aeron:ipc")
    dec = archive.AuthConnectRequestDecoder().wrap(buf, 0, 16, archive.SCHEMA_VERSION, enc.encoded_length)
    assert (dec.response_channel, dec.encoded_credentials, dec.client_info) == ("", b"", "info")


def test_encoder_refuses_to_write_past_the_buffer_and_non_ascii():
    with pytest.raises(OutOfBoundsError):
        archive.ReplayRequestEncoder().wrap(bytearray(40), 0)
    enc = archive.StartRecordingRequestEncoder().wrap(bytearray(30), 0)
    with pytest.raises(OutOfBoundsError):
        enc.put_channel("aeron:udp?endpoint=localhost:1")
    enc = archive.StartRecordingRequestEncoder().wrap(bytearray(64), 0)
    with pytest.raises(ValueError, match="US-ASCII"):
        enc.put_channel("aeron:udp?alias=é")
    with pytest.raises(OverflowError):
        enc.stream_id = 2 ** 31


def test_decoders_read_read_only_buffers():
    buf = bytearray(128)
    archive.ArchiveIdRequestEncoder().wrap_and_apply_header(buf, 0).correlation_id = 77
    dec = archive.ArchiveIdRequestDecoder().wrap_header(bytes(buf), 0)
    assert dec.correlation_id == 77


@pytest.mark.parametrize("length", [-1, 1 << 30, (1 << 30) + 1, 2 ** 32 - 1, 20])
def test_hostile_var_length_is_malformed_not_a_read_past_the_end(length):
    buf = bytearray(64)
    enc = archive.StartRecordingRequestEncoder().wrap_and_apply_header(buf, 0)
    enc.put_channel("aeron:ipc")
    end = 8 + enc.encoded_length
    buf[8 + 24:8 + 28] = (length & 0xFFFFFFFF).to_bytes(4, "little")
    with pytest.raises(MalformedMessageError) as info:
        archive.StartRecordingRequestDecoder().wrap_header(buf, 0, end)
    assert info.value.type_id == 4 and info.value.offset == 8 + 24


def test_block_length_past_the_end_and_truncated_header():
    buf = bytearray(archive.MESSAGE_HEADER_LENGTH + 10)
    archive.StopReplayRequestEncoder().wrap_and_apply_header(bytearray(64), 0)
    with pytest.raises(MalformedMessageError):
        archive.StopReplayRequestDecoder().wrap(buf, 8, 24, archive.SCHEMA_VERSION)
    with pytest.raises(MalformedMessageError):
        archive.StopReplayRequestDecoder().wrap_header(buf[:5])
    with pytest.raises(MalformedMessageError):
        archive.MessageHeaderDecoder().wrap(b"\x00" * 7)
    with pytest.raises(OutOfBoundsError):
        archive.StopReplayRequestDecoder().wrap(buf, 0, 8, 14, 999)


def _read_everything(dec):
    for name in dir(dec):
        if not name.startswith("_") and name.isidentifier() and name not in ("release", "wrap", "wrap_header"):
            value = getattr(dec, name)
            if hasattr(value, "has_next"):          # a repeating group: read every entry the same way
                for entry in value:
                    _read_everything(entry)


_FUZZ_TEMPLATES = [(archive, t) for t in sorted(archive.TEMPLATES)] + [(cluster, t) for t in sorted(cluster.TEMPLATES)]


@settings(max_examples=400, deadline=None)
@given(data=st.binary(min_size=0, max_size=200), pick=st.sampled_from(_FUZZ_TEMPLATES))
def test_fuzzed_bytes_decode_or_raise_malformed(data, pick):
    mod, template = pick
    _enc, dec_type = mod.TEMPLATES[template]
    dec = dec_type()
    block = data[0] if data else 0
    try:
        dec.wrap(data, 0, block, mod.SCHEMA_VERSION)
    except MalformedMessageError:
        return
    assert dec.encoded_length <= len(data)
    _read_everything(dec)


def test_golden_java_catalog_decodes():
    raw = gzip.decompress((GOLDEN / "archive.catalog.gz").read_bytes())
    cat = archive.CatalogHeaderDecoder().wrap(raw, 0, 32, archive.SCHEMA_VERSION)
    assert (cat.version, cat.length, cat.next_recording_id, cat.alignment) == (196864, 32, 2, 64)
    offset, seen = cat.length, []
    hdr, body = archive.RecordingDescriptorHeaderDecoder(), archive.RecordingDescriptorDecoder()
    while offset + 32 <= len(raw):
        hdr.wrap(raw, offset, 32, archive.SCHEMA_VERSION)
        if hdr.length == 0:
            break
        body.wrap(raw, offset + 32, archive.RecordingDescriptorEncoder.BLOCK_LENGTH, archive.SCHEMA_VERSION,
                  offset + 32 + hdr.length)
        seen.append((body.recording_id, hdr.state, body.stream_id, body.stripped_channel, body.source_identity,
                     body.segment_file_length, body.start_position, body.stop_position))
        offset += 32 + hdr.length
    assert [s[:4] for s in seen] == [(0, archive.RecordingState.VALID, 1001, "aeron:udp?endpoint=127.0.0.1:40641"),
                                     (1, archive.RecordingState.VALID, 1002, "aeron:ipc")]
    assert all(s[5] == 64 * 1024 and s[6] == 0 and s[7] > 0 for s in seen)


def test_golden_java_mark_file_decodes():
    raw = gzip.decompress((GOLDEN / "archive-mark.dat.gz").read_bytes())
    mark = archive_mark.MarkFileHeaderDecoder().wrap_header(raw, 0, 8192)
    assert mark.header_length > 0 and mark.error_buffer_length > 0
    assert mark.control_stream_id == 10 and mark.events_stream_id == 30
    assert mark.control_channel.startswith("aeron:udp")
    assert mark.aeron_directory


def test_an_unwrapped_flyweight_raises_instead_of_reading_nothing():
    with pytest.raises(IllegalStateError, match="not wrapped"):
        archive.ReplayRequestDecoder().control_session_id
    with pytest.raises(IllegalStateError, match="not wrapped"):
        archive.ReplayRequestEncoder().put_replay_channel("aeron:ipc")
    enc = archive.ReplayRequestEncoder().wrap(bytearray(128))
    enc.release()
    with pytest.raises(IllegalStateError):
        enc.replay_stream_id = 1
