# SPDX-License-Identifier: Apache-2.0
"""Subscription and Image against our embedded driver: poll, controlled_poll and block_poll with exact counts and
positions, reassembly of messages larger than the MTU, round robin over publishers, image handlers (per
subscription and from the Context), retirement of images and release of their memory after the linger."""
from __future__ import annotations

import gc
import time

import pytest

from aeron import Aeron, ControlledPollAction, FragmentAssembler, Image
from aeron._core import counters as ctr
from aeron.client import ControlledFragmentAssembler
from aeron.common.errors import IllegalStateError
from tests.client.conftest import LINGER_NS, TIMER_MS, client_context, connected_pair, drain, receive, wait_for
from tests.support import wait_for_timer_ticks

pytestmark = pytest.mark.timeout(60)


def collect():
    got = []
    return got, (lambda b, o, l, h: got.append(b.get_bytes(o, l)))


def test_poll_respects_the_fragment_limit_and_advances_the_position(client):
    pub, sub = connected_pair(client, stream_id=3001)
    for i in range(10):
        assert pub.offer(b"m%d" % i) == 64 * (i + 1)
    image = sub.images[0]
    got, handler = collect()
    assert sub.poll(handler, 3) == 3
    assert got == [b"m0", b"m1", b"m2"] and image.position == 192
    assert sub.poll(handler, 100) == 7
    assert got[3:] == [b"m%d" % i for i in range(3, 10)] and image.position == 640
    assert sub.poll(handler, 100) == 0
    assert sub.poll(handler, 0) == 0


def test_handler_sees_the_header_fields(client):
    pub, sub = connected_pair(client, stream_id=3002)
    assert pub.offer(b"abc") == 64
    seen = []
    wait_for(lambda: sub.poll(lambda b, o, l, h: seen.append(
        (o, l, h.session_id, h.stream_id, h.term_id, h.term_offset, h.frame_length, h.flags, h.position)), 1))
    assert seen == [(32, 3, pub.session_id, 3002, pub.initial_term_id, 0, 35, 0xC0, 64)]


def test_the_buffer_is_a_zero_copy_view_of_the_log(client):
    pub, sub = connected_pair(client, stream_id=3003)
    assert pub.offer(b"zero copy") == 64
    views = []
    sub.poll(lambda b, o, l, h: views.append(bytes(b.view()[o:o + l])), 1)
    assert views == [b"zero copy"]


def test_controlled_poll_actions(client):
    pub, sub = connected_pair(client, stream_id=3004)
    for i in range(6):
        pub.offer(b"c%d" % i)
    image = sub.images[0]
    actions = iter([ControlledPollAction.CONTINUE, ControlledPollAction.ABORT])
    got = []

    def handler(b, o, l, h):
        got.append(b.get_bytes(o, l))
        return next(actions)

    assert sub.controlled_poll(handler, 10) == 1           # c0 consumed, c1 aborted (delivered, not consumed)
    assert got == [b"c0", b"c1"] and image.position == 64
    got.clear()
    actions = iter([ControlledPollAction.BREAK])
    assert sub.controlled_poll(handler, 10) == 1            # c1 again, then stop
    assert got == [b"c1"] and image.position == 128
    got.clear()
    actions = iter([ControlledPollAction.COMMIT, ControlledPollAction.CONTINUE, ControlledPollAction.CONTINUE,
                    ControlledPollAction.CONTINUE])
    assert sub.controlled_poll(handler, 10) == 4
    assert got == [b"c2", b"c3", b"c4", b"c5"] and image.position == 384


