# SPDX-License-Identifier: Apache-2.0
"""LogEntryDispatcher on a crafted term: session messages handed on with their fields and the position after the
entry, other templates by id, short or foreign entries refused. EgressOffer: a leader's message to a session behind
its session header, mocked elsewhere, refused inside a lifecycle callback. ConsensusLogDispatcher: a known session's
message refreshes its activity in place, everything else goes to the Python handler."""
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cluster_log import ConsensusLogDispatcher, EgressOffer, LogEntryDispatcher
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import CLOSED, NOT_CONNECTED, ExclusiveTermAppender
from aeron._core.term_reader import CONTINUE, Header
from aeron.common.errors import ClusterError, InvalidArgumentError, OutOfBoundsError

FRAME = struct.Struct("<iBBhiiiiq")     # frame length, version, flags, type, term offset, session, stream, term id


def term_with(message: bytes, term_offset: int = 64, term_id: int = 7) -> tuple[AtomicBuffer, Header]:
    term = AtomicBuffer(bytearray(4096))
    frame = FRAME.pack(32 + len(message), 0, 0xC0, 1, term_offset, 1, 100, term_id, 0) + message
    term.put_bytes(term_offset, frame)
    header = Header(5, 12)                  # initial term id 5, 4 KiB terms
    header.wrap(term, term_offset)
    return term, header


def session_message(schema_id: int = 111, template_id: int = 1) -> bytes:
    return struct.pack("<HHHHqqq", 24, template_id, schema_id, 17, 3, -9, 1234) + b"payload"


def test_a_session_message_is_handed_on_with_its_session_position_and_time():
    calls = []
    dispatcher = LogEntryDispatcher(lambda *a: calls.append(a), {-9: "session"},
                                    lambda *a: calls.append(("event",) + a))
    term, header = term_with(session_message())
    assert dispatcher(term, 96, 39, header) == CONTINUE
    (session, timestamp, buffer, offset, length, got_header), = calls
    assert (session, timestamp, offset, length) == ("session", 1234, 128, 7)
    assert buffer.get_bytes(offset, length) == b"payload" and got_header is header
    # term 7 is the third of the stream (initial 5): 2 * 4096, then the frame's end aligned: 64 + 71 -> 160
    assert (dispatcher.log_position, dispatcher.cluster_time) == (2 * 4096 + 160, 1234)


def test_a_message_of_no_session_is_a_services():
    calls = []
    dispatcher = LogEntryDispatcher(lambda *a: calls.append(a), {}, print)
    term, header = term_with(session_message())
    dispatcher(term, 96, 39, header)
    assert calls[0][0] is None


def test_other_templates_go_to_the_event_handler():
    calls = []
    dispatcher = LogEntryDispatcher(lambda *a: calls.append(a), {}, lambda *a: calls.append(("event",) + a))
    term, header = term_with(session_message(template_id=20))
    dispatcher(term, 96, 39, header)
    assert [c[:2] for c in calls] == [("event", 20)] and calls[0][2:4] == (term, 96)


def test_short_or_foreign_entries_are_refused():
    dispatcher = LogEntryDispatcher(print, {}, print)
    term, header = term_with(session_message(schema_id=101))
    with pytest.raises(ClusterError, match="expected schemaId=111, actual=101"):
        dispatcher(term, 96, 39, header)
    term, header = term_with(session_message())
    with pytest.raises(ClusterError, match="shorter than its message header"):
        dispatcher(term, 96, 7, header)
    with pytest.raises(ClusterError, match="shorter than its session header"):
        dispatcher(term, 96, 31, header)


class _Agent:
    """What EgressOffer reads of a service agent: its lifecycle callback (0: none) and role."""

    def __init__(self, role: str) -> None:
        self.active_lifecycle_callback = 0
        self._role = role

    def _check_for_valid_invocation(self) -> None:
        raise ClusterError("sending messages or scheduling timers is not allowed from onStart")


@pytest.fixture
def egress():
    """(EgressOffer of a leader whose term is 3, its agent, dispatcher and appender over a fresh log)."""
    log = LogBuffers.create(term_length=64 * 1024, initial_term_id=5, session_id=1, stream_id=102)
    appender = ExclusiveTermAppender(log)
    header = bytearray(struct.pack("<HHHHq", 24, 1, 111, 17, 3) + bytes(16))
    agent = _Agent("LEADER")
    dispatcher = LogEntryDispatcher(print, {}, print)
    dispatcher.cluster_time = 1234
    yield EgressOffer(agent, dispatcher, header, "LEADER"), agent, dispatcher, appender
    appender.close()
    log.close()


