# SPDX-License-Identifier: Apache-2.0
"""Publication and ExclusivePublication against our embedded driver: offers of any buffer at exact positions,
vectored offers, reserved values, both try_claim forms, the status codes as plain ints (NOT_CONNECTED,
BACK_PRESSURED, ADMIN_ACTION, CLOSED, MAX_POSITION_EXCEEDED), limits and bad arguments."""
from __future__ import annotations

import time

import numpy
import pytest

from aeron import BufferClaim, ExclusivePublication, Publication
from aeron._core.term_appender import ConcurrentTermAppender, ExclusiveTermAppender
from aeron.common.errors import IllegalStateError, InvalidArgumentError, OutOfBoundsError
from tests.client.conftest import TERM_LENGTH, connected_pair, drain, receive, wait_for

pytestmark = pytest.mark.timeout(60)

HEADER = 32
MTU = 1408


def frame(length):
    """The aligned length a message of ``length`` bytes takes in the log (one fragment)."""
    return (length + HEADER + 31) & ~31


@pytest.fixture(params=["concurrent", "exclusive"])
def pair(request, client):
    return connected_pair(client, stream_id=2001, exclusive=request.param == "exclusive")


def test_status_codes_are_plain_ints_with_aeron_values():
    for cls in (Publication, ExclusivePublication):
        assert (cls.NOT_CONNECTED, cls.BACK_PRESSURED, cls.ADMIN_ACTION, cls.CLOSED, cls.MAX_POSITION_EXCEEDED) \
            == (-1, -2, -3, -4, -5)
        assert all(type(code) is int for code in (cls.NOT_CONNECTED, cls.CLOSED, cls.MAX_POSITION_EXCEEDED))


def test_limits_of_a_64k_ipc_publication(pair):
    pub, sub = pair
    assert pub.max_payload_length == MTU - HEADER == 1376
    assert pub.max_message_length == TERM_LENGTH // 8 == 8192
    assert pub.term_buffer_length == TERM_LENGTH
    assert pub.max_possible_position == TERM_LENGTH * (1 << 31)
    assert pub.position == 0
    assert pub.position_limit == TERM_LENGTH // 2     # the IPC term window: half a term ahead of the subscriber
    assert pub.is_connected is True
    assert pub.channel_status == 1                    # ACTIVE
    assert sub.images[0].session_id == pub.session_id
    assert sub.images[0].join_position == 0


def test_offer_any_buffer_without_copy_at_exact_positions(pair):
    pub, sub = pair
    array = numpy.arange(6, dtype=numpy.int32)
    payloads = [b"bytes", bytearray(b"bytearray"), memoryview(b"..memoryview..")[2:-2], array,
                numpy.frombuffer(b"numpy bytes", dtype=numpy.uint8), memoryview(array).cast("B")[4:12]]
    expected = [b"bytes", b"bytearray", b"memoryview", array.tobytes(), b"numpy bytes", array.tobytes()[4:12]]
    positions = [pub.offer(p) for p in payloads]
    sizes = [frame(len(e)) for e in expected]
    assert positions == [sum(sizes[:i + 1]) for i in range(len(sizes))] == [64, 128, 192, 256, 320, 384]
    assert pub.position == 384
    assert receive(sub, len(expected)) == expected
    assert sub.images[0].position == 384


def test_offer_with_offset_and_length(pair):
    pub, sub = pair
    source = bytearray(b"0123456789")
    assert pub.offer(source, 2, 5) == 64
    assert pub.offer(source, 7) == 128                # to the end
    assert pub.offer(source, 0, 0) == 160             # an empty message is a header only
    assert receive(sub, 3) == [b"23456", b"789", b""]


@pytest.mark.parametrize("offset, length", [(-1, 2), (0, 11), (9, 2), (11, -1)])
def test_offer_out_of_bounds_raises(pair, offset, length):
    pub, _ = pair
    with pytest.raises(OutOfBoundsError):
        pub.offer(b"0123456789", offset, length)
    with pytest.raises(InvalidArgumentError, match="length must be >= 0, got -2"):
        pub.offer(b"0123456789", 5, -2)               # -1 is "to the end", anything lower is an error
    assert pub.position == 0


def test_offer_of_a_non_contiguous_buffer_raises_typed(pair):
    pub, _ = pair
    strided = numpy.arange(10, dtype=numpy.int32)[::2]
    with pytest.raises(ValueError, match="contiguous"):       # numpy's own refusal to export it flat
        pub.offer(strided)
    with pytest.raises((InvalidArgumentError, TypeError)):
        pub.offer("a str is not a buffer")
    assert pub.position == 0


def test_offer_longer_than_max_message_length_raises(pair):
    pub, _ = pair
    with pytest.raises(InvalidArgumentError, match="8193"):
        pub.offer(bytes(pub.max_message_length + 1))
    assert pub.offer(bytes(pub.max_message_length)) > 0


