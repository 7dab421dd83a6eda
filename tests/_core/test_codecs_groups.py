# SPDX-License-Identifier: Apache-2.0
"""Repeating groups of the generated SBE codecs (SBE's layout and Java codec semantics), the cluster schemas'
16-byte node-state header, and the golden Java cluster files decoded by them: the log entries, the snapshots,
the mark files and node-state.dat."""
import gzip
import pathlib

import pytest

from aeron._core.codecs import cluster, cluster_mark, cluster_node_state
from aeron.common.errors import IllegalStateError, MalformedMessageError, OutOfBoundsError
from tests.cython import sbe_nested_groups as nested

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "golden" / "cluster" / "node0"
DATA_HEADER = 32


def _frames(path: pathlib.Path) -> list[tuple[int, bytes]]:
    """(position, message bytes) of each unfragmented frame of a recording segment file."""
    raw = gzip.decompress(path.read_bytes())
    frames, pos = [], 0
    while pos + DATA_HEADER <= len(raw):
        length = int.from_bytes(raw[pos:pos + 4], "little", signed=True)
        if length <= 0:
            break
        frames.append((pos, raw[pos + DATA_HEADER:pos + length]))
        pos += (length + 31) & ~31
    return frames


def _decode(message: bytes):
    header = cluster.MessageHeaderDecoder().wrap(message, 0)
    assert header.schema_id == cluster.SCHEMA_ID and header.version == cluster.SCHEMA_VERSION
    _enc, dec_type = cluster.TEMPLATES[header.template_id]
    return dec_type().wrap_header(message, 0, len(message))


# -- golden Java files ---------------------------------------------------------------------------------------------


def test_golden_cluster_log_entries_decode():
    frames = _frames(GOLDEN / "archive" / "0-0.rec.gz")
    assert [p for p, _ in frames] == [0, 96, 256, 352, 448, 544, 640]
    decoded = [_decode(m) for _, m in frames]
    term = decoded[0]
    assert isinstance(term, cluster.NewLeadershipTermEventDecoder)
    assert (term.leadership_term_id, term.log_position, term.timestamp, term.term_base_log_position,
            term.leader_member_id, term.log_session_id, term.time_unit, term.app_version) == \
        (0, 96, 1795335488587, 0, 0, 259338101, cluster.ClusterTimeUnit.MILLIS, 1)
    opened = decoded[1]
    assert isinstance(opened, cluster.SessionOpenEventDecoder)
    assert (opened.leadership_term_id, opened.correlation_id, opened.cluster_session_id, opened.timestamp,
            opened.response_stream_id, opened.response_channel, opened.encoded_principal) == \
        (0, 4, 1, 1795335490643, 102, "aeron:udp?rejoin=false|endpoint=localhost:55256", b"")
    bids = []
    for (_, message), dec in zip(frames[2:5], decoded[2:5], strict=True):
        assert isinstance(dec, cluster.SessionMessageHeaderDecoder)
        assert (dec.leadership_term_id, dec.cluster_session_id) == (0, 1)
        payload = message[cluster.MESSAGE_HEADER_LENGTH + dec.encoded_length:]
        bids.append(tuple(int.from_bytes(payload[i:i + 8], "little", signed=True) for i in (0, 8, 16)))
    assert bids == [(0, 1, 109), (1, 1, 114), (2, 1, 116)]
    closed = decoded[5]
    assert isinstance(closed, cluster.SessionCloseEventDecoder)
    assert (closed.cluster_session_id, closed.close_reason) == (1, cluster.CloseReason.CLIENT_ACTION)
    action = decoded[6]
    assert isinstance(action, cluster.ClusterActionRequestDecoder)
    assert (action.leadership_term_id, action.log_position, action.action, action.flags) == \
        (0, 736, cluster.ClusterAction.SNAPSHOT, 0)