def frame_payload(appender, offset: int = 0) -> bytes:
    frame_length = struct.unpack_from("<i", appender.log.buffer.get_bytes(offset, 4))[0]
    return appender.log.buffer.get_bytes(offset + 32, frame_length - 32)


def test_a_leaders_offer_is_the_session_header_then_the_message(egress):
    offer, _, dispatcher, appender = egress
    payload = AtomicBuffer(bytearray(b"..hello.."))
    assert offer.offer(-9, appender, payload, 2, 5) == 32 + 64          # a 32 + 32 + 5 byte frame, aligned
    assert frame_payload(appender) == struct.pack("<HHHHqqq", 24, 1, 111, 17, 3, -9, 1234) + b"hello"
    dispatcher.cluster_time = 99
    # any buffer-protocol object, all of it by default
    assert offer.offer(7, appender, b"bytes") > 0
    assert frame_payload(appender, 96) == struct.pack("<HHHHqqq", 24, 1, 111, 17, 3, 7, 99) + b"bytes"


def test_a_follower_mocks_and_no_publication_is_not_connected(egress):
    offer, agent, _, appender = egress
    assert offer.offer(-9, None, b"x") == NOT_CONNECTED
    agent._role = "FOLLOWER"
    assert offer.offer(-9, appender, b"x") == 1                         # ClientSession.MOCKED_OFFER
    assert appender.position == 0


def test_a_lifecycle_callback_may_not_send(egress):
    offer, agent, _, appender = egress
    agent.active_lifecycle_callback = 1
    with pytest.raises(ClusterError):
        offer.offer(-9, appender, b"x")
    assert appender.position == 0


def test_bad_ranges_are_refused_and_a_closed_publication_says_so(egress):
    offer, _, _, appender = egress
    with pytest.raises(OutOfBoundsError):
        offer.offer(-9, appender, AtomicBuffer(bytearray(8)), 4, 8)
    with pytest.raises(OutOfBoundsError):
        offer.offer(-9, appender, b"abc", 2, 5)
    with pytest.raises(InvalidArgumentError):
        offer.offer(-9, appender, b"abc", 0, -2)
    assert appender.position == 0
    appender.close()
    assert offer.offer(-9, appender, b"x") == CLOSED


def test_another_kind_of_publication_gets_its_own_gathering_offer(egress):
    offer, _, _, _ = egress
    offered = []

    class Publication:
        def offerv(self, vectors):
            offered.append(b"".join(bytes(v) for v in vectors))
            return 64

    assert offer.offer(-9, Publication(), b"..hello..", 2, 5) == 64
    assert offered == [struct.pack("<HHHHqqq", 24, 1, 111, 17, 3, -9, 1234) + b"hello"]


def test_the_header_is_a_session_header():
    with pytest.raises(ValueError):
        EgressOffer(_Agent("LEADER"), LogEntryDispatcher(print, {}, print), bytearray(8), "LEADER")


class _ClusterSession:
    time_of_last_activity_ns = 0


def test_a_known_sessions_message_refreshes_its_activity_in_nanoseconds():
    others = []
    session = _ClusterSession()
    dispatcher = ConsensusLogDispatcher({-9: session}, 1_000_000, lambda *a: others.append(a) or CONTINUE)
    term, header = term_with(session_message())
    assert dispatcher(term, 96, 39, header) == CONTINUE
    assert session.time_of_last_activity_ns == 1234 * 1_000_000 and others == []


def test_every_other_entry_goes_to_the_python_handler():
    others = []
    dispatcher = ConsensusLogDispatcher({}, 1, lambda *a: others.append(a[1:3]) or 7)
    for message in (session_message(),                                  # no such session: a service's, or gone
                    session_message(template_id=20),                    # another template
                    session_message(schema_id=101),                     # another schema (an extension's)
                    struct.pack("<HHHHqqq", 32, 1, 111, 17, 3, -9, 1234) + b"payload"):  # another block length
        term, header = term_with(message)
        assert dispatcher(term, 96, len(message), header) == 7
    term, header = term_with(session_message())
    assert dispatcher.on_message(term, 96, 31, header) == 7             # too short for a session header
    assert others == [(96, 39)] * 4 + [(96, 31)]


def test_a_bad_range_or_time_unit_is_refused():
    dispatcher = ConsensusLogDispatcher({}, 1, print)
    term, header = term_with(session_message())
    with pytest.raises(OutOfBoundsError):
        dispatcher.on_message(term, 4090, 39, header)
    with pytest.raises(ValueError):
        ConsensusLogDispatcher({}, 0, print)
