# SPDX-License-Identifier: Apache-2.0
"""The budget of images whose source has not confirmed them (aeron/driver/unconfirmed_images.py): bounds per endpoint
and per source in images and log bytes, room for one, confirmation by a frame, contention (first asks refused, stale
unconfirmed images reclaimed), the bounded memory of refused sessions; then the same policy through a
ReceiveChannelEndpoint fed datagrams and a PublicationImage's lifecycle, and the driver settings."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from aeron import Aeron, Context
from aeron._core import counters as ctr
from aeron._core import frames as f
from aeron._core.logbuffer import compute_log_length
from aeron.common.errors import ConfigurationError
from aeron.driver import Context as DriverContext
from aeron.driver import MediaDriver
from aeron.driver import publication_image as pi
from aeron.driver import unconfirmed_images as ui
from aeron.driver.unconfirmed_images import UnconfirmedImages
from tests.driver.fakes import (
    MS, PUBLISHER, TERM_LENGTH, Counters, FakeTransport, ManualClock, SubscriberLink, data_frame, publication_image,
    receive_endpoint, setup_frame,
)
from tests.driver.udp_helpers import driver_context, free_port

KIB64_LOG = compute_log_length(64 * 1024)
MIB64_LOG = compute_log_length(64 << 20)
A, B, C = ("10.0.0.1", 4000), ("10.0.0.1", 4001), ("10.0.0.2", 4000)
T = 1_000_000_000


class Image:
    """What the budget reads of a PublicationImage: the frames its compiled state took in."""

    def __init__(self) -> None:
        self.receive_state = SimpleNamespace(inserts=0, heartbeats=0)


def budget(**overrides) -> tuple[UnconfirmedImages, Counters]:
    counters = Counters()
    settings = dict(images_max=4, log_bytes_max=4 * KIB64_LOG, source_images_max=2,
                    source_log_bytes_max=2 * KIB64_LOG, image_timeout_ns=2 * T,
                    rejected=counters.system[ctr.BYTES_SENT])          # any counter will do to count
    settings.update(overrides)
    return UnconfirmedImages(**settings), counters


def rejected(counters: Counters) -> int:
    return counters[ctr.BYTES_SENT]


def test_setups_are_taken_up_to_a_sources_share_and_the_endpoints_bound():
    b, counters = budget()
    session = iter(range(100))
    assert b.admit(1, next(session), A, 65536, T) is not None
    assert b.admit(1, next(session), A, 65536, T) is not None
    assert b.admit(1, next(session), A, 65536, T) is None                     # A's two images are its share
    assert b.is_contended(T, A) and not b.is_contended(T, B) and not b.is_contended(T)
    assert b.admit(1, next(session), A, 65536, T) is None                     # A's first asks wait their turn
    assert b.admit(1, next(session), B, 65536, T) is not None                 # another port is another source
    hold = b.admit(1, next(session), C, 65536, T)
    assert hold is not None and (hold.source, hold.log_length, hold.since_ns) == (C, KIB64_LOG, T)
    assert (b.image_count, b.log_bytes) == (4, 4 * KIB64_LOG) and b.held_by(A) == (2, 2 * KIB64_LOG)
    assert rejected(counters) == 2
    # the endpoint is full: even a source holding nothing is refused, and the endpoint is contended from then on
    assert b.admit(1, next(session), ("10.0.0.3", 1), 65536, T) is None
    assert rejected(counters) == 3 and b.is_contended(T) and b.is_contended(3 * T - 1) and not b.is_contended(3 * T)
    b.sweep(3 * T)
    assert not b.is_contended(3 * T, A)


def test_log_bytes_bound_a_source_and_the_endpoint_but_an_empty_holder_takes_any_one_image():
    b, counters = budget(log_bytes_max=2 * MIB64_LOG, source_log_bytes_max=MIB64_LOG - 1)
    first = b.admit(1, 1, A, 64 << 20, T)
    assert first is not None                              # A held nothing: its 192 MiB log comes in over its bound
    assert b.admit(1, 3, B, 64 << 20, T) is not None      # the endpoint's two 192 MiB logs
    assert b.admit(1, 2, A, 65536, T) is None             # nothing more from A while it holds its one
    assert b.admit(1, 4, C, 64 << 20, T) is None          # contended now, and the endpoint's bytes are held
    assert b.admit(1, 4, C, 64 << 20, T) is None          # asked again, but no room
    b.release(first)
    b.release(first)                                      # once only
    assert b.held_by(A) == (0, 0) and b.log_bytes == MIB64_LOG and rejected(counters) == 3
    assert b.admit(1, 6, C, 64 << 20, T) is None          # room, but a first ask while contended
    assert b.admit(1, 4, C, 64 << 20, T) is not None      # the session that asked before is taken
    # an endpoint holding nothing takes one image of any length, even with no bytes to give
    empty, _ = budget(log_bytes_max=0, source_log_bytes_max=0)
    assert empty.admit(1, 1, A, 1 << 30, T).log_length == compute_log_length(1 << 30)
    assert empty.admit(1, 2, B, 65536, T) is None


def test_a_frame_from_the_source_confirms_an_image_and_frees_its_share():
    b, _ = budget(source_images_max=1)
    hold = b.admit(1, 1, A, 65536, T)
    image = Image()
    b.attach(hold, image)
    assert b.admit(1, 2, A, 65536, T) is None
    image.receive_state.heartbeats = 1                    # a heartbeat within its window: the source is sending
    assert b.admit(1, 2, A, 65536, T) is not None         # a full budget looks for confirmations first
    assert hold.released and b.held_by(A) == (1, KIB64_LOG)
    # the sweep finds them too, and a release after (the log deleted later) changes nothing
    other = b.admit(1, 3, B, 65536, T)
    second = Image()
    b.attach(other, second)
    second.receive_state.inserts = 1
    b.sweep(T)
    assert other.released and b.image_count == 1
    b.release(other)
    assert b.image_count == 1


def test_while_contended_a_first_setup_is_refused_and_the_session_that_asks_again_is_taken():
    b, counters = budget(images_max=1)
    flood = b.admit(1, 100, A, 65536, T)
    assert b.admit(1, 101, A, 65536, T) is None                        # full: contended from now on
    b.release(flood)
    assert b.admit(1, 102, B, 65536, T + 1) is None                     # room, but a first ask while contended
    assert b.admit(1, 102, C, 65536, T + 2) is None                     # the same session from elsewhere: first ask
    assert b.admit(2, 102, B, 65536, T + 3) is None                     # another stream: first ask
    assert rejected(counters) == 4
    # B asks again, as a real sender does: every 100 ms, or once a second when the endpoint elicits its SETUP
    genuine = b.admit(1, 102, B, 65536, T + 1100 * MS)
    assert genuine is not None
    assert b.refused_session_count() == 3                               # the others are remembered a while
    # refusals are forgotten after REFUSAL_MEMORY_NS, the contention ends image_timeout_ns after the last one, and
    # then every SETUP that fits is taken again
    later = T + 3 + ui.REFUSAL_MEMORY_NS + 1
    b.sweep(later)
    assert b.refused_session_count() == 0 and not b.is_contended(later)
    b.release(genuine)
    assert b.admit(1, 103, C, 65536, later) is not None


def test_a_refusal_is_forgotten_after_a_while_and_the_memory_of_them_is_bounded():
    b, _ = budget(images_max=1)
    assert b.admit(1, 1, A, 65536, T) is not None
    assert b.admit(1, 2, A, 65536, T) is None
    assert b.admit(1, 2, A, 65536, T + ui.REFUSAL_MEMORY_NS + 1) is None     # too late: a first ask again
    assert b.refused_session_count() == 1
    # one source keeps at most REFUSED_SESSIONS_PER_SOURCE sessions, the least recently refused forgotten first
    for session in range(1000, 1000 + 3 * ui.REFUSED_SESSIONS_PER_SOURCE):
        b.admit(1, session, A, 65536, 2 * T)
    assert b.refused_session_count() == ui.REFUSED_SESSIONS_PER_SOURCE
    # and at most REFUSED_SOURCES sources: a flood from many ports forgets the oldest sources
    for port in range(ui.REFUSED_SOURCES + 10):
        b.admit(1, 7, ("10.9.9.9", port), 65536, 2 * T)
    assert b.refused_session_count() == ui.REFUSED_SOURCES


def test_a_repeating_session_gets_in_during_a_flood_of_made_up_sessions():
    """The policy end to end, on a clock: a flood fills the budget, its images are reclaimed (their logs deleted a
    linger later) and from then on it gets nothing, while a sender repeating its SETUP every 100 ms gets in."""
    b, counters = budget(images_max=2, source_images_max=2)
    clock = ManualClock(T)
    flood_holds = []
    flood_admitted = 0
    session = 10_000
    genuine = None
    while genuine is None:
        for _ in range(50):                                 # 500 made-up sessions a second from two ports
            session += 1
            hold = b.admit(1, session, (A, B)[session % 2], 65536, clock())
            if hold is not None:
                flood_holds.append(hold)
                flood_admitted += 1
        genuine = b.admit(1, 7, C, 65536, clock())          # the real sender's SETUP, every 100 ms
        for hold in list(flood_holds):                      # reclaimed at the timeout, deleted a second later
            if clock() - hold.since_ns > b.image_timeout_ns + 1 * T:
                b.release(hold)
                flood_holds.remove(hold)
        clock.advance(100 * MS)
        assert clock() < 10 * T
    # the flood got the two images it found room for before the endpoint was contended, and nothing after
    assert flood_admitted == 2 and not flood_holds and rejected(counters) > 1000


def test_reclaims_only_a_silent_unconfirmed_image_of_a_contended_endpoint():
    b, _ = budget(images_max=1)
    hold = b.admit(1, 1, A, 65536, T)
    image = Image()
    b.attach(hold, image)
    assert not b.reclaims(hold, image, 3 * T, 2 * T)                  # silent long enough, but not contended
    b.admit(1, 2, A, 65536, 2 * T)                                    # refused: contended until 4 T
    assert not b.reclaims(hold, image, b.image_timeout_ns, 2 * T)     # not silent long enough
    assert b.reclaims(hold, image, b.image_timeout_ns + 1, 2 * T)
    assert not b.reclaims(None, image, 3 * T, 2 * T)                  # not counted in the budget
    image.receive_state.inserts = 1
    assert not b.reclaims(hold, image, 3 * T, 2 * T)                  # confirmed
    image.receive_state.inserts = 0
    b.release(hold)
    assert not b.reclaims(hold, image, 3 * T, 2 * T)


# -- through a ReceiveChannelEndpoint and a PublicationImage --------------------------------------------------------

class TetheredLink(SubscriberLink):
    """A tethered subscriber, as the conductor's lifecycle step looks at it."""

    subscription = SimpleNamespace(tether=True)

    def update_time(self, now_ns: int) -> None:
        pass