def test_golden_snapshots_decode():
    cm = [_decode(m) for _, m in _frames(GOLDEN / "archive" / "2-0.rec.gz")]
    begin, state, tracker, end = cm
    assert (begin.type_id, begin.log_position, begin.leadership_term_id, begin.index, begin.mark, begin.time_unit,
            begin.app_version) == (1, 736, 0, 0, cluster.SnapshotMark.BEGIN, cluster.ClusterTimeUnit.MILLIS, 1)
    assert (state.next_session_id, state.next_service_session_id, state.log_service_session_id,
            state.pending_message_capacity) == (2, -(2 ** 63) + 1, -(2 ** 63), 0)
    assert (tracker.next_service_session_id, tracker.log_service_session_id, tracker.service_id) == \
        (-(2 ** 63) + 1, -(2 ** 63), 0)
    assert end.mark == cluster.SnapshotMark.END
    service = _frames(GOLDEN / "archive" / "1-0.rec.gz")
    begin, end = (_decode(m) for _, m in service[:2])
    assert (begin.type_id, begin.mark, end.mark) == (2, cluster.SnapshotMark.BEGIN, cluster.SnapshotMark.END)
    assert service[2][1] == (1).to_bytes(8, "little") + (116).to_bytes(8, "little")


def test_golden_mark_files_decode():
    raw = gzip.decompress((GOLDEN / "cluster" / "cluster-mark.dat.gz").read_bytes())
    mark = cluster_mark.MarkFileHeaderDecoder().wrap_header(raw, 0, 8192)
    assert (mark.version, mark.component_type, mark.activity_timestamp, mark.start_timestamp, mark.pid,
            mark.candidate_term_id, mark.archive_stream_id, mark.service_stream_id,
            mark.consensus_module_stream_id, mark.ingress_stream_id, mark.member_id, mark.service_id,
            mark.header_length, mark.error_buffer_length, mark.cluster_id) == \
        (768, cluster_mark.ClusterComponentType.CONSENSUS_MODULE, -1, 1795335488395, 24254, -1, 10, 104, 105,
         101, 0, -1, 8192, 1024 * 1024, 0)
    assert (mark.aeron_directory, mark.control_channel, mark.ingress_channel, mark.service_name,
            mark.authenticator, mark.services_cluster_dir) == \
        ("/dev/shm/golden-cluster-0-driver", "aeron:ipc?term-length=128k", "aeron:udp?term-length=64k", "",
         "io.aeron.security.DefaultAuthenticatorSupplier", "/dev/shm/golden-cluster-work/node0/cluster")
    raw = gzip.decompress((GOLDEN / "cluster" / "cluster-mark-service-0.dat.gz").read_bytes())
    mark = cluster_mark.MarkFileHeaderDecoder().wrap_header(raw, 0, 8192)
    assert (mark.component_type, mark.service_id, mark.ingress_stream_id, mark.service_name,
            mark.services_cluster_dir) == (cluster_mark.ClusterComponentType.CONTAINER, 0, -1,
                                           "clustered-service-0-0", "")


def test_golden_node_state_decodes_with_its_16_byte_header():
    raw = gzip.decompress((GOLDEN / "cluster" / "node-state.dat.gz").read_bytes())
    assert cluster_node_state.MESSAGE_HEADER_LENGTH == cluster_node_state.MessageHeaderDecoder.ENCODED_LENGTH == 16
    header = cluster_node_state.NodeStateHeaderDecoder().wrap(raw, 0, 8, cluster_node_state.SCHEMA_VERSION)
    assert header.version == 768
    frame = cluster_node_state.MessageHeaderDecoder().wrap(raw, 8)
    assert (frame.block_length, frame.template_id, frame.schema_id, frame.version, frame.frame_length,
            frame.padding) == (24, 301, 112, 10, 40, 0)
    term = cluster_node_state.CandidateTermDecoder().wrap_header(raw, 8, 8 + frame.frame_length)
    assert (term.candidate_term_id, term.timestamp, term.log_position) == (0, 1795335488542, 0)
    assert term.offset == 24
    footer = cluster_node_state.MessageHeaderDecoder().wrap(raw, 48)
    assert (footer.template_id, footer.frame_length) == (cluster_node_state.NodeStateFooterDecoder.TEMPLATE_ID, 16)
    cluster_node_state.NodeStateFooterDecoder().wrap_header(raw, 48, 64)
    assert not any(raw[64:])