def test_offerv_gathers_buffers_into_one_message(pair):
    pub, sub = pair
    parts = [b"head-", bytearray(b"body-"), memoryview(b"tail"), numpy.frombuffer(b"!", dtype=numpy.uint8)]
    assert pub.offerv(parts) == frame(15) == 64
    assert pub.offerv([]) == 96
    assert receive(sub, 2) == [b"head-body-tail!", b""]


def test_offerv_fragmented_when_larger_than_mtu(pair):
    pub, sub = pair
    parts = [bytes([i]) * 1000 for i in range(3)]     # 3000 bytes: three fragments of at most 1376
    position = pub.offerv(parts)
    assert position == frame(1376) * 2 + frame(3000 - 2 * 1376) == 1408 * 2 + 288
    frames = []
    sub.poll(lambda b, o, l, h: frames.append((l, h.flags)), 10)
    assert frames == [(1376, 0x80), (1376, 0x00), (248, 0x40)]     # BEGIN, middle, END


def test_reserved_value_supplier_sets_the_header_field(pair):
    pub, sub = pair
    calls = []

    def supplier(buffer, offset, length):
        calls.append((offset % 32, length))
        return 0x1122334455667788

    assert pub.offer(b"reserved", reserved_value_supplier=supplier) == 64
    assert pub.offerv([b"v", b"ec"], reserved_value_supplier=lambda b, o, l: -7) == 128
    got = []
    wait_for(lambda: sub.poll(lambda b, o, l, h: got.append((b.get_bytes(o, l), h.reserved_value)), 10) >= 0
             and len(got) == 2)
    assert got == [(b"reserved", 0x1122334455667788), (b"vec", -7)]
    assert calls == [(0, HEADER + 8)]                 # the supplier sees the whole frame


def test_try_claim_with_a_claim_returns_the_position(pair):
    pub, sub = pair
    claim = BufferClaim()
    position = pub.try_claim(5, claim)
    assert type(position) is int and position == 64
    assert claim.length == 5 and len(claim.buffer) == 5
    claim.buffer[:] = b"hello"
    claim.reserved_value = 99
    claim.commit()
    assert pub.try_claim(3, claim) == 128
    claim.put_bytes(b"abc")
    claim.abort()                                     # becomes padding: skipped by the subscriber
    assert pub.offer(b"after") == 192
    got = []
    wait_for(lambda: sub.poll(lambda b, o, l, h: got.append((b.get_bytes(o, l), h.reserved_value)), 10) >= 0
             and len(got) == 2)
    assert got == [(b"hello", 99), (b"after", 0)]


def test_try_claim_without_a_claim_returns_the_reusable_claim(pair):
    pub, sub = pair
    with pub.try_claim(5) as claim:
        assert claim and claim.position == 64
        claim.buffer[:] = b"first"
    again = pub.try_claim(6)
    assert again is claim                             # the publication's own claim, no allocation per call
    assert bool(again) is True and again.position == 128
    again.buffer[:] = b"second"
    again.commit()
    assert not again                                  # committed: closed until the next claim
    with pytest.raises(RuntimeError):
        with pub.try_claim(4) as third:
            third.buffer[:] = b"oops"
            raise RuntimeError("the block failed")    # the claim is aborted, not committed
    assert pub.offer(b"next") == 256                  # after the 64 bytes of padding of the aborted claim
    assert receive(sub, 3) == [b"first", b"second", b"next"]


def test_try_claim_limits(pair):
    pub, _ = pair
    with pytest.raises(InvalidArgumentError):
        pub.try_claim(pub.max_payload_length + 1)
    with pytest.raises(InvalidArgumentError):
        pub.try_claim(-1)
    claim = pub.try_claim(pub.max_payload_length)
    assert claim and claim.length == 1376
    claim.abort()


def test_not_connected_without_a_subscriber(client):
    for add in (client.add_publication, client.add_exclusive_publication):
        pub = add("aeron:ipc", 2002)
        assert pub.is_connected is False
        assert pub.offer(b"x") == -1 == pub.NOT_CONNECTED
        assert pub.offerv([b"x"]) == -1
        failed = pub.try_claim(8)
        assert not failed and failed.position == pub.NOT_CONNECTED
        with pytest.raises(IllegalStateError):
            with failed:
                pass
        assert pub.try_claim(8, BufferClaim()) == -1
        assert pub.position == 0
        pub.close()


def test_back_pressured_when_the_subscriber_does_not_poll(pair):
    pub, sub = pair
    results = [pub.offer(bytes(992)) for _ in range(40)]   # frames of 1024: 32 fit the 32 KiB window
    assert results[:32] == [1024 * (i + 1) for i in range(32)]
    assert results[32:] == [pub.BACK_PRESSURED] * 8
    assert type(results[-1]) is int
    assert pub.position == pub.position_limit == 32768
    claim = pub.try_claim(10)
    assert not claim and claim.position == -2
    assert len(receive(sub, 32)) == 32                 # the subscriber moves: the limit follows
    wait_for(lambda: pub.position_limit == 32768 * 2)
    assert pub.offer(b"x") == 32768 + 64