@pytest.fixture
def rig():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    setups: list[tuple] = []
    unconfirmed = UnconfirmedImages(images_max=3, source_images_max=2, image_timeout_ns=500 * MS,
                                    rejected=counters.system[ctr.BYTES_SENT])
    endpoint = receive_endpoint(counters, transport, lambda *request: setups.append(request),
                                unconfirmed=unconfirmed)
    endpoint.add_subscription(1001, None)
    return counters, clock, transport, endpoint, setups


def test_the_endpoint_asks_the_conductor_for_no_image_beyond_the_budget(rig):
    counters, clock, transport, endpoint, setups = rig
    for session_id in range(1, 6):
        transport.deliver(setup_frame(session_id=session_id, term_length=64 << 20), PUBLISHER)
    transport.deliver(setup_frame(session_id=6), ("127.0.0.1", 40999))
    transport.deliver(setup_frame(session_id=7), ("127.0.0.1", 41000))
    endpoint.poll(clock())
    # PUBLISHER's share is two images, and its first asks wait while it is turned away; another source gets the
    # endpoint's third image, and the fourth source finds the endpoint full
    assert [setup["session_id"] for _, setup, _, _ in setups] == [1, 2, 6]
    assert counters[ctr.BYTES_SENT] == 4 and endpoint.session_state_count() == 3
    assert endpoint.unconfirmed.log_bytes == 2 * MIB64_LOG + compute_log_length(TERM_LENGTH)
    # the conductor failed to make image 1 (no subscription matched, say): its share is free again, for a session
    # that asks again
    endpoint.unconfirmed.release(setups[0][1]["unconfirmed_hold"])
    endpoint.on_image_init_failed(1001, 1, clock())
    for session_id, source in ((9, ("127.0.0.1", 40999)), (3, PUBLISHER), (7, ("127.0.0.1", 41000))):
        transport.deliver(setup_frame(session_id=session_id, term_length=64 << 20 if source == PUBLISHER
                                      else TERM_LENGTH), source)
    endpoint.poll(clock.advance(100 * MS))
    assert [setup["session_id"] for _, setup, _, _ in setups] == [1, 2, 6, 3]
    assert counters[ctr.BYTES_SENT] == 6


