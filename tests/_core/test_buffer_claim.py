# SPDX-License-Identifier: Apache-2.0
"""BufferClaim via try_claim (Aeron's BufferClaim, aeron_publication_try_claim)."""
import struct

import pytest

from aeron._core import logbuffer as lb
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.buffer_claim import BufferClaim
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import (ADMIN_ACTION, BACK_PRESSURED, ConcurrentTermAppender,
                                       ExclusiveTermAppender)
from aeron.common.errors import IllegalStateError, InvalidArgumentError, OutOfBoundsError

HEADER = struct.Struct("<iBBhiiiiq")
TERM = 65536
APPENDERS = [ConcurrentTermAppender, ExclusiveTermAppender]


@pytest.fixture(params=APPENDERS, ids=["concurrent", "exclusive"])
def appender(request):
    log = LogBuffers.create(term_length=TERM, initial_term_id=5, session_id=0x1234, stream_id=10, is_connected=1)
    app = request.param(log)
    yield app
    app.close()
    log.close()


def frame(app, offset):
    return HEADER.unpack_from(app.log.buffer.get_bytes(offset, 32))


def test_claim_writes_negative_length_until_commit(appender):
    claim = BufferClaim()
    assert appender.try_claim(14, claim) == 64
    assert claim.is_active and claim.length == 14 and claim.term_offset == 0 and claim.offset == 0
    assert frame(appender, 0) == (-46, 0, 0xC0, 1, 0, 0x1234, 10, 5, 0)   # claimed, invisible to readers
    view = claim.buffer
    assert len(view) == 14 and not view.readonly
    view[:] = b"Hello World! 0"
    claim.commit()
    assert frame(appender, 0)[0] == 46
    assert appender.log.buffer.get_bytes(32, 14) == b"Hello World! 0"
    assert not claim.is_active
    with pytest.raises(ValueError):
        view[0] = 1                          # stale view is released, cannot write into the log
    with pytest.raises(IllegalStateError):
        claim.commit()
    with pytest.raises(IllegalStateError):
        claim.abort()
    with pytest.raises(IllegalStateError):
        claim.buffer


def test_claim_is_zero_copy(appender):
    claim = BufferClaim()
    appender.try_claim(8, claim)
    claim.buffer[0:4] = b"\x01\x02\x03\x04"
    assert appender.log.buffer.get_bytes(32, 4) == b"\x01\x02\x03\x04"   # visible before commit
    claim.commit()


def test_abort_turns_frame_into_padding(appender):
    claim = BufferClaim()
    appender.try_claim(100, claim)
    claim.put_bytes(b"junk")
    claim.abort()
    assert frame(appender, 0)[:4] == (132, 0, 0xC0, 0)
    assert appender.offer(b"next") == 160 + 64
    assert frame(appender, 160)[:4] == (36, 0, 0xC0, 1)


def test_header_fields_through_claim(appender):
    claim = BufferClaim()
    appender.try_claim(0, claim)
    assert claim.flags == 0xC0 and claim.header_type == 1 and claim.reserved_value == 0
    claim.flags = 0x80
    claim.reserved_value = -42
    claim.header_type = 1
    claim.commit()
    assert frame(appender, 0) == (32, 0, 0x80, 1, 0, 0x1234, 10, 5, -42)


def test_put_bytes_bounds(appender):
    claim = BufferClaim()
    appender.try_claim(10, claim)
    claim.put_bytes(b"abc", 7)
    with pytest.raises(OutOfBoundsError):
        claim.put_bytes(b"abcd", 7)
    with pytest.raises(OutOfBoundsError):
        claim.put_bytes(b"a", -1)
    claim.commit()
    assert appender.log.buffer.get_bytes(32 + 7, 3) == b"abc"


def test_context_manager_commits_or_aborts(appender):
    claim = BufferClaim()
    appender.try_claim(4, claim)
    with claim as c:
        c.buffer[:] = b"okay"
    assert frame(appender, 0)[:4] == (36, 0, 0xC0, 1)
    assert appender.try_claim(4, claim) == 128
    with pytest.raises(ZeroDivisionError):
        with claim:
            claim.put_bytes(b"half")
            1 / 0
    assert frame(appender, 64)[:4] == (36, 0, 0xC0, 0)
    with pytest.raises(IllegalStateError):
        with claim:
            pass
    # committing inside the block is fine
    appender.try_claim(4, claim)
    with claim:
        claim.commit()
    assert frame(appender, 128)[0] == 36


def test_claim_reuse_requires_finish(appender):
    claim = BufferClaim()
    appender.try_claim(4, claim)
    with pytest.raises(IllegalStateError):
        appender.try_claim(4, claim)
    claim.commit()
    assert appender.try_claim(4, claim) == 128
    claim.abort()


def test_claim_length_limits(appender):
    claim = BufferClaim()
    assert appender.try_claim(appender.max_payload_length, claim) == 1408
    claim.commit()
    with pytest.raises(InvalidArgumentError):
        appender.try_claim(appender.max_payload_length + 1, claim)