def test_node_state_encoder_writes_the_standard_fields_of_the_long_header_and_the_body_after_it():
    buf = bytearray(64)
    enc = cluster_node_state.CandidateTermEncoder().wrap_and_apply_header(buf, 8)
    enc.candidate_term_id = 3
    assert enc.offset == 24
    header = cluster_node_state.MessageHeaderEncoder().wrap(buf, 8)
    header.frame_length = 16 + enc.encoded_length
    assert bytes(buf[8:24]) == bytes.fromhex("18002d0170000a00") + (40).to_bytes(4, "little") + bytes(4)
    assert buf[24:32] == (3).to_bytes(8, "little")
    with pytest.raises(OutOfBoundsError):
        cluster_node_state.CandidateTermEncoder().wrap_and_apply_header(bytearray(39), 0)
    with pytest.raises(MalformedMessageError, match="16-byte"):
        cluster_node_state.CandidateTermDecoder().wrap_header(buf, 8, 23)


# -- layout and Java codec semantics of groups --------------------------------------------------------------------


def _backup_response(buf: bytearray, entries: int) -> int:
    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    enc.correlation_id = 9
    enc.member_id = 2
    group = enc.snapshots_count(entries)
    for i in range(entries):
        group.next()
        group.recording_id = 100 + i
        group.service_id = i - 1
    enc.put_cluster_members("0,a:1,a:2,a:3,a:4,a:5")
    return 8 + enc.encoded_length


def test_group_layout_is_sbe_groupsizeencoding_then_entries_then_var_data():
    buf = bytearray(512)
    end = _backup_response(buf, 2)
    block = 8 + cluster.BackupResponseEncoder.BLOCK_LENGTH
    assert buf[block:block + 4] == (44).to_bytes(2, "little") + (2).to_bytes(2, "little")
    assert buf[block + 4:block + 12] == (100).to_bytes(8, "little")
    assert buf[block + 4 + 44:block + 4 + 52] == (101).to_bytes(8, "little")
    var = block + 4 + 2 * 44
    assert buf[var:var + 4] == (21).to_bytes(4, "little") and end == var + 4 + 21
    dec = cluster.BackupResponseDecoder().wrap_header(buf, 0, end)
    assert [(s.recording_id, s.service_id) for s in dec.snapshots] == [(100, -1), (101, 0)]
    assert (dec.correlation_id, dec.member_id, dec.cluster_members) == (9, 2, "0,a:1,a:2,a:3,a:4,a:5")
    assert dec.encoded_length == end - 8


def test_group_entries_with_var_data_and_a_skipped_group_written_empty():
    buf = bytearray(512)
    enc = cluster.ClusterMembersExtendedResponseEncoder().wrap_and_apply_header(buf, 0)
    active = enc.active_members_count(2)
    active.next().member_id = 0
    active.put_ingress_endpoint("i0").put_log_endpoint("l0")      # consensusEndpoint skipped: written empty
    active.next().member_id = 1                                    # no endpoints at all: all five written empty
    # passiveMembers is never written: nothing follows it, so it must be asked for, as in Java
    enc.passive_members_count(0)
    end = 8 + enc.encoded_length
    dec = cluster.ClusterMembersExtendedResponseDecoder().wrap_header(buf, 0, end)
    members = [(m.member_id, m.ingress_endpoint, m.consensus_endpoint, m.log_endpoint, m.archive_endpoint)
               for m in dec.active_members]
    assert members == [(0, "i0", "", "l0", ""), (1, "", "", "", "")]
    assert dec.passive_members.count == 0 and list(dec.passive_members) == []

    buf = bytearray(512)
    enc = cluster.StandbySnapshotEncoder().wrap_and_apply_header(buf, 0)
    enc.put_response_channel("aeron:udp?endpoint=x:1")             # the snapshots group is written empty first
    enc.put_encoded_credentials(b"")
    dec = cluster.StandbySnapshotDecoder().wrap_header(buf, 0, 8 + enc.encoded_length)
    assert dec.snapshots.count == 0 and dec.response_channel == "aeron:udp?endpoint=x:1"