def test_admin_action_at_the_end_of_a_term(client):
    pub, sub = connected_pair(client, stream_id=2003)
    results = []
    deadline = time.monotonic() + 5
    while len(results) < 64:
        assert time.monotonic() < deadline
        result = pub.offer(bytes(1000))               # frames of 1056: 62 fit a term, 64 bytes are left over
        if result == pub.BACK_PRESSURED:
            sub.poll(lambda *a: None, 100)
            continue
        results.append(result)
    assert results[:62] == [1056 * (i + 1) for i in range(62)]
    assert results[62] == pub.ADMIN_ACTION            # padded the rest of the term and rotated
    assert results[63] == TERM_LENGTH + 1056


def test_exclusive_publication_reports_term_coordinates(client):
    channel = "aeron:ipc?init-term-id=100|term-id=102|term-offset=4096|term-length=65536"
    xpub = client.add_exclusive_publication(channel, 2004)
    sub = client.add_subscription("aeron:ipc", 2004)
    wait_for(lambda: xpub.is_connected and sub.image_count == 1)
    start = 2 * TERM_LENGTH + 4096
    assert (xpub.initial_term_id, xpub.term_id, xpub.term_offset, xpub.position) == (100, 102, 4096, start)
    assert xpub.term_begin_position == 2 * TERM_LENGTH
    assert sub.images[0].join_position == start
    assert xpub.offer(b"x") == start + 64
    assert receive(sub, 1) == [b"x"]
    assert sub.images[0].position == start + 64


def test_max_position_exceeded_at_the_end_of_the_log(client):
    # the last term of the log (term count 2^31 - 1), 5 KiB before its end
    channel = "aeron:ipc?init-term-id=0|term-id=2147483647|term-offset=60000|term-length=65536"
    xpub = client.add_exclusive_publication(channel, 2005)
    sub = client.add_subscription("aeron:ipc", 2005)
    wait_for(lambda: xpub.is_connected)
    end = TERM_LENGTH << 31
    assert xpub.max_possible_position == end == 140737488355328
    assert xpub.position == end - TERM_LENGTH + 60000
    results = [xpub.offer(bytes(1000)) for _ in range(6)]
    assert results == [end - 5536 + 1056 * (i + 1) for i in range(5)] + [xpub.MAX_POSITION_EXCEEDED]
    assert results[-1] == -5
    assert xpub.offer(bytes(100)) == end - 96           # a smaller one still fits
    assert xpub.offer(bytes(100)) == -5
    assert xpub.try_claim(100, BufferClaim()) == -5
    assert len(receive(sub, 6)) == 6


def test_offers_after_close_return_closed(pair):
    pub, sub = pair
    assert pub.offer(b"x") == 64
    pub.close()
    pub.close()
    assert pub.is_closed and not pub.is_connected
    assert pub.offer(b"x") == pub.CLOSED == -4
    assert pub.offerv([b"x"]) == -4
    assert pub.try_claim(8, BufferClaim()) == -4
    failed = pub.try_claim(8)
    assert not failed and failed.position == -4
    assert pub.position == -4                          # Aeron's position of a closed publication
    assert pub.channel_status == -1                    # ERRORED: no longer usable
    assert receive(sub, 1) == [b"x"]                   # what was offered before close still arrives


def test_publication_as_context_manager(client):
    with client.add_publication("aeron:ipc", 2006) as pub:
        assert not pub.is_closed
        assert repr(pub) == (f"<Publication 'aeron:ipc' stream=2006 session={pub.session_id} "
                             f"reg={pub.registration_id} open>")
    assert pub.is_closed and repr(pub).endswith("closed>")


def test_concurrent_offers_from_threads_lose_nothing(client):
    import threading
    pub, sub = connected_pair(client, stream_id=2007)
    count = 300
    errors = []

    def offer_all(tag):
        for i in range(count):
            deadline = time.monotonic() + 5
            while pub.offer(f"{tag}:{i}".encode()) < 0:
                if time.monotonic() > deadline:
                    errors.append(tag)
                    return
                time.sleep(0.0001)

    threads = [threading.Thread(target=offer_all, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    got = []
    deadline = time.monotonic() + 10
    while len(got) < 2 * count and time.monotonic() < deadline:
        sub.poll(lambda b, o, l, h: got.append(b.get_bytes(o, l).decode()), 100)
    for t in threads:
        t.join(5)
    assert errors == []
    for tag in "ab":
        assert [m for m in got if m.startswith(tag)] == [f"{tag}:{i}" for i in range(count)]
    drain(sub)


def test_try_claim_is_the_compiled_method_in_both_forms():
    # No Python frame between the user and the appender: the publications inherit the compiled try_claim.
    assert Publication.try_claim is ConcurrentTermAppender.try_claim
    assert ExclusivePublication.try_claim is ExclusiveTermAppender.try_claim
    assert Publication.__slots__ and "_claim" not in Publication.__slots__