def test_an_image_confirmed_by_its_first_heartbeat_leaves_the_budget_and_a_silent_one_is_reclaimed(rig, tmp_path):
    counters, clock, transport, endpoint, setups = rig
    transport.deliver(setup_frame(session_id=7))
    transport.deliver(setup_frame(session_id=8))
    endpoint.poll(clock())
    holds = {setup["session_id"]: setup["unconfirmed_hold"] for _, setup, _, _ in setups}
    heard, silent = (publication_image(tmp_path, counters, endpoint, clock, session_id=s, name=f"image{s}",
                                       unconfirmed_hold=holds[s])[0] for s in (7, 8))
    try:
        for image in (heard, silent):
            image.subscribers[1] = TetheredLink(image.subscribers[1].position)
            endpoint.add_image(image)
        heartbeat = bytearray(f.DATA_HEADER_LENGTH)
        f.encode_heartbeat(heartbeat, 0, 7, 1001, 100, 0)                # at the join position
        transport.deliver(bytes(heartbeat))
        endpoint.poll(clock.advance(1 * MS))
        assert heard.receive_state.heartbeats == 1 and counters[ctr.HEARTBEATS_RECEIVED] == 1
        endpoint.run_timers(clock.advance(200 * MS))                     # the sweep sees it
        assert holds[7].released and not holds[8].released and endpoint.unconfirmed.image_count == 1
        # a silent unconfirmed image lives by the image liveness timeout while nothing is turned away...
        clock.advance(600 * MS)
        endpoint.poll(clock())
        for image in (heard, silent):
            image.on_time_event(clock(), clock() // MS, None)
        assert heard.state == silent.state == pi.ACTIVE
        # ...and goes at the unconfirmed image timeout once the endpoint refuses a SETUP
        for session_id in range(20, 24):
            transport.deliver(setup_frame(session_id=session_id))
        endpoint.poll(clock())
        assert counters[ctr.BYTES_SENT] >= 1
        for image in (heard, silent):
            image.on_time_event(clock(), clock() // MS, None)
        assert heard.state == pi.ACTIVE and silent.state == pi.DRAINING
        assert not holds[8].released                # until its log is deleted (NetworkResources._delete_image)
    finally:
        heard.close()
        silent.close()


def test_a_heartbeat_the_python_path_takes_in_confirms_too(rig, tmp_path):
    counters, clock, _, endpoint, _ = rig
    image, _ = publication_image(tmp_path, counters, endpoint, clock)
    try:
        frame = data_frame(0, b"")
        image.insert_packet(frame, len(frame), 100, 0, True, f.UNFRAGMENTED, PUBLISHER, clock())
        assert image.receive_state.heartbeats == 1 and ui.is_confirmed(image)
    finally:
        image.close()


# -- settings ------------------------------------------------------------------------------------------------------

def test_the_bounds_are_driver_settings_with_defaults_that_leave_genuine_traffic_alone():
    ctx = DriverContext(environ={})
    assert (ctx.unconfirmed_images_max, ctx.unconfirmed_log_bytes_max, ctx.unconfirmed_source_images_max,
            ctx.unconfirmed_source_log_bytes_max, ctx.unconfirmed_image_timeout_ns) == (
        64, 1 << 30, 16, 512 << 20, 2_000_000_000)
    ctx = DriverContext(environ={"AERON_RECEIVER_UNCONFIRMED_IMAGES_MAX": "8"}, properties=[
        "aeron.receiver.unconfirmed.log.bytes.max=256m", "aeron.receiver.unconfirmed.source.images.max=2",
        "aeron.receiver.unconfirmed.source.log.bytes.max=64m", "aeron.receiver.unconfirmed.image.timeout=500ms"])
    assert (ctx.unconfirmed_images_max, ctx.unconfirmed_log_bytes_max, ctx.unconfirmed_source_images_max,
            ctx.unconfirmed_source_log_bytes_max, ctx.unconfirmed_image_timeout_ns) == (
        8, 256 << 20, 2, 64 << 20, 500_000_000)
    assert "aeron.receiver.unconfirmed.image.timeout" in ctx.as_properties()
    for bad in (dict(unconfirmed_images_max=0), dict(unconfirmed_source_images_max=0),
                dict(unconfirmed_image_timeout_ns=0), dict(unconfirmed_log_bytes_max=-1),
                dict(unconfirmed_source_log_bytes_max=-1)):
        with pytest.raises(ConfigurationError, match="aeron.receiver.unconfirmed"):
            DriverContext(environ={}, **bad).conclude()


def test_the_rejections_counter_is_a_system_counter_of_ours_made_with_the_first_udp_subscription():
    """Id 1000 (key and registration id), past Aeron's 0..45; allocated when first needed so that an IPC-only driver's
    counters keep the ids the C driver gives them."""
    def ours(client):
        return [r for r in client.counters_reader.counters()
                if r.type_id == ctr.DRIVER_SYSTEM_COUNTER_TYPE_ID and r.counter_id >= ctr.SYSTEM_COUNTER_COUNT]

    with MediaDriver.launch_embedded(driver_context()) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        client.add_subscription("aeron:ipc", 1001)
        assert ours(client) == []
        client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 1001)
        client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{free_port()}", 1001)
        [record] = ours(client)                         # one for the driver, whatever its endpoints
        assert (record.label, record.key, record.registration_id, record.owner_id, record.value) == (
            "Unconfirmed images rejected", (1000).to_bytes(4, "little") + bytes(108), 1000, -1, 0)
        assert ctr.UNCONFIRMED_IMAGES_REJECTED == 1000