def test_group_order_and_counts_are_enforced():
    buf = bytearray(512)
    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    enc.put_cluster_members("m")
    with pytest.raises(IllegalStateError, match="after a variable-length field"):
        enc.snapshots_count(1)

    enc = cluster.ClusterMembersExtendedResponseEncoder().wrap_and_apply_header(buf, 0)
    enc.passive_members_count(0)
    with pytest.raises(IllegalStateError, match="written twice, or after a later group"):
        enc.active_members_count(0)

    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    group = enc.snapshots_count(1)
    with pytest.raises(IllegalStateError, match="no entry to write"):
        group.recording_id = 1                   # before next(): refused, not written over the header
    group.next()
    with pytest.raises(IllegalStateError, match="all 1 entries"):
        group.next()
    with pytest.raises(ValueError, match="count"):
        cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0).snapshots_count(65535)

    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    group = enc.snapshots_count(3)
    group.next()
    with pytest.raises(IllegalStateError, match="3 entries declared by the count, 1 written"):
        enc.put_cluster_members("m")
    with pytest.raises(IllegalStateError):
        group.service_id = 1                     # the parent moved on: the group is closed

    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    group = enc.snapshots_count(3)
    group.next().recording_id = 7
    assert group.reset_count_to_index() == 1
    enc.put_cluster_members("m")
    dec = cluster.BackupResponseDecoder().wrap_header(buf, 0, 8 + enc.encoded_length)
    assert [s.recording_id for s in dec.snapshots] == [7] and dec.cluster_members == "m"

    with pytest.raises(IllegalStateError, match="repeating group"):
        group.wrap(buf, 0)
    with pytest.raises(IllegalStateError, match="repeating group"):
        dec.snapshots.wrap(buf, 0, 44, 17)


def test_encoder_refuses_a_group_past_the_buffer():
    buf = bytearray(8 + cluster.BackupResponseEncoder.BLOCK_LENGTH + 4 + 44 + 10)
    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    group = enc.snapshots_count(2)
    group.next()
    with pytest.raises(OutOfBoundsError):
        group.next()
    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(bytearray(8 + 60 + 2), 0)
    with pytest.raises(OutOfBoundsError):
        enc.snapshots_count(0)


@pytest.mark.parametrize("count", [3, 255, 65535])
def test_hostile_group_count_is_malformed_not_a_read_past_the_end(count):
    buf = bytearray(512)
    end = _backup_response(buf, 2)
    block = 8 + cluster.BackupResponseEncoder.BLOCK_LENGTH
    buf[block + 2:block + 4] = count.to_bytes(2, "little")
    with pytest.raises(MalformedMessageError, match="snapshots") as info:
        cluster.BackupResponseDecoder().wrap_header(buf, 0, end)
    assert info.value.type_id == cluster.BackupResponseEncoder.TEMPLATE_ID


