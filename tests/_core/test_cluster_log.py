# SPDX-License-Identifier: Apache-2.0
"""LogEntryDispatcher on a crafted term: session messages handed on with their fields and the position after the
entry, other templates by id, short or foreign entries refused."""
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cluster_log import LogEntryDispatcher
from aeron._core.term_reader import CONTINUE, Header
from aeron.common.errors import ClusterError

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