def test_log_pinned_while_claim_open():
    log = LogBuffers.create(term_length=TERM, initial_term_id=5, session_id=1, stream_id=1)
    app = ConcurrentTermAppender(log)
    claim = BufferClaim()
    app.try_claim(8, claim)
    app.close()
    with pytest.raises(IllegalStateError):
        log.close()                 # the open claim still points into the log
    claim.commit()
    log.close()


def test_derived_view_blocks_commit(appender):
    claim = BufferClaim()
    appender.try_claim(8, claim)
    part = claim.buffer[2:4]        # a slice shares the export: it must be gone before commit
    with pytest.raises(IllegalStateError):
        claim.commit()
    assert claim.is_active and frame(appender, 0)[0] == -40
    part.release()
    claim.commit()
    assert frame(appender, 0)[0] == 40


def test_claim_at_term_end_pads_and_rotates():
    log = LogBuffers.create(term_length=TERM, initial_term_id=5, session_id=1, stream_id=1,
                            term_id=5, term_offset=TERM - 32, start_at_position=True)
    app = ExclusiveTermAppender(log)
    claim = BufferClaim()
    assert app.try_claim(1, claim) == ADMIN_ACTION
    assert not claim.is_active
    assert HEADER.unpack_from(log.buffer.get_bytes(TERM - 32, 32))[:4] == (32, 0, 0xC0, 0)
    assert app.try_claim(1, claim) == TERM + 64
    claim.commit()
    assert log.raw_tail_volatile(1) == lb.pack_tail(6, 64)
    app.close()
    log.close()


def test_claim_back_pressured():
    log = LogBuffers.create(term_length=TERM, initial_term_id=5, session_id=1, stream_id=1, is_connected=1)
    counter = AtomicBuffer(bytearray(8))
    app = ConcurrentTermAppender(log, counter, 0)
    claim = BufferClaim()
    assert app.try_claim(1, claim) == BACK_PRESSURED
    assert not claim.is_active
    app.close()
    log.close()


def test_unused_claim_is_inert():
    claim = BufferClaim()
    assert not claim.is_active and claim.length == 0
    for op in (claim.commit, claim.abort, lambda: claim.put_bytes(b"x"), lambda: claim.reserved_value,
               lambda: setattr(claim, "flags", 1), lambda: memoryview(claim)):
        with pytest.raises(IllegalStateError):
            op()
    assert "no open claim" in repr(claim)


def test_claim_without_a_claim_returns_the_appenders_own(appender):
    own = appender.try_claim(8)
    assert isinstance(own, BufferClaim) and own and own.position == 64
    with pytest.raises(IllegalStateError):
        appender.try_claim(8)                           # still open: commit or abort first
    assert own.position == 64 and own.is_active         # the refused call left it as it was
    theirs = BufferClaim()
    assert appender.try_claim(4, theirs) == 128         # a caller's claim is independent of the own one
    assert theirs.position == 0                         # and its position is not touched (Aeron's tryClaim)
    theirs.commit()
    own.commit()
    again = appender.try_claim(0)
    assert again is own and again.position == 160 and again.length == 0
    again.abort()
    with pytest.raises(InvalidArgumentError):
        appender.try_claim(-1)
    assert appender.try_claim(8).position == 224
    own.commit()
    appender.close()
    failed = appender.try_claim(8)
    assert failed is own and not failed and failed.position == -4


def test_claim_length_out_of_int32_range_is_refused(appender):
    with pytest.raises(OverflowError):
        appender.try_claim(1 << 31)
    with pytest.raises(TypeError):
        appender.try_claim(8, b"not a claim")


def test_an_abandoned_claim_unpins_the_log_when_collected():
    log = LogBuffers.create(term_length=TERM, initial_term_id=5, session_id=1, stream_id=1, is_connected=1)
    app = ExclusiveTermAppender(log)
    claim = BufferClaim()
    app.try_claim(8, claim)
    app.close()
    assert log.buffer.export_count == 1             # only the open claim holds the log now
    del claim                                       # never committed: left for the driver's unblocker
    assert log.buffer.export_count == 0
    log.close()


def test_wrap_takes_a_claim_over_a_callers_buffer():
    # Aeron's BufferClaim.wrap: a claim over memory that is not a term (a clustered service's mocked egress)
    buffer = AtomicBuffer(bytearray(256))
    claim = BufferClaim()
    claim.wrap(buffer, 64, 32 + 10)
    assert claim.is_active and claim.length == 10 and claim.term_offset == 64
    claim.put_bytes(b"0123456789")
    with pytest.raises(OutOfBoundsError):
        claim.put_bytes(b"x", 10)
    claim.commit()
    assert buffer.get_i32(64) == 42 and buffer.get_bytes(96, 10) == b"0123456789"
    claim.wrap(buffer, 0, 32)
    claim.abort()
    assert buffer.get_i16(6) == 0 and buffer.get_i32(0) == 32       # HDR_TYPE_PAD


def test_wrap_checks_its_frame():
    buffer = AtomicBuffer(bytearray(64))
    claim = BufferClaim()
    with pytest.raises(OutOfBoundsError):
        claim.wrap(buffer, 40, 32)
    with pytest.raises(InvalidArgumentError):
        claim.wrap(buffer, 0, 31)
    claim.wrap(buffer, 0, 32)
    with pytest.raises(IllegalStateError):
        claim.wrap(buffer, 0, 32)
    claim.commit()