def test_hostile_group_block_length_and_entry_var_length_are_malformed():
    buf = bytearray(512)
    end = _backup_response(buf, 2)
    block = 8 + cluster.BackupResponseEncoder.BLOCK_LENGTH
    buf[block:block + 2] = (60000).to_bytes(2, "little")
    with pytest.raises(MalformedMessageError, match="runs past the message end"):
        cluster.BackupResponseDecoder().wrap_header(buf, 0, end)
    with pytest.raises(MalformedMessageError, match="group header past"):
        cluster.BackupResponseDecoder().wrap_header(buf, 0, block + 2)

    buf = bytearray(512)
    enc = cluster.StandbySnapshotEncoder().wrap_and_apply_header(buf, 0)
    group = enc.snapshots_count(1)
    group.next().put_archive_endpoint("host:8010")
    enc.put_response_channel("c").put_encoded_credentials(b"")
    end = 8 + enc.encoded_length
    at = 8 + cluster.StandbySnapshotEncoder.BLOCK_LENGTH + 4 + 44
    buf[at:at + 4] = (1 << 30).to_bytes(4, "little")
    with pytest.raises(MalformedMessageError, match="archive_endpoint") as info:
        cluster.StandbySnapshotDecoder().wrap_header(buf, 0, end)
    assert info.value.offset == at


def test_an_acting_entry_block_longer_than_ours_is_stepped_over():
    # a newer sender's entries carry fields we do not know: entries are walked by the header's block length
    buf = bytearray(512)
    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    block = 8 + cluster.BackupResponseEncoder.BLOCK_LENGTH
    body = bytearray()
    for i in range(2):
        entry = bytearray(52)
        entry[0:8] = (500 + i).to_bytes(8, "little")
        entry[40:44] = (i).to_bytes(4, "little", signed=True)
        body += entry
    buf[block:block + 4] = (52).to_bytes(2, "little") + (2).to_bytes(2, "little")
    buf[block + 4:block + 4 + len(body)] = body
    tail = block + 4 + len(body)
    buf[tail:tail + 5] = (1).to_bytes(4, "little") + b"z"
    enc.release()
    dec = cluster.BackupResponseDecoder().wrap_header(buf, 0, tail + 5)
    assert [(s.recording_id, s.service_id, s.acting_block_length) for s in dec.snapshots] == [(500, 0, 52),
                                                                                           (501, 1, 52)]
    assert dec.cluster_members == "z"


def test_group_decoder_reads_entries_only_while_iterating():
    buf = bytearray(512)
    end = _backup_response(buf, 1)
    dec = cluster.BackupResponseDecoder().wrap_header(buf, 0, end)
    group = dec.snapshots
    with pytest.raises(IllegalStateError, match="no entry to read"):
        group.recording_id
    assert group.has_next() and group.index == 0
    entry = next(group)
    assert entry is group and entry.recording_id == 100 and not group.has_next() and group.index == 1
    with pytest.raises(StopIteration):
        next(group)
    assert [s.recording_id for s in dec.snapshots] == [100]     # asking again starts over


def test_flyweights_and_their_groups_are_reused_message_after_message():
    enc, dec = cluster.BackupResponseEncoder(), cluster.BackupResponseDecoder()
    buffers = [bytearray(512), bytearray(512)]
    for round_ in range(4):
        buf = buffers[round_ % 2]                # the same buffer again, then another one
        enc.wrap_and_apply_header(buf, 0)
        group = enc.snapshots_count(round_ % 3)
        for i in range(round_ % 3):
            group.next().recording_id = round_ * 10 + i
        enc.put_cluster_members(f"m{round_}")
        end = 8 + enc.encoded_length
        dec.wrap_header(buf, 0, end)
        for _ in range(2):                       # each access of the group starts over
            assert [s.recording_id for s in dec.snapshots] == [round_ * 10 + i for i in range(round_ % 3)]
        assert dec.cluster_members == f"m{round_}"


def test_release_lets_go_of_the_buffer_held_by_groups():
    buf = bytearray(512)
    end = _backup_response(buf, 1)
    dec = cluster.BackupResponseDecoder().wrap_header(buf, 0, end)
    list(dec.snapshots)
    enc = cluster.BackupResponseEncoder().wrap_and_apply_header(buf, 0)
    enc.snapshots_count(0)
    with pytest.raises(BufferError):
        buf.extend(b"x")
    dec.release()
    enc.release()
    buf.extend(b"x")