def test_block_poll_delivers_whole_frames(client):
    pub, sub = connected_pair(client, stream_id=3005)
    for i in range(4):
        pub.offer(bytes([i]) * 10)                          # 64-byte frames
    blocks = []
    handler = lambda b, o, l, session_id, term_id: blocks.append((o, l, session_id, term_id, b.get_bytes(o, l)))  # noqa: E731
    assert sub.block_poll(handler, 150) == 128               # two whole frames fit 150 bytes
    assert sub.block_poll(handler, 1024) == 128
    assert sub.block_poll(handler, 1024) == 0
    assert [(o, l) for o, l, *_ in blocks] == [(0, 128), (128, 128)]
    assert {(s, t) for _, _, s, t, _ in blocks} == {(pub.session_id, pub.initial_term_id)}
    assert blocks[0][4][32:42] == bytes(10) and blocks[1][4][32:42] == bytes([2]) * 10
    assert sub.images[0].position == 256


def test_fragment_assembler_rebuilds_messages_larger_than_the_mtu(client):
    pub, sub = connected_pair(client, stream_id=3006)
    big = bytes(range(256)) * 30                             # 7680 bytes: six fragments
    assert len(big) > pub.max_payload_length
    position = pub.offer(big)
    assert position == 5 * 1408 + ((7680 - 5 * 1376 + 32 + 31) & ~31)
    assert pub.offer(b"small") == position + 64
    fragments = []
    assembled = []
    assembler = FragmentAssembler(lambda b, o, l, h: assembled.append((b.get_bytes(o, l), h.flags)))

    def handler(b, o, l, h):
        fragments.append(l)
        assembler(b, o, l, h)

    wait_for(lambda: sub.poll(handler, 100) >= 0 and len(assembled) == 2)
    assert fragments == [1376] * 5 + [7680 - 5 * 1376, 5]
    assert assembled == [(big, 0xC0), (b"small", 0xC0)]    # the delegate sees one unfragmented message


def test_controlled_fragment_assembler_retries_an_aborted_message(client):
    pub, sub = connected_pair(client, stream_id=3007)
    big = b"x" * 3000
    pub.offer(big)
    outcomes = iter([ControlledPollAction.ABORT, ControlledPollAction.CONTINUE])
    got = []

    def delegate(b, o, l, h):
        got.append(l)
        return next(outcomes)

    assembler = ControlledFragmentAssembler(delegate)
    assert sub.controlled_poll(assembler, 10) == 2            # the final fragment aborted: rolled back to it
    assert got == [3000]
    assert sub.controlled_poll(assembler, 10) == 1
    assert got == [3000, 3000]
    assert sub.images[0].position == pub.position


def test_two_publishers_interleaved_fragments_are_assembled_per_session(client):
    sub = client.add_subscription("aeron:ipc", 3008)
    a = client.add_exclusive_publication("aeron:ipc", 3008)
    b = client.add_exclusive_publication("aeron:ipc", 3008)
    wait_for(lambda: sub.image_count == 2)
    msg_a, msg_b = b"A" * 4000, b"B" * 5000
    a.offer(msg_a)
    b.offer(msg_b)
    got = []
    assembler = FragmentAssembler(lambda buf, o, l, h: got.append((h.session_id, buf.get_bytes(o, l))))
    deadline = time.monotonic() + 5
    while len(got) < 2:
        assert time.monotonic() < deadline
        sub.poll(assembler, 1)                                # one fragment at a time: sessions interleave
    assert sorted(got) == sorted([(a.session_id, msg_a), (b.session_id, msg_b)])
    assert assembler.session_count == 2


def test_round_robin_gives_every_publisher_a_turn(client):
    sub = client.add_subscription("aeron:ipc", 3009)
    pubs = [client.add_exclusive_publication("aeron:ipc", 3009) for _ in range(3)]
    wait_for(lambda: sub.image_count == 3)
    for pub in pubs:
        for j in range(4):
            assert pub.offer(b"%d" % pub.session_id) == 64 * (j + 1)
    sessions = []
    for _ in range(6):
        assert sub.poll(lambda b, o, l, h: sessions.append(h.session_id), 1) == 1
    # each poll starts at the next image: two full rounds over the three publishers
    assert sorted(sessions[:3]) == sorted(p.session_id for p in pubs)
    assert sessions[3:] == sessions[:3]
    assert len(drain(sub, 100)) == 6
    assert [sub.image_by_session_id(p.session_id).position for p in pubs] == [256, 256, 256]
    assert sub.image_by_session_id(12345) is None
    assert sub.image_at_index(0) is sub.images[0]


