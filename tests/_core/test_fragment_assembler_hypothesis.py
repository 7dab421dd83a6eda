# SPDX-License-Identifier: Apache-2.0
"""FragmentAssembler with random interleavings of fragmented messages from several sessions."""

from hypothesis import given, settings, strategies as st

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.fragment_assembler import (ControlledFragmentAssembler, FragmentAssembler,
                                            ImageFragmentAssembler)
from aeron._core.term_reader import ABORT, CONTINUE, Header
from tests.support import align

from .framing import BEGIN, END, FRAME_ALIGNMENT, write_frame

STREAM, INITIAL, SHIFT = 9, 100, 16


def fragment_session(session_id, sizes, max_payload):
    """Write a session's messages into its own term; return (term, [frame offsets], expected)."""
    frames, expected = [], []
    layout = []
    offset = 0
    for n, size in enumerate(sizes):
        payload = bytes((n * 7 + i + session_id) % 256 for i in range(size))
        chunks = [payload[i:i + max_payload] for i in range(0, size, max_payload)] or [b""]
        start = offset
        for k, chunk in enumerate(chunks):
            flags = (BEGIN if k == 0 else 0) | (END if k == len(chunks) - 1 else 0)
            layout.append((offset, chunk, flags))
            offset += align(32 + len(chunk), FRAME_ALIGNMENT)
        expected.append((payload, start, offset))
    term = AtomicBuffer(bytearray(max(offset, 64)))
    for at, chunk, flags in layout:
        write_frame(term, at, chunk, flags=flags, session_id=session_id, stream_id=STREAM, term_id=INITIAL)
        frames.append(at)
    return term, frames, expected


sessions_strategy = st.dictionaries(
    st.integers(-2**31, 2**31 - 1), st.lists(st.integers(0, 700), min_size=1, max_size=6), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(sessions_strategy, st.sampled_from([32, 64, 96, 160, 256]), st.data())
def test_interleaved_sessions_reassemble_exactly(sessions, max_payload, data):
    streams = {sid: fragment_session(sid, sizes, max_payload) for sid, sizes in sessions.items()}
    cursors = {sid: 0 for sid in streams}
    got = {sid: [] for sid in streams}
    header = Header(INITIAL, SHIFT)

    def delegate(buffer, offset, length, h):
        got[h.session_id].append((buffer.get_bytes(offset, length), h.term_offset, h.position, h.frame_length,
                                  h.flags, h.stream_id, h.term_id))

    asm = FragmentAssembler(delegate, data.draw(st.integers(0, 512)))
    while True:
        live = sorted(sid for sid in streams if cursors[sid] < len(streams[sid][1]))
        if not live:
            break
        sid = data.draw(st.sampled_from(live))
        term, frames, _ = streams[sid]
        at = frames[cursors[sid]]
        cursors[sid] += 1
        header.wrap(term, at)
        asm.on_fragment(term, at + 32, header.frame_length - 32, header)
    for sid, (_, _, expected) in streams.items():
        want = [(p, start, end, 32 + len(p), 0xC0, STREAM, INITIAL) for p, start, end in expected]
        assert got[sid] == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=8), st.sampled_from([32, 96, 128]),
       st.lists(st.booleans(), max_size=20))
def test_controlled_abort_then_redelivery_completes(sizes, max_payload, aborts):
    term, frames, expected = fragment_session(5, sizes, max_payload)
    pending = list(aborts)
    got = []

    def delegate(buffer, offset, length, h):
        if pending and pending.pop(0):
            return ABORT
        got.append(buffer.get_bytes(offset, length))
        return CONTINUE

    asm = ControlledFragmentAssembler(delegate)
    header = Header(INITIAL, SHIFT)
    i = 0
    while i < len(frames):
        header.wrap(term, frames[i])
        if asm.on_fragment(term, frames[i] + 32, header.frame_length - 32, header) != ABORT:
            i += 1                       # the reader redelivers an aborted fragment
    assert got == [p for p, _, _ in expected]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 500), min_size=1, max_size=8), st.sets(st.integers(0, 40), max_size=5))
def test_image_assembler_with_lost_fragments_never_delivers_corrupt(sizes, lost):
    term, frames, expected = fragment_session(1, sizes, 64)
    got = []
    asm = ImageFragmentAssembler(lambda b, o, n, h: got.append((b.get_bytes(o, n), h.term_offset)))
    header = Header(INITIAL, SHIFT)
    for i, at in enumerate(frames):
        if i in lost:
            continue
        header.wrap(term, at)
        asm.on_fragment(term, at + 32, header.frame_length - 32, header)
    # every delivered message is an exact, complete original
    originals = {(p, start) for p, start, _ in expected}
    assert all(g in originals for g in got)
    if not lost & set(range(len(frames))):
        assert got == [(p, start) for p, start, _ in expected]