# -- nested groups and evolution (the test schema tests/cython/sbe_nested_groups.xml) --------------------------


def _order(buf: bytearray) -> int:
    enc = nested.OrderEncoder().wrap_and_apply_header(buf, 0)
    enc.order_id = 77
    legs = enc.legs_count(2)
    legs.next()
    legs.leg_id, legs.quantity, legs.price = 1, 10, 1000
    fills = legs.fills_count(2)
    fills.next().fill_id = 11
    fills.put_venue("XLON")
    fills.next().fill_id = 12                     # its venue is skipped: written empty when the leg goes on
    legs.put_leg_name("first").put_leg_tag(b"\x01\x02")
    legs.next()
    legs.leg_id, legs.quantity, legs.price = 2, 20, 2000
    legs.fills_count(0)
    legs.put_leg_name("second")                   # legTag skipped: written empty at the next write of the message
    notes = enc.notes_count(1)
    notes.next().note_id = 5
    enc.put_account("acct-1")
    return 8 + enc.encoded_length


def test_nested_groups_round_trip():
    buf = bytearray(1024)
    end = _order(buf)
    dec = nested.OrderDecoder().wrap_header(buf, 0, end)
    legs = []
    for leg in dec.legs:
        fills = [(f.fill_id, f.venue) for f in leg.fills]
        legs.append((leg.leg_id, leg.quantity, leg.price, fills, leg.leg_name, leg.leg_tag))
    assert legs == [(1, 10, 1000, [(11, "XLON"), (12, "")], "first", b"\x01\x02"),
                    (2, 20, 2000, [], "second", b"")]
    assert [n.note_id for n in dec.notes] == [5]
    assert (dec.order_id, dec.account, dec.encoded_length) == (77, "acct-1", end - 8)


def test_nested_group_hostile_count_is_found_when_the_message_is_wrapped():
    buf = bytearray(1024)
    end = _order(buf)
    legs_header = 8 + nested.OrderEncoder.BLOCK_LENGTH
    fills_header = legs_header + 4 + nested.OrderLegsEncoder.BLOCK_LENGTH
    assert buf[fills_header:fills_header + 4] == (8).to_bytes(2, "little") + (2).to_bytes(2, "little")
    buf[fills_header + 2:fills_header + 4] = (40000).to_bytes(2, "little")
    with pytest.raises(MalformedMessageError, match="order.legs.fills"):
        nested.OrderDecoder().wrap_header(buf, 0, end)


def test_older_versions_read_newer_fields_null_and_newer_groups_empty():
    # a version-1 sender: legs entries end before price, no legTag, no notes group
    buf = bytearray()
    buf += (7).to_bytes(8, "little")                                            # orderId
    buf += (12).to_bytes(2, "little") + (1).to_bytes(2, "little")              # legs: block 12, 1 entry
    buf += (3).to_bytes(4, "little") + (30).to_bytes(8, "little")              # legId, quantity
    buf += (8).to_bytes(2, "little") + (0).to_bytes(2, "little")               # fills: none
    buf += (2).to_bytes(4, "little") + b"L1"                                   # legName
    buf += (4).to_bytes(4, "little") + b"acct"                                 # account
    dec = nested.OrderDecoder().wrap(bytes(buf), 0, 8, 1)
    (leg,) = [(leg.leg_id, leg.quantity, leg.price, leg.leg_name, leg.leg_tag_length, list(leg.fills))
              for leg in dec.legs]
    assert leg == (3, 30, nested.OrderLegsDecoder.PRICE_NULL_VALUE, "L1", 0, [])
    assert nested.OrderLegsDecoder.PRICE_NULL_VALUE == -(2 ** 63)
    assert dec.notes.count == 0 and list(dec.notes) == []
    assert (dec.account, dec.encoded_length) == ("acct", len(buf))
    assert nested.OrderNotesDecoder.SINCE_VERSION == 3 and nested.OrderLegsDecoder.BLOCK_LENGTH == 20