def test_image_handlers_per_subscription_override_the_context(driver, errors):
    from_context, from_sub = [], []
    ctx = client_context(driver.aeron_dir, errors,
                         available_image_handler=lambda i: from_context.append(("up", i.session_id)),
                         unavailable_image_handler=lambda i: from_context.append(("down", i.session_id)))
    with Aeron.connect(ctx) as client:
        plain = client.add_subscription("aeron:ipc", 3010)
        own = client.add_subscription("aeron:ipc", 3011,
                                      available_image_handler=lambda i: from_sub.append(("up", i.session_id)),
                                      unavailable_image_handler=lambda i: from_sub.append(("down", i.session_id)))
        p1 = client.add_publication("aeron:ipc", 3010)
        p2 = client.add_publication("aeron:ipc", 3011)
        wait_for(lambda: plain.image_count == 1 and own.image_count == 1)
        p1.close()
        p2.close()
        wait_for(lambda: plain.image_count == 0 and own.image_count == 0)
        assert from_context == [("up", p1.session_id), ("down", p1.session_id)]
        assert from_sub == [("up", p2.session_id), ("down", p2.session_id)]
    assert errors == []


def test_a_handler_that_raises_reaches_the_error_handler_and_the_image_stays(driver, errors):
    def boom(image):
        raise ValueError(f"boom {image.session_id}")

    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        sub = client.add_subscription("aeron:ipc", 3012, available_image_handler=boom)
        pub = client.add_publication("aeron:ipc", 3012)
        wait_for(lambda: errors)
        assert [str(e) for e in errors] == [f"boom {pub.session_id}"] and type(errors[0]) is ValueError
        assert sub.image_count == 1
        assert pub.offer(b"fine") == 64
        assert receive(sub, 1) == [b"fine"]


def test_retired_image_delivers_nothing_and_is_released_after_the_linger(driver, errors):
    """The client's conductor runs only when the test invokes it (an agent invoker), so the linger cannot run out
    behind the test's back, however late the test thread gets the CPU: the log stays mapped until a duty cycle the
    test runs at least the linger after the one that retired the image."""
    gone = []
    with Aeron.connect(client_context(driver.aeron_dir, errors, use_conductor_agent_invoker=True)) as client:
        invoker = client.conductor_agent_invoker
        cycle = [0.0, 0.0]                      # when the last duty cycle began and ended

        def duty_cycle():
            cycle[0] = time.monotonic()
            work = invoker.invoke()
            cycle[1] = time.monotonic()
            return work

        sub = client.add_subscription("aeron:ipc", 3013, unavailable_image_handler=gone.append)
        other = Aeron.connect(client_context(driver.aeron_dir))    # the publisher maps the log elsewhere
        try:
            pub = other.add_publication("aeron:ipc", 3013)
            wait_for(lambda: sub.image_count == 1, invoke=duty_cycle)
            image = sub.images[0]
            assert isinstance(image, Image) and not image.is_closed
            assert pub.offer(b"last") == 64
            assert receive(sub, 1) == [b"last"]
            pub.close()
        finally:
            other.close()
        wait_for(lambda: gone, invoke=duty_cycle, what="unavailable image")
        retired_at = cycle[0]                   # the image was retired in the last duty cycle, which began here
        assert gone == [image] and sub.image_count == 0 and sub.images == ()
        assert image.is_closed and image.position == 64            # the last position, kept after close
        assert image.poll(lambda *a: None, 10) == 0
        assert image.controlled_poll(lambda *a: 0, 10) == 0
        assert image.block_poll(lambda *a: None, 1024) == 0
        assert sub.poll(lambda *a: None, 10) == 0
        assert not sub.is_connected
        with pytest.raises(IllegalStateError, match="closed by its Subscription"):
            image.close()
        with pytest.raises(IllegalStateError, match="image is closed"):
            image.position = 96
        assert image.is_end_of_stream is True                        # the publisher closed: end of stream
        log = image.log_buffers
        assert not log.is_closed                                     # still mapped during the linger
        wait_for(lambda: log.is_closed, timeout_s=3, invoke=duty_cycle, what="log unmapped after the linger")
        assert cycle[1] - retired_at >= LINGER_NS / 1e9              # released in a cycle ending a linger later
        assert image.poll(lambda *a: None, 10) == 0                  # still safe on unmapped memory
        assert image.block_poll(lambda *a: None, 1024) == 0
        assert image.position == 64 and image.is_end_of_stream is True
        with open("/proc/self/maps") as f:
            assert image.log_file_name not in f.read()          # neither the image nor a publication maps it
    assert errors == []


def test_closing_a_subscription_closes_its_images_and_frees_the_driver_side(client):
    pub, sub = connected_pair(client, stream_id=3014)
    image = sub.images[0]
    reader = client.counters_reader
    position_id = image.subscriber_position_id
    assert reader.get_counter_type_id(position_id) == ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID
    assert reader.get_counter_label(position_id) == (
        f"sub-pos: {sub.registration_id} {pub.session_id} 3014 aeron:ipc @0")
    sub.close()
    sub.close()
    assert sub.is_closed and image.is_closed and sub.image_count == 0
    with pytest.raises(IllegalStateError, match="Subscription is closed"):
        sub.poll(lambda *a: None, 1)
    wait_for(lambda: reader.get_counter_state(position_id) != ctr.RECORD_ALLOCATED)
    wait_for(lambda: not pub.is_connected, what="publication sees no subscriber")
    assert pub.offer(b"x") == pub.NOT_CONNECTED


def test_closing_a_subscription_tells_its_unavailable_image_handler_of_each_image(driver, errors):
    gone = []

    def on_unavailable(image):
        # called as Aeron's closeImages does: the image already closed, its log still mapped (lingering)
        gone.append((image.session_id, image.is_closed, image.log_buffers.is_closed))

    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        sub = client.add_subscription("aeron:ipc", 3020, unavailable_image_handler=on_unavailable)
        pubs = [client.add_publication("aeron:ipc", 3020) for _ in range(2)]
        wait_for(lambda: sub.image_count == 1)          # concurrent publications on one stream share a log
        exclusive = client.add_exclusive_publication("aeron:ipc", 3020)
        wait_for(lambda: sub.image_count == 2)
        sessions = sorted(image.session_id for image in sub.images)
        assert sessions == sorted({pubs[0].session_id, exclusive.session_id})
        sub.close()
        assert sorted(gone) == [(s, True, False) for s in sessions]
        sub.close()                                     # idempotent: no second notification
        assert len(gone) == 2
    assert errors == []


def test_closing_the_client_tells_every_subscription_of_its_images(driver, errors):
    from_context, from_sub = [], []
    ctx = client_context(driver.aeron_dir, errors, unavailable_image_handler=lambda i: from_context.append(i))
    client = Aeron.connect(ctx)
    try:
        plain = client.add_subscription("aeron:ipc", 3021)
        own = client.add_subscription("aeron:ipc", 3022, unavailable_image_handler=from_sub.append)
        empty = client.add_subscription("aeron:ipc", 3023, unavailable_image_handler=from_sub.append)
        client.add_publication("aeron:ipc", 3021)
        client.add_publication("aeron:ipc", 3022)
        wait_for(lambda: plain.image_count == 1 and own.image_count == 1)
        images = plain.images + own.images
    finally:
        client.close()
    assert from_context == [images[0]] and from_sub == [images[1]]
    assert all(image.is_closed for image in images) and empty.is_closed
    assert errors == []


def test_a_raising_unavailable_handler_at_close_reaches_the_error_handler(driver, errors):
    def boom(image):
        raise ValueError(f"boom {image.session_id}")

    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        sub = client.add_subscription("aeron:ipc", 3024, unavailable_image_handler=boom)
        pub = client.add_publication("aeron:ipc", 3024)
        wait_for(lambda: sub.image_count == 1)
        sub.close()
        assert [str(e) for e in errors] == [f"boom {pub.session_id}"]
        assert sub.is_closed


def test_late_subscriber_joins_at_the_current_position(client):
    pub = client.add_publication("aeron:ipc", 3015)
    early = client.add_subscription("aeron:ipc", 3015)
    wait_for(lambda: pub.is_connected)
    assert pub.offer(b"before") == 64
    # an IPC subscriber joins at the slowest existing subscriber's position: nothing is consumed yet
    unread = client.add_subscription("aeron:ipc", 3015)
    wait_for(lambda: unread.image_count == 1)
    assert unread.images[0].join_position == 0
    unread.close()
    assert receive(early, 1) == [b"before"]
    wait_for_timer_ticks(client.context.aeron_dir, 2, TIMER_MS)     # driver duty cycles: it sees the subscriber at 64
    late = client.add_subscription("aeron:ipc", 3015)
    wait_for(lambda: late.image_count == 1)
    assert late.images[0].join_position == 64
    assert pub.offer(b"after") == 128
    assert receive(early, 1) == [b"after"]
    assert receive(late, 1) == [b"after"]


def test_a_view_held_past_the_linger_keeps_the_memory_mapped(driver, errors):
    with Aeron.connect(client_context(driver.aeron_dir, errors)) as client:
        other = Aeron.connect(client_context(driver.aeron_dir))
        try:
            sub = client.add_subscription("aeron:ipc", 3016)
            pub = other.add_publication("aeron:ipc", 3016)
            wait_for(lambda: sub.image_count == 1)
            pub.offer(b"held")
            held = []
            wait_for(lambda: sub.poll(lambda b, o, l, h: held.append(b.view()[o:o + l]), 1))
            image = sub.images[0]
            pub.close()
        finally:
            other.close()
        wait_for(lambda: sub.image_count == 0)
        time.sleep(LINGER_NS / 1e9 * 4)
        # the unmap was refused (reported) rather than pulling the memory from under the view
        assert bytes(held[0]) == b"held"
        assert errors and all(isinstance(e, IllegalStateError) and "exported view(s) alive" in str(e)
                              for e in errors)
        assert not image.log_buffers.is_closed
        name = image.log_file_name
        # the client dropped its references: the mapping goes with the last view (and the driver's copy
        # after its linger)
        del image, held
        errors.clear()                  # their tracebacks reference the conductor's frames and the log
        gc.collect()

        def unmapped():
            with open("/proc/self/maps") as f:
                return name not in f.read()
        wait_for(unmapped, timeout_s=3, what="log unmapped once the view is gone")


def test_image_position_can_skip_ahead_within_the_term(client):
    pub, sub = connected_pair(client, stream_id=3017)
    for i in range(4):
        pub.offer(b"s%d" % i)
    image = sub.images[0]
    assert image.is_end_of_stream is False
    image.position = 128                                  # skip the first two messages
    assert image.position == 128
    assert receive(sub, 2) == [b"s2", b"s3"]
    from aeron.common.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="not aligned"):
        image.position = 264
    with pytest.raises(InvalidArgumentError, match="out of range"):
        image.position = 64                               # backwards
    with pytest.raises(InvalidArgumentError, match="out of range"):
        image.position = 65536 + 32                       # beyond the current term
    assert image.position == 256
